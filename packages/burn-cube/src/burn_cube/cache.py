"""On-disk compile cache shared by processes.

Location: ``$BURN_CUBE_CACHE_DIR`` if set, else ``~/.cache/burn-cube``. An entry is
``<key><suffix>`` plus ``<key>.sha256`` holding the artifact's digest; keys hash the generated
source, the compiler identity (resolved path, size and mtime of the binary, which changes with
its version), the flags and the target. Both files are written to a temporary name in the same
directory and moved with ``os.replace``, so concurrent writers never expose a partial file; the
digest is written last and verified on every load, so a corrupt or truncated entry is reported
with ``warnings.warn`` and rebuilt, never loaded.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import warnings
from pathlib import Path


def cache_dir() -> Path:
    """The cache directory (created on demand)."""
    root = os.environ.get("BURN_CUBE_CACHE_DIR")
    path = Path(root) if root else Path.home() / ".cache" / "burn-cube"
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_key(*parts: str) -> str:
    """A stable hex key for the given parts."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:40]


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and ``os.replace``.

    Args:
        path: Destination.
        data: Bytes to write.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class DiskCache:
    """Content-addressed store of compiled artifacts.

    Args:
        root: Directory; defaults to ``cache_dir()``.
    """

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or cache_dir()

    def get(self, key: str, suffix: str) -> Path | None:
        """The verified artifact for ``key``, or None (missing, or corrupt: warned)."""
        path, digest = self.root / f"{key}{suffix}", self.root / f"{key}.sha256"
        try:
            expected = digest.read_text().strip()
            actual = _digest(path)
        except FileNotFoundError:
            return None
        if actual != expected:
            warnings.warn(f"burn-cube: corrupt compile-cache entry {path}; recompiling",
                          RuntimeWarning, stacklevel=3)
            return None
        return path

    def put(self, key: str, suffix: str, produced: Path) -> Path:
        """Move a freshly built artifact into the cache.

        Args:
            key: Cache key.
            suffix: File suffix (``.so``).
            produced: The built file; it must be on the same filesystem as the cache.

        Returns:
            The final path of the entry.
        """
        path = self.root / f"{key}{suffix}"
        digest = _digest(produced)
        os.replace(produced, path)
        atomic_write(self.root / f"{key}.sha256", digest.encode())
        return path
