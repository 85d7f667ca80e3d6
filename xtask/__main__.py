"""`python -m xtask` at the repository root without xtask installed: this folder is then found
as a namespace package, so run the real one from `src/` (an installed xtask, a regular package,
is always found first and never comes here)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))
for name in [n for n in sys.modules if n == "xtask" or n.startswith("xtask.")]:
    del sys.modules[name]

from xtask.cli import main  # noqa: E402

sys.exit(main())
