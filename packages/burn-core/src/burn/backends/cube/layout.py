"""Layout ops of the cube backends: views without copies where the strides allow, kernels
otherwise.

reshape (a view of a contiguous tensor), swap_dims, permute, expand, unfold and slice with
positive steps are views; flip, repeat_dim, cat and slice_assign run copy kernels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .copy import copy_into
from .kernels import flip_kernel
from .tensor import CubeTensor, Shape, dense_strides


def contiguous(backend: Any, x: CubeTensor) -> CubeTensor:
    """`x` itself when dense, else a dense copy."""
    return x if x.is_contiguous else contiguous_copy(backend, x)


def dense_from_start(backend: Any, x: CubeTensor) -> CubeTensor:
    """`x` as a dense rank-1 tensor from its storage's first element, for the rows kernels
    that index their storage directly (`t[row * n + k]`, no view offset): itself where it is
    one, else a dense copy (a row slice `x[2:]` is dense but starts past row 0: those kernels
    read rows 0 and 1 of it)."""
    if x.offset or not x.is_contiguous:
        x = contiguous_copy(backend, x)
    return x.flat()


def reshape(backend: Any, x: CubeTensor, shape: Shape) -> CubeTensor:
    """A view of `x` (copied first when not contiguous) with `shape`."""
    shape = tuple(shape)
    return contiguous(backend, x).derived(shape, dense_strides(shape))


def permute(backend: Any, x: CubeTensor, axes: Shape) -> CubeTensor:
    """A view with the dimensions in `axes` order."""
    return x.derived(tuple(map(x.shape.__getitem__, axes)),
                     tuple(map(x.strides.__getitem__, axes)))


def swap_dims(backend: Any, x: CubeTensor, dim1: int, dim2: int) -> CubeTensor:
    """A view with two dimensions exchanged."""
    shape, strides = list(x.shape), list(x.strides)
    shape[dim1], shape[dim2] = shape[dim2], shape[dim1]
    strides[dim1], strides[dim2] = strides[dim2], strides[dim1]
    return x.derived(tuple(shape), tuple(strides))


def expand(backend: Any, x: CubeTensor, shape: Shape) -> CubeTensor:
    """A stride-0 view broadcast to `shape`."""
    from .elementwise import broadcast_view

    return broadcast_view(x, tuple(shape))


def flip(backend: Any, x: CubeTensor, axes: Shape) -> CubeTensor:
    """A dense copy with `axes` reversed."""
    out = backend.empty(x.shape, x.dtype)
    if out.size:
        marks = tuple(d in set(axes) for d in range(len(x.shape)))
        backend.launch(flip_kernel(x.dtype, marks), out.size, x.array, out.array)
    return out


def slice_(backend: Any, x: CubeTensor, slices: Sequence[slice]) -> CubeTensor:
    """Basic slicing: a view for positive steps; negative steps flip a view of the same
    elements."""
    shape, strides, offset, flipped = [], [], x.offset, []
    padded = list(slices) + [slice(None)] * (len(x.shape) - len(slices))
    for dim, (size, stride, sl) in enumerate(zip(x.shape, x.strides, padded, strict=True)):
        start, stop, step = sl.indices(size)
        count = len(range(start, stop, step))
        if step < 0 and count:
            start, step = start + (count - 1) * step, -step
            flipped.append(dim)
        shape.append(count)
        strides.append(stride * step)
        offset += stride * start if count else 0
    view = x.view(tuple(shape), tuple(strides), offset)
    return flip(backend, view, tuple(flipped)) if flipped else view


def slice_assign(backend: Any, x: CubeTensor, slices: Sequence[slice],
                 value: CubeTensor) -> CubeTensor:
    """A copy of `x` with `value` written into the slice (negative steps write flipped)."""
    out = contiguous_copy(backend, x)
    padded = list(slices) + [slice(None)] * (len(x.shape) - len(slices))
    flips = tuple(d for d, sl in enumerate(padded) if (sl.step or 1) < 0)
    target = slice_(backend, out, [slice(*_positive(sl, n)) for sl, n in zip(padded, x.shape,
                                                                               strict=True)])
    source = flip(backend, value, flips) if flips else value
    copy_into(backend, source, target)
    return out


def _positive(sl: slice, size: int) -> tuple[int, int, int]:
    """The same elements as `sl`, as a slice with a positive step (in ascending order)."""
    start, stop, step = sl.indices(size)
    count = len(range(start, stop, step))
    if step > 0 or not count:
        return (start, start + max(count - 1, 0) * step + 1, step) if count else (0, 0, 1)
    low = start + (count - 1) * step
    return low, start + 1, -step


def contiguous_copy(backend: Any, x: CubeTensor) -> CubeTensor:
    """A new dense tensor holding the values of `x`."""
    out = backend.empty(x.shape, x.dtype)
    copy_into(backend, x, out)
    return out


def repeat_dim(backend: Any, x: CubeTensor, dim: int, times: int) -> CubeTensor:
    """`x` repeated `times` along `dim` (a stride-0 view copied once)."""
    shape = x.shape[:dim] + (times,) + x.shape[dim:]
    strides = x.strides[:dim] + (0,) + x.strides[dim:]
    view = x.view(shape, strides)
    out = backend.empty(shape, x.dtype)
    copy_into(backend, view, out)
    merged = x.shape[:dim] + (times * x.shape[dim],) + x.shape[dim + 1:]
    return out.view(merged, dense_strides(merged))


def cat(backend: Any, xs: Sequence[CubeTensor], dim: int) -> CubeTensor:
    """The tensors joined along `dim`: each copied into its slice of the output."""
    shape = list(xs[0].shape)
    shape[dim] = sum(t.shape[dim] for t in xs)
    out = backend.empty(tuple(shape), xs[0].dtype)
    start = 0
    for t in xs:
        part = [slice(None)] * len(shape)
        part[dim] = slice(start, start + t.shape[dim])
        copy_into(backend, t, slice_(backend, out, part))
        start += t.shape[dim]
    return out


def unfold(backend: Any, x: CubeTensor, dim: int, size: int, step: int) -> CubeTensor:
    """Windows of `size` every `step` along `dim` as a view: dim becomes the window count and a
    last dimension of `size` is added (torch.Tensor.unfold)."""
    count = (x.shape[dim] - size) // step + 1 if x.shape[dim] >= size else 0
    shape = (*x.shape[:dim], count, *x.shape[dim + 1:], size)
    strides = (*x.strides[:dim], x.strides[dim] * step, *x.strides[dim + 1:], x.strides[dim])
    return x.view(shape, strides)


#: op name suffix -> function(backend, *args), for the float_, int_ and bool_ methods.
LAYOUT: dict[str, Callable[..., CubeTensor]] = {
    "reshape": reshape, "swap_dims": swap_dims, "permute": permute, "flip": flip,
    "expand": expand, "repeat_dim": repeat_dim, "cat": cat, "unfold": unfold,
    "slice": slice_, "slice_assign": slice_assign}
