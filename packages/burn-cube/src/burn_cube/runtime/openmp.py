"""The cpu runtime's own OpenMP runtime: a private copy of the compiler's libgomp.

Kernels linked against ``libgomp.so.1`` share whichever libgomp the process loaded first. With
PyTorch imported first that is torch's bundled copy, initialised from the environment when
torch loaded it: its idle threads spin for ~300k iterations after every parallel region (the
default ``OMP_WAIT_POLICY``). After a torch op had started that team, every kernel launch left
the team spinning on a 2-core machine, against the interpreter's thread, the BLAS workers and
torch's own threads: the MLP step's CPU time doubled and its median time went 1 ms -> 4 ms.

So the kernels get an OpenMP runtime of their own: the compiler's libgomp copied once into the
cache with its soname renamed to `SONAME` (same length, patched in place), linked by name and
loaded before any kernel with ``GOMP_SPINCOUNT=SPIN_COUNT`` (unless the user set it or
``OMP_WAIT_POLICY``: idle threads spin briefly, then sleep), and kernels
opened with ``RTLD_DEEPBIND`` so that their ``GOMP_*`` calls bind to it even when another
libgomp is in the global scope (torch loads its copy ``RTLD_GLOBAL``). Thread counts follow
``OMP_NUM_THREADS``, as read when the copy loads; ``torch.set_num_threads`` no longer changes
them. Where no copy can be made (clang's libomp, a non-ELF64 little-endian libgomp), kernels
link the shared libgomp as before (`private_openmp` returns None).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import struct
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from burn_cube.cache import atomic_write, cache_dir

#: Soname of the private copy: as long as ``libgomp.so.1``, so that the dynamic string table
#: keeps its size.
SONAME = "libbcgomp.so"
_SHARED_SONAME = b"libgomp.so.1"
#: ELF program header types and dynamic tags read here.
_PT_LOAD, _PT_DYNAMIC = 1, 2
_DT_NULL, _DT_STRTAB, _DT_SONAME = 0, 5, 14



def rename_soname(data: bytearray, old: bytes, new: bytes) -> None:
    """Overwrite the DT_SONAME string `old` of the ELF64 little-endian shared library `data`
    with `new` (at most as long; NUL-padded), in place.

    Raises:
        ValueError: `data` is not such a library, or its soname is not `old`.
    """
    if data[:4] != b"\x7fELF" or data[4:6] != b"\x02\x01" or len(new) > len(old):
        raise ValueError("not an ELF64 little-endian library, or a longer soname")
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    loads, dynamic = [], None
    for i in range(phnum):
        kind, _, offset, vaddr, _, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data,
                                                                     phoff + i * phentsize)
        if kind == _PT_LOAD:
            loads.append((vaddr, offset, filesz))
        elif kind == _PT_DYNAMIC:
            dynamic = (offset, filesz)
    if dynamic is None:
        raise ValueError("no dynamic section")
    tags: dict[int, int] = {}
    for at in range(dynamic[0], dynamic[0] + dynamic[1], 16):
        tag, value = struct.unpack_from("<qQ", data, at)
        if tag == _DT_NULL:
            break
        tags.setdefault(tag, value)
    if _DT_STRTAB not in tags or _DT_SONAME not in tags:
        raise ValueError("no soname")
    strtab = tags[_DT_STRTAB]
    table = next((offset + strtab - vaddr for vaddr, offset, size in loads
                  if vaddr <= strtab < vaddr + size), None)
    if table is None:
        raise ValueError("string table outside the loaded segments")
    at = table + tags[_DT_SONAME]
    if data[at:at + len(old) + 1] != old + b"\0":
        raise ValueError(f"soname is not {old.decode()}")
    data[at:at + len(old)] = new.ljust(len(old), b"\0")


@functools.cache
def private_openmp(compiler: str) -> Path | None:
    """The folder holding `SONAME`, the private copy of the libgomp that `compiler` links
    with ``-fopenmp``, loaded into this process; None where no copy can be made.

    Args:
        compiler: Absolute path of the C compiler.
    """
    folder = _copy(compiler)
    if folder is not None:
        with brief_spinning():
            ctypes.CDLL(str(folder / SONAME))  # by path: kernels' NEEDED entry binds to it
    return folder


def team_size(folder: Path | None) -> int:
    """Threads of the kernels' OpenMP parallel regions: the private copy's
    ``omp_get_max_threads()`` (in `folder`, loaded), else as libgomp reads it, the leading
    ``OMP_NUM_THREADS`` where valid, else the CPU count."""
    if folder is not None:
        return max(1, int(ctypes.CDLL(str(folder / SONAME)).omp_get_max_threads()))
    first = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    return int(first) if first.isdigit() and int(first) > 0 else os.cpu_count() or 1


def _copy(compiler: str) -> Path | None:
    """The folder of `compiler`'s private copy, made where missing. Which copy (or none) is
    recorded in the cache per compiler binary: finding its libgomp runs the compiler."""
    st = os.stat(compiler)
    root = cache_dir() / "openmp"
    record = root / (hashlib.sha256(f"{compiler}:{st.st_size}:{st.st_mtime_ns}".encode())
                     .hexdigest()[:16] + ".txt")
    if record.exists():
        name = record.read_text()
        if not name:
            return None
        if (root / name / SONAME).exists():
            return root / name
    folder = _make_copy(compiler, root)
    root.mkdir(parents=True, exist_ok=True)
    atomic_write(record, b"" if folder is None else folder.name.encode())
    return folder


def _make_copy(compiler: str, root: Path) -> Path | None:
    """Copy `compiler`'s libgomp under `root` (one folder per libgomp file) with its soname
    renamed; None when it has none (clang links libomp) or it cannot be renamed."""
    try:
        found = subprocess.run([compiler, "-print-file-name=libgomp.so"], capture_output=True,
                               text=True, check=True).stdout.strip()
        source = Path(found).resolve(strict=True)
        st = source.stat()
    except (OSError, subprocess.CalledProcessError):
        return None
    folder = root / f"{source.name}-{st.st_size}-{st.st_mtime_ns}"
    if not (folder / SONAME).exists():
        data = bytearray(source.read_bytes())
        try:
            rename_soname(data, _SHARED_SONAME, SONAME.encode())
        except ValueError:
            return None
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(folder / SONAME, bytes(data))
    return folder


#: Spins of an idle OpenMP thread before it sleeps (``GOMP_SPINCOUNT``, set while the copy
#: loads). 2-core machine, 2 threads, min ratio to torch: sleeping at once (``PASSIVE``) paid
#: a wake-up per parallel region (MLP step 1.31x-1.39x, LeNet 1.65x-1.67x, transformer
#: 1.85x-1.88x); 10k spins 1.28x / 1.56x / 1.77x-1.79x; 30k 1.15x-1.16x / 1.51x-1.56x /
#: 1.83x-1.85x; 100k 1.08x / 1.46x / 1.80x-1.84x (transformer median 1.92x-1.94x, its
#: BLAS threads then competing with the spinning); libgomp's default 300k spun against the
#: interpreter and BLAS (a 2-thread transformer step 2x slower).
SPIN_COUNT = 30000


#: Held while `brief_spinning` has the variable set: threads loading kernels at once (a
#: device's first use from several) saw another's setting as the user's, or removed it twice
#: (KeyError).
_SPINNING = threading.RLock()


@contextmanager
def brief_spinning() -> Iterator[None]:
    """While a libgomp loads (it reads its environment once): idle OpenMP threads spin
    `SPIN_COUNT` times, then sleep, unless the user set ``OMP_WAIT_POLICY`` or
    ``GOMP_SPINCOUNT``; the variable is restored at once. One thread at a time (the
    environment is the process's)."""
    with _SPINNING:
        if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
            yield
            return
        os.environ["GOMP_SPINCOUNT"] = str(SPIN_COUNT)
        try:
            yield
        finally:
            del os.environ["GOMP_SPINCOUNT"]


def link_flags(folder: Path | None) -> tuple[str, ...]:
    """Linker arguments binding a kernel to the private copy in `folder` (after the
    sources: the ``-lgomp`` that ``-fopenmp`` appends is then dropped as unneeded); none
    without one."""
    if folder is None:
        return ()
    return ("-L", str(folder), f"-l:{SONAME}", "-Wl,--as-needed")
