"""`CubeTensor`: the primitive of the cube backends, a burn-cube device array and a burn dtype.

The array is an owning buffer or a strided view of one (shape, strides and offset in elements),
so reshape, permute, expand and slice make views without copies; kernels read views in place
(`burn_cube.KernelBuilder.index_of`), and `contiguous` copies only where a kernel needs a dense
layout.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from burn.dtype import DType

Shape = tuple[int, ...]


def dense_strides(shape: Shape) -> Shape:
    """Row-major strides of `shape`, in elements."""
    strides, acc = [], 1
    for dim in reversed(shape):
        strides.append(acc)
        acc *= max(dim, 1)
    return tuple(reversed(strides))


class CubeTensor:
    """A tensor on a burn-cube runtime.

    Args:
        array: the burn-cube array (owning or a view).
        dtype: the burn dtype (bool tensors are held as the runtime's bool storage).
    """

    __slots__ = ("array", "dtype", "__weakref__")

    def __init__(self, array: Any, dtype: DType) -> None:
        self.array = array
        self.dtype = dtype

    @property
    def shape(self) -> Shape:
        """Logical shape."""
        return tuple(self.array.shape)

    @property
    def strides(self) -> Shape:
        """Element strides (0 on broadcast dimensions)."""
        return tuple(self.array.strides)

    @property
    def offset(self) -> int:
        """Storage index of the first element."""
        return int(self.array.offset)

    @property
    def runtime(self) -> Any:
        """The burn-cube runtime holding the storage."""
        return self.array.runtime

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def is_contiguous(self) -> bool:
        """Whether the elements are dense and row-major (any offset); size-1 dims ignored."""
        expected = 1
        for dim, stride in zip(reversed(self.shape), reversed(self.strides), strict=True):
            if dim != 1 and stride != expected:
                return False
            expected *= dim
        return True

    @property
    def is_dense_storage(self) -> bool:
        """Whether this is contiguous and covers its whole storage from element 0."""
        return self.is_contiguous and self.offset == 0 and self.size == self.array.extent

    def view(self, shape: Shape, strides: Shape, offset: int | None = None) -> CubeTensor:
        """A view of the same storage (absolute element `offset`; default: this one's)."""
        root = self.array.base if self.array.base is not None else self.array
        start = self.offset if offset is None else offset
        if (tuple(shape) == tuple(root.shape) and start == 0
                and tuple(strides) == dense_strides(tuple(shape))):
            return CubeTensor(root, self.dtype)
        return CubeTensor(root.view(tuple(shape), tuple(strides), start), self.dtype)

    def __repr__(self) -> str:
        return (f"CubeTensor({self.runtime.name}, shape={self.shape}, dtype={self.dtype.value}, "
                f"strides={self.strides}, offset={self.offset})")


def layout_key(array: Any) -> tuple[Any, ...]:
    """A burn-cube array's layout as part of a launch plan's key: shape, strides, offset and
    storage size (what a planned launch bakes in)."""
    return (array.shape, array.strides, array.offset, array.extent)


def strided_storage(t: CubeTensor, as_strided: Any) -> Any:
    """`t`'s elements as an array of the runtime's array library sharing its memory (numpy on
    the cpu, CuPy on cuda), built with that library's `as_strided`."""
    array = t.array
    storage = (array.base if array.base is not None else array).handle.reshape(-1)
    item = storage.itemsize
    return as_strided(storage[t.offset:] if t.size else storage[:0], t.shape,
                      tuple(s * item for s in t.strides))


def host_array(t: CubeTensor) -> np.ndarray:
    """The values of `t` as a numpy array of its burn dtype: a read-only view of the storage
    on the cpu runtime (no copy), a download elsewhere."""
    array = t.array
    if array.runtime.name == "cpu":
        out = strided_storage(t, np.lib.stride_tricks.as_strided)
        out.flags.writeable = False
    else:
        out = array.runtime.download(array)
    return out if out.dtype == t.dtype.numpy else out.astype(t.dtype.numpy)
