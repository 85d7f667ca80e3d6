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

The cache is bounded (`max_bytes`: 1 GiB, or ``$BURN_CUBE_CACHE_MAX_BYTES``): a process that
writes an entry scans the directory now and then (`PRUNE_EVERY`, in a thread) and removes the
entries used least recently (`prune`) until they fit in `PRUNE_TO` of the bound; a hit marks
its entry used (the digest's, or the index entry's, mtime). An entry removed while another
process reads it is a miss there, rebuilt.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any

#: The bound on the cache's disk space by default (bytes as allocated: a small file takes a
#: whole block), and the share of it pruning leaves.
MAX_BYTES = 1 << 30
PRUNE_TO = 0.75
#: Seconds between two scans of a cache directory for pruning, by any process (the mtime of
#: its ``.pruned`` marker says when the last began).
PRUNE_EVERY = 600.0
#: Cache entries' files (``<key>.so``, ``.sha256``, ``.index.json``, ``.cubin``, ``.ptx``),
#: and temporary files left by a writer killed mid-write (removed after `STALE_TEMP` seconds).
_ENTRY = re.compile(r"([0-9a-f]{40})\.[a-z.0-9]+")
_TEMP = re.compile(r"\..+\.tmp")
STALE_TEMP = 86400.0


def max_bytes() -> int:
    """The cache's bound in bytes: ``$BURN_CUBE_CACHE_MAX_BYTES`` (an integer; 0: unbounded),
    else `MAX_BYTES` (also where the variable is not a non-negative integer: warned)."""
    text = os.environ.get("BURN_CUBE_CACHE_MAX_BYTES")
    if text is None:
        return MAX_BYTES
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        warnings.warn(f"burn-cube: BURN_CUBE_CACHE_MAX_BYTES={text!r} is not a byte count; "
                      f"bounding the compile cache at {MAX_BYTES} bytes", RuntimeWarning,
                      stacklevel=2)
        return MAX_BYTES
    return value


def prune(root: Path, limit: int, keep: float = PRUNE_TO) -> int:
    """Remove the entries of cache directory ``root`` used least recently (an entry's files
    go together; its last use is its newest file's mtime) until they take at most ``keep``
    times ``limit`` bytes, where they take more than ``limit``; and temporary files older than
    `STALE_TEMP`. Files another process removes meanwhile are skipped.

    Args:
        root: the cache directory.
        limit: the bound in bytes (as allocated on disk).
        keep: the share of ``limit`` left after pruning.
    Returns:
        The bytes freed.
    """
    groups: dict[str, tuple[float, int, list[Path]]] = {}
    total = freed = 0
    now = time.time()
    with os.scandir(root) as scan:
        for item in scan:
            try:
                if not item.is_file(follow_symlinks=False):
                    continue
                stat = item.stat(follow_symlinks=False)
            except OSError:
                continue
            size = stat.st_blocks * 512 or stat.st_size
            match = _ENTRY.fullmatch(item.name)
            if match is None:
                if _TEMP.fullmatch(item.name) and now - stat.st_mtime > STALE_TEMP \
                        and _remove(Path(item.path)):
                    freed += size
                continue
            total += size
            used, held, paths = groups.get(match[1], (0.0, 0, []))
            paths.append(Path(item.path))
            groups[match[1]] = (max(used, stat.st_mtime), held + size, paths)
    if total <= limit:
        return freed
    for _, held, paths in sorted(groups.values(), key=lambda group: group[0]):
        if total <= keep * limit:
            break
        for path in paths:
            _remove(path)
        freed += held
        total -= held
    return freed


def _prune_quietly(root: Path, limit: int) -> None:
    """`prune`, its errors ignored (a directory made unreadable meanwhile)."""
    try:
        prune(root, limit)
    except OSError:
        pass


def _remove(path: Path) -> bool:
    """Remove ``path``; whether it was there to remove."""
    try:
        path.unlink()
    except OSError:
        return False
    return True


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
        #: the thread of this cache's last scan for pruning.
        self.pruning: threading.Thread | None = None

    def prune_when_due(self) -> None:
        """`prune` the directory to `max_bytes`, in a thread of its own (a scan of a large
        cache takes seconds), when no process began a scan of it in the last `PRUNE_EVERY`
        seconds (called after a write; errors of the scan are ignored: a cache that cannot
        be pruned still serves)."""
        limit = max_bytes()
        if not limit:
            return
        marker = self.root / ".pruned"
        try:
            if time.time() - marker.stat().st_mtime < PRUNE_EVERY:
                return
        except FileNotFoundError:
            pass
        except OSError:
            return
        try:
            marker.touch()  # (other processes skip their scan meanwhile)
        except OSError:
            return
        self.pruning = threading.Thread(target=_prune_quietly, args=(self.root, limit),
                                        name="burn-cube-cache-prune", daemon=True)
        self.pruning.start()

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
        _used(digest)
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
        self.prune_when_due()
        return path

    def get_index(self, key: str) -> dict[str, Any] | None:
        """The launch-index entry for ``key``: ``{"artifact": <hex key>, "externals": {str:
        str}, "interface": {...}}``; None when missing, unreadable or of another shape."""
        path = self.root / f"{key}.index.json"
        try:
            entry = json.loads(path.read_bytes())
        except (OSError, ValueError, RecursionError):
            return None
        if not (isinstance(entry, dict) and isinstance(entry.get("artifact"), str)
                and re.fullmatch(r"[0-9a-f]{40}", entry["artifact"])
                and isinstance(entry.get("externals"), dict)
                and all(isinstance(k, str) and isinstance(v, str)
                        for k, v in entry["externals"].items())
                and isinstance(entry.get("interface"), dict)):
            return None
        _used(path)
        return entry

    def put_index(self, key: str, entry: dict[str, Any]) -> None:
        """Write a launch-index entry atomically."""
        atomic_write(self.root / f"{key}.index.json", json.dumps(entry).encode())
        self.prune_when_due()


def _used(path: Path) -> None:
    """Mark the entry of ``path`` used now (its mtime: `prune` keeps recent entries); an
    entry removed meanwhile stays a hit for this process."""
    try:
        os.utime(path)
    except OSError:
        pass
