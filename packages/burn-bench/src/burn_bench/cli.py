"""`burn-bench list` and `burn-bench run`: the suites, backends and dtypes; a grid of runs with
a table of min / median / max and the ratio to each reference measured in the same run, saved
as JSON (`burn_bench.results`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

import burn
from burn_bench import config, results
from burn_bench.claims import write_report
from burn_bench.errors import BenchError
from burn_bench.ops import SHAPES
from burn_bench.runner import run_grid
from burn_bench.suites import (
    DECORATORS,
    DTYPES,
    KNOWN_BACKENDS,
    REFERENCES,
    SUITES,
    check_backend,
    check_names,
    suite,
    unavailable_reason,
)

COMMANDS = ("list", "run", "claims")


def _csv(text: str) -> list[str]:
    return [part for part in text.split(",") if part]


def _positive(kind: Callable[[str], float]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value
    return parse


def build_parser() -> argparse.ArgumentParser:
    """The command line parser (`list`, `run`)."""
    parser = argparse.ArgumentParser(prog="burn-bench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="every suite, backend (with availability) and dtype")
    run = sub.add_parser("run", help="run a grid of suites; print and save the results")
    run.add_argument("--profile", help="a profile of benchmarks.toml (the defaults below)")
    run.add_argument("--benches", type=_csv, help="comma-separated suites")
    run.add_argument("--backends", type=_csv, help="device specs name[:index][+decorator...] "
                     "(the training-step suites run on these too, under autodiff)")
    run.add_argument("--dtypes", type=_csv, help=f"any of {', '.join(DTYPES)}")
    run.add_argument("--compare", type=_csv, help="references: torch,numpy")
    run.add_argument("--size", type=_positive(int), help="side of the operands")
    run.add_argument("--rounds", type=_positive(int), help="interleaved rounds")
    run.add_argument("--min-time", type=_positive(float), help="seconds per batch at least")
    run.add_argument("--threads", type=_positive(int), help="BLAS / torch threads of the op suites")
    run.add_argument("--shapes", choices=SHAPES,
                     help="square: n x n operands; burn: Burn's 3-d bench shapes where it has them")
    run.add_argument("--json", type=Path, help="also write the results to this file")
    run.add_argument("--results-dir", type=Path,
                     help="save under DIR/<machine>/<commit>.json (default: benchmarks/results "
                          "of the checkout holding benchmarks.toml)")
    run.add_argument("--no-save", action="store_true", help="do not save under results-dir")
    claims = sub.add_parser("claims", help="markdown + plots of Burn's claims from saved results")
    claims.add_argument("--results-dir", type=Path, help="default: benchmarks/results")
    claims.add_argument("--out", type=Path, help="default: benchmarks/claims")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of `burn-bench`; bare suite names (`burn-bench mlp`) mean `run --benches`,
    no arguments every suite.

    Returns:
        The exit status (2 for bad names, printed with the valid ones).
    """
    args_in = expand(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser()
    args = parser.parse_args(args_in)
    console = Console(width=160)
    try:
        if args.command == "list":
            console.print(list_table())
            return 0
        if args.command == "claims":
            return _claims(args, console)
        return _run(args, console)
    except BenchError as exc:
        parser.error(str(exc))
    return 2  # unreachable: parser.error exits


def expand(argv: list[str]) -> list[str]:
    """The arguments with the short forms spelled out: none -> every suite
    (at the full profile's settings when there is a benchmarks.toml); bare suite names ->
    `run --benches NAMES`."""
    if not argv:
        every = ",".join(SUITES)
        return ["run", "--benches", every, *(["--profile", "full"] if config.find_root()
                                             else [])]
    if argv[0] not in COMMANDS and not argv[0].startswith("-"):
        return ["run", "--benches", ",".join(argv)]
    return argv


def list_table() -> Table:
    """The table of every suite, backend and dtype, with availability."""
    table = Table(title="burn-bench")
    table.add_column("kind")
    table.add_column("name")
    table.add_column("status / about")
    for s in SUITES.values():
        table.add_row(f"{s.kind} suite", s.name, s.about)
    present = {info.name for info in burn.available_backends()}
    for name in sorted({*KNOWN_BACKENDS, *present}):
        reason = unavailable_reason(name)
        table.add_row("backend", name,
                      "available" if reason is None else escape(f"missing: {reason}"))
    for decorator in DECORATORS:
        reason = unavailable_reason(f"numpy+{decorator}")
        table.add_row("decorator", decorator, "available (spec: name[:index][+decorator...])"
                      if reason is None else escape(f"not present: {reason}"))
    table.add_row("dtypes", ", ".join(DTYPES), "")
    table.add_row("references", ", ".join(REFERENCES), "")
    return table


def _settings(args: argparse.Namespace) -> config.Profile:
    """The run's settings: the command line's options over the profile of benchmarks.toml
    (`--profile`, default "smoke" when a benchmarks.toml is found; built-in defaults if not)."""
    root = config.find_root()
    base = None
    if root is not None:
        path = root / config.FILE
        base = config.profile(config.read(path), args.profile or "smoke", path)
    elif args.profile:
        raise config.ConfigError(f"no {config.FILE} at or above {Path.cwd()}")
    benches = args.benches or (base.benches if base else [])
    if not benches:
        raise BenchError("no benches given (--benches or --profile)")
    merged = config.Profile(
        args.profile or "command line", [suite(b).name for b in benches],
        args.backends or (base.backends if base else ["numpy"]),
        args.dtypes or (base.dtypes if base else ["float32"]),
        args.compare if args.compare is not None else (base.compare if base else list(REFERENCES)),
        args.size or (base.size if base else 128), args.rounds or (base.rounds if base else 7),
        args.min_time or (base.min_time if base else 0.2),
        args.threads or (base.threads if base else 1),
        args.shapes or (base.shapes if base else "square"))
    for backend in merged.backends:
        check_backend(backend)
    check_names("dtype", merged.dtypes, DTYPES)
    check_names("reference", merged.compare, REFERENCES)
    return merged


def _run(args: argparse.Namespace, console: Console) -> int:
    s = _settings(args)
    root = config.find_root()
    results_dir = args.results_dir or (root / "benchmarks" / "results" if root else None)
    _check_outputs(args.json, None if args.no_save else results_dir)
    doc = run_grid(s.benches, s.backends, s.dtypes, s.size, s.compare, rounds=s.rounds,
                   min_time=s.min_time, threads=s.threads, shapes=s.shapes,
                   report_backends=args.backends)
    for name, text in doc["reports"].items():
        console.print(f"[bold]{name}[/bold]\n{escape(text)}\n", markup=True, highlight=False)
    if doc["rows"]:
        console.print(results_table(doc, s.compare))
    if args.json:
        results.save(doc, args.json)
        console.print(f"results: {args.json}")
    if results_dir is not None and not args.no_save:
        path = results_dir / doc["machine"] / f"{doc['commit']}.json"
        if path.is_file():  # (an earlier run of this commit: its other rows are kept)
            doc = results.merged(results.load(path), doc)
        results.save(doc, path)
        console.print(f"saved: {path}")
    return _exit_status(doc, console)


def _exit_status(doc: dict[str, Any], console: Console) -> int:
    """1 where a bench failed (a row with status `error`) or nothing was measured (every row
    unavailable, no report), else 0."""
    statuses = [row["status"] for row in doc["rows"]]
    if "error" in statuses:
        console.print(f"{statuses.count('error')} bench(es) failed (status error)")
        return 1
    if "ok" not in statuses and not doc["reports"]:
        console.print("nothing was measured: every row is unavailable")
        return 1
    return 0


def _check_outputs(json_path: Path | None, results_dir: Path | None) -> None:
    """Refuse, before anything runs, a `--json` path that is a directory or whose directory
    does not exist, and a results directory that is a file.

    Raises:
        BenchError: naming the path.
    """
    if json_path is not None and (json_path.is_dir() or not json_path.parent.is_dir()):
        raise BenchError(f"--json {json_path}: not a file in an existing directory")
    if results_dir is not None and results_dir.exists() and not results_dir.is_dir():
        raise BenchError(f"--results-dir {results_dir}: not a directory")


def _claims(args: argparse.Namespace, console: Console) -> int:
    root = config.find_root() or Path.cwd()
    results_dir = args.results_dir or root / "benchmarks" / "results"
    path = write_report(results_dir, args.out or root / "benchmarks" / "claims")
    console.print(f"claims: {path}")
    return 0


def results_table(doc: dict[str, Any], compare: list[str]) -> Table:
    """The rows of a results document: burn's min / median / max and its median ratio to each
    reference (> 1: burn is slower), or the reason a row did not run."""
    table = Table(title=f"burn-bench {doc['commit']} on {doc['machine']}",
                  caption="x REF: burn's median / REF's median, same run (> 1: burn slower)")
    for column in ("bench", "backend", "dtype", "size", "min", "median", "max"):
        table.add_column(column, justify="right" if column in ("size", "min", "median", "max")
                         else "left")
    for ref in compare:
        table.add_column(f"x {ref}", justify="right")
    table.add_column("kernels / compile / status")
    for row in doc["rows"]:
        bench = f"{row['bench']} {row['case']}" if row.get("case") else row["bench"]
        size = "x".join(map(str, row["shape"])) if row.get("shape") else str(row["size"])
        head = [bench, row["backend"], row["dtype"], size]
        if row["status"] != "ok":
            table.add_row(*head, "", "", "", *("" for _ in compare),
                          escape(f"{row['status']}: {row['reason']}"))
            continue
        t = row["times"]["burn"]
        ratios = [f"{row['ratios'][r]:.2f}" if r in row["ratios"] else "-" for r in compare]
        extra = " / ".join(["-" if row["kernels"] is None else str(row["kernels"]),
                            "-" if row["compile_s"] is None else f"{row['compile_s']:.3f} s"])
        table.add_row(*head, *(_fmt(t[k]) for k in ("min", "median", "max")), *ratios, extra)
    return table


def _fmt(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    return f"{seconds * 1e6:.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"
