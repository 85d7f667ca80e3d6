"""Run a grid of op suites (bench x backend x dtype), each burn call interleaved with its
references in the same run, and the compile suite; build the results document
(`burn_bench.results`)."""

from __future__ import annotations

import contextlib
import datetime
import importlib
import importlib.metadata
import os
import platform
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

import burn
from burn_bench import __version__
from burn_bench import compile as compile_suite
from burn_bench.ops import BUILDERS, BURN_SHAPES, Calls
from burn_bench.results import SCHEMA, VERSION
from burn_bench.suites import report_runner, suite, unavailable_reason
from burn_bench.timing import Candidate, Measurement, measure_interleaved


def build(bench: str, size: int, dtype: str, device: Any, shapes: str = "square") -> Calls:
    """The calls of `bench` on n x n operands (n = `size`), or with `shapes` "burn" at the
    shape of Burn's own bench where it has one (`burn_bench.ops.BURN_SHAPES`)."""
    shape = BURN_SHAPES.get(bench) if shapes == "burn" else None
    if shape is None:
        return BUILDERS[bench](size, dtype, device)
    return BUILDERS[bench](size, dtype, device, shape=shape)


def run_op(bench: str, backend: str, dtype: str, size: int, compare: list[str], *,
           rounds: int, min_time: float, shapes: str = "square") -> dict[str, Any]:
    """Time one (bench, backend, dtype) row: burn and each available reference, interleaved.

    On a compiling backend (all but numpy) `compile_s` is the first burn call's excess over
    its median: compiling the kernels, or loading them from burn-cube's disk cache.

    Returns:
        The row (schema of `burn_bench.results`); status "unavailable" with the reason when
        the backend is missing here, "error" with the message when the bench failed.
    """
    shape = BURN_SHAPES.get(bench) if shapes == "burn" else None
    row: dict[str, Any] = {"bench": bench, "backend": backend, "dtype": dtype, "size": size,
                           "shape": None if shape is None else list(shape),
                           "status": "ok", "reason": None, "kernels": None,
                           "compile_s": None, "times": {}, "ratios": {}}
    reason = unavailable_reason(backend)
    if reason is not None:
        return {**row, "status": "unavailable", "reason": reason}
    try:
        calls = build(bench, size, dtype, burn.Device(backend), shapes)
        start = time.perf_counter()
        calls["burn"]()
        first = time.perf_counter() - start
        names = ["burn", *(name for name in compare if name in calls)]
        measured = measure_interleaved([Candidate(name, calls[name]) for name in names],
                                       min_time=min_time, rounds=rounds)
    except Exception as exc:  # one failing row must not stop the others
        return {**row, "status": "error", "reason": f"{type(exc).__name__}: {exc}"}
    by_name: dict[str, Measurement] = {m.name: m for m in measured}
    row["times"] = {m.name: {"min": m.seconds, "median": m.median, "max": m.worst}
                    for m in measured}
    row["ratios"] = {name: by_name["burn"].median / m.median
                     for name, m in by_name.items() if name != "burn"}
    row["kernels"] = kernel_count(bench, backend, dtype, size, shapes)
    if not backend.startswith("numpy"):
        row["compile_s"] = max(0.0, first - by_name["burn"].median)
    return row


def kernel_count(bench: str, backend: str, dtype: str, size: int, shapes: str = "square"
                 ) -> int | None:
    """Backend ops one burn call of `bench` dispatches, recorded with the profile decorator
    innermost (right above the backend, below autodiff); under fusion, the kernels it
    launched (`burn.fusion.stats`: fused blocks, single ops and ops run at once; a profile
    decorator under fusion would stop it fusing); None where the device cannot be
    profiled."""
    name, *decorators = backend.split("+")
    try:
        if "fusion" in decorators:
            calls = build(bench, size, dtype, burn.Device(backend), shapes)
            calls["burn"]()  # recorded and planned once, then counted
            before = burn.fusion.stats()
            calls["burn"]()
            after = burn.fusion.stats()
            return after.kernels_launched - before.kernels_launched
        spec = "+".join([name, "profile", *(d for d in decorators if d != "profile")])
        calls = build(bench, size, dtype, burn.Device(spec), shapes)
        with burn.profile() as recording:
            calls["burn"]()
    except burn.errors.BurnError:
        return None
    return len(recording)


def run_grid(benches: list[str], backends: list[str], dtypes: list[str], size: int,
             compare: list[str], *, rounds: int, min_time: float, threads: int = 1,
             shapes: str = "square", report_backends: list[str] | None = None
             ) -> dict[str, Any]:
    """Run every op bench of `benches` over backends x dtypes, the compile suite over
    backends, and every report suite once (the training steps on `report_backends` where
    given, else on the CPU backends).

    Op suites run with `threads` BLAS / OpenMP threads for numpy's OpenBLAS (burn's numpy
    backend included) and torch alike; the compile suite's processes get `threads` too;
    report suites set their own thread counts.

    Returns:
        The results document (report suites' text under "reports").
    """
    rows, reports = [], {}
    for name in benches:
        found = suite(name)
        if found.kind == "report":
            reports[found.name] = _report(found.name, report_backends)
        elif found.kind == "compile":
            rows += compile_suite.run_rows(backends, compare, rounds, threads)
        else:
            with same_threads(threads):
                rows += [run_op(name, backend, dtype, size, compare, rounds=rounds,
                                min_time=min_time, shapes=shapes)
                         for backend in backends for dtype in dtypes]
    return {"schema": SCHEMA, "version": VERSION, "machine": machine(),
            "commit": commit(Path.cwd()),
            "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "versions": {"python": platform.python_version(), "burn-bench": __version__,
                         "torch": _version("torch"), "numpy": np.__version__},
            "settings": {"rounds": rounds, "min_time": min_time, "compare": compare,
                         "threads": threads, "shapes": shapes},
            "rows": rows, "reports": reports}


@contextlib.contextmanager
def same_threads(threads: int) -> Iterator[None]:
    """Limit numpy's BLAS / OpenMP pools and torch's intra-op pool to `threads`, restored
    after."""
    try:
        torch: Any = importlib.import_module("torch")
    except ImportError:
        torch = None
    before = torch.get_num_threads() if torch is not None else 0
    with threadpool_limits(threads):
        if torch is not None:
            torch.set_num_threads(threads)
        try:
            yield
        finally:
            if torch is not None:
                torch.set_num_threads(before)


def _report(name: str, backends: list[str] | None = None) -> str:
    """The text of report suite `name`, or why it cannot run here (a missing optional
    dependency: pillow, opencv, burn-rl...)."""
    try:
        return report_runner(name, backends)()
    except ImportError as exc:
        return f"unavailable: {exc} (see burn-bench's optional dependencies)"


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def machine() -> str:
    """This machine's name (`$BURN_BENCH_MACHINE`, else the host name), safe as a directory
    name."""
    name = os.environ.get("BURN_BENCH_MACHINE") or platform.node() or "unknown"
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def commit(where: Path) -> str:
    """The short commit hash of the git checkout at `where`, "-dirty" when it has uncommitted
    changes ("unknown" outside a checkout); `$BURN_BENCH_COMMIT` where set (a copy of the tree
    without its git folder)."""
    if os.environ.get("BURN_BENCH_COMMIT"):
        return os.environ["BURN_BENCH_COMMIT"]
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"], cwd=where,
                             capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"
