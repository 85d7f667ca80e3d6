"""On-disk compile cache shared by processes.

Location: ``$BURN_CUBE_CACHE_DIR`` if set, else ``~/.cache/burn-cube``. An entry is
``<key><suffix>`` plus ``<key>.sha256`` holding the artifact's digest and the fingerprint of
the target it was built for; keys hash the generated source, the compiler identity (resolved
path, size and mtime of the binary, which changes with its version), the flags and the target
(`native_target`: what ``-march=native`` resolves to on this CPU, not the flag's text). Both
files are written to a temporary name in the same directory and moved with ``os.replace``, so
concurrent writers never expose a partial file; the digest is written last and verified on
every load, with the target, so a corrupt or truncated entry, or one built for another CPU (in
a cache directory shared between machines), is reported with ``warnings.warn`` and rebuilt,
never loaded.

The launch index (``<key>.index.json``) maps a kernel's identity (its source text, signature,
the toolchain and burn-cube's own code) straight to an artifact key, with the fingerprints of
the globals the kernel read, so a later process can load the artifact without lowering the
kernel or generating code. An unreadable or malformed index entry is a miss (rewritten later).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
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
    return source_identity(str(Path(__file__).parent))


@functools.cache
def source_identity(root: str) -> str:
    """Identity of the Python code under directory ``root``: the path, size and mtime of each
    module, one per line (a launch-index key of kernels that code builds changes with it)."""
    stats = []
    for dirpath, _, files in os.walk(root):
        for name in sorted(files):
            if name.endswith(".py"):
                st = os.stat(os.path.join(dirpath, name))
                stats.append(f"{dirpath}/{name}:{st.st_size}:{st.st_mtime_ns}")
    return "\n".join(sorted(stats))


def _output(command: list[str]) -> str:
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return ""
    return proc.stdout if proc.returncode == 0 else ""


_CPUINFO_FIELDS = ("vendor_id", "cpu family", "model", "model name", "flags", "Features",
                   "CPU implementer", "CPU part")


def _cpuinfo() -> str:
    """The first processor's identifying lines of /proc/cpuinfo ("" elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return ""
    seen: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip() in _CPUINFO_FIELDS:
            seen.setdefault(name.strip(), " ".join(value.split()))
    return "\n".join(f"{k}: {v}" for k, v in sorted(seen.items()))


@functools.cache
def native_target(compiler: str) -> str:
    """What ``-march=native`` builds for with ``compiler`` on this machine: the compiler's
    version line, then gcc's resolved ``-march`` / ``-mtune`` and every enabled ``-m`` option
    (``-Q --help=target``), or, for compilers without that report, the CPU model and feature
    flags of /proc/cpuinfo. Asking the compiler takes two runs of it (~25 ms of every cpu
    runtime's start), so the answer is kept in the cache directory per compiler binary (path,
    size, mtime) and CPU (the identifying lines of /proc/cpuinfo; not kept where there are
    none).

    Args:
        compiler: Path of the C compiler.

    Returns:
        A text that differs between CPUs whose native code differs.
    """
    cpu = _cpuinfo()
    record = None
    if cpu:
        st = os.stat(compiler)
        record = cache_dir() / ("target-" + hashlib.sha256(
            f"{compiler}:{st.st_size}:{st.st_mtime_ns}\n{cpu}".encode()).hexdigest()[:16] + ".txt")
        try:
            return record.read_text()
        except (OSError, UnicodeDecodeError):
            pass
    version = _output([compiler, "--version"]).partition("\n")[0]
    report = _output([compiler, "-march=native", "-Q", "--help=target"])
    options = [" ".join(line.split()) for line in report.splitlines()
               if re.match(r"\s+-m(arch|tune)=\s", line) or line.rstrip().endswith("[enabled]")]
    target = "\n".join([version, *options] if options else [version, cpu])
    if record is not None and version:  # a compiler that did not answer is asked again
        atomic_write(record, target.encode())
    return target


def fingerprint(target: str) -> str:
    """A short hex fingerprint of a target text (stored with each artifact)."""
    return hashlib.sha256(target.encode()).hexdigest()[:16]


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


def _rebuild(path: Path, why: str) -> Path | None:
    """Warn that the entry at ``path`` is rebuilt; returns None (a miss)."""
    warnings.warn(f"burn-cube: {why} compile-cache entry {path}; recompiling", RuntimeWarning,
                  stacklevel=4)
    return None


class DiskCache:
    """Content-addressed store of compiled artifacts.

    Args:
        root: Directory; defaults to ``cache_dir()``.
    """

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or cache_dir()

    def get(self, key: str, suffix: str, target: str = "") -> Path | None:
        """The verified artifact for ``key``, or None (missing; or corrupt, or built for another
        target: warned).

        Args:
            key: Cache key.
            suffix: File suffix (``.so``).
            target: The target the artifact must have been built for (`native_target`).
        """
        path, digest = self.root / f"{key}{suffix}", self.root / f"{key}.sha256"
        try:
            recorded = digest.read_bytes()
            actual = _digest(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return _rebuild(path, f"unreadable ({exc})")
        fields = recorded.decode("ascii", errors="replace").split()
        if len(fields) != 2 or fields[0] != actual:
            return _rebuild(path, "corrupt")
        if fields[1] != fingerprint(target):
            return _rebuild(path, "built for another target")
        return path

    def put(self, key: str, suffix: str, produced: Path, target: str = "") -> Path:
        """Move a freshly built artifact into the cache.

        Args:
            key: Cache key.
            suffix: File suffix (``.so``).
            produced: The built file; it must be on the same filesystem as the cache.
            target: The target it was built for (`native_target`), recorded with its digest.

        Returns:
            The final path of the entry.
        """
        path = self.root / f"{key}{suffix}"
        digest = _digest(produced)
        os.replace(produced, path)
        atomic_write(self.root / f"{key}.sha256", f"{digest} {fingerprint(target)}\n".encode())
        return path

    def get_index(self, key: str) -> dict[str, Any] | None:
        """The launch-index entry for ``key``: ``{"artifact": <hex key>, "externals": {str:
        str}, "interface": {...}}``; None when missing, unreadable or of another shape."""
        try:
            entry = json.loads((self.root / f"{key}.index.json").read_bytes())
        except (OSError, ValueError, RecursionError):
            return None
        if not (isinstance(entry, dict) and isinstance(entry.get("artifact"), str)
                and re.fullmatch(r"[0-9a-f]{40}", entry["artifact"])
                and isinstance(entry.get("externals"), dict)
                and all(isinstance(k, str) and isinstance(v, str)
                        for k, v in entry["externals"].items())
                and isinstance(entry.get("interface"), dict)):
            return None
        return entry

    def put_index(self, key: str, entry: dict[str, Any]) -> None:
        """Write a launch-index entry atomically."""
        atomic_write(self.root / f"{key}.index.json", json.dumps(entry).encode())
