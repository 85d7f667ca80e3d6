"""Creation, I/O and devices of the cube backends: uploads, downloads, fills and arange."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from burn.dtype import DType
from burn.ir.cube import cube_dtype

from .kernel_cache import cached_kernel
from .kernels import fill_kernel
from .tensor import CubeTensor, Shape, host_array, host_view

if TYPE_CHECKING:
    from burn.device import Device


def into_data(backend: Any, x: CubeTensor) -> np.ndarray:
    """A C-contiguous host copy the caller owns."""
    array = x.array
    if array.runtime.name == "cpu":  # host memory: one copy of the storage (or its view)
        out = (array.handle if array.base is None else host_view(array)).copy()
        numpy_dtype = x.dtype.numpy
        return out if out.dtype == numpy_dtype else out.astype(numpy_dtype)
    return np.array(host_array(x), order="C", copy=True)


def full(backend: Any, shape: Shape, value: Any, dtype: DType) -> CubeTensor:
    """A new tensor of `shape` filled with `value` (ints wrap into `dtype`, as numpy casts)."""
    out = backend.empty(tuple(shape), dtype, "full")
    if out.size:
        if dtype.is_float:
            host: Any = float(value)
        elif dtype is DType.bool:
            host = bool(value)
        else:
            host = np.array(value).astype(dtype.numpy).item()
        if backend.runtime_name == "cpu":  # host memory
            host_view(out.array).fill(host)
        else:
            backend.launch_planned(fill_kernel(dtype), out.size, host, out.flat().array)
    return out


@cached_kernel
def arange_kernel(dtype: DType) -> Any:
    """`out[i] = start + i * step` over a rank-1 int tensor (int32 in wrapping u32 arithmetic:
    `start` and `step` are passed as their u32 bits)."""
    from burn_cube import KernelBuilder, i32, u32

    cube = cube_dtype("arange", dtype)
    work = u32 if cube is i32 else cube
    b = KernelBuilder("arange")
    start, step = b.scalar("start", work), b.scalar("step", work)
    out = b.tensor("out", cube, rank=1, write=True)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < out.len):
        out[pos] = b.cast(b.cast(pos, work) * step + start, cube)
    return b.kernel()


class CubeCreationOps:
    """from_data / into_data / to_device / empty / full / arange."""

    def float_from_data(self: Any, data: np.ndarray, device: Device) -> CubeTensor:
        return self.upload(data)

    int_from_data = bool_from_data = float_from_data

    def float_into_data(self: Any, x: CubeTensor) -> np.ndarray:
        return into_data(self, x)

    int_into_data = bool_into_data = float_into_data

    def float_to_device(self: Any, x: CubeTensor, device: Device) -> CubeTensor:
        """The same tensor on this device; another device of the runtime copies through the
        host."""
        target: Any = device.backend
        return x if target is self else target.upload(host_array(x))

    int_to_device = bool_to_device = float_to_device

    def float_empty(self: Any, shape: Shape, dtype: DType, device: Device) -> CubeTensor:
        return self.empty(tuple(shape), dtype)

    int_empty = float_empty

    def float_full(self: Any, shape: Shape, value: float, dtype: DType,
                   device: Device) -> CubeTensor:
        return full(self, shape, value, dtype)

    def int_full(self: Any, shape: Shape, value: int, dtype: DType,
                 device: Device) -> CubeTensor:
        """`value` wraps into `dtype` (as a numpy cast)."""
        return full(self, shape, value, dtype)

    def bool_full(self: Any, shape: Shape, value: bool, device: Device) -> CubeTensor:
        return full(self, shape, value, DType.bool)

    def int_arange(self: Any, start: int, end: int, step: int, dtype: DType,
                   device: Device) -> CubeTensor:
        """`start, start + step, ...` below `end` (above it for a negative step)."""
        count = max(0, -(-(end - start) // step))
        out = self.empty((count,), dtype)
        if count:
            bits = (lambda v: v & 0xFFFFFFFF) if dtype is DType.int32 else int
            self.launch_planned(arange_kernel(dtype), count, bits(start), bits(step),
                                out.array)
        return out
