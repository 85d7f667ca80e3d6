"""Atomic file replacement shared by the writers."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside `path` to write; on success it is fsynced and renamed onto
    `path` (readers see the old file or the new one, never a partial one); on error it is
    removed and `path` is left as it was.

    Args:
        path: the final file.
    Yields:
        The temporary path (an empty file, created with the usual permissions).
    """
    final = Path(path)
    tmp = final.with_name(f".{final.name}.{secrets.token_hex(6)}.tmp")
    os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    try:
        yield tmp
        _fsync(tmp, os.O_RDONLY)
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync(final.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))


def _fsync(path: Path, flags: int) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
