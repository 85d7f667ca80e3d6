"""`python -m burn_bench` / `burn-bench`: `list`, `run ...`, or bare suite names (run them)."""

from __future__ import annotations

import sys

from burn_bench.cli import main
from burn_bench.suites import ALIASES
from burn_bench.suites import SUITES as _SUITES

#: every suite name the command line accepts (current names, then earlier ones)
SUITES: list[str] = [*_SUITES, *ALIASES]

if __name__ == "__main__":
    sys.exit(main())
