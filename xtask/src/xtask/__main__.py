"""`python -m xtask ...`."""

import sys

from xtask.cli import main

sys.exit(main())
