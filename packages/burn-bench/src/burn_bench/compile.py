"""The `compile` suite: how long a fresh process takes from its start to the end of its first
training step, with burn-cube's compile cache empty (cold), filled by an earlier run of the same
model (disk-cache hit: warm) and filled by the model before an edit (edit: another hidden width
and activation, as a user changing a model and re-running would), against PyTorch's time for
the same model in a fresh process (on CUDA for a GPU backend where torch has it).

Every measurement is a new `python -m burn_bench.compile` process (`BURN_CUBE_CACHE_DIR` and the
drivers' own disk caches, `DRIVER_CACHES`, set to a temporary directory of the round, OMP /
OpenBLAS / MKL threads set before anything starts);
the child reports the wall clock at the end of its first step, so the time counts interpreter
start, imports, model building, kernel compilation (or cache loads) and the step. `compile_s`
is the first step's duration less the second's (what compiling and loading add to a step).
Burn states that a recompile after an edit takes under five seconds, with no numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

#: the disk caches of the compilers below burn-cube (CuPy's NVRTC cubins, Mesa's and NVIDIA's
#: shader caches): each round's processes get their own, empty at first like burn-cube's
DRIVER_CACHES = ("CUPY_CACHE_DIR", "MESA_SHADER_CACHE_DIR", "__GL_SHADER_DISK_CACHE_PATH")
#: (hidden width, activation) of the model, then of the edited model
MODEL = (256, "relu")
EDITED = (384, "gelu")
BATCH, FEATURES, CLASSES = 64, 784, 10


@dataclass(frozen=True)
class Case:
    """One case: its name, the model it runs, and whether the round's cache is emptied first."""

    name: str
    model: tuple[int, str]
    fresh_cache: bool


#: in order within a round: the cache dir of the round is shared by the three
CASES = (Case("cold", MODEL, True), Case("warm", MODEL, False), Case("edit", EDITED, False))


def _burn_step(backend: str, width: int, activation: str) -> Any:
    import burn
    import burn.functional as F
    from burn import nn
    from burn.optim import AdamConfig

    burn.seed(0)
    device = burn.Device(backend).autodiff()
    act = {"relu": nn.Relu, "gelu": nn.Gelu}[activation]()
    model = nn.Sequential(nn.Linear(FEATURES, width, device=device), act,
                          nn.Linear(width, CLASSES, device=device))
    optim = AdamConfig().init()
    rng = np.random.default_rng(0)
    x = burn.tensor(rng.standard_normal((BATCH, FEATURES)).astype(np.float32), device=device)
    y = burn.tensor(rng.integers(0, CLASSES, BATCH), device=device)

    def step() -> float:
        loss = F.cross_entropy(model(x), y)
        optim.step(1e-3, model, loss.backward())
        return loss.item()
    return step


def _torch_step(backend: str, width: int, activation: str) -> Any:
    import torch

    from burn_bench.ops import torch_device
    from burn_bench.training import torch_classifier_step

    where = torch_device(torch, backend)
    torch.manual_seed(0)
    act = {"relu": torch.nn.ReLU, "gelu": torch.nn.GELU}[activation]()
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, width), act,
                                torch.nn.Linear(width, CLASSES)).to(where)
    optim = torch.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((BATCH, FEATURES)).astype(np.float32)).to(where)
    y = torch.from_numpy(rng.integers(0, CLASSES, BATCH)).to(where)
    return torch_classifier_step(model, optim, x, y)


def child(candidate: str, backend: str, width: int, activation: str) -> dict[str, float]:
    """In the fresh process: build the model, run two steps, and time them.

    Returns:
        `first_done` (wall clock at the end of the first step), `first_s` and `second_s`.
    """
    step = (_torch_step(backend, width, activation) if candidate == "torch"
            else _burn_step(backend, width, activation))
    start = time.perf_counter()
    step()
    first_done, middle = time.time(), time.perf_counter()
    step()
    return {"first_done": first_done, "first_s": middle - start,
            "second_s": time.perf_counter() - middle}


def _spawn(candidate: str, backend: str, case: Case, cache: str, threads: int
           ) -> dict[str, float]:
    """Run `child` in a new process; returns its figures with `to_first_step` (launch to the
    end of the first step, wall clock)."""
    env = {**os.environ, "BURN_CUBE_CACHE_DIR": cache, "OMP_NUM_THREADS": str(threads),
           "OPENBLAS_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
           **{var: os.path.join(cache, var.strip("_").lower()) for var in DRIVER_CACHES}}
    width, activation = case.model
    launched = time.time()
    done = subprocess.run([sys.executable, "-m", "burn_bench.compile", candidate, backend,
                           str(width), activation], env=env, capture_output=True, text=True,
                          check=False, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"compile {case.name} on {backend} ({candidate}) failed:\n"
                           f"{done.stderr.strip()[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return {**out, "to_first_step": out["first_done"] - launched}


def _stats(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def run_rows(backends: list[str], compare: list[str], rounds: int, threads: int
             ) -> list[dict[str, Any]]:
    """The compile rows of every backend: cold, warm and edit, `rounds` rounds each, torch
    (where in `compare` and installed) in its own process right after each burn process.

    Returns:
        Rows of the results schema (bench "compile", `case` naming the case, `size` the
        model's hidden width, `compile_s` the median first-step excess).
    """
    from burn_bench.suites import unavailable_reason

    torch = "torch" in compare and _has_torch()
    rows = []
    for backend in dict.fromkeys(b.replace("+autodiff", "") for b in backends):
        reason = unavailable_reason(backend)
        base: dict[str, Any] = {"bench": "compile", "backend": backend, "dtype": "float32",
                                "status": "ok", "reason": None, "kernels": None,
                                "compile_s": None, "times": {}, "ratios": {}}
        if reason is not None:
            rows += [{**base, "case": c.name, "size": c.model[0], "status": "unavailable",
                      "reason": reason} for c in CASES]
            continue
        try:
            found = _measure(backend, rounds, threads, torch)
        except (RuntimeError, ValueError, subprocess.SubprocessError) as exc:
            rows += [{**base, "case": c.name, "size": c.model[0], "status": "error",
                      "reason": str(exc)} for c in CASES]
            continue
        for case in CASES:
            runs = found[case.name]
            times = {name: _stats([r["to_first_step"] for r in got])
                     for name, got in runs.items()}
            rows.append({**base, "case": case.name, "size": case.model[0], "times": times,
                         "compile_s": statistics.median(
                             max(0.0, r["first_s"] - r["second_s"]) for r in runs["burn"]),
                         "ratios": {name: times["burn"]["median"] / t["median"]
                                    for name, t in times.items() if name != "burn"}})
    return rows


def _measure(backend: str, rounds: int, threads: int, torch: bool
             ) -> dict[str, dict[str, list[dict[str, float]]]]:
    """case -> candidate -> the figures of each round's process."""
    found: dict[str, dict[str, list[dict[str, float]]]] = {
        c.name: {"burn": [], **({"torch": []} if torch else {})} for c in CASES}
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="burn-bench-compile-") as cache:
            for case in CASES:
                found[case.name]["burn"].append(_spawn("burn", backend, case, cache, threads))
                if torch:
                    found[case.name]["torch"].append(
                        _spawn("torch", backend, case, cache, threads))
    return found


def _has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def main(argv: list[str] | None = None) -> None:
    """`python -m burn_bench.compile CANDIDATE BACKEND WIDTH ACTIVATION`: one child run; prints
    its figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("candidate", choices=("burn", "torch"))
    parser.add_argument("backend")
    parser.add_argument("width", type=int)
    parser.add_argument("activation", choices=("relu", "gelu"))
    args = parser.parse_args(argv)
    print(json.dumps(child(args.candidate, args.backend, args.width, args.activation)))


if __name__ == "__main__":
    main()
