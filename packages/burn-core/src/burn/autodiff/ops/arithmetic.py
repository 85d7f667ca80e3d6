"""Arithmetic: binary and scalar ops, matmul, clamp and powers."""

from __future__ import annotations

import math
from typing import Any

from burn.autodiff.checkpoint import Uses
from burn.autodiff.graph import _MODE, Node
from burn.autodiff.ops.common import OpsBase, record, save, tracked, unbroadcast, zeros
from burn.autodiff.tensor import AutodiffTensor
from burn.backend.special_pow import powf_scalar

P = Any
T = AutodiffTensor


class ArithmeticOps(OpsBase):
    """Arithmetic float ops of `Autodiff`."""

    def float_add(self, lhs: T, rhs: T) -> T:
        # `_binary("float_add", lhs, rhs, _grad, _grad)`, written out: the hottest op
        out = self.inner.float_add(lhs.primitive, rhs.primitive)
        if (lhs.node is None and rhs.node is None) or not _MODE.enabled:
            return AutodiffTensor(out)
        inner = self.inner
        ls, rs = inner.shape(lhs.primitive), inner.shape(rhs.primitive)
        if ls == rs:  # no broadcast: both grads are the output grad
            return AutodiffTensor(out, Node((lhs.node, rhs.node), _pass_both))

        def fn(g: P, saved: tuple[()]) -> tuple[P, P]:
            return unbroadcast(inner, g, ls), unbroadcast(inner, g, rs)
        return AutodiffTensor(out, Node((lhs.node, rhs.node), fn))  # record(), inlined: hot

    def float_sub(self, lhs: T, rhs: T) -> T:
        return self._binary("float_sub", lhs, rhs, _grad, lambda i, g, a, b: i.float_neg(g))

    def float_mul(self, lhs: T, rhs: T) -> T:
        return self._binary("float_mul", lhs, rhs, lambda i, g, a, b: i.float_mul(g, b),
                            lambda i, g, a, b: i.float_mul(g, a), "b", "a")

    def float_div(self, lhs: T, rhs: T) -> T:
        # d/da = g / b, d/db = -g a / b^2
        return self._binary(
            "float_div", lhs, rhs, lambda i, g, a, b: i.float_div(g, b),
            lambda i, g, a, b: i.float_neg(i.float_mul(i.float_div(g, b), i.float_div(a, b))),
            "b", "ab")

    def float_remainder(self, lhs: T, rhs: T) -> T:
        return self._modulo("float_remainder", _floor_quotient, lhs, rhs)  # a - b q

    def float_fmod(self, lhs: T, rhs: T) -> T:
        return self._modulo("float_fmod", lambda i, a, b: i.float_trunc(i.float_div(a, b)),
                            lhs, rhs)  # a - b trunc(a / b)

    def _modulo(self, op: str, quotient: Any, lhs: T, rhs: T) -> T:
        """`op`, a - b q with q = `quotient(inner, a, b)`: the gradient passes to a, and is
        -g q for b (as torch's)."""
        return self._binary(
            op, lhs, rhs, _grad,
            lambda i, g, a, b: i.float_neg(i.float_mul(g, quotient(i, a, b))), "", "ab")

    # --- one-input (memory-bound) ---
    def float_add_scalar(self, lhs: T, rhs: float) -> T:
        return self._elementwise(lhs, lambda p: self.inner.float_add_scalar(p, rhs),
                                 _identity, Uses.NOTHING)

    def float_sub_scalar(self, lhs: T, rhs: float) -> T:
        return self._elementwise(lhs, lambda p: self.inner.float_sub_scalar(p, rhs),
                                 _identity, Uses.NOTHING)

    def float_mul_scalar(self, lhs: T, rhs: float) -> T:
        return self._elementwise(lhs, lambda p: self.inner.float_mul_scalar(p, rhs),
                                 lambda i, g, _: i.float_mul_scalar(g, rhs), Uses.NOTHING)

    def float_div_scalar(self, lhs: T, rhs: float) -> T:
        return self._elementwise(lhs, lambda p: self.inner.float_div_scalar(p, rhs),
                                 lambda i, g, _: i.float_div_scalar(g, rhs), Uses.NOTHING)

    def float_remainder_scalar(self, lhs: T, rhs: float) -> T:
        return self._elementwise(lhs, lambda p: self.inner.float_remainder_scalar(p, rhs),
                                 _identity, Uses.NOTHING)

    def float_fmod_scalar(self, lhs: T, rhs: float) -> T:
        return self._elementwise(lhs, lambda p: self.inner.float_fmod_scalar(p, rhs),
                                 _identity, Uses.NOTHING)

    def float_neg(self, x: T) -> T:
        return self._elementwise(x, self.inner.float_neg, lambda i, g, _: i.float_neg(g),
                                 Uses.NOTHING)

    def float_recip(self, x: T) -> T:
        # d(1/x) = -1/x^2 = -out^2
        return self._elementwise(
            x, self.inner.float_recip,
            lambda i, g, out: i.float_neg(i.float_mul(g, i.float_mul(out, out))), Uses.OUTPUT)

    def float_clamp(self, x: T, min: float | None, max: float | None) -> T:
        def rule(i: Any, g: P, v: P) -> P:
            # as torch: the grad passes where min <= x <= max (NaN gets none)
            inside = None
            for bound in (i.float_greater_equal_elem(v, min) if min is not None else None,
                          i.float_lower_equal_elem(v, max) if max is not None else None):
                if bound is not None:
                    inside = bound if inside is None else i.bool_and(inside, bound)
            return g if inside is None else i.float_mask_fill(g, i.bool_not(inside), 0.0)
        return self._elementwise(x, lambda p: self.inner.float_clamp(p, min, max), rule,
                                 Uses.INPUT)

    def float_powf_scalar(self, lhs: T, rhs: float) -> T:
        def rule(i: Any, g: P, v: P) -> P:
            if rhs == 0:
                return zeros(i, g)
            return i.float_mul(g, i.float_mul_scalar(powf_scalar(i, v, rhs - 1), rhs))
        return self._elementwise(lhs, lambda p: powf_scalar(self.inner, p, rhs), rule,
                                 Uses.INPUT)

    # --- compute-bound ---
    def float_powf(self, lhs: T, rhs: T) -> T:
        out = self.inner.float_powf(lhs.primitive, rhs.primitive)
        if not tracked(lhs, rhs):
            return AutodiffTensor(out)
        inner = self.inner
        ls, rs = inner.shape(lhs.primitive), inner.shape(rhs.primitive)
        need_l, need_r = lhs.node is not None, rhs.node is not None

        def fn(g: P, saved: tuple[P, P, P]) -> tuple[P | None, P | None]:
            a, b, result = saved
            gl = gr = None
            if need_l:  # b a^(b-1), zero where b == 0 (as torch)
                d = inner.float_mul(b, inner.float_powf(a, inner.float_sub_scalar(b, 1.0)))
                d = inner.float_mask_fill(d, inner.float_equal_elem(b, 0.0), 0.0)
                gl = unbroadcast(inner, inner.float_mul(g, d), ls)
            if need_r:  # a^b log a, zero where a == 0 and b >= 0 (as torch)
                d = inner.float_mul(result, inner.float_log(a))
                d = inner.float_mask_fill(d, inner.bool_and(inner.float_equal_elem(a, 0.0),
                                                            inner.float_greater_equal_elem(b, 0.0)),
                                          0.0)
                gr = unbroadcast(inner, inner.float_mul(g, d), rs)
            return gl, gr
        return record(out, (lhs, rhs), fn, (save(lhs), save(rhs), out if need_r else None))

    def float_matmul(self, lhs: T, rhs: T) -> T:
        out = self.inner.float_matmul(lhs.primitive, rhs.primitive)
        if not tracked(lhs, rhs):
            return AutodiffTensor(out)
        inner = self.inner
        ls, rs = inner.shape(lhs.primitive), inner.shape(rhs.primitive)
        need_l, need_r = lhs.node is not None, rhs.node is not None

        def fn(g: P, saved: tuple[P, P]) -> tuple[P | None, P | None]:
            a, b = saved
            gl = gr = None
            if need_l:
                gl = unbroadcast(inner, inner.float_matmul(g, _mt(inner, b)), ls)
            if need_r and len(rs) == 2 < len(ls):  # one product over every row of the batch
                rows = math.prod(ls[:-1])
                gr = inner.float_matmul(
                    inner.float_swap_dims(inner.float_reshape(a, (rows, ls[-1])), 0, 1),
                    inner.float_reshape(g, (rows, rs[-1])))
            elif need_r:
                gr = unbroadcast(inner, inner.float_matmul(_mt(inner, a), g), rs)
            return gl, gr
        return record(out, (lhs, rhs), fn,
                      (save(lhs) if need_r else None, save(rhs) if need_l else None))


def _floor_quotient(i: Any, a: P, b: P) -> P:
    """The quotient q of the exact remainder a - b q, as torch's floor division: from
    fmod (a - fmod(a, b)) / b, one less where fmod is nonzero and its sign is not b's, rounded
    to an integer; +-0 with the sign of a / b where that is 0; a / b where b is 0; NaN where a
    is infinite. (floor(a / b) is one more where a / b rounds up to an integer, 1 / 0.1 in
    float32, and -0 rather than -1 for a finite a over an infinite b of the other sign.)"""
    mod = i.float_fmod(a, b)
    div = i.float_div(i.float_sub(a, mod), b)
    other_sign = i.bool_and(i.bool_not(i.float_equal_elem(mod, 0.0)),
                            i.bool_xor(i.float_lower_elem(b, 0.0), i.float_lower_elem(mod, 0.0)))
    div = i.float_mask_where(div, other_sign, i.float_sub_scalar(div, 1.0))
    q = i.float_floor(div)
    q = i.float_mask_where(q, i.float_greater_elem(i.float_sub(div, q), 0.5),
                           i.float_add_scalar(q, 1.0))
    exact = i.float_div(a, b)
    q = i.float_mask_where(q, i.float_equal_elem(div, 0.0), i.float_mul_scalar(exact, 0.0))
    return i.float_mask_where(q, i.float_equal_elem(b, 0.0), exact)


def _identity(inner: Any, g: P, _: P) -> P:
    return g


def _grad(inner: Any, g: P, a: P, b: P) -> P:
    """A binary op's operand grad that is the output grad itself (as for a + b)."""
    return g


def _mt(inner: Any, x: P) -> P:
    """`x` with its last two dims swapped."""
    nd = len(inner.shape(x))
    return inner.float_swap_dims(x, nd - 2, nd - 1)


def _pass_both(g: P, saved: tuple[()]) -> tuple[P, P]:
    """Backward of a same-shape add: the output grad for both inputs."""
    return g, g
