"""Indexing: slice, slice_assign, select, select_assign, gather, scatter, mask_where/fill."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from burn.autodiff.graph import _MODE
from burn.autodiff.ops.common import OpsBase, record, tracked, unbroadcast, zeros
from burn.autodiff.tensor import AutodiffTensor
from burn.backend.protocol import ScatterReduce

P = Any
T = AutodiffTensor


class IndexingOps(OpsBase):
    """Indexing float ops of `Autodiff`. Index and mask primitives are the inner backend's."""

    def float_slice(self, x: T, slices: Sequence[slice]) -> T:
        inner = self.inner
        out = inner.float_slice(x.primitive, slices)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        xs = inner.shape(x.primitive)
        return record(out, (x,),
                      lambda g, _: (inner.float_slice_assign(zeros(inner, g, xs), slices, g),))

    def float_slice_assign(self, x: T, slices: Sequence[slice], value: T) -> T:
        inner = self.inner
        out = inner.float_slice_assign(x.primitive, slices, value.primitive)
        if not tracked(x, value):
            return AutodiffTensor(out)
        vs = inner.shape(value.primitive)

        def fn(g: P, _: tuple[()]) -> tuple[P, P]:
            return (inner.float_slice_assign(g, slices, zeros(inner, g, vs)),
                    inner.float_slice(g, slices))
        return record(out, (x, value), fn)

    def float_select(self, x: T, dim: int, indices: P) -> T:
        inner = self.inner
        out = inner.float_select(x.primitive, dim, indices)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        xs = inner.shape(x.primitive)

        def fn(g: P, saved: tuple[P]) -> tuple[P]:
            return (inner.float_select_assign(zeros(inner, g, xs), dim, saved[0], g),)
        return record(out, (x,), fn, (indices,))

    def float_select_assign(self, x: T, dim: int, indices: P, values: T) -> T:
        inner = self.inner
        out = inner.float_select_assign(x.primitive, dim, indices, values.primitive)
        if not tracked(x, values):
            return AutodiffTensor(out)
        return record(out, (x, values),
                      lambda g, saved: (g, inner.float_select(g, dim, saved[0])), (indices,))

    def float_gather(self, dim: int, x: T, indices: P) -> T:
        inner = self.inner
        out = inner.float_gather(dim, x.primitive, indices)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        xs = inner.shape(x.primitive)

        def fn(g: P, saved: tuple[P]) -> tuple[P]:
            return (inner.float_scatter(dim, zeros(inner, g, xs), saved[0], g, "add"),)
        return record(out, (x,), fn, (indices,))

    def float_scatter(self, dim: int, x: T, indices: P, values: T, reduce: ScatterReduce) -> T:
        inner = self.inner
        out = inner.float_scatter(dim, x.primitive, indices, values.primitive, reduce)
        if not tracked(x, values):
            return AutodiffTensor(out)

        def fn(g: P, saved: tuple[P]) -> tuple[P, P]:
            idx = saved[0]
            gx = g if reduce == "add" else inner.float_scatter(
                dim, g, idx, zeros(inner, g, inner.shape(idx)), "assign")
            return gx, inner.float_gather(dim, g, idx)
        return record(out, (x, values), fn, (indices,))

    def float_mask_where(self, x: T, mask: P, value: T) -> T:
        inner = self.inner
        out = inner.float_mask_where(x.primitive, mask, value.primitive)
        if not tracked(x, value):
            return AutodiffTensor(out)
        xs, vs = inner.shape(x.primitive), inner.shape(value.primitive)
        need_x, need_v = x.node is not None, value.node is not None

        def fn(g: P, saved: tuple[P]) -> tuple[P | None, P | None]:
            m = saved[0]
            return (unbroadcast(inner, inner.float_mask_fill(g, m, 0.0), xs) if need_x else None,
                    unbroadcast(inner, inner.float_mask_fill(g, inner.bool_not(m), 0.0), vs)
                    if need_v else None)
        return record(out, (x, value), fn, (mask,))

    def float_mask_fill(self, x: T, mask: P, value: float) -> T:
        inner = self.inner
        out = inner.float_mask_fill(x.primitive, mask, value)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        xs = inner.shape(x.primitive)
        return record(out, (x,),
                      lambda g, saved: (unbroadcast(inner, inner.float_mask_fill(g, saved[0], 0.0),
                                                    xs),), (mask,))
