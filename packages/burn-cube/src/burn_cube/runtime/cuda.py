"""CUDA runtime through CuPy: NVRTC-compiled ``RawModule``s, CuPy's memory pool, one stream.

The import is guarded: without CuPy or a CUDA device, ``runtime("cuda")`` raises
``RuntimeUnavailableError``. CuPy keeps its own on-disk cache of compiled modules. Kernels
declare their tensor pointers ``__restrict__``; a launch whose arguments overlap where one of
them is written runs the kernel's unqualified variant instead (compiled on first use). CuPy has
no bfloat16 dtype: bf16 tensors and scalars travel as their uint16 bits (``__nv_bfloat16`` in
the kernel).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from burn_cube.codegen import generate
from burn_cube.codegen.cuda import generate_aliased, param_layout
from burn_cube.errors import CompileError, LaunchError, RuntimeUnavailableError
from burn_cube.ir.nodes import KernelIR
from burn_cube.runtime.base import DeviceArray, Properties, Runtime, meta_value
from burn_cube.types import DType, bf16, from_numpy

#: numpy dtype whose bits stand in for one CuPy lacks.
_BITS = {bf16.numpy: np.dtype(np.uint16)}


def _held(dtype: np.dtype) -> np.dtype:
    return _BITS.get(dtype, dtype)


try:
    import cupy
except ImportError:  # pragma: no cover - depends on the environment
    cupy = None


@dataclass
class CompiledCuda:
    """A loaded CUDA module and its kernel function."""

    module: Any
    function: Any
    source: str
    #: The variant without ``__restrict__``, for overlapping arguments (compiled on first use).
    aliased: CompiledCuda | None = None


def _device_name(index: int) -> str:
    name = cupy.cuda.runtime.getDeviceProperties(index)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def _overlap(kernel: KernelIR, by_name: dict[str, Any]) -> bool:
    """Whether two tensor arguments share memory while the kernel writes one of them."""
    spans = []
    for b in kernel.tensors:
        handle = by_name[b.name].handle
        start = int(handle.data.ptr)
        spans.append((start, start + int(handle.nbytes), b.written or b.atomic))
    return any(a0 < b1 and b0 < a1 and (wa or wb)
               for i, (a0, a1, wa) in enumerate(spans) for b0, b1, wb in spans[i + 1:])


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
        self._modules: dict[str, CompiledCuda] = {}

    @property
    def properties(self) -> Properties:
        return Properties("cuda", self.description, "cuda",
                          frozenset(("bool", "u8", "i8", "u32", "i32", "i64", "f16", "bf16",
                                     "f32", "f64")),
                          self.max_threads, self.max_grid, 32)  # type: ignore[arg-type]

    def allocate(self, shape: tuple[int, ...], dtype: DType) -> DeviceArray:
        with self.device, self.stream:
            return DeviceArray(self, cupy.zeros(shape, _held(dtype.numpy)), tuple(shape), dtype)

    def empty(self, shape: tuple[int, ...], dtype: DType) -> DeviceArray:
        with self.device, self.stream:
            return DeviceArray(self, cupy.empty(shape, _held(dtype.numpy)), tuple(shape), dtype)

    def upload(self, array: np.ndarray) -> DeviceArray:
        dtype = from_numpy(array.dtype)
        if dtype is None:
            raise LaunchError(f"unsupported numpy dtype {array.dtype}")
        with self.device, self.stream:
            # np.ascontiguousarray would make a 0-d array 1-d
            handle = cupy.asarray(np.require(array, requirements="C").view(_held(array.dtype)))
        return DeviceArray(self, handle, array.shape, dtype)

    def download_storage(self, array: DeviceArray) -> np.ndarray:
        with self.device:
            out = cupy.asnumpy(array.handle, stream=self.stream)
            self.stream.synchronize()
        return out.view(array.dtype.numpy)

    def compile(self, kernel: KernelIR) -> CompiledCuda:
        return self._load(kernel, generate(kernel, "cuda"))

    def _load(self, kernel: KernelIR, source: str) -> CompiledCuda:
        if source not in self._modules:
            try:
                with self.device:
                    module = cupy.RawModule(code=source, options=("--std=c++17",))
                    function = module.get_function("bc_kernel")
            except Exception as exc:  # cupy.cuda.compiler.CompileException and driver errors
                raise CompileError(f"NVRTC failed: {exc}", kernel.name) from exc
            self._modules[source] = CompiledCuda(module, function, source)
        return self._modules[source]

    def launch(self, compiled: CompiledCuda, kernel: KernelIR, cube_count: tuple[int, int, int],
               args: list[Any]) -> None:
        by_name = dict(zip((p.name for p in kernel.params), args, strict=True))
        values: list[Any] = []
        for param, field, dim in param_layout(kernel):
            value = by_name[param]
            if field == "tensor":
                values.append(value.handle)
            elif field == "scalar":
                values.append(np.array(value).view(_held(value.dtype))[()])
            else:
                lanes = kernel.buffers[param].dtype.lanes
                values.append(np.uint32(meta_value(value, field, dim, lanes)))
        if _overlap(kernel, by_name):
            if compiled.aliased is None:
                compiled.aliased = self._load(kernel, generate_aliased(kernel))
            compiled = compiled.aliased
        with self.device:
            compiled.function(cube_count, kernel.cube_dim, tuple(values), stream=self.stream)

    def sync(self) -> None:
        self.stream.synchronize()

    def memory_stats(self) -> dict[str, int]:
        return {"bytes_in_use": int(self.pool.used_bytes()),
                "bytes_reserved": int(self.pool.total_bytes()), "modules": len(self._modules)}
