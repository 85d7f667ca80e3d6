"""Layout: reshape, swap_dims, permute, flip, expand, repeat_dim, cat, unfold."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from burn.autodiff.graph import _MODE
from burn.autodiff.ops.common import OpsBase, record, unbroadcast, zeros
from burn.autodiff.tensor import AutodiffTensor

P = Any
T = AutodiffTensor
Shape = tuple[int, ...]


class LayoutOps(OpsBase):
    """Layout float ops of `Autodiff`; their backwards save no tensor."""

    def float_reshape(self, x: T, shape: Shape) -> T:
        inner = self.inner
        out = inner.float_reshape(x.primitive, shape)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        xs = inner.shape(x.primitive)
        return record(out, (x,), lambda g, _: (inner.float_reshape(g, xs),))

    def float_swap_dims(self, x: T, dim1: int, dim2: int) -> T:
        inner = self.inner
        out = inner.float_swap_dims(x.primitive, dim1, dim2)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        return record(out, (x,), lambda g, _: (inner.float_swap_dims(g, dim1, dim2),))

    def float_permute(self, x: T, axes: Shape) -> T:
        inner = self.inner
        out = inner.float_permute(x.primitive, axes)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        inverse = tuple(int(a) for a in np.argsort(axes))
        return record(out, (x,), lambda g, _: (inner.float_permute(g, inverse),))

    def float_flip(self, x: T, axes: Shape) -> T:
        inner = self.inner
        out = inner.float_flip(x.primitive, axes)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        return record(out, (x,), lambda g, _: (inner.float_flip(g, axes),))

    def float_expand(self, x: T, shape: Shape) -> T:
        inner = self.inner
        out = inner.float_expand(x.primitive, shape)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        xs = inner.shape(x.primitive)
        return record(out, (x,), lambda g, _: (unbroadcast(inner, g, xs),))

    def float_repeat_dim(self, x: T, dim: int, times: int) -> T:
        inner = self.inner
        out = inner.float_repeat_dim(x.primitive, dim, times)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        xs = inner.shape(x.primitive)
        split = (*xs[:dim], times, *xs[dim:])

        def fn(g: P, _: tuple[()]) -> tuple[P]:  # the tiles as a new dim, summed
            return (inner.float_reshape(inner.float_sum_dim(inner.float_reshape(g, split), dim),
                                        xs),)
        return record(out, (x,), fn)

    def float_cat(self, xs: Sequence[T], dim: int) -> T:
        inner = self.inner
        out = inner.float_cat([x.primitive for x in xs], dim)
        if not _MODE.enabled or all(x.node is None for x in xs):
            return AutodiffTensor(out)
        bounds, start = [], 0
        for x in xs:
            size = inner.shape(x.primitive)[dim]
            bounds.append((start, start + size, x.node is not None))
            start += size

        def fn(g: P, _: tuple[()]) -> tuple[P | None, ...]:
            lead = [slice(0, n, 1) for n in inner.shape(g)[:dim]]
            return tuple(inner.float_slice(g, [*lead, slice(a, b, 1)]) if need else None
                         for a, b, need in bounds)
        return record(out, xs, fn)

    def float_unfold(self, x: T, dim: int, size: int, step: int) -> T:
        inner = self.inner
        out = inner.float_unfold(x.primitive, dim, size, step)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        xs = inner.shape(x.primitive)

        def fn(g: P, _: tuple[()]) -> tuple[P]:
            # window w, offset j came from x[w * step + j]: move the window dim (last) next to
            # dim, flatten both and scatter-add at those positions
            gs = inner.shape(g)
            nd, windows = len(gs), gs[dim]
            g = inner.float_permute(g, (*range(dim + 1), nd - 1, *range(dim + 1, nd - 1)))
            flat = (*xs[:dim], windows * size, *xs[dim + 1:])
            g = inner.float_reshape(g, flat)
            pos = (np.arange(windows)[:, None] * step + np.arange(size)[None, :]).reshape(-1)
            pos = pos.reshape((-1,) + (1,) * (len(xs) - dim - 1))
            idx = inner.int_expand(inner.int_from_data(pos.astype(np.int64), inner.device_of(g)),
                                   flat)
            return (inner.float_scatter(dim, zeros(inner, g, xs), idx, g, "add"),)
        return record(out, (x,), fn)
