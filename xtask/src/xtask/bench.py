"""`xtask bench [SUITE ...]`: burn-bench's suites (all by default), names checked first."""

from __future__ import annotations

import argparse
import importlib

from xtask.errors import UnknownNameError, XtaskError
from xtask.steps import python, run_step
from xtask.workspace import find_root


def suites() -> list[str]:
    """The suite names burn-bench's command line accepts.

    Raises:
        XtaskError: burn-bench is not installed.
    """
    try:
        main = importlib.import_module("burn_bench.__main__")
    except ImportError as exc:
        raise XtaskError(
            f"burn-bench is not installed ({exc}): pip install -e packages/burn-bench"
        ) from exc
    return list(main.SUITES)


def run(args: argparse.Namespace) -> int:
    root = find_root(args.root)
    valid = suites()
    for name in args.suites:
        if name not in valid:
            raise UnknownNameError("suite", name, valid)
    run_step(
        f"burn-bench {' '.join(args.suites) or '(every suite)'}",
        [python(), "-m", "burn_bench", *args.suites],
        cwd=root,
    )
    return 0


def add_subcommand(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="burn-bench's suites (ratios against numpy and torch)")
    p.add_argument("suites", nargs="*", help="suite names (default: every suite)")
    p.set_defaults(func=run)
