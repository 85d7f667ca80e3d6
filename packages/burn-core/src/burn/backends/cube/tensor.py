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
    """Row-major strides of `shape`, in elements (kept per shape: launches ask often)."""
    strides = _DENSE.get(shape)
    if strides is None:
        out, acc = [], 1
        for dim in reversed(shape):
            out.append(acc)
            acc *= max(dim, 1)
        strides = tuple(reversed(out))
        if len(_DENSE) >= 4096:
            _DENSE.clear()
        _DENSE[shape] = strides
    return strides


_DENSE: dict[Shape, Shape] = {}


class CubeTensor:
    """A tensor on a burn-cube runtime.

    Args:
        array: the burn-cube array (owning or a view).
        dtype: the burn dtype (bool tensors are held as the runtime's bool storage).
    """

    __slots__ = ("array", "dtype", "shape", "size", "__weakref__")

    def __init__(self, array: Any, dtype: DType) -> None:
        self.array = array
        self.dtype = dtype
        #: logical shape (the array's; both are fixed) and number of elements.
        self.shape: Shape = array.shape
        self.size: int = math.prod(array.shape)

    @property
    def strides(self) -> Shape:
        """Element strides (0 on broadcast dimensions)."""
        array = self.array
        if array.base is not None or 0 in array.shape:
            return tuple(array.strides)
        return dense_strides(array.shape)

    @property
    def offset(self) -> int:
        """Storage index of the first element."""
        return int(self.array.offset)

    @property
    def storage(self) -> Any:
        """The burn-cube array owning the memory this tensor reads (its array's base, else its
        array: views are made from the base, one level)."""
        array = self.array
        return array if array.base is None else array.base

    @property
    def runtime(self) -> Any:
        """The burn-cube runtime holding the storage."""
        return self.array.runtime

    @property
    def is_contiguous(self) -> bool:
        """Whether the elements are dense and row-major (any offset); size-1 dims ignored."""
        array = self.array
        if array.base is None:
            return True
        expected = 1
        for dim, stride in zip(reversed(array.shape), reversed(array.strides), strict=True):
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
        array = self.array
        root = array.base if array.base is not None else array
        start = array.offset if offset is None else offset
        if (start == 0 and tuple(shape) == root.shape
                and tuple(strides) == dense_strides(root.shape)):
            return CubeTensor(root, self.dtype)
        if strides == (1,) and start == array.offset and len(shape) == 1 and \
                shape[0] == math.prod(array.shape) and self.is_contiguous:
            return self.flat()  # the frequent flattening needs no bounds check
        return CubeTensor(root.view(tuple(shape), tuple(strides), start), self.dtype)

    def derived(self, shape: Shape, strides: Shape, offset: int | None = None) -> CubeTensor:
        """`view` without its bounds checks, for a layout derived from this one's that stays
        inside the storage (a permutation, a reshape of a contiguous tensor); `shape` and
        `strides` are tuples of ints."""
        array = self.array
        root = array.base if array.base is not None else array
        start = array.offset if offset is None else offset
        if start == 0 and shape == root.shape and strides == dense_strides(shape):
            return CubeTensor(root, self.dtype)
        view = root.view_unchecked(shape, strides, start)
        view.address = root.address  # the storage's, where known
        return CubeTensor(view, self.dtype)

    def flat(self) -> CubeTensor:
        """This contiguous tensor as rank 1 (its offset kept; no bounds check needed)."""
        array = self.array
        if array.base is None and len(array.shape) == 1:
            return self
        view = array.view_unchecked((math.prod(array.shape),), (1,), array.offset)
        view.address = array.address  # the storage's, where known (a view's is its base's)
        return CubeTensor(view, self.dtype)

    def __repr__(self) -> str:
        return (f"CubeTensor({self.runtime.name}, shape={self.shape}, dtype={self.dtype.value}, "
                f"strides={self.strides}, offset={self.offset})")


def whole_lines(view: Any, lanes: int) -> bool:
    """Whether a kernel view (a `CubeTensor` or a burn-cube array: shape, strides, offset)
    reads as lines of `lanes` elements along its last dim."""
    return (bool(view.shape) and view.shape[-1] % lanes == 0 and view.strides[-1] == 1
            and view.offset % lanes == 0 and all(s % lanes == 0 for s in view.strides[:-1]))


def layout_key(array: Any) -> Any:
    """A burn-cube array's layout as part of a launch plan's key (what a planned launch bakes
    in): an owning array's shape, or a view's shape, strides, offset and storage shape."""
    base = array.base
    return array.shape if base is None else (array.shape, array.strides, array.offset,
                                             base.shape)


def strided_storage(t: CubeTensor, as_strided: Any) -> Any:
    """`t`'s elements as an array of the runtime's array library sharing its memory (numpy on
    the cpu, CuPy on cuda), built with that library's `as_strided`."""
    storage = t.storage.handle.reshape(-1)
    item = storage.itemsize
    return as_strided(storage[t.offset:] if t.size else storage[:0], t.shape,
                      tuple(s * item for s in t.strides))


def host_view(array: Any) -> np.ndarray:
    """A numpy array sharing the memory of a cpu-runtime array, with its shape, strides and
    offset (the storage itself for an owning array)."""
    base = array.base
    if base is None:
        return array.handle.view()  # type: ignore[no-any-return]
    storage = base.handle
    item = storage.itemsize
    if 0 in array.shape:
        return np.empty(array.shape, storage.dtype)
    st = array.strides
    strides = (st[0] * item, st[1] * item) if len(st) == 2 else tuple(s * item for s in st)
    return np.ndarray(array.shape, storage.dtype, storage, array.offset * item, strides)


def host_array(t: CubeTensor) -> np.ndarray:
    """The values of `t` as a numpy array of its burn dtype: a read-only view of the storage
    on the cpu runtime (no copy), a download elsewhere."""
    array = t.array
    if array.runtime.name == "cpu":
        out = host_view(array)
        out.flags.writeable = False
    else:
        out = array.runtime.download(array)
    return out if out.dtype == t.dtype.numpy else out.astype(t.dtype.numpy)
