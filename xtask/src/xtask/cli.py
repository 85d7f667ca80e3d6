"""The `xtask` command line: one subcommand per workspace task."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from xtask import bench, build, checks, examples, ops_table, version
from xtask.errors import UnknownNameError, XtaskError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="xtask", description="Burn for Python workspace tasks.")
    parser.add_argument(
        "--root",
        type=Path,
        default=None,
        help="workspace root (default: found from the working directory up)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")
    ops_table.add_subcommand(sub)
    checks.add_subcommands(sub)
    examples.add_subcommand(sub)
    build.add_subcommand(sub)
    bench.add_subcommand(sub)
    version.add_subcommand(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `xtask` console script; returns the exit status (1: a failed step or
    a broken workspace, 2: a bad name or flag)."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except XtaskError as exc:
        print(f"xtask {args.command}: error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, UnknownNameError) else 1


if __name__ == "__main__":
    raise SystemExit(main())
