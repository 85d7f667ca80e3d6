"""CPU runtime: generated C compiled by the system compiler, loaded with ctypes.

The compiler is ``$CC`` if set, else the first of ``cc``, ``gcc``, ``clang`` on ``PATH``,
looked up when the first kernel is compiled. Flags: ``-O3 -march=native -fopenmp
-fno-math-errno`` (no ``-ffast-math``: NaN and infinities keep IEEE semantics, and results match
numpy to a few ulp of libm).
"""

from __future__ import annotations

import ctypes
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from burn_cube.cache import DiskCache, cache_key, native_target, package_identity
from burn_cube.errors import CompileError, LaunchError, MissingCompilerError
from burn_cube.ir.nodes import KernelIR, meta_names
from burn_cube.runtime.base import DeviceArray, Properties, Runtime, meta_value
from burn_cube.types import DType, from_numpy

FLAGS = ("-O3", "-march=native", "-fopenmp", "-fno-math-errno", "-std=gnu11", "-fPIC", "-shared")


def find_compiler() -> str:
    """Absolute path of the C compiler to use.

    Returns:
        The resolved compiler path.

    Raises:
        MissingCompilerError: ``$CC`` points nowhere, or no cc/gcc/clang is on PATH.
    """
    cc = os.environ.get("CC")
    candidates = [cc] if cc else ["cc", "gcc", "clang"]
    for name in candidates:
        found = shutil.which(name)
        if found:
            return os.path.realpath(found)
    what = f"$CC={cc!r}" if cc else "cc, gcc or clang on PATH"
    raise MissingCompilerError(f"the cpu runtime needs a C compiler; not found: {what}. "
                               "Install gcc or clang, or point $CC at one.")


def compiler_identity(path: str) -> str:
    """Identity of a compiler binary: its resolved path, size and mtime (changes on upgrade)."""
    st = os.stat(path)
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


@dataclass
class CompiledC:
    """A loaded kernel library."""

    library: ctypes.CDLL
    function: Any
    key: str


class CpuRuntime(Runtime):
    """Runs kernels on the host CPU, cubes spread over OpenMP threads."""

    name = "cpu"

    def __init__(self, index: int = 0) -> None:
        super().__init__(index)
        self.disk = DiskCache()
        self._compiled: dict[str, CompiledC] = {}
        self._allocated = 0

    @property
    def properties(self) -> Properties:
        return Properties("cpu", f"host CPU ({os.cpu_count()} threads)", "c",
                          frozenset(("bool", "u32", "i32", "i64", "f16", "bf16", "f32", "f64")),
                          1024, (2**31 - 1, 2**31 - 1, 2**31 - 1), 1)

    def allocate(self, shape: tuple[int, ...], dtype: DType) -> DeviceArray:
        self._allocated += 1
        return DeviceArray(self, np.zeros(shape, dtype.numpy), tuple(shape), dtype)

    def upload(self, array: np.ndarray) -> DeviceArray:
        dtype = from_numpy(array.dtype)
        if dtype is None:
            raise LaunchError(f"unsupported numpy dtype {array.dtype}")
        return DeviceArray(self, np.array(array, order="C", copy=True), array.shape, dtype)

    def download_storage(self, array: DeviceArray) -> np.ndarray:
        return array.handle.copy()

    def compile(self, kernel: KernelIR) -> CompiledC:
        from burn_cube.codegen import generate  # lazily: launch-index hits never generate

        source = generate(kernel, "c")
        compiler = find_compiler()
        target = native_target(compiler)
        key = cache_key(source, compiler_identity(compiler), " ".join(FLAGS), "c", target)
        compiled = self._load(key, kernel.name, target)
        if compiled is None:
            compiled = self._open(key, kernel.name, self._build(source, compiler, key,
                                                                kernel.name, target))
        return compiled

    def _index_key(self, identity: str) -> str:
        compiler = find_compiler()
        return cache_key(identity, compiler_identity(compiler), " ".join(FLAGS), "c",
                         native_target(compiler), package_identity())

    def cached(self, identity: str, valid: Callable[[dict[str, str]], bool]
               ) -> tuple[CompiledC, KernelIR] | None:
        entry = self.disk.get_index(self._index_key(identity))
        try:
            if entry is None or not valid(entry["externals"]):
                return None
            kernel = KernelIR.from_interface(entry["interface"])
            compiled = self._load(entry["artifact"], kernel.name, native_target(find_compiler()))
        except (KeyError, TypeError, ValueError):  # malformed entry: a miss, rewritten later
            return None
        return None if compiled is None else (compiled, kernel)

    def remember(self, identity: str, kernel: KernelIR, compiled: CompiledC) -> None:
        if kernel.externals is not None:
            self.disk.put_index(self._index_key(identity), {
                "artifact": compiled.key, "externals": kernel.externals,
                "interface": kernel.interface()})

    def _load(self, key: str, name: str, target: str) -> CompiledC | None:
        """The loaded library of cache entry ``key`` (None when the entry is missing, or not
        built for ``target``)."""
        if key in self._compiled:
            return self._compiled[key]
        path = self.disk.get(key, ".so", target)
        return None if path is None else self._open(key, name, path)

    def _open(self, key: str, name: str, path: Path) -> CompiledC:
        try:
            library = ctypes.CDLL(str(path))
        except OSError as exc:
            raise CompileError(f"cannot load the compiled kernel: {exc}", name) from exc
        function = library.bc_kernel
        function.restype = None
        function.argtypes = [ctypes.c_void_p] * 4
        compiled = self._compiled[key] = CompiledC(library, function, key)
        return compiled

    def _build(self, source: str, compiler: str, key: str, name: str, target: str) -> Path:
        import subprocess
        import tempfile

        with tempfile.TemporaryDirectory(dir=self.disk.root, prefix=".build-") as tmp:
            src, out = Path(tmp) / "kernel.c", Path(tmp) / "kernel.so"
            src.write_text(source)
            proc = subprocess.run([compiler, *FLAGS, "-o", str(out), str(src), "-lm"],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise CompileError(f"the C compiler failed:\n{proc.stderr[-2000:]}", name)
            return self.disk.put(key, ".so", out, target)

    def launch(self, compiled: CompiledC, kernel: KernelIR, cube_count: tuple[int, int, int],
               args: list[Any]) -> None:
        pointers = (ctypes.c_void_p * len(args))()
        keep: list[np.ndarray] = []
        meta: list[int] = []
        for i, (param, arg) in enumerate(zip(kernel.params, args, strict=True)):
            if param.tensor:
                pointers[i] = arg.handle.ctypes.data
                buf = kernel.buffers[param.name]
                meta += [meta_value(arg, f, d, buf.dtype.lanes)
                         for _, f, d in meta_names(buf, extent=True)]
            else:
                scalar = np.array(arg, dtype=param.dtype.numpy)
                keep.append(scalar)
                pointers[i] = scalar.ctypes.data
        meta_arr = np.array(meta or [0], dtype=np.int64)
        counts = np.array(cube_count, dtype=np.uint32)
        status = np.zeros(1, dtype=np.int32)
        compiled.function(ctypes.addressof(pointers), meta_arr.ctypes.data, counts.ctypes.data,
                          status.ctypes.data)
        if status[0]:
            raise LaunchError("out-of-bounds buffer access: the offending reads/writes were "
                              "skipped", kernel.name)

    def sync(self) -> None:
        """Launches are synchronous on the CPU."""

    def memory_stats(self) -> dict[str, int]:
        return {"allocations": self._allocated, "compiled_kernels": len(self._compiled)}
