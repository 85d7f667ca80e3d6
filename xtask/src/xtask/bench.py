"""`xtask bench [SUITE ...] | --profile NAME`: burn-bench's suites (all by default), or one
profile of the root benchmarks.toml (`burn-bench run --profile NAME`); names checked first."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

from xtask.errors import UnknownNameError, XtaskError
from xtask.steps import python, run_step
from xtask.workspace import find_root, read_toml


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


def profiles(root: Path) -> list[str]:
    """The `[profile.NAME]` tables of the root benchmarks.toml.

    Raises:
        XtaskError: the file is missing or unreadable.
    """
    path = root / "benchmarks.toml"
    if not path.is_file():
        raise XtaskError(f"{path} is missing")
    return sorted(read_toml(path).get("profile", {}))


def run(args: argparse.Namespace) -> int:
    root = find_root(args.root)
    if args.profile is not None:
        if args.suites:
            raise XtaskError("give suite names or --profile, not both")
        valid_profiles = profiles(root)
        if args.profile not in valid_profiles:
            raise UnknownNameError("profile", args.profile, valid_profiles)
        run_step(
            f"burn-bench profile {args.profile}",
            [python(), "-m", "burn_bench", "run", "--profile", args.profile],
            cwd=root,
        )
        return 0
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
    p.add_argument("--profile", help="a [profile.NAME] of benchmarks.toml (e.g. smoke)")
    p.set_defaults(func=run)
