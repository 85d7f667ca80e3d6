"""Atomic file writes: a temp file beside the target, then os.replace (never half-written)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def write_atomic(path: Path, write: Callable[[Any], object], binary: bool = False) -> Path:
    """Create `path`'s folder, call `write(file)` on a temp file beside it, then replace `path`.

    Args:
        path: the target.
        write: writes the content to the open file it is given.
        binary: open the temp file in binary mode.
    Returns:
        `path`.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb" if binary else "w") as f:
            write(f)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 -> what open() would have given
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
