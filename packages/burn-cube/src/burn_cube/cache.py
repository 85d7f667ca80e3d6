"""On-disk compile cache shared by processes.

Location: ``$BURN_CUBE_CACHE_DIR`` if set, else ``~/.cache/burn-cube``. An entry is
``<key><suffix>`` plus ``<key>.sha256`` holding the artifact's digest; keys hash the generated
source, the compiler identity (resolved path, size and mtime of the binary, which changes with
its version), the flags and the target. Both files are written to a temporary name in the same
directory and moved with ``os.replace``, so concurrent writers never expose a partial file; the
digest is written last and verified on every load, so a corrupt or truncated entry is reported
with ``warnings.warn`` and rebuilt, never loaded.

The launch index (``<key>.index.json``) maps a kernel's identity (its source text, signature,
the toolchain and burn-cube's own code) straight to an artifact key, with the fingerprints of
the globals the kernel read, so a later process can load the artifact without lowering the
kernel or generating code. An unreadable index entry is a miss.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any


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


@functools.cache
def package_identity() -> str:
    """Identity of the installed burn-cube code (path, size, mtime of each module): an index
    entry written by other code generation is never used."""
    root = Path(__file__).parent
    stats = []
    for dirpath, _, files in os.walk(root):
        for name in sorted(files):
            if name.endswith(".py"):
                st = os.stat(os.path.join(dirpath, name))
                stats.append(f"{dirpath}/{name}:{st.st_size}:{st.st_mtime_ns}")
    return "\n".join(sorted(stats))


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

    def get_index(self, key: str) -> dict[str, Any] | None:
        """The launch-index entry for ``key`` (None when missing or unreadable)."""
        try:
            entry = json.loads((self.root / f"{key}.index.json").read_bytes())
        except (OSError, ValueError):
            return None
        return entry if isinstance(entry, dict) else None

    def put_index(self, key: str, entry: dict[str, Any]) -> None:
        """Write a launch-index entry atomically."""
        atomic_write(self.root / f"{key}.index.json", json.dumps(entry).encode())
