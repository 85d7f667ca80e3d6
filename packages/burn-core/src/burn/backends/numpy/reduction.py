"""Reductions, scans and sorting of the NumPy backend.

Dims are kept (size 1) by the `_dim` reductions; full reductions give 0-d arrays. Int sums,
products and cumulative sums / products are int64 (as torch). float16 / bfloat16 reduce in
float32 (the `lowp` decorator) and are cast back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._common import lowp, row_sums

Array = np.ndarray
I64 = np.dtype(np.int64)


# --- shared implementations (float and int) -------------------------------------------------
def _sum(self: Any, x: Array) -> Array:
    return np.asarray(np.add.reduce(x, axis=None))


def _sum_dim(self: Any, x: Array, dim: int) -> Array:
    return np.add.reduce(x, axis=dim, keepdims=True)


def _prod(self: Any, x: Array) -> Array:
    return np.asarray(np.multiply.reduce(x, axis=None))


def _prod_dim(self: Any, x: Array, dim: int) -> Array:
    return np.multiply.reduce(x, axis=dim, keepdims=True)


def _max(self: Any, x: Array) -> Array:
    return np.asarray(np.maximum.reduce(x, axis=None))


def _min(self: Any, x: Array) -> Array:
    return np.asarray(np.minimum.reduce(x, axis=None))


def _argmax(self: Any, x: Array, dim: int) -> Array:
    """First occurrence; a NaN counts as the max (as torch)."""
    return x.argmax(axis=dim, keepdims=True).astype(I64, copy=False)


def _argmin(self: Any, x: Array, dim: int) -> Array:
    """First occurrence; a NaN counts as the min (as torch)."""
    return x.argmin(axis=dim, keepdims=True).astype(I64, copy=False)


def _max_dim_with_indices(self: Any, x: Array, dim: int) -> tuple[Array, Array]:
    idx = _argmax(self, x, dim)
    return np.take_along_axis(x, idx, axis=dim), idx


def _min_dim_with_indices(self: Any, x: Array, dim: int) -> tuple[Array, Array]:
    idx = _argmin(self, x, dim)
    return np.take_along_axis(x, idx, axis=dim), idx


#: Elements up to which cumsum adds 0.0 to its result rather than look for a -0.0 first.
_ADD_ZERO_BELOW = 4096


def _cumsum(self: Any, x: Array, dim: int) -> Array:
    """Running sum; a line's leading -0.0s sum to +0.0, as torch's, whose sum starts from 0.
    A -0.0 survives only where every element so far is -0.0, so the first slice tells whether
    adding 0.0 to the result (one pass) changes anything."""
    out = np.add.accumulate(x, axis=dim)
    if out.size < _ADD_ZERO_BELOW:
        out += 0.0
    elif out.size:
        first = out[(slice(None),) * dim + (0,)]
        if np.any((first == 0) & np.signbit(first)):
            out += 0.0
    return out


def _cumprod(self: Any, x: Array, dim: int) -> Array:
    return np.multiply.accumulate(x, axis=dim)


def _cum_extreme(x: Array, dim: int, ufunc: np.ufunc) -> tuple[Array, Array]:
    """Running max / min and the index where it was reached: the last one on ties; a NaN
    always takes over and is kept (torch's cummax / cummin)."""
    values = ufunc.accumulate(x, axis=dim)
    hit = x == values
    if x.dtype.kind == "f":
        hit |= np.isnan(x)
    shape = [1] * x.ndim
    shape[dim] = x.shape[dim]
    pos = np.arange(x.shape[dim], dtype=I64).reshape(shape)
    idx = np.maximum.accumulate(np.where(hit, pos, 0), axis=dim)
    return values, idx


def _cummax(self: Any, x: Array, dim: int) -> tuple[Array, Array]:
    return _cum_extreme(x, dim, np.maximum)


def _cummin(self: Any, x: Array, dim: int) -> tuple[Array, Array]:
    return _cum_extreme(x, dim, np.minimum)


def _sort_with_indices(self: Any, x: Array, dim: int, descending: bool) -> tuple[Array, Array]:
    """Stable sort; NaN is the largest value. Descending keeps equal values in input order."""
    if descending:
        # a stable ascending sort of the reversed data, reversed: descending, ties in order.
        idx = np.flip(np.argsort(np.flip(x, dim), axis=dim, kind="stable"), dim)
        idx = (x.shape[dim] - 1) - idx
    else:
        idx = np.argsort(x, axis=dim, kind="stable")
    idx = idx.astype(I64, copy=False)
    return np.take_along_axis(x, idx, axis=dim), idx


# --- int versions: sums and products widen to int64 ----------------------------------------
def _int_sum(self: Any, x: Array) -> Array:
    return np.asarray(np.sum(x, dtype=I64))


def _int_sum_dim(self: Any, x: Array, dim: int) -> Array:
    return x.sum(axis=dim, keepdims=True, dtype=I64)


def _int_prod(self: Any, x: Array) -> Array:
    return np.asarray(np.prod(x, dtype=I64))


def _int_prod_dim(self: Any, x: Array, dim: int) -> Array:
    return np.prod(x, axis=dim, keepdims=True, dtype=I64)


def _int_cumsum(self: Any, x: Array, dim: int) -> Array:
    return np.cumsum(x, axis=dim, dtype=I64)


def _int_cumprod(self: Any, x: Array, dim: int) -> Array:
    return np.cumprod(x, axis=dim, dtype=I64)


def _float_mean_dim(self: Any, x: Array, dim: int) -> Array:
    """NaN along an empty dim, quietly (numpy warns "Mean of empty slice")."""
    if not x.shape[dim]:
        return np.full(x.shape[:dim] + (1,) + x.shape[dim + 1:], np.nan, x.dtype)
    return np.mean(x, axis=dim, keepdims=True)


def _any(self: Any, x: Array) -> Array:
    return np.asarray(np.any(x))


def _any_dim(self: Any, x: Array, dim: int) -> Array:
    return np.any(x, axis=dim, keepdims=True)


def _all(self: Any, x: Array) -> Array:
    return np.asarray(np.all(x))


def _all_dim(self: Any, x: Array, dim: int) -> Array:
    return np.all(x, axis=dim, keepdims=True)


def _argwhere(self: Any, x: Array) -> Array:
    """int64 [n, ndim] coordinates of the true elements, row-major."""
    return np.argwhere(x).astype(I64, copy=False)


def _float(fn: Any) -> Any:
    """The float version: quiet (inf - inf, 0 * inf) and float32 math for low precision."""
    return lowp(fn, quiet=True)


def _sum_along(x: Array, dim: int) -> Array:
    """Sum along `dim`, kept (the last dim of short rows through `row_sums`)."""
    return row_sums(x) if dim == x.ndim - 1 else np.add.reduce(x, axis=dim, keepdims=True)


def _softmax(self: Any, x: Array, dim: int) -> Array:
    """exp(x - max) / sum along `dim` in one buffer (max, subtract, exp and divide in place),
    allocated first: a result past memory fails before the max is reduced (over a broadcast
    view of terabytes, minutes)."""
    out = np.empty(x.shape, x.dtype)
    np.subtract(x, np.maximum.reduce(x, axis=dim, keepdims=True, initial=-np.inf), out=out)
    np.exp(out, out=out)
    out /= _sum_along(out, dim)
    return out


def _log_softmax(self: Any, x: Array, dim: int) -> Array:
    """(x - max) - log(sum(exp(x - max))) along `dim` (its buffer allocated first, as
    `_softmax`'s)."""
    out = np.empty(x.shape, x.dtype)
    np.subtract(x, np.maximum.reduce(x, axis=dim, keepdims=True, initial=-np.inf), out=out)
    out -= np.log(_sum_along(np.exp(out), dim))
    return out


def _softmax_backward_from_output(self: Any, out: Array, grad: Array, dim: int) -> Array:
    """softmax's input gradient out * (grad - sum(grad * out, dim)) in one buffer."""
    dx = np.multiply(grad, out)
    np.subtract(grad, _sum_along(dx, dim), out=dx)
    dx *= out
    return dx


class ReductionOps:
    """sum / prod / mean / max / min / arg* / cum* / sort for float and int; any / all;
    softmax and log_softmax (fused, instead of the protocol's chains)."""

    float_sum = _float(_sum)
    float_sum_dim = _float(_sum_dim)
    float_prod = _float(_prod)
    float_prod_dim = _float(_prod_dim)
    float_mean_dim = _float(_float_mean_dim)
    float_max = _float(_max)
    float_min = _float(_min)
    float_max_dim_with_indices = _float(_max_dim_with_indices)
    float_min_dim_with_indices = _float(_min_dim_with_indices)
    float_argmax = _float(_argmax)
    float_argmin = _float(_argmin)
    float_cumsum = _float(_cumsum)
    float_cumprod = _float(_cumprod)
    float_cummax = _float(_cummax)
    float_cummin = _float(_cummin)
    float_sort_with_indices = _float(_sort_with_indices)
    softmax = _float(_softmax)
    log_softmax = _float(_log_softmax)
    # not a protocol op: Autodiff's softmax rule calls it where the inner backend has it
    softmax_backward_from_output = _float(_softmax_backward_from_output)

    int_sum = _int_sum
    int_sum_dim = _int_sum_dim
    int_prod = _int_prod
    int_prod_dim = _int_prod_dim
    int_max = _max
    int_min = _min
    int_max_dim_with_indices = _max_dim_with_indices
    int_min_dim_with_indices = _min_dim_with_indices
    int_argmax = _argmax
    int_argmin = _argmin
    int_cumsum = _int_cumsum
    int_cumprod = _int_cumprod
    int_cummax = _cummax
    int_cummin = _cummin
    int_sort_with_indices = _sort_with_indices

    bool_any = _any
    bool_any_dim = _any_dim
    bool_all = _all
    bool_all_dim = _all_dim
    bool_argwhere = _argwhere
