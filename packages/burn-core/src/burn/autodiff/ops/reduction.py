"""Reductions and scans: sum, prod, mean, max/min, cumulative ops, sort."""

from __future__ import annotations

import math
from typing import Any

from burn.autodiff.graph import _MODE
from burn.autodiff.ops.common import OpsBase, record, save, zeros
from burn.autodiff.tensor import AutodiffTensor

P = Any
T = AutodiffTensor
Shape = tuple[int, ...]


def _exclusive_cumprod(inner: Any, x: P, dim: int) -> P:
    """prod of the elements before each one along `dim` (1 for the first); no division."""
    shape = inner.shape(x)
    n = shape[dim]
    ones = inner.float_full((*shape[:dim], 1, *shape[dim + 1:]), 1.0, inner.dtype(x),
                            inner.device_of(x))
    if n <= 1:
        return inner.float_expand(ones, shape)
    head = [slice(0, s, 1) for s in shape[:dim]]
    before = inner.float_slice(inner.float_cumprod(x, dim), [*head, slice(0, n - 1, 1)])
    return inner.float_cat([ones, before], dim)


def _prod_of_others(inner: Any, x: P, dim: int) -> P:
    """For each element, the product of the others along `dim` (zero-safe)."""
    after = inner.float_flip(_exclusive_cumprod(inner, inner.float_flip(x, (dim,)), dim), (dim,))
    return inner.float_mul(_exclusive_cumprod(inner, x, dim), after)


def _scatter_to_indices(inner: Any, g: P, indices: P, dim: int, shape: Shape) -> P:
    """`g` added into zeros of `shape` at `indices` along `dim`."""
    return inner.float_scatter(dim, zeros(inner, g, shape), indices, g, "add")


class ReductionOps(OpsBase):
    """Reduction, scan and sort float ops of `Autodiff`."""

    def float_sum(self, x: T) -> T:
        inner = self.inner
        out = inner.float_sum(x.primitive)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        xs = inner.shape(x.primitive)
        return record(out, (x,), lambda g, _: (inner.float_expand(g, xs),))

    def float_sum_dim(self, x: T, dim: int) -> T:
        inner = self.inner
        out = inner.float_sum_dim(x.primitive, dim)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        xs = inner.shape(x.primitive)
        return record(out, (x,), lambda g, _: (inner.float_expand(g, xs),))

    def float_mean_dim(self, x: T, dim: int) -> T:
        inner = self.inner
        out = inner.float_mean_dim(x.primitive, dim)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        xs = inner.shape(x.primitive)
        return record(out, (x,), lambda g, _: (
            inner.float_expand(inner.float_div_scalar(g, xs[dim]), xs),))

    def float_prod(self, x: T) -> T:
        inner = self.inner
        out = inner.float_prod(x.primitive)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        xs = inner.shape(x.primitive)

        def fn(g: P, saved: tuple[P]) -> tuple[P]:
            flat = inner.float_reshape(saved[0], (math.prod(xs),))
            others = inner.float_reshape(_prod_of_others(inner, flat, 0), xs)
            # two zeros or more: every product of the others holds a zero; +0.0 as torch's
            # zeros_like, whatever the signs, infinities or NaN beside them
            zeros = inner.float_sum(inner.bool_into_float(inner.float_equal_elem(flat, 0.0),
                                                          inner.dtype(flat)))
            several = inner.bool_expand(inner.float_greater_elem(zeros, 1.5), xs)
            return (inner.float_mask_fill(inner.float_mul(others, g), several, 0.0),)
        return record(out, (x,), fn, (save(x),))

    def float_prod_dim(self, x: T, dim: int) -> T:
        inner = self.inner
        out = inner.float_prod_dim(x.primitive, dim)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        return record(out, (x,), lambda g, saved: (
            inner.float_mul(_prod_of_others(inner, saved[0], dim), g),), (save(x),))

    def _extreme(self, x: T, op: str) -> T:
        """max / min over all elements; the grad is split evenly between ties (as torch), the
        NaNs being the ties of a NaN result; the other elements get 0 (selected, not multiplied
        by 0: an infinite grad gives them 0, not NaN, as torch and Burn's scatter)."""
        inner = self.inner
        out = getattr(inner, op)(x.primitive)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)

        def fn(g: P, saved: tuple[P, P]) -> tuple[P]:
            v, result = saved
            result = inner.float_expand(result, inner.shape(v))
            both_nan = inner.bool_and(inner.float_is_nan(v), inner.float_is_nan(result))
            ties = inner.bool_or(inner.float_equal(v, result), both_nan)
            hit = inner.bool_into_float(ties, inner.dtype(v))
            share = inner.float_mul(hit, inner.float_div(g, inner.float_sum(hit)))
            return (inner.float_mask_fill(share, inner.bool_not(ties), 0.0),)
        return record(out, (x,), fn, (save(x), out))

    def float_max(self, x: T) -> T:
        return self._extreme(x, "float_max")

    def float_min(self, x: T) -> T:
        return self._extreme(x, "float_min")

    def _to_indices(self, x: T, op: str, *args: Any) -> tuple[T, P]:
        """An op returning (values, int64 indices along dim) whose values came from x[indices];
        the grad of the values is scatter-added back at the indices."""
        inner = self.inner
        out, indices = getattr(inner, op)(x.primitive, *args)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out), indices
        xs, dim = inner.shape(x.primitive), args[0]
        return record(out, (x,), lambda g, saved: (
            _scatter_to_indices(inner, g, saved[0], dim, xs),), (indices,)), indices

    def float_max_dim_with_indices(self, x: T, dim: int) -> tuple[T, P]:
        return self._to_indices(x, "float_max_dim_with_indices", dim)

    def float_min_dim_with_indices(self, x: T, dim: int) -> tuple[T, P]:
        return self._to_indices(x, "float_min_dim_with_indices", dim)

    def float_cummax(self, x: T, dim: int) -> tuple[T, P]:
        return self._to_indices(x, "float_cummax", dim)

    def float_cummin(self, x: T, dim: int) -> tuple[T, P]:
        return self._to_indices(x, "float_cummin", dim)

    def float_sort_with_indices(self, x: T, dim: int, descending: bool) -> tuple[T, P]:
        return self._to_indices(x, "float_sort_with_indices", dim, descending)

    def float_cumsum(self, x: T, dim: int) -> T:
        inner = self.inner
        out = inner.float_cumsum(x.primitive, dim)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        return record(out, (x,), lambda g, _: (_reverse_cumsum(inner, g, dim),))

    def float_cumprod(self, x: T, dim: int) -> T:
        inner = self.inner
        out = inner.float_cumprod(x.primitive, dim)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)

        def fn(g: P, saved: tuple[P]) -> tuple[P]:
            return (_cumprod_grad(inner, g, saved[0], dim),)
        return record(out, (x,), fn, (save(x),))


def _reverse_cumsum(inner: Any, g: P, dim: int) -> P:
    """Sums from each position to the end along `dim`."""
    return inner.float_flip(inner.float_cumsum(inner.float_flip(g, (dim,)), dim), (dim,))


def _cumprod_grad(inner: Any, g: P, x: P, dim: int) -> P:
    """cumprod backward as torch's: grad_i = sum_k g_k prod_{j<=k, j!=i} x_j, a product holding
    a zero other than x_i being exactly 0 (whatever infinities or NaN it holds), so +0.0 after
    a line's first zero. Computed without division: grad_i = prod_{j<i} x_j * s_i with
    s_i = g_i + x_{i+1} s_{i+1}, a linear recurrence cut at zeros, solved right to left by a
    log-depth scan of slices."""
    shape = inner.shape(x)
    n = shape[dim]
    head = [slice(0, s, 1) for s in shape[:dim]]

    def part(t: P, a: int, b: int) -> P:
        return inner.float_slice(t, [*head, slice(a, b, 1)])

    # reversed time t = n-1-i: s_t = b_t + a_t s_{t-1}, b = flip(g), a_t = x_{n-t} (a_0 unused)
    b = inner.float_flip(g, (dim,))
    a = inner.float_cat([zeros(inner, x, (*shape[:dim], 1, *shape[dim + 1:])),
                         part(inner.float_flip(x, (dim,)), 0, n - 1)], dim) if n > 1 else x
    step = 1
    while step < n:  # Hillis-Steele: compose each step with the one `step` before it
        a_now, a_before = part(a, step, n), part(a, 0, n - step)
        cut = inner.float_equal_elem(a_now, 0.0)  # a zero factor ends the sum: 0 * inf is 0
        carried = inner.float_mask_fill(inner.float_mul(a_now, part(b, 0, n - step)), cut, 0.0)
        b = inner.float_cat([part(b, 0, step), inner.float_add(part(b, step, n), carried)], dim)
        either = inner.bool_or(cut, inner.float_equal_elem(a_before, 0.0))
        a = inner.float_cat([part(a, 0, step), inner.float_mask_fill(
            inner.float_mul(a_now, a_before), either, 0.0)], dim)
        step *= 2
    grad = inner.float_mul(_exclusive_cumprod(inner, x, dim), inner.float_flip(b, (dim,)))
    return inner.float_mask_fill(grad, _after_first_zero(inner, x, dim), 0.0)


def _after_first_zero(inner: Any, x: P, dim: int) -> P:
    """Bool mask of the elements that follow a zero along `dim`."""
    is_zero = inner.bool_into_float(inner.float_equal_elem(x, 0.0), inner.dtype(x))
    zeros_before = inner.float_sub(inner.float_cumsum(is_zero, dim), is_zero)
    return inner.float_greater_elem(zeros_before, 0.5)
