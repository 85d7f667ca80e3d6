"""`python -m burn_bench [suite ...]`: run benchmark suites and print their ratio tables."""

from __future__ import annotations

import argparse
import importlib

#: suite name -> its module, whose `run()` returns the report; or (module, workload) for the
#: training steps of `burn_bench.training`.
SUITES: dict[str, str | tuple[str, str]] = {
    "overhead": "burn_bench.overhead", "mlp": ("burn_bench.training", "mlp"),
    "lenet": ("burn_bench.training", "lenet"),
    "transformer-encoder": ("burn_bench.training", "transformer-encoder"),
    "loader": "burn_bench.loader", "record": "burn_bench.record", "vision": "burn_bench.vision",
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
        target = SUITES[name]
        if isinstance(target, tuple):
            text = importlib.import_module(target[0]).run_workload(target[1])
        else:
            text = importlib.import_module(target).run()
        print(text, end="\n\n", flush=True)


if __name__ == "__main__":
    main()
