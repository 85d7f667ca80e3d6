"""`xtask ops-table`: run the backend conformance suite per backend and write docs/ops.md.

For every backend spec (a `BURN_DEVICE` value, default `numpy` and `numpy+autodiff`) the suite
runs in a child pytest with this module loaded as a plugin (`-p xtask.ops_table`). The plugin
attributes each test to its op (`@pytest.mark.op(name)`) and family (the test module,
`test_<family>.py`) and writes the outcomes as JSON, also where the child runs over pytest-xdist
workers (`--pytest-arg=-n2`: the workers' reports carry the ops). The table then says, per op
and backend:

- `pass`: every test of the op ran and passed;
- `fail`: at least one test of the op failed (or errored);
- `not run`: no test of the op ran on that backend (collection error, crash, deselected).

docs/ops.md is written atomically (a temporary file in docs/, then a rename).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xtask.op_rows import render_op_rows

SUITE = Path("packages/burn-core/tests/conformance")
OUTPUT = Path("docs/ops.md")
DIFFERENCES = Path("docs/differences.md")
DEFAULT_BACKENDS = ("numpy", "numpy+autodiff")
PASS, FAIL, NOT_RUN = "pass", "fail", "not run"
REPORT_OPTION = "--ops-report"
#: the user properties a pytest-xdist worker gives each test's reports (`OpTagger`)
OP_PROPERTY, FAMILY_PROPERTY = "xtask-op", "xtask-family"


# ------------------------------------------------------------------------- pytest plugin


def pytest_addoption(parser: Any) -> None:
    parser.addoption(REPORT_OPTION, default=None,
                     help="xtask ops-table: write per-op outcomes of this run as JSON here")


def pytest_configure(config: Any) -> None:
    path = config.getoption(REPORT_OPTION, default=None)
    if not path:
        return
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: its reports carry the ops
        config.pluginmanager.register(OpTagger(), "xtask-op-tagger")
    else:
        config.pluginmanager.register(OpRecorder(Path(path)), "xtask-op-recorder")


def family_of(item: Any) -> str:
    """The op family of a test: the `family=` of its op marker, else its module's name."""
    marker = item.get_closest_marker("op")
    if marker is not None and "family" in marker.kwargs:
        return str(marker.kwargs["family"])
    return Path(str(item.path)).stem.removeprefix("test_")


def op_of(item: Any) -> str:
    """The op of a test: its op marker's argument."""
    marker = item.get_closest_marker("op")
    return str(marker.args[0]) if marker is not None and marker.args else "<no op marker>"


class OpTagger:
    """On a pytest-xdist worker: each test's report carries its op and family (as user
    properties), for the controller's `OpRecorder`, which collects no tests itself."""

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        for item in items:
            item.user_properties += [(OP_PROPERTY, op_of(item)),
                                     (FAMILY_PROPERTY, family_of(item))]


class OpRecorder:
    """Records, per test, its op, family and outcome; writes them as JSON at session end.
    Under pytest-xdist (tests collected by the workers) a test's entry comes with its first
    report, from the properties `OpTagger` gave it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tests: dict[str, dict[str, str]] = {}
        self.collection_errors: list[str] = []

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        for item in items:
            self.tests[item.nodeid] = {"op": op_of(item), "family": family_of(item),
                                       "outcome": NOT_RUN}

    def pytest_deselected(self, items: list[Any]) -> None:
        for item in items:
            self.tests.pop(item.nodeid, None)

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.collection_errors.append(str(report.nodeid))

    def pytest_runtest_logreport(self, report: Any) -> None:
        entry = self.tests.get(report.nodeid)
        if entry is None:
            tags = dict(report.user_properties)
            if OP_PROPERTY not in tags:
                return
            entry = self.tests[report.nodeid] = {
                "op": str(tags[OP_PROPERTY]), "family": str(tags[FAMILY_PROPERTY]),
                "outcome": NOT_RUN}
        if report.failed:
            entry["outcome"] = FAIL
        elif report.skipped:
            if entry["outcome"] != FAIL:
                entry["outcome"] = NOT_RUN
        elif report.when == "call" and entry["outcome"] == NOT_RUN:
            entry["outcome"] = PASS

    def pytest_sessionfinish(self, session: Any, exitstatus: int) -> None:
        payload = {"tests": self.tests, "collection_errors": self.collection_errors,
                   "exitstatus": int(exitstatus)}
        self.path.write_text(json.dumps(payload, indent=1, sort_keys=True))


# ------------------------------------------------------------------------------ results


@dataclass
class BackendRun:
    """Outcomes of the suite on one backend."""

    backend: str
    tests: dict[str, dict[str, str]] = field(default_factory=dict)
    collection_errors: list[str] = field(default_factory=list)
    exitstatus: int | None = None
    error: str | None = None  # the child did not produce a report

    def status(self) -> dict[tuple[str, str], str]:
        """(family, op) -> pass / fail / not run."""
        outcomes: dict[tuple[str, str], list[str]] = {}
        for entry in self.tests.values():
            outcomes.setdefault((entry["family"], entry["op"]), []).append(entry["outcome"])
        return {key: op_status(values) for key, values in outcomes.items()}


def op_status(outcomes: Iterable[str]) -> str:
    """Any failure -> fail; all passed -> pass; otherwise (nothing ran) -> not run."""
    values = list(outcomes)
    if FAIL in values:
        return FAIL
    if values and all(v == PASS for v in values):
        return PASS
    return NOT_RUN


def run_backend(backend: str, root: Path, pytest_args: Sequence[str] = ()) -> BackendRun:
    """Run the conformance suite with BURN_DEVICE=backend in a child pytest."""
    with tempfile.TemporaryDirectory(prefix="xtask-ops-") as tmp:
        report = Path(tmp) / "report.json"
        env = dict(os.environ, BURN_DEVICE=backend)
        here = str(Path(__file__).resolve().parent.parent)  # xtask/src: the plugin's package
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
        cmd = [sys.executable, "-m", "pytest", str(SUITE), "-p", "xtask.ops_table",
               f"{REPORT_OPTION}={report}", "-q", "-p", "no:cacheprovider", *pytest_args]
        print(f"xtask ops-table: BURN_DEVICE={backend} {' '.join(cmd[1:])}", flush=True)
        proc = subprocess.run(cmd, cwd=root, env=env, check=False)
        if not report.exists():
            return BackendRun(backend, exitstatus=proc.returncode,
                              error=f"pytest exited with {proc.returncode} without a report")
        data = json.loads(report.read_text())
    return BackendRun(backend, tests=data["tests"], collection_errors=data["collection_errors"],
                      exitstatus=data["exitstatus"])


# -------------------------------------------------------------------------------- table


def render(runs: Sequence[BackendRun], op_rows: Sequence[str] = (),
           differences: str = "") -> str:
    """docs/ops.md: one row per (family, op), one column per backend; then the op table
    (`op_rows`, see `xtask.op_rows`) and the deliberate differences (docs/differences.md)."""
    statuses = [run.status() for run in runs]
    keys = sorted({key for status in statuses for key in status})
    lines = [
        "# Ops by backend",
        "",
        "Generated by `xtask ops-table` (do not edit): the backend conformance suite",
        f"(`{SUITE.as_posix()}`) checks every op of docs/tensor-api.md against PyTorch, forward",
        "and, for float ops, backward. `pass`: all of the op's tests passed on that backend;",
        "`fail`: at least one failed; `not run`: none ran.",
        "",
        "| op | family | " + " | ".join(run.backend for run in runs) + " |",
        "|---|---|" + "---|" * len(runs),
    ]
    for family, op in keys:
        cells = [status.get((family, op), NOT_RUN) for status in statuses]
        lines.append(f"| {op} | {family} | " + " | ".join(cells) + " |")
    lines += ["", "## Summary", ""]
    for run, status in zip(runs, statuses, strict=True):
        counts = {s: sum(1 for k in keys if status.get(k, NOT_RUN) == s)
                  for s in (PASS, FAIL, NOT_RUN)}
        n_tests = len(run.tests)
        n_failed = sum(1 for t in run.tests.values() if t["outcome"] == FAIL)
        line = (f"- {run.backend}: {counts[PASS]} ops pass, {counts[FAIL]} fail, "
                f"{counts[NOT_RUN]} not run ({n_tests} tests, {n_failed} failed)")
        if run.error:
            line += f"; {run.error}"
        if run.collection_errors:
            line += "; collection errors in " + ", ".join(f"`{e}`" for e in
                                                         run.collection_errors)
        lines.append(line)
    if op_rows:
        lines += ["", *op_rows]
    if differences:
        body = differences.split("\n", 1)[1] if differences.startswith("# ") else differences
        lines += ["", "## Deliberate differences from Burn and PyTorch", "",
                  f"(From `{DIFFERENCES.as_posix()}`.)", body.strip()]
    return "\n".join(lines) + "\n"


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file in the same directory and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the usual mode of a new file
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def find_root(start: Path) -> Path:
    """The workspace root: the nearest directory above `start` holding the conformance suite."""
    for d in (start, *start.parents):
        if (d / SUITE).is_dir():
            return d
    raise SystemExit(f"xtask ops-table: no {SUITE} above {start}; pass --root")


# ---------------------------------------------------------------------------------- cli


def add_subcommand(sub: Any) -> None:
    p = sub.add_parser("ops-table", help="run the conformance suite per backend, write docs/ops.md",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("backends", nargs="*", default=list(DEFAULT_BACKENDS),
                   help="BURN_DEVICE specs (default: numpy numpy+autodiff)")
    p.add_argument("--root", type=Path, default=None, help="workspace root (default: found)")
    p.add_argument("--output", type=Path, default=OUTPUT, help="table path, relative to root")
    p.add_argument("--strict", action="store_true", help="exit 1 when an op fails or is not run")
    p.add_argument("--pytest-arg", action="append", default=[], dest="pytest_args",
                   help="extra argument for the child pytest (repeatable)")
    p.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    root = (args.root or find_root(Path.cwd())).resolve()
    op_rows = render_op_rows()  # before the runs: without burn-core nothing is written
    runs = [run_backend(b, root, args.pytest_args) for b in args.backends]
    failed = [run for run in runs if run.error or not run.tests]
    if failed:
        for run in failed:
            print(f"xtask ops-table: {run.backend}: {run.error or 'no test ran'}; "
                  "docs/ops.md left as it was", file=sys.stderr)
        return 1
    out = args.output if args.output.is_absolute() else root / args.output
    differences = root / DIFFERENCES
    write_atomic(out, render(runs, op_rows,
                             differences.read_text() if differences.exists() else ""))
    print(f"xtask ops-table: wrote {out}")
    if args.strict:
        bad = [s for run in runs for s in run.status().values() if s != PASS]
        return 1 if bad or any(run.error for run in runs) else 0
    return 0
