"""CUDA C to a loadable image with NVRTC, cached on disk, with IEEE float semantics.

CuPy's ``RawModule`` appends ``-ftz=true`` to every NVRTC compile: float32 subnormals become
zero in arithmetic and comparisons (``x != 0.0f`` is false for ``x = 1e-44``), where PyTorch's
CUDA kernels, built without it, keep them. Kernels here are compiled by NVRTC directly with its
defaults (subnormals kept, IEEE division and square root) and loaded through CuPy's
``Module``. The image is a cubin for the device's architecture when NVRTC knows it, else PTX
for the newest architecture NVRTC knows below it (the driver finishes it). Images live in
burn-cube's disk cache, keyed by the source, the options, the architecture and NVRTC's version.
"""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path

from burn_cube.cache import DiskCache, cache_key
from burn_cube.errors import CompileError

#: NVRTC options of every kernel (no ``-ftz=true``: subnormals are kept, as PyTorch's).
OPTIONS = ("--std=c++17",)

try:
    from cupy_backends.cuda.libs import nvrtc
except ImportError:  # pragma: no cover - depends on the environment
    nvrtc = None


@functools.cache
def target(capability: int) -> tuple[str, bool]:
    """NVRTC's ``-arch`` value for a device of compute `capability` (e.g. 90), worked out once.

    Returns:
        (arch, cubin): ``sm_<capability>`` and True where NVRTC emits code for the device
        itself; else ``compute_<newest known below it>`` and False (PTX the driver compiles).

    Raises:
        CompileError: NVRTC knows no architecture at or below `capability`.
    """
    known = [arch for arch in nvrtc.getSupportedArchs() if arch <= capability]
    if not known:
        raise CompileError(f"NVRTC {_version()} supports no architecture up to "
                           f"sm_{capability}", "nvrtc")
    if known[-1] == capability:
        return f"sm_{capability}", True
    return f"compute_{known[-1]}", False


def compile_image(source: str, capability: int, name: str,
                  disk: DiskCache | None = None) -> bytes:
    """The cubin (or PTX) of `source`, from the disk cache or compiled and stored there.

    Args:
        source: CUDA C defining the kernel's ``extern "C" __global__`` entry point.
        capability: The device's compute capability (major * 10 + minor).
        name: The kernel's name, for errors.
        disk: The cache (default: burn-cube's cache directory).

    Returns:
        The image, for ``cupy.cuda.function.Module.load``.

    Raises:
        CompileError: NVRTC rejects the source (its log in the message).
    """
    arch, cubin = target(capability)
    disk = disk or DiskCache()
    key = cache_key(source, " ".join(OPTIONS), arch, f"nvrtc {_version()}")
    suffix = ".cubin" if cubin else ".ptx"
    hit = disk.get(key, suffix, arch)
    if hit is not None:
        try:
            return hit.read_bytes()
        except FileNotFoundError:  # pruned by another process meanwhile: a miss
            pass
    image = _compile(source, arch, cubin, name)
    fd, name_on_disk = tempfile.mkstemp(dir=disk.root, prefix=f".{key}.", suffix=".tmp")
    produced = Path(name_on_disk)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(image)
        disk.put(key, suffix, produced, arch)
    except BaseException:
        produced.unlink(missing_ok=True)
        raise
    return image


@functools.cache
def _version() -> str:
    """NVRTC's version, as ``major.minor``."""
    return ".".join(map(str, nvrtc.getVersion()))


def _compile(source: str, arch: str, cubin: bool, name: str) -> bytes:
    """Run NVRTC on `source` for `arch`; the cubin, or PTX where `cubin` is False."""
    program = nvrtc.createProgram(source, f"{name}.cu", [], [])
    try:
        try:
            nvrtc.compileProgram(program, [*OPTIONS, *_include_options(), f"-arch={arch}"])
        except nvrtc.NVRTCError as exc:
            raise CompileError(f"NVRTC failed: {exc}\n{nvrtc.getProgramLog(program)}",
                               name) from None
        return bytes(nvrtc.getCUBIN(program) if cubin else nvrtc.getPTX(program))
    finally:
        nvrtc.destroyProgram(program)


@functools.cache
def _include_options() -> tuple[str, ...]:
    """The ``-I`` options CuPy's own compiles use (CUDA's headers, such as ``cuda_fp16.h``,
    wherever CuPy found them: a CUDA toolkit or NVIDIA's wheels), without anything else of
    CuPy's option set; worked out once."""
    from cupy._core import core

    assembled = getattr(core, "assemble_cupy_compiler_options", None)
    if assembled is not None:
        return tuple(opt for opt in assembled(()) if opt.startswith("-I"))
    from cupy.cuda import get_cuda_path

    return (f"-I{get_cuda_path()}/include",)
