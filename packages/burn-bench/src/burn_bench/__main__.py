"""`python -m burn_bench [suite ...]`: run benchmark suites and print their ratio tables."""

from __future__ import annotations

import argparse
import importlib

SUITES = {"overhead": "burn_bench.overhead", "mlp": "burn_bench.mlp", "loader": "burn_bench.loader",
          "record": "burn_bench.record", "vision": "burn_bench.vision",
          "dqn-step": "burn_bench.dqn"}


def main(argv: list[str] | None = None) -> None:
    """Run the named suites (all by default) and print each report."""
    parser = argparse.ArgumentParser(prog="burn-bench", description=__doc__)
    parser.add_argument("suites", nargs="*", help=f"any of {', '.join(SUITES)} (default: all)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.suites) - set(SUITES))
    if unknown:
        parser.error(f"unknown suite(s) {unknown}; choose from {sorted(SUITES)}")
    for name in args.suites or SUITES:
        print(importlib.import_module(SUITES[name]).run(), end="\n\n", flush=True)


if __name__ == "__main__":
    main()
