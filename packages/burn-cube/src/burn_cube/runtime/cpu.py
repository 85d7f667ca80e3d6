"""CPU runtime: generated C compiled by the system compiler, loaded with ctypes.

The compiler is ``$CC`` if set, else the first of ``cc``, ``gcc``, ``clang`` on ``PATH``,
looked up when the first kernel is compiled. Flags: ``-O3 -march=native -fopenmp -fwrapv
-fno-math-errno -fno-trapping-math`` (signed integers wrap, as numpy; no ``-ffast-math``: NaN and
infinities keep IEEE semantics, and results match numpy to a few ulp of libm; floating-point
exception flags are not observed, so a loop whose body selects between a division or a rounding
and another value vectorizes without AVX-512's masks: the inline f32 exp and tanh on AVX2), and
the `OPTIONAL_FLAGS` that the compiler takes.
Kernels run on the runtime's private copy of libgomp (`openmp.py`), whatever OpenMP runtime
PyTorch or others loaded.
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
import shutil
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from burn_cube.cache import (
    DiskCache,
    atomic_write,
    cache_dir,
    cache_key,
    native_target,
    package_identity,
)
from burn_cube.errors import CompileError, LaunchError, MissingCompilerError
from burn_cube.ir.nodes import KernelIR
from burn_cube.runtime.base import (
    BufferPool,
    DeviceArray,
    PooledArray,
    Properties,
    Runtime,
    _Never,
    direct_range,
    scalar_converter,
)
from burn_cube.runtime.openmp import brief_spinning, link_flags, private_openmp, team_size
from burn_cube.types import DTYPES, DType, from_numpy

FLAGS = ("-O3", "-march=native", "-fopenmp", "-fno-math-errno", "-fno-trapping-math", "-fwrapv",
         "-std=gnu11", "-fPIC", "-shared")
#: Flags of generated kernels besides `FLAGS`: no contraction of ``a * b + c`` into an FMA, so
#: each op rounds as its own kernel would and a value computed in two places of one kernel (a
#: vector loop and its scalar remainder; a fused reduction's read and the result it also
#: writes) rounds one way (contracted in some columns only, ``x * w + 0.5`` of a fused
#: ``amax(0)`` equalled no element there, and autodiff's max mask lost those columns'
#: gradients). The math helpers' polynomials spell their FMAs (`table_c.HELPERS_F32_MATH`);
#: the hand-written gemm (`gemm.c`) keeps contraction.
KERNEL_FLAGS = ("-ffp-contract=off",)
#: The host's physical memory in bytes (0 where the platform does not say).
HOST_MEMORY = (os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
               if hasattr(os, "sysconf") and "SC_PHYS_PAGES" in os.sysconf_names else 0)


def refuse_past_memory(shape: tuple[int, ...], dtype: DType) -> None:
    """Raise MemoryError for a buffer larger than the host's physical memory.

    Where the kernel overcommits memory (Linux's `vm.overcommit_memory=1`), numpy would hand out
    such a buffer and the process would be killed when kernels touch it.

    Args:
        shape: the buffer's shape.
        dtype: its element type.
    """
    nbytes = math.prod(shape) * dtype.numpy.itemsize
    if HOST_MEMORY and nbytes > HOST_MEMORY:
        raise MemoryError(f"{nbytes} bytes asked for, past the host's {HOST_MEMORY} bytes "
                          f"of memory (shape {tuple(shape)}, {dtype.name})")


#: Buffers of at least `ALIGNED_BYTES` start on a cache line (`ALIGNMENT` bytes; numpy's own
#: large buffers start 16 bytes past a page): kernels then store whole lines, which the C
#: target's non-temporal stores of large outputs need (`codegen.c.STREAM_BYTES`).
ALIGNMENT = 64
ALIGNED_BYTES = 1 << 16


def line_aligned_empty(shape: tuple[int, ...], dtype: DType, zeros: bool = False) -> np.ndarray:
    """An uninitialised (or, with `zeros`, zeroed) C-contiguous array, starting on a cache
    line where it is large.

    Args:
        shape: its shape.
        dtype: its element type.
        zeros: fill it with zeros (numpy's zeroed allocation: untouched pages stay lazy).

    Returns:
        The array (a view of a slightly larger byte buffer where aligned).
    """
    nbytes = math.prod(shape) * dtype.numpy.itemsize
    make = np.zeros if zeros else np.empty
    if nbytes < ALIGNED_BYTES:
        return make(shape, dtype.numpy)
    raw = make(nbytes + ALIGNMENT, np.uint8)
    skip = -raw.ctypes.data % ALIGNMENT
    return raw[skip:skip + nbytes].view(dtype.numpy).reshape(shape)


#: dlopen flag binding a library's symbols to its own dependencies first (Linux).
_DEEPBIND = getattr(os, "RTLD_DEEPBIND", 0)
#: Flags added where the compiler takes them (x86 ones): gcc 12 emits masked AVX512-FP16 moves
#: that binutils 2.40 rejects, so _Float16 is computed through f32 conversions instead; loops
#: vectorize at 512 bits where the CPU has AVX-512 (gcc's tuning for Intel's AVX-512 cores picks
#: 256: the fused tanh-GELU chain, compute-bound, ran 1.2x faster at 512; no-op elsewhere).
OPTIONAL_FLAGS = ("-mno-avx512fp16", "-mprefer-vector-width=512")


@functools.cache
def compile_flags(compiler: str) -> tuple[str, ...]:
    """`FLAGS` plus the `OPTIONAL_FLAGS` that `compiler` accepts: probed once per compiler
    binary and remembered in the cache directory (a probe runs the compiler)."""
    import hashlib
    import subprocess
    import tempfile

    record = cache_dir() / ("flags-" + hashlib.sha256(
        f"{compiler_identity(compiler)}:{OPTIONAL_FLAGS}".encode()).hexdigest()[:16] + ".txt")
    if record.exists():
        return (*FLAGS, *record.read_text().split())
    accepted = []
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "probe.c"
        src.write_text("int bc_probe(void) { return 0; }\n")
        for flag in OPTIONAL_FLAGS:
            proc = subprocess.run([compiler, "-c", flag, "-o", str(Path(tmp) / "probe.o"),
                                   str(src)], capture_output=True)
            if proc.returncode == 0:
                accepted.append(flag)
    record.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(record, " ".join(accepted).encode())
    return (*FLAGS, *accepted)


#: `find_compiler`'s answers per ($CC, $PATH): a lookup walks PATH and resolves links (~50 us),
#: and the launch index asks for the compiler per kernel.
_COMPILERS: dict[tuple[str | None, str | None], str] = {}


def find_compiler() -> str:
    """Absolute path of the C compiler to use, looked up once per ($CC, $PATH).

    Returns:
        The resolved compiler path.

    Raises:
        MissingCompilerError: ``$CC`` points nowhere, or no cc/gcc/clang is on PATH.
    """
    cc, path = os.environ.get("CC"), os.environ.get("PATH")
    found = _COMPILERS.get((cc, path))
    if found is None:
        found = _COMPILERS[(cc, path)] = _look_up_compiler(cc)
    return found


def _look_up_compiler(cc: str | None) -> str:
    """`find_compiler`'s lookup: ``cc`` (``$CC``) if set, else cc, gcc or clang on PATH."""
    candidates = [cc] if cc else ["cc", "gcc", "clang"]
    for name in candidates:
        found = shutil.which(name)
        if found:
            return os.path.realpath(found)
    what = f"$CC={cc!r}" if cc else "cc, gcc or clang on PATH"
    raise MissingCompilerError(f"the cpu runtime needs a C compiler; not found: {what}. "
                               "Install gcc or clang, or point $CC at one.")


def vectorized_lines(source: str, workdir: Path) -> set[int]:
    """The lines of C `source` whose loops the runtime's compiler, with the runtime's flags,
    vectorizes (its ``-fopt-info-vec-optimized`` report: gcc's; clang reports nothing).

    Args:
        source: C source (a kernel's, or hand-written loops).
        workdir: A directory for the source and object files.
    Returns:
        1-based line numbers of vectorized loops.
    """
    import subprocess

    compiler = find_compiler()
    flags = [f for f in source_flags(compiler) if f != "-shared"]
    path = workdir / "vectorized.c"
    path.write_text(source)
    report = subprocess.run([compiler, *flags, "-c", "-fopt-info-vec-optimized", str(path),
                             "-o", str(workdir / "vectorized.o")],
                            capture_output=True, text=True, check=True).stderr
    return {int(line.split(":")[1]) for line in report.splitlines()
            if "loop vectorized" in line}


def source_flags(compiler: str, contract: bool = False) -> tuple[str, ...]:
    """The compile flags of a kernel library: `compile_flags`, then `KERNEL_FLAGS` unless
    `contract` (hand-written sources that rely on contraction)."""
    return (*compile_flags(compiler), *(() if contract else KERNEL_FLAGS))


def build_flags(compiler: str, contract: bool = False) -> str:
    """Everything of a build command that a kernel library depends on, beyond its source and
    the compiler: `source_flags` and the OpenMP runtime it links (a cache key part)."""
    return " ".join((*source_flags(compiler, contract), *link_flags(private_openmp(compiler))))


def compiler_identity(path: str) -> str:
    """Identity of a compiler binary: its resolved path, size and mtime (changes on upgrade)."""
    st = os.stat(path)
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


#: struct code of one argument slot (8 bytes, the value first) per scalar dtype; bf16 as bits.
_SLOT = {"bool": "?7x", "u8": "B7x", "i8": "b7x", "u32": "I4x", "i32": "i4x", "i64": "q",
         "f16": "e6x", "bf16": "H6x", "f32": "f4x", "f64": "d"}


def _address(handle: np.ndarray) -> int:
    """Address of a numpy buffer's first element (cheaper than ``handle.ctypes.data``)."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(handle))  # type: ignore[arg-type]
    except (TypeError, ValueError):  # read-only or empty
        return int(handle.ctypes.data)


def _pointer(array: DeviceArray) -> int:
    """Address of an array's storage (a view's is its base's), worked out once per storage
    and kept on the array."""
    address = array.address
    if address is None:
        root = array.base if array.base is not None else array
        address = root.address
        if address is None:
            address = root.address = _address(root.handle)
        array.address = address
    return address


def element_address(array: DeviceArray) -> int:
    """Address of an array's first element (its storage's, `_pointer`, past its offset)."""
    return _pointer(array) + array.offset * array.dtype.numpy.itemsize


@functools.lru_cache(maxsize=256)
def _dense_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for dim in reversed(shape):
        out.append(acc)
        acc *= dim
    return tuple(reversed(out))


def _tensor_slots(array: DeviceArray, lanes: int) -> tuple[int, ...]:
    """A tensor's pointer and metadata slots (``meta_names(extent=True)`` order), counted in
    lines of ``lanes`` elements as ``base.meta_value`` does."""
    shape, base = array.shape, array.base
    size = math.prod(shape)
    if base is None:
        strides, extent = _dense_strides(shape), size
    else:
        strides = array.strides
        extent = math.prod(base.shape) if base.base is None else base.extent
    if lanes == 1:
        return (_pointer(array), size, *shape, *strides, array.offset, extent)
    return (_pointer(array), size // lanes, *shape[:-1], shape[-1] // lanes,
            *(s // lanes for s in strides[:-1]), strides[-1], array.offset // lanes,
            extent // lanes)


def _vector_slots(array: DeviceArray, lanes: int) -> tuple[int, ...]:
    """`_tensor_slots` of a rank-1 tensor (the common case, spelled out)."""
    n, base = array.shape[0] // lanes, array.base
    if base is None:
        return (_pointer(array), n, n, 1, 0, n)
    extent = math.prod(base.shape) if base.base is None else base.extent
    return (_pointer(array), n, n, array.strides[0], array.offset // lanes,
            extent // lanes)


class Plan:
    """How one kernel's arguments become its argument block, worked out once.

    The block (int64 slots): the cube counts x, y, z, then per parameter in order a tensor's
    data pointer and metadata (``meta_names(extent=True)``), or a scalar's value in the low
    bytes of its slot (see ``codegen/c.py``).

    Args:
        kernel: The kernel's (interface) IR.
    """

    def __init__(self, kernel: KernelIR) -> None:
        fmt = ["=3q"]
        #: per parameter: its kind (`_VECTOR`, `_TENSOR`, `_BF16` or `_NUMBER`) and lanes.
        self.params: list[tuple[int, int]] = []
        for p in kernel.params:
            if p.tensor:
                rank = kernel.buffers[p.name].rank
                fmt.append(f"Q{2 * rank + 3}q")
                self.params.append((_VECTOR if rank == 1 else _TENSOR, p.dtype.lanes))
            else:
                fmt.append(_SLOT[p.dtype.name])
                self.params.append((_BF16 if p.dtype.name == "bf16" else _NUMBER, 1))
        self.struct = struct.Struct("".join(fmt))

    def launcher(self, runtime: Runtime, compiled: CompiledC, kernel: KernelIR,
                 cube_count: tuple[int, int, int], args: list[Any]) -> Callable[[Any], None]:
        """`CpuRuntime.plan`: the block of ``args`` is made once; a launch writes only the
        data pointers and the scalars into it. Blocks (each with its status word) are taken
        from a free list and put back, so threads launching at once use their own."""
        slot = 3
        tensors: list[tuple[int, int]] = []  # (slot, argument)
        # (view, its index, argument, direct_range's type, low, high, packing of the others)
        scalars: list[tuple[int, int, int, type, Any, Any, Callable[[Any, Any], None]]] = []
        for i, p in enumerate(kernel.params):
            if p.tensor:
                tensors.append((slot, i))
                slot += 2 * kernel.buffers[p.name].rank + 4
            else:
                view, per_slot = _DIRECT.get(p.dtype.name, (0, 1))
                kind, low, high = direct_range(p.dtype) if p.dtype.name in _DIRECT else (
                    _Never, 0, 0)
                scalars.append((view, slot * per_slot, i, kind, low, high,
                                _packer(p.dtype, kernel.name, p.name, 8 * slot)))
                slot += 1
        template = self.block(cube_count, args)
        block_type = ctypes.c_int64 * (len(template) // 8)
        function, name, pointers = compiled.function, kernel.name, tuple(tensors)
        free: list[tuple[Any, tuple[Any, ...], ctypes.c_int32, Any]] = []

        def launch(values: Any) -> None:
            try:
                entry = free.pop()
            except IndexError:
                block, status = block_type.from_buffer_copy(template), ctypes.c_int32(0)
                raw = memoryview(block).cast("B")
                entry = (block, (raw.cast("q"), raw.cast("f"), raw.cast("d")), status,
                         ctypes.byref(status))
            block, views, status, status_ref = entry
            words = views[0]
            for at, i in pointers:
                array = values[i]
                address = array.address
                words[at] = address if address is not None else _pointer(array)
            for view, index, i, kind, low, high, pack in scalars:
                value = values[i]
                if type(value) is kind and low <= value <= high:
                    views[view][index] = value
                else:
                    pack(block, value)
            runtime.launches += 1
            function(block, status_ref)
            if status.value:
                status.value = 0
                free.append(entry)
                raise LaunchError(_OUT_OF_BOUNDS, name)
            free.append(entry)

        return launch

    def block(self, cube_count: tuple[int, int, int], args: list[Any]) -> bytes:
        """The argument block of one launch (a dense rank-1 tensor's slots written here, the
        most frequent argument)."""
        slots: list[Any] = list(cube_count)
        for (kind, lanes), arg in zip(self.params, args, strict=True):
            if kind == _NUMBER:
                slots.append(arg)
            elif kind == _VECTOR and arg.base is None:
                n = arg.shape[0] // lanes
                address = arg.address
                slots += (address if address is not None else _pointer(arg), n, n, 1, 0, n)
            elif kind == _VECTOR:
                slots += _vector_slots(arg, lanes)
            elif kind == _TENSOR:
                slots += _tensor_slots(arg, lanes)
            else:
                slots += _bf16_bits(arg)
        return self.struct.pack(*slots)


#: Scalar dtypes a launch writes as they are (a Python number of `direct_range`) through a view
#: of the block: (view: 0 int64, 1 float32, 2 float64; its items per 8-byte slot). An integer
#: goes whole into the slot, its low bytes the value (the block is little-endian, as the hosts
#: whose compilers the runtime drives); a float32 into the slot's first 4 bytes.
_DIRECT = {"u8": (0, 1), "i8": (0, 1), "u32": (0, 1), "i32": (0, 1), "i64": (0, 1),
           "f32": (1, 2), "f64": (2, 1)} if sys.byteorder == "little" else {}


def _packer(dtype: DType, kernel: str, name: str, offset: int) -> Callable[[Any, Any], None]:
    """The packing of scalar argument `name` into the block at byte `offset` where a launch
    does not write it directly (another dtype, or a number to check and convert first)."""
    convert = scalar_converter(dtype, kernel, name)
    pack_into = struct.Struct("=" + _SLOT[dtype.name]).pack_into
    bf16 = dtype.name == "bf16"

    def pack(block: Any, value: Any) -> None:
        value = convert(value)
        pack_into(block, offset, _bf16_bits(value)[0] if bf16 else value)

    return pack


_OUT_OF_BOUNDS = "out-of-bounds buffer access: the offending reads/writes were skipped"
#: `Plan.params` kinds: a rank-1 tensor, a tensor of another rank, a bfloat16 scalar, a scalar.
_VECTOR, _TENSOR, _BF16, _NUMBER = range(4)


def _bf16_bits(value: Any) -> tuple[int]:
    return (int(np.asarray(value, dtype=DTYPES["bf16"].numpy).view(np.uint16)),)


@dataclass
class CompiledC:
    """A loaded kernel library (and its argument plan, made on the first launch)."""

    library: ctypes.CDLL
    function: Any
    key: str
    plan: Plan | None = None


#: Most bytes of freed buffers a cpu runtime keeps for reuse.
POOL_BYTES = 256 * 2**20


class CpuRuntime(Runtime):
    """Runs kernels on the host CPU, cubes spread over OpenMP threads.

    Buffers of dead arrays from `empty` are kept, by shape and dtype, up to `POOL_BYTES`
    (`buffers`) and handed out again by `empty` with their addresses known.
    """

    name = "cpu"

    def __init__(self, index: int = 0) -> None:
        super().__init__(index)
        self.disk = DiskCache()
        self._compiled: dict[str, CompiledC] = {}
        self._allocated = 0
        self.buffers = BufferPool(POOL_BYTES)
        self._properties = Properties(
            "cpu", f"host CPU ({os.cpu_count()} threads)", "c",
            frozenset(("bool", "u8", "i8", "u32", "i32", "i64", "f16", "bf16", "f32", "f64")),
            1024,
            (2**31 - 1, 2**31 - 1, 2**31 - 1), 1)

    @property
    def properties(self) -> Properties:
        return self._properties

    @functools.cached_property
    def threads(self) -> int:
        """The threads a launch's cubes spread over (its OpenMP team: `openmp.team_size`);
        kernels that take their work in few large units split it at least this many ways."""
        return team_size(private_openmp(find_compiler()))

    def allocate(self, shape: tuple[int, ...], dtype: DType) -> DeviceArray:
        refuse_past_memory(shape, dtype)
        self._allocated += 1
        return DeviceArray(self, line_aligned_empty(shape, dtype, zeros=True), tuple(shape),
                           dtype)

    def empty(self, shape: tuple[int, ...], dtype: DType) -> DeviceArray:
        """A pooled buffer of that shape and dtype if one is free, else a new one."""
        array = self.buffers.array(self, shape, dtype)
        if array is None:
            refuse_past_memory(shape, dtype)
            return PooledArray(self, line_aligned_empty(shape, dtype), shape, dtype)
        return array

    def host_mapped(self, shape: tuple[int, ...], dtype: DType
                    ) -> tuple[DeviceArray, np.ndarray]:
        """`Runtime.host_mapped`: every array of this runtime is host memory."""
        array = self.allocate(shape, dtype)
        return array, array.handle

    def upload(self, array: np.ndarray) -> DeviceArray:
        dtype = from_numpy(array.dtype)
        if dtype is None:
            raise LaunchError(f"unsupported numpy dtype {array.dtype}")
        copy = line_aligned_empty(array.shape, dtype)
        np.copyto(copy, array)
        return DeviceArray(self, copy, array.shape, dtype)

    def download_storage(self, array: DeviceArray) -> np.ndarray:
        return array.handle.copy()

    def compile(self, kernel: KernelIR) -> CompiledC:
        from burn_cube.codegen import generate  # lazily: launch-index hits never generate

        return self.compile_source(generate(kernel, "c"), kernel.name)

    def compile_source(self, source: str, name: str, symbol: str = "bc_kernel",
                       contract: bool = False) -> CompiledC:
        """C source built with the kernels' compiler and flags (cached on disk by source,
        compiler, flags and target) and loaded.

        Args:
            source: a C translation unit.
            name: what errors call it.
            symbol: the function `CompiledC.function` is.
            contract: let the compiler contract ``a * b + c`` into FMAs (not `KERNEL_FLAGS`).
        Returns:
            The loaded library.
        Raises:
            CompileError: the compiler failed, or the library cannot be loaded.
        """
        compiler = find_compiler()
        target = native_target(compiler)
        key = cache_key(source, compiler_identity(compiler), build_flags(compiler, contract),
                        "c", target)
        compiled = self._load(key, name, target, symbol)
        if compiled is None:
            compiled = self._open(key, name, self._build(source, compiler, contract, key, name,
                                                         target), symbol)
        return compiled

    def _index_key(self, identity: str) -> str:
        compiler = find_compiler()
        return cache_key(identity, compiler_identity(compiler), build_flags(compiler), "c",
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

    def _load(self, key: str, name: str, target: str, symbol: str = "bc_kernel"
              ) -> CompiledC | None:
        """The loaded library of cache entry ``key`` (None when the entry is missing, not
        built for ``target``, or pruned by another process as it loads)."""
        if key in self._compiled:
            return self._compiled[key]
        path = self.disk.get(key, ".so", target)
        if path is None:
            return None
        try:
            return self._open(key, name, path, symbol)
        except CompileError:
            if path.exists():
                raise
            return None

    def _open(self, key: str, name: str, path: Path, symbol: str = "bc_kernel") -> CompiledC:
        try:
            if private_openmp(find_compiler()) is None:
                with brief_spinning():  # the first kernel may load the shared libgomp
                    library = ctypes.CDLL(str(path))
            else:  # GOMP_* calls bind to the private copy, not to a global libgomp
                library = ctypes.CDLL(str(path), mode=os.RTLD_LOCAL | _DEEPBIND)
        except OSError as exc:
            raise CompileError(f"cannot load the compiled kernel: {exc}", name) from exc
        function = getattr(library, symbol)
        function.restype = None  # no argtypes: a bytes block and a byref need no conversion
        compiled = self._compiled[key] = CompiledC(library, function, key)
        return compiled

    def _build(self, source: str, compiler: str, contract: bool, key: str, name: str,
               target: str) -> Path:
        import subprocess
        import tempfile

        with tempfile.TemporaryDirectory(dir=self.disk.root, prefix=".build-") as tmp:
            src, out = Path(tmp) / "kernel.c", Path(tmp) / "kernel.so"
            src.write_text(source)
            proc = subprocess.run([compiler, *source_flags(compiler, contract), "-o", str(out),
                                   str(src), "-lm", *link_flags(private_openmp(compiler))],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise CompileError(f"the C compiler failed:\n{proc.stderr[-2000:]}", name)
            return self.disk.put(key, ".so", out, target)

    def launch(self, compiled: CompiledC, kernel: KernelIR, cube_count: tuple[int, int, int],
               args: list[Any]) -> None:
        plan = compiled.plan
        if plan is None:
            plan = compiled.plan = Plan(kernel)
        status = ctypes.c_int32(0)
        self.launches += 1
        compiled.function(plan.block(cube_count, args), ctypes.byref(status))
        if status.value:
            raise LaunchError(_OUT_OF_BOUNDS, kernel.name)

    def plan(self, compiled: CompiledC, kernel: KernelIR, cube_count: tuple[int, int, int],
             args: list[Any]) -> Callable[[Any], None]:
        """`Runtime.plan`: the argument block is made once; a launch writes only the data
        pointers and the scalars into a copy."""
        plan = compiled.plan
        if plan is None:
            plan = compiled.plan = Plan(kernel)
        return plan.launcher(self, compiled, kernel, cube_count, args)

    def sync(self) -> None:
        """Launches are synchronous on the CPU."""

    def memory_stats(self) -> dict[str, int]:
        return {"allocations": self._allocated, "compiled_kernels": len(self._compiled),
                "buffers_reused": self.buffers.reused, "bytes_free_in_pool": self.buffers.bytes}
