"""The `xtask` command line: one subcommand per workspace task."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from xtask import ops_table


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="xtask", description="Burn for Python workspace tasks.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")
    ops_table.add_subcommand(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `xtask` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
