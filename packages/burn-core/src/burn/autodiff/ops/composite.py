"""Composites of several inner ops recorded as one node with a direct backward rule: the cross
entropy of logits and a target distribution, and the variance. The frontend
(`functional.loss`, `Tensor.var`) calls them on Autodiff instead of chaining tracked ops.
"""

from __future__ import annotations

import math
from typing import Any

from burn.autodiff.ops.common import OpsBase, record, save, tracked
from burn.autodiff.tensor import AutodiffTensor

P = Any
T = AutodiffTensor


class CompositeOps(OpsBase):
    """Autodiff-only composites (not backend ops: other backends run the frontend's chain)."""

    def cross_entropy_logits(self, x: T, q: T, dim: int) -> T:
        """-sum(q * log_softmax(x, dim), dim) (dim removed) as one node with the direct rules
        dx = g (sum(q, dim) softmax(x) - q) and dq = -g log_softmax(x, dim).

        Args:
            x: float logits.
            q: float (weighted) target distribution shaped like `x`.
            dim: the class dim (non-negative).
        Returns:
            the per-sample loss, `x`'s shape without `dim`.
        """
        inner = self.inner
        logp = inner.log_softmax(x.primitive, dim)
        shape = inner.shape(logp)
        out = inner.float_reshape(inner.float_neg(inner.float_sum_dim(
            inner.float_mul(logp, q.primitive), dim)), shape[:dim] + shape[dim + 1:])
        if not tracked(x, q):
            return AutodiffTensor(out)
        kept = shape[:dim] + (1,) + shape[dim + 1:]
        need_x, need_q = x.node is not None, q.node is not None

        def fn(g: P, saved: tuple[P, Any]) -> tuple[P | None, P | None]:
            lp, qp = saved
            g = inner.float_reshape(g, kept)
            dx = dq = None
            if need_x:
                mass = inner.float_sum_dim(qp, dim)
                dx = inner.float_mul(g, inner.float_sub(
                    inner.float_mul(mass, inner.float_exp(lp)), qp))
            if need_q:
                dq = inner.float_neg(inner.float_mul(g, lp))
            return dx, dq
        return record(out, (x, q), fn, (logp, save(q) if need_x else None))

    def var_dims(self, x: T, dims: tuple[int, ...], correction: int) -> T:
        """sum((x - mean(x, dims))**2, dims) / max(n - correction, 0), `dims` kept with size
        1, as one node with torch's direct rule dx = g 2 (x - mean) / (n - correction): its
        divisor is not clamped, so where n <= correction the gradient is finite or infinite
        as torch's (the chain of ops through the mean gave NaN).

        Args:
            x: a float tensor.
            dims: the reduced dims (non-negative, distinct, at least one).
            correction: subtracted from the number of reduced elements n.
        Returns:
            the variance, `x`'s shape with size 1 at `dims`.
        """
        inner = self.inner
        xp = x.primitive
        shape = inner.shape(xp)
        n = math.prod(shape[d] for d in dims)
        mean = xp
        for d in dims:
            mean = inner.float_mean_dim(mean, d)
        diff = inner.float_sub(xp, mean)
        out = inner.float_mul(diff, diff)
        for d in dims:
            out = inner.float_sum_dim(out, d)
        out = inner.float_div_scalar(out, float(max(n - correction, 0)))
        if not tracked(x):
            return AutodiffTensor(out)

        def fn(g: P, saved: tuple[P]) -> tuple[P]:
            (centered,) = saved
            scaled = inner.float_div_scalar(inner.float_mul_scalar(centered, 2.0),
                                            float(n - correction))
            return (inner.float_mul(scaled, g),)
        return record(out, (x,), fn, (diff,))
