"""CUDA runtime through CuPy: kernels compiled by NVRTC (`runtime.nvrtc`: IEEE subnormals, as
PyTorch's; images in burn-cube's disk cache) and loaded as CuPy ``Module``s, CuPy's memory
pool, one stream.

The import is guarded: without CuPy or a CUDA device, ``runtime("cuda")`` raises
``RuntimeUnavailableError``. Kernels
declare their tensor pointers ``__restrict__``; a launch whose arguments overlap where one of
them is written runs the kernel's unqualified variant instead (compiled on first use). CuPy has
no bfloat16 dtype: bf16 tensors and scalars travel as their uint16 bits (``__nv_bfloat16`` in
the kernel).

Launches skip CuPy's per-argument conversion: each kernel's arguments are laid out once
(one ``struct`` format), a launch plan packs its tensors' metadata once into a buffer per
thread and a launch writes the storages' addresses and the scalars into it; ``cuLaunchKernel``
gets the addresses of the packed values; the device is made current only when it is not.
New arrays come from CuPy's memory pool; dead arrays' buffers are kept by shape and dtype
(`buffers`, up to `POOL_BYTES`) and handed out again by `empty` with their addresses known, in
stream order (one stream: work queued on a buffer before it died runs before work queued after
it is handed out).
An array whose memory was exported (`DeviceArray.shared`, set by the exporter) never returns to
that pool: a DLPack export holds the memory without a reference Python can count. Small
downloads (`item()`, pending check flags) copy through a pinned staging buffer.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from threading import get_ident
from typing import Any

import numpy as np

from burn_cube.cache import DiskCache
from burn_cube.codegen import generate
from burn_cube.codegen.cuda import entry_point, generate_aliased
from burn_cube.errors import CompileError, LaunchError, RuntimeUnavailableError
from burn_cube.ir.nodes import KernelIR
from burn_cube.runtime import nvrtc
from burn_cube.runtime.base import (
    BufferPool,
    DeviceArray,
    PooledArray,
    Properties,
    Runtime,
    direct_range,
    scalar_converter,
)
from burn_cube.types import DType, bf16, from_numpy

#: Most bytes of dead arrays' buffers a cuda runtime keeps for `empty` to hand out again (a
#: CuPy allocation with its stream and device checks cost as much host time as a launch).
POOL_BYTES = 2 * 2**30

#: Downloads of up to this many bytes copy into a pinned staging buffer of the runtime, then
#: out of it (a small copy to pageable memory is staged by the driver: more host time per
#: `item()`, twice a training step with a pending index check).
PINNED_BYTES = 1 << 16

#: Most tensor parameters one kernel takes (`Properties.max_tensors`): a tensor is an 8-byte
#: address and 4-byte words of metadata (two, and a shape and a stride a dim: `_Packer`), 80
#: bytes at rank 8, and a launch's parameters must fit 4 KiB (before CUDA 12.1 and Volta).
MAX_TENSORS = 48

#: numpy dtype whose bits stand in for one CuPy lacks.
_BITS = {bf16.numpy: np.dtype(np.uint16)}


def _held(dtype: np.dtype) -> np.dtype:
    return _BITS.get(dtype, dtype)


#: `struct` codes of the scalar parameters' C types, by dtype name (bf16: its bits).
_CODES = {"bool": "?", "u8": "B", "i8": "b", "u32": "I", "i32": "i", "i64": "q", "f16": "e",
          "bf16": "H", "f32": "f", "f64": "d"}

try:
    import cupy
    from cupy_backends.cuda.api.driver import launchKernel
    from cupy_backends.cuda.api.runtime import getDevice, memcpyAsync, streamSynchronize
except ImportError:  # pragma: no cover - depends on the environment
    cupy = launchKernel = getDevice = memcpyAsync = streamSynchronize = None
#: ``cudaMemcpyDeviceToHost``.
DEVICE_TO_HOST = 2
#: `CudaRuntime._current` where the runtime's device is the current one.
_ALREADY_CURRENT = contextlib.nullcontext()


def _launch(function: int, grid: tuple[int, int, int], block: tuple[int, int, int],
            stream: int, params: int) -> None:
    """``cuLaunchKernel`` of the function at address `function` with the argument-address
    array at `params`."""
    launchKernel(function, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, stream,
                 params, 0)


@dataclass
class CompiledCuda:
    """A loaded CUDA module and its kernel function."""

    module: Any
    function: Any
    source: str
    #: The kernel function's ``CUfunction`` address (what `_launch` calls).
    address: int = 0
    #: The variant without ``__restrict__``, for overlapping arguments (compiled on first use).
    aliased: CompiledCuda | None = None
    #: The argument packing of the kernel last launched with it (`_packer`).
    packer: _Packer | None = None


def _address(array: DeviceArray) -> int:
    """The device address of an array's storage (a view shares its base's buffer), worked
    out once and kept on the array."""
    address = array.address
    if address is None:
        address = array.address = array.handle.data.ptr
    return address


def _device_name(index: int) -> str:
    name = cupy.cuda.runtime.getDeviceProperties(index)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


class _Packer:
    """A kernel's arguments in ABI order (`param_layout`: storages, then each tensor's
    metadata as uint32, then scalars), worked out once per kernel (`_Frame` packs them into a
    buffer per thread, whose values' addresses `cuLaunchKernel` reads).

    Args:
        kernel: The kernel's IR.
    """

    def __init__(self, kernel: KernelIR) -> None:
        index = {p.name: i for i, p in enumerate(kernel.params)}
        self.kernel = kernel
        #: argument positions of the tensors, in ABI order
        self.tensors = [index[b.name] for b in kernel.tensors]
        #: (position, lanes) of each tensor's metadata
        self.metas = [(index[b.name], b.dtype.lanes) for b in kernel.tensors]
        #: (position, numpy dtype whose bits carry it, or None) of each scalar
        self.scalars = [(index[p.name], _BITS.get(p.dtype.numpy)) for p in kernel.scalars]
        written = [b.written or b.atomic for b in kernel.tensors]
        #: (position, written) of each tensor, for the overlap check
        self.spans = list(zip(self.tensors, written, strict=True))
        #: whether two tensors could overlap where one is written
        self.aliasing = len(self.tensors) > 1 and any(written)
        metas = sum(2 + 2 * b.rank for b in kernel.tensors)
        try:
            #: `struct` code of each scalar
            self.codes = [_CODES[p.dtype.name] for p in kernel.scalars]
        except KeyError as exc:
            raise LaunchError(f"no cuda scalar parameter of dtype {exc}", kernel.name) from None
        self.format = struct.Struct("<" + "Q" * len(self.tensors) + "I" * metas
                                    + "".join(self.codes))
        sizes = [8] * len(self.tensors) + [4] * metas + [struct.calcsize(c) for c in self.codes]
        #: byte offset of each argument in the packed buffer
        self.offsets = [sum(sizes[:i]) for i in range(len(sizes))]

    def meta(self, args: list[Any]) -> list[int]:
        """The tensors' metadata (`meta_value`'s fields of `param_layout`)."""
        out: list[int] = []
        for at, lanes in self.metas:
            array = args[at]
            shape, strides = array.shape, array.strides
            if lanes == 1:
                out.append(array.size)
                out += shape
                out += strides
                out.append(array.offset)
                continue
            out.append(array.size // lanes)
            out += shape[:-1]
            out.append(shape[-1] // lanes)
            out += (stride // lanes for stride in strides[:-1])
            out += strides[-1:]
            out.append(array.offset // lanes)
        return out


class _Frame:
    """A kernel's packed arguments for one set of tensor metadata (a plan's layouts fix it):
    the metadata packed once per thread's buffer, a launch writes only the storages' device
    addresses and the scalars into it.

    Args:
        packer: the kernel's argument layout.
        meta: the tensors' metadata (`_Packer.meta`).
    """

    def __init__(self, packer: _Packer, meta: list[int]) -> None:
        self.kernel = packer.kernel
        #: (word, argument position) of each storage address: the buffer's first words
        self.tensors = list(enumerate(packer.tensors))
        first = len(packer.tensors) + len(meta)
        #: (argument position, numpy dtype whose bits carry it or None, its `struct`, byte
        #: offset) of each scalar
        self.scalars = [(at, bits, struct.Struct("<" + code), packer.offsets[first + j])
                        for j, ((at, bits), code) in enumerate(zip(packer.scalars,
                                                                   packer.codes, strict=True))]
        self.template = packer.format.pack(*[0] * len(packer.tensors), *meta,
                                           *[0] * len(packer.codes))
        self.offsets = packer.offsets
        #: per thread: `_buffer`'s triple
        self._buffers: dict[int, tuple[Any, Any, int]] = {}

    def pack(self, args: list[Any]) -> int:
        """Write the storages' addresses and the scalars of `args` into this thread's buffer.

        Returns:
            The address of the array of the packed values' addresses (``kernelParams``).
        """
        data, _, params = self._buffers.get(get_ident()) or self._buffer()
        for word, at in self.tensors:
            data[word] = _address(args[at])
        try:
            for at, bits, form, offset in self.scalars:
                value = args[at]
                form.pack_into(data, offset,
                               value if bits is None else int(np.array(value).view(bits)[()]))
        except struct.error as exc:
            raise LaunchError(f"arguments do not fit the kernel's parameters: {exc}",
                              self.kernel.name) from None
        return params

    def _buffer(self) -> tuple[Any, Any, int]:
        """This thread's new buffer, the metadata in it: (packed values, their addresses, the
        addresses' address)."""
        data = (ctypes.c_uint64 * (-(-len(self.template) // 8) or 1))()
        ctypes.memmove(data, self.template, len(self.template))
        base = ctypes.addressof(data)
        addresses = (ctypes.c_uint64 * (len(self.offsets) or 1))(
            *(base + at for at in self.offsets))
        buffer = self._buffers[get_ident()] = (data, addresses, ctypes.addressof(addresses))
        return buffer


def _packer(compiled: CompiledCuda, kernel: KernelIR) -> _Packer:
    """The packing of `kernel`'s arguments, kept on its compiled module."""
    packer = compiled.packer
    if packer is None or packer.kernel is not kernel:
        packer = compiled.packer = _Packer(kernel)
    return packer


def _overlap(packer: _Packer, args: list[Any]) -> bool:
    """Whether the kernel gets one non-empty storage twice while it writes it (views of it, or
    the same array as two arguments). Every storage is an allocation of its own (the runtime
    allocates or uploads each), so tensors of distinct storages never share memory; views of
    one storage are taken to overlap (their elements may interleave)."""
    handles = [args[at].handle for at in packer.tensors]
    if len(set(map(id, handles))) == len(handles):  # (a launch's usual case: ~0.5 us less)
        return False
    seen: dict[int, bool] = {}
    for handle, (_, written) in zip(handles, packer.spans, strict=True):
        if not handle.nbytes:
            continue
        wrote = seen.get(id(handle))
        if wrote is not None and (wrote or written):
            return True
        seen[id(handle)] = written
    return False


def _require_cupy() -> None:
    if cupy is None:
        raise RuntimeUnavailableError("the cuda runtime needs CuPy: pip install "
                                      "'burn-cube[cuda]'")
    if not cupy.cuda.is_available():
        raise RuntimeUnavailableError("CuPy found no CUDA device")


class CudaRuntime(Runtime):
    """Runs kernels on one CUDA device (its own stream; every call runs with the device
    current)."""

    name = "cuda"

    @classmethod
    def devices(cls) -> list[str]:
        _require_cupy()
        return [_device_name(i) for i in range(cupy.cuda.runtime.getDeviceCount())]

    def __init__(self, index: int = 0) -> None:
        super().__init__(index)
        _require_cupy()
        self.device = cupy.cuda.Device(index)
        with self.device:
            self.stream = cupy.cuda.Stream(non_blocking=True)
        self.pool = cupy.get_default_memory_pool()
        props = cupy.cuda.runtime.getDeviceProperties(index)
        self.description = _device_name(index)
        self.max_threads = int(props["maxThreadsPerBlock"])
        self.max_grid = tuple(int(v) for v in props["maxGridSize"])
        self.capability = int(props["major"]) * 10 + int(props["minor"])
        #: the device's memory in bytes (`fits`)
        self.total_memory = int(props["totalGlobalMem"])
        #: whether host and device share one address space (pinned host memory is then
        #: addressable from kernels at its host address: `host_mapped`)
        self.unified = bool(props.get("unifiedAddressing", 0))
        self.disk = DiskCache()
        self._modules: dict[str, CompiledCuda] = {}
        self.buffers = BufferPool(POOL_BYTES)
        #: `PINNED_BYTES` of pinned host memory (allocated on the first small download).
        self._staging: np.ndarray | None = None
        self._staging_address = 0
        self._staging_lock = threading.Lock()

    @cached_property
    def properties(self) -> Properties:
        return Properties("cuda", self.description, "cuda",
                          frozenset(("bool", "u8", "i8", "u32", "i32", "i64", "f16", "bf16",
                                     "f32", "f64")),
                          self.max_threads, self.max_grid, 32,  # type: ignore[arg-type]
                          MAX_TENSORS)

    def allocate(self, shape: tuple[int, ...], dtype: DType) -> DeviceArray:
        with self.device, self.stream:
            return DeviceArray(self, cupy.zeros(shape, _held(dtype.numpy)), tuple(shape), dtype)

    def fits(self, shape: tuple[int, ...], dtype: DType) -> bool:
        return math.prod(shape) * dtype.numpy.itemsize <= self.total_memory

    def empty(self, shape: tuple[int, ...], dtype: DType) -> DeviceArray:
        """A pooled buffer of that shape and dtype if one is free, else an uninitialised array
        from CuPy's pool on this runtime's stream (the device made current only where it is
        not); out of memory, the kept buffers go back to CuPy's pool for one more try."""
        array = self.buffers.array(self, shape, dtype)
        if array is not None:
            return array
        try:
            handle = self._allocate(shape, dtype)
        except cupy.cuda.memory.OutOfMemoryError:
            if not self.buffers.bytes:
                raise
            self.buffers.clear()
            handle = self._allocate(shape, dtype)
        return PooledArray(self, handle, tuple(shape), dtype)

    def _allocate(self, shape: tuple[int, ...], dtype: DType) -> Any:
        """A new CuPy array on this runtime's stream and device."""
        with self._current(), self.stream:
            return cupy.empty(shape, _held(dtype.numpy))

    def _current(self) -> Any:
        """A context making this runtime's device current: one doing nothing where it already
        is (asking the driver costs less than switching devices)."""
        return _ALREADY_CURRENT if getDevice() == self.index else self.device

    def upload(self, array: np.ndarray) -> DeviceArray:
        dtype = from_numpy(array.dtype)
        if dtype is None:
            raise LaunchError(f"unsupported numpy dtype {array.dtype}")
        with self.device, self.stream:
            # np.ascontiguousarray would make a 0-d array 1-d; CuPy fills a 0-d array from its
            # value, and a value equal to 0 by a memset, so -0.0 would arrive as +0.0: a 0-d
            # array goes up as one element
            host = np.require(array, requirements="C").view(_held(array.dtype))
            handle = cupy.asarray(host.reshape(1)).reshape(()) if host.ndim == 0 \
                else cupy.asarray(host)
        return DeviceArray(self, handle, array.shape, dtype)

    def host_mapped(self, shape: tuple[int, ...], dtype: DType
                    ) -> tuple[DeviceArray, np.ndarray] | None:
        """`Runtime.host_mapped`: pinned host memory, which kernels reach at its host address
        where the device shares the host's address space (unified addressing); else None."""
        if not self.unified:
            return None
        held = _held(dtype.numpy)
        count = math.prod(shape)
        nbytes = max(count, 1) * held.itemsize
        with self.device:
            memory = cupy.cuda.alloc_pinned_memory(nbytes)
            host = np.frombuffer(memory, held, count).reshape(shape)
            host.fill(0)
            unowned = cupy.cuda.UnownedMemory(memory.ptr, nbytes, memory, self.index)
            handle = cupy.ndarray(shape, held, cupy.cuda.MemoryPointer(unowned, 0))
        return DeviceArray(self, handle, tuple(shape), dtype), host.view(dtype.numpy)

    def download_storage(self, array: DeviceArray) -> np.ndarray:
        handle = array.handle
        nbytes = handle.nbytes
        if 0 < nbytes <= PINNED_BYTES and handle.flags.c_contiguous:
            with self._staging_lock, self._current():
                staged = self._staged(_address(array), nbytes)
            return staged.view(array.dtype.numpy).reshape(handle.shape)
        with self.device:
            out = cupy.asnumpy(handle, stream=self.stream)
            self.stream.synchronize()
        return out.view(array.dtype.numpy)

    def _staged(self, address: int, nbytes: int) -> np.ndarray:
        """A copy of `nbytes` bytes at device `address`, through the pinned staging buffer
        (allocated on first use; the caller holds its lock, the device current): one raw
        asynchronous copy on this runtime's stream and a wait for it, no CuPy array on the way.

        Returns:
            The bytes (uint8).
        """
        if self._staging is None:
            memory = cupy.cuda.alloc_pinned_memory(PINNED_BYTES)
            self._staging = np.frombuffer(memory, np.uint8, PINNED_BYTES)
            self._staging_address = memory.ptr
        stream = self.stream.ptr
        memcpyAsync(self._staging_address, address, nbytes, DEVICE_TO_HOST, stream)
        streamSynchronize(stream)
        return self._staging[:nbytes].copy()

    def compile(self, kernel: KernelIR) -> CompiledCuda:
        return self._load(kernel, generate(kernel, "cuda"))

    def _load(self, kernel: KernelIR, source: str) -> CompiledCuda:
        if source not in self._modules:
            image = nvrtc.compile_image(source, self.capability, kernel.name, self.disk)
            try:
                with self.device:
                    module = cupy.cuda.function.Module()
                    module.load(image)
                    function = module.get_function(entry_point(kernel))
            except cupy.cuda.driver.CUDADriverError as exc:
                raise CompileError(f"loading the compiled kernel failed: {exc}",
                                   kernel.name) from exc
            self._modules[source] = CompiledCuda(module, function, source, function.ptr)
        return self._modules[source]

    def launch(self, compiled: CompiledCuda, kernel: KernelIR, cube_count: tuple[int, int, int],
               args: list[Any]) -> None:
        packer = _packer(compiled, kernel)
        self._run(compiled, kernel, cube_count, packer, args, _Frame(packer, packer.meta(args)))

    def plan(self, compiled: CompiledCuda, kernel: KernelIR, cube_count: tuple[int, int, int],
             args: list[Any]) -> Callable[[Any], None]:
        """`Runtime.plan`: the tensors' metadata (fixed by the plan's layouts) are worked out
        and packed once (`_Frame`); a launch converts the scalars that need it and writes them
        with the storages' addresses."""
        packer = _packer(compiled, kernel)
        frame = _Frame(packer, packer.meta(args))
        # (position, converter, numbers packed as they are: `direct_range`) of each scalar
        scalars = [(i, scalar_converter(p.dtype, kernel.name, p.name), *direct_range(p.dtype))
                   for i, p in enumerate(kernel.params) if not p.tensor]
        run = self._run

        def launcher(values: Any) -> None:
            bound = values
            for i, convert, kind, low, high in scalars:
                value = values[i]
                if type(value) is not kind or not low <= value <= high:
                    if bound is values:
                        bound = list(values)
                    bound[i] = convert(value)
            run(compiled, kernel, cube_count, packer, bound, frame)

        return launcher

    def _run(self, compiled: CompiledCuda, kernel: KernelIR, cube_count: tuple[int, int, int],
             packer: _Packer, args: Any, frame: _Frame) -> None:
        """Launch with `args` packed into `frame` (the unqualified variant where tensors
        overlap)."""
        if packer.aliasing and _overlap(packer, args):
            if compiled.aliased is None:
                compiled.aliased = self._load(kernel, generate_aliased(kernel))
            compiled = compiled.aliased
        params = frame.pack(args)
        self.launches += 1
        if getDevice() == self.index:  # (`_current` inlined: ~0.2 us less a launch)
            _launch(compiled.address, cube_count, kernel.cube_dim, self.stream.ptr, params)
            return
        with self.device:
            _launch(compiled.address, cube_count, kernel.cube_dim, self.stream.ptr, params)

    def sync(self) -> None:
        self.stream.synchronize()

    def memory_stats(self) -> dict[str, int]:
        return {"bytes_in_use": int(self.pool.used_bytes()) - self.buffers.bytes,
                "bytes_reserved": int(self.pool.total_bytes()), "modules": len(self._modules),
                "buffers_reused": self.buffers.reused, "bytes_free_in_pool": self.buffers.bytes}
