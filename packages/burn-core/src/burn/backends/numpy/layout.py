"""Layout ops of the NumPy backend (the same code for float, int and bool primitives).

Results may be views of their input (reshape, permute, expand, unfold): the backend never writes
into a primitive, so sharing memory is safe and free.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from burn.backend.protocol import Shape

Array = np.ndarray


def _reshape(self: object, x: Array, shape: Shape) -> Array:
    return np.reshape(x, shape)


def _swap_dims(self: object, x: Array, dim1: int, dim2: int) -> Array:
    return np.swapaxes(x, dim1, dim2)


def _permute(self: object, x: Array, axes: Shape) -> Array:
    return np.transpose(x, axes)


def _flip(self: object, x: Array, axes: Shape) -> Array:
    if not axes:
        return x
    return np.flip(x, tuple(axes))


def _expand(self: object, x: Array, shape: Shape) -> Array:
    """A read-only broadcast view."""
    return np.broadcast_to(x, shape)


def _repeat_dim(self: object, x: Array, dim: int, times: int) -> Array:
    reps = [1] * x.ndim
    reps[dim] = times
    return np.tile(x, reps)


def _cat(self: object, xs: Sequence[Array], dim: int) -> Array:
    return np.concatenate(list(xs), axis=dim)


def _unfold(self: object, x: Array, dim: int, size: int, step: int) -> Array:
    """torch.Tensor.unfold: `dim` becomes the window count, the window is a new last dim."""
    windows = sliding_window_view(x, size, axis=dim)
    index = [slice(None)] * x.ndim
    index[dim] = slice(None, None, step)
    return windows[tuple(index)]


class LayoutOps:
    """reshape / swap_dims / permute / flip / expand / repeat_dim / cat / unfold, all kinds."""

    float_reshape = int_reshape = bool_reshape = _reshape
    float_swap_dims = int_swap_dims = bool_swap_dims = _swap_dims
    float_permute = int_permute = bool_permute = _permute
    float_flip = int_flip = bool_flip = _flip
    float_expand = int_expand = bool_expand = _expand
    float_repeat_dim = int_repeat_dim = bool_repeat_dim = _repeat_dim
    float_cat = int_cat = bool_cat = _cat
    float_unfold = int_unfold = bool_unfold = _unfold
