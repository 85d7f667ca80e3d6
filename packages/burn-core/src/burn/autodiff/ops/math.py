"""Elementwise math: one table of derivatives for the one-input ops, plus atan2 and the
activations with direct rules (sigmoid, silu, mish, relu, softmax, log_softmax, gelu)."""

from __future__ import annotations

import math
from typing import Any, Literal

from burn.autodiff.checkpoint import NoCheckpointing, Uses
from burn.autodiff.ops.common import ElementwiseRule, OpsBase, record, tracked, zeros
from burn.autodiff.ops.composite import CompositeOps
from burn.autodiff.tensor import AutodiffTensor
from burn.dtype import DType

P = Any
T = AutodiffTensor


def _times(deriv: Any) -> ElementwiseRule:
    """The rule grad * deriv(inner, value)."""
    return lambda i, g, v: i.float_mul(g, deriv(i, v))


def _over_norm(inner: Any, g: P, a: P, b: P) -> P:
    """g / (a^2 + b^2), 0 where a = b = 0 (as torch's atan2 gradient at the origin)."""
    norm = inner.float_add(_sq(inner, a), _sq(inner, b))
    return inner.float_mask_fill(inner.float_div(g, norm), inner.float_equal_elem(norm, 0.0), 0.0)


def _sq(i: Any, v: P) -> P:
    return i.float_mul(v, v)


def _one_minus(i: Any, v: P) -> P:
    """1 - v, +0.0 at v = 1 as torch's (-(v - 1) was -0.0 there: the infinite gradients of
    asin, acos and atanh at +-1 took the wrong sign, and the zero gradients of saturated
    tanh, sigmoid and tanh-GELU the opposite sign of torch's)."""
    return i.float_add_scalar(i.float_neg(v), 1.0)


def _one_minus_sq(i: Any, v: P) -> P:
    """1 - v^2 (`_one_minus`)."""
    return _one_minus(i, _sq(i, v))


def _zero(i: Any, g: P, _: P) -> P:
    return zeros(i, g)


# name -> (value the derivative needs, rule)
_RULES: dict[str, tuple[Uses, ElementwiseRule]] = {
    "exp": (Uses.OUTPUT, _times(lambda i, out: out)),
    "log": (Uses.INPUT, lambda i, g, x: i.float_div(g, x)),
    "log1p": (Uses.INPUT, lambda i, g, x: i.float_div(g, i.float_add_scalar(x, 1.0))),
    "sqrt": (Uses.OUTPUT, lambda i, g, out: i.float_div(i.float_mul_scalar(g, 0.5), out)),
    "abs": (Uses.INPUT, _times(lambda i, x: i.float_sign(x))),
    "sin": (Uses.INPUT, _times(lambda i, x: i.float_cos(x))),
    "cos": (Uses.INPUT, _times(lambda i, x: i.float_neg(i.float_sin(x)))),
    "tan": (Uses.OUTPUT, _times(lambda i, out: i.float_add_scalar(_sq(i, out), 1.0))),
    "sinh": (Uses.INPUT, _times(lambda i, x: i.float_cosh(x))),
    "cosh": (Uses.INPUT, _times(lambda i, x: i.float_sinh(x))),
    "tanh": (Uses.OUTPUT, _times(_one_minus_sq)),
    "asin": (Uses.INPUT, lambda i, g, x: i.float_div(g, i.float_sqrt(_one_minus_sq(i, x)))),
    "acos": (Uses.INPUT, lambda i, g, x: i.float_neg(i.float_div(
        g, i.float_sqrt(_one_minus_sq(i, x))))),
    "atan": (Uses.INPUT, lambda i, g, x: i.float_div(g, i.float_add_scalar(_sq(i, x), 1.0))),
    "asinh": (Uses.INPUT, lambda i, g, x: i.float_div(
        g, i.float_sqrt(i.float_add_scalar(_sq(i, x), 1.0)))),
    "acosh": (Uses.INPUT, lambda i, g, x: i.float_div(
        g, i.float_sqrt(i.float_sub_scalar(_sq(i, x), 1.0)))),
    "atanh": (Uses.INPUT, lambda i, g, x: i.float_div(g, _one_minus_sq(i, x))),
    "erf": (Uses.INPUT, _times(lambda i, x: i.float_mul_scalar(
        i.float_exp(i.float_neg(_sq(i, x))), 2 / math.sqrt(math.pi)))),
    "sign": (Uses.NOTHING, _zero),
    "round": (Uses.NOTHING, _zero),
    "floor": (Uses.NOTHING, _zero),
    "ceil": (Uses.NOTHING, _zero),
    "trunc": (Uses.NOTHING, _zero),
}


def _make(op: str, uses: Uses, rule: ElementwiseRule) -> Any:
    def method(self: OpsBase, x: T) -> T:
        return self._elementwise(x, getattr(self.inner, op), rule, uses)
    method.__name__ = method.__qualname__ = op
    method.__doc__ = f"`{op}` of the inner backend, differentiated."
    return method


class MathOps(CompositeOps):
    """Elementwise math float ops of `Autodiff` (the one-input ops come from `_RULES`)."""

    def float_atan2(self, lhs: T, rhs: T) -> T:
        # d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2)
        return self._binary(
            "float_atan2", lhs, rhs, lambda i, g, a, b: i.float_mul(_over_norm(i, g, a, b), b),
            lambda i, g, a, b: i.float_neg(i.float_mul(_over_norm(i, g, a, b), a)), "ab", "ab")

    def sigmoid(self, x: T) -> T:
        """The inner sigmoid with the direct rule grad * s * (1 - s)."""
        return self._elementwise(x, self.inner.sigmoid, _sigmoid_rule, Uses.OUTPUT)

    def silu(self, x: T) -> T:
        """The inner silu with torch's direct rule g s (1 + x (1 - s)), s = sigmoid(x): the
        product rule of x * sigmoid(x) formed g x, which overflows for large x (3e38 * 4 =
        inf) before meeting sigmoid's 0 slope (NaN; torch gives g)."""
        return self._elementwise(x, self.inner.silu, _silu_rule, Uses.INPUT)

    def mish(self, x: T) -> T:
        """The inner mish with torch's direct rule g (t + x sigmoid(x) (1 - t^2)),
        t = tanh(softplus(x)) (finite where the composite's product rule overflowed, as silu)."""
        return self._elementwise(x, self.inner.mish, _mish_rule, Uses.INPUT)

    def relu(self, x: T) -> T:
        """The inner relu; backward is the inner `relu_backward` of its output (no gradient
        where the output is <= 0, as Burn / torch)."""
        return self._elementwise(x, self.inner.relu, _relu_rule, Uses.OUTPUT)

    def softmax(self, x: T, dim: int) -> T:
        """The inner softmax (one op) with torch's direct rule s * (g - sum(g * s, dim)), in
        one op where the inner backend has `softmax_backward_from_output` (NumPy; the cube
        backends, a rows kernel on the cpu runtime)."""
        def rule(i: Any, g: P, s: P) -> P:
            fused = getattr(i, "softmax_backward_from_output", None)
            if fused is not None:
                return fused(s, g, dim)
            return i.float_mul(s, i.float_sub(g, i.float_sum_dim(i.float_mul(g, s), dim)))
        return self._elementwise(x, lambda p: self.inner.softmax(p, dim), rule, Uses.OUTPUT)

    def log_softmax(self, x: T, dim: int) -> T:
        """The inner log_softmax (one op) with torch's direct rule g - exp(out) sum(g, dim)."""
        def rule(i: Any, g: P, out: P) -> P:
            return i.float_sub(g, i.float_mul(i.float_exp(out), i.float_sum_dim(g, dim)))
        return self._elementwise(x, lambda p: self.inner.log_softmax(p, dim), rule, Uses.OUTPUT)

    def gelu(self, x: T, approximate: Literal["none", "tanh"]) -> T:
        """The inner gelu (one op) with its direct rule (torch's GeluBackward formulas). The
        exact form, when every node saves its values (no checkpointing), reads cdf(x) from the
        forward instead of recomputing erf, through the inner backend's `gelu_with_cdf` /
        `gelu_backward_from_cdf` where it has them (NumPy: one pass over cache-sized blocks
        each; the cube backends: a cdf kernel and a one-kernel backward); else (fusion, whose
        stream fuses the rule's ops) the rule recomputes erf from the saved input (a cdf of
        gelu(x) / x was wrong where gelu(x) rounds: subnormal or float16 results of tiny x)."""
        inner = self.inner
        with_cdf = getattr(inner, "gelu_with_cdf", None)
        if approximate == "tanh" or with_cdf is None or \
                not isinstance(self.checkpoint, NoCheckpointing):
            rule = _gelu_tanh_rule if approximate == "tanh" else _gelu_rule
            return self._elementwise(x, lambda p: inner.gelu(p, approximate), rule, Uses.INPUT)
        if not tracked(x):
            return AutodiffTensor(inner.gelu(x.primitive, approximate))
        out, cdf = with_cdf(x.primitive)
        from_cdf = inner.gelu_backward_from_cdf  # type: ignore[attr-defined]
        return record(out, (x,), lambda g, saved: (from_cdf(*saved, g),), (x.primitive, cdf))


def _relu_rule(i: Any, g: P, out: P) -> P:
    return i.relu_backward(out, g)


def _in_float32(rule: ElementwiseRule) -> ElementwiseRule:
    """`rule` computed in float32 for float16 / bfloat16 values, its result rounded back once
    (torch's GELU backward computes half dtypes in float32: in float16 the tanh form's x^3
    overflowed from |x| = 256 and its gradient was NaN there, torch's 1 or 0)."""
    def widened(i: Any, g: P, x: P) -> P:
        dtype = i.dtype(x)
        if dtype not in (DType.float16, DType.bfloat16):
            return rule(i, g, x)
        wide = rule(i, i.float_cast(g, DType.float32), i.float_cast(x, DType.float32))
        return i.float_cast(wide, dtype)
    return widened


@_in_float32
def _gelu_rule(i: Any, g: P, x: P) -> P:
    """g * (cdf(x) + x pdf(x)), cdf(x) = (1 + erf(x / sqrt 2)) / 2, pdf the normal density."""
    cdf = i.float_mul_scalar(i.float_add_scalar(i.float_erf(
        i.float_mul_scalar(x, 1 / math.sqrt(2))), 1.0), 0.5)
    x_pdf = i.float_mul(x, i.float_mul_scalar(
        i.float_exp(i.float_mul_scalar(_sq(i, x), -0.5)), 1 / math.sqrt(2 * math.pi)))
    return i.float_mul(g, i.float_add(cdf, x_pdf))


@_in_float32
def _gelu_tanh_rule(i: Any, g: P, x: P) -> P:
    """g * (0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3c x^2)), t = tanh(k (x + c x^3)),
    k = sqrt(2 / pi), c = 0.044715."""
    k, c = math.sqrt(2 / math.pi), 0.044715
    x2 = _sq(i, x)
    t = i.float_tanh(i.float_mul_scalar(i.float_mul(x, i.float_add_scalar(
        i.float_mul_scalar(x2, c), 1.0)), k))
    left = i.float_mul_scalar(i.float_add_scalar(t, 1.0), 0.5)
    slope = i.float_mul_scalar(i.float_add_scalar(i.float_mul_scalar(x2, 3 * c), 1.0), 0.5 * k)
    right = i.float_mul(i.float_mul(x, _one_minus_sq(i, t)), slope)
    return i.float_mul(g, i.float_add(left, right))


def _silu_rule(i: Any, g: P, x: P) -> P:
    s = i.sigmoid(x)
    return i.float_mul(g, i.float_mul(s, i.float_add_scalar(i.float_mul(x, _one_minus(i, s)),
                                                             1.0)))


def _mish_rule(i: Any, g: P, x: P) -> P:
    t = i.float_tanh(i.softplus(x, 1.0, 20.0))
    slope = i.float_mul(i.float_mul(x, i.sigmoid(x)), _one_minus_sq(i, t))
    return i.float_mul(g, i.float_add(t, slope))


def _sigmoid_rule(i: Any, g: P, s: P) -> P:
    return i.float_mul(g, i.float_mul(s, _one_minus(i, s)))


for _name, (_uses, _rule) in _RULES.items():
    setattr(MathOps, f"float_{_name}", _make(f"float_{_name}", _uses, _rule))
