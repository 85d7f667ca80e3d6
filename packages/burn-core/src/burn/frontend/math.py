"""Elementwise math: exp, log, trigonometry, rounding, nan / inf tests, activations."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from burn.dtype import DType, Kind
from burn.frontend.base import TensorBase
from burn.frontend.dispatch import BinaryOp, binary_op
from burn.frontend.validation import require_kind

if TYPE_CHECKING:
    from burn.backend.protocol import Backend
    from burn.frontend.tensor import Tensor

_LN2, _LN10 = math.log(2.0), math.log(10.0)

ATAN2 = BinaryOp("atan2", {"float_": "float_atan2"})


def _hypot(b: Backend, x: Any, y: Any) -> Any:
    """sqrt(x^2 + y^2) as m sqrt(1 + (n / m)^2) (m, n the larger and smaller of |x|, |y|), so
    that the squares neither underflow nor overflow (hypot(1e-30, 5e-31) was 0 in float32,
    hypot(1e30, 1e30) inf); NaN where either is NaN, inf where either is infinite (even with
    a NaN, as torch). Where one operand is infinite and the other finite, both
    gradients are 0 (torch: the infinite one's NaN)."""
    ax, ay = b.float_abs(x), b.float_abs(y)
    swap = b.float_lower(ax, ay)
    larger, smaller = b.float_mask_where(ax, swap, ay), b.float_mask_where(ay, swap, ax)
    x_inf, y_inf = b.float_is_inf(x), b.float_is_inf(y)
    nan = b.bool_or(b.float_is_nan(x), b.float_is_nan(y))
    # (one operand infinite, the other finite: its result is filled in below, and 1 in the
    # larger's place keeps inf * 0 out of the gradient, so the finite operand's is 0, as
    # torch's)
    larger = b.float_mask_fill(larger, b.bool_and(b.bool_xor(x_inf, y_inf), b.bool_not(nan)),
                               1.0)
    ratio = b.float_div(smaller, larger)
    h = b.float_mul(larger, b.float_sqrt(b.float_add_scalar(b.float_mul(ratio, ratio), 1.0)))
    h = b.float_mask_fill(h, b.float_equal_elem(larger, 0.0), 0.0)
    h = b.float_mask_fill(h, nan, math.nan)
    return b.float_mask_fill(h, b.bool_or(x_inf, y_inf), math.inf)


HYPOT = BinaryOp("hypot", {"float_": _hypot})


def _float_op(op: str) -> Callable[[TensorBase], Tensor]:
    """A method applying backend `float_<op>`; int and bool inputs become float32 first."""

    def method(self: TensorBase) -> Tensor:
        return self._to_float()._same(op)

    method.__name__ = op
    method.__doc__ = f"Elementwise {op} (int and bool inputs give float32, as torch)."
    return method


def _rounding_op(op: str) -> Callable[[TensorBase], Tensor]:
    """A method applying backend `float_<op>`; int tensors are returned as they are."""

    def method(self: TensorBase) -> Tensor:
        require_kind(op, self._dtype, Kind.FLOAT, Kind.INT)
        return self._same(op) if self._k == "float_" else self  # type: ignore[return-value]

    method.__name__ = op
    method.__doc__ = f"Elementwise {op} (identity on int tensors)."
    return method


def _test_op(op: str) -> Callable[[TensorBase], Tensor]:
    """A bool-valued float test (`float_is_nan` / `float_is_inf`); all false for other kinds."""

    def method(self: TensorBase) -> Tensor:
        if self._k != "float_":
            return self._full(self.shape, False, DType.bool)
        return self._wrap(self._fn(op)(self._prim), DType.bool)

    method.__name__ = op
    method.__doc__ = f"Elementwise {op.replace('_', '')} test, as a bool tensor."
    return method


class MathMixin(TensorBase):
    """Elementwise math methods of `burn.Tensor`."""

    __slots__ = ()

    exp = _float_op("exp")
    log = _float_op("log")
    log1p = _float_op("log1p")
    sqrt = _float_op("sqrt")
    sin = _float_op("sin")
    cos = _float_op("cos")
    tan = _float_op("tan")
    sinh = _float_op("sinh")
    cosh = _float_op("cosh")
    tanh = _float_op("tanh")
    asin = _float_op("asin")
    acos = _float_op("acos")
    atan = _float_op("atan")
    asinh = _float_op("asinh")
    acosh = _float_op("acosh")
    atanh = _float_op("atanh")
    erf = _float_op("erf")
    round = _rounding_op("round")
    floor = _rounding_op("floor")
    ceil = _rounding_op("ceil")
    trunc = _rounding_op("trunc")
    is_nan = isnan = _test_op("is_nan")
    is_inf = isinf = _test_op("is_inf")
    atan2 = binary_op(ATAN2, doc="Elementwise atan2(self, other), as a float tensor.")
    hypot = binary_op(HYPOT, doc="Elementwise sqrt(self**2 + other**2), as a float tensor.")

    def rsqrt(self) -> Tensor:
        """Elementwise 1 / sqrt(self) (int and bool inputs give float32, as torch)."""
        return self._to_float().sqrt().recip()

    def log2(self) -> Tensor:
        """Elementwise base-2 logarithm, `log(self) / log(2)` (int and bool inputs give
        float32, as torch)."""
        return self._to_float().log() / _LN2

    def log10(self) -> Tensor:
        """Elementwise base-10 logarithm, `log(self) / log(10)` (int and bool inputs give
        float32, as torch)."""
        return self._to_float().log() / _LN10

    def exp2(self) -> Tensor:
        """Elementwise 2 ** self (int and bool inputs give float32, as torch)."""
        return 2.0 ** self._to_float()

    def expm1(self) -> Tensor:
        """Elementwise exp(self) - 1, accurate near 0: `tanh(x / 2) * (exp(x) + 1)` where
        |x| < 0.5 (as the elu kernels), `exp(x) - 1` elsewhere (int and bool inputs give
        float32, as torch)."""
        x = self._to_float()
        small = x.clamp(-0.5, 0.5)  # the branch not taken stays finite: no 0 * inf gradient
        near_zero = (small * 0.5).tanh() * (small.exp() + 1.0)
        return (x.exp() - 1.0).mask_where(x.abs() < 0.5, near_zero)

    def sigmoid(self) -> Tensor:
        """Elementwise 1 / (1 + exp(-self)), `burn.functional.sigmoid` (int and bool inputs
        give float32, as torch)."""
        from burn.functional.activation import sigmoid

        return sigmoid(self._to_float())

    def relu(self) -> Tensor:
        """Elementwise max(self, 0), `burn.functional.relu`; int tensors stay int (as torch).

        Raises:
            DTypeError: for bool tensors (as torch).
        """
        from burn.functional.activation import relu

        require_kind("relu", self._dtype, Kind.FLOAT, Kind.INT)
        x = self._tensor()
        return relu(x) if x._k == "float_" else x.clamp(min=0)

    def softmax(self, dim: int, dtype: DType | str | None = None) -> Tensor:
        """exp(self) / sum(exp(self)) along `dim`, `burn.functional.softmax`.

        Args:
            dim: the dim to normalise along (negative counts from the end).
            dtype: cast to this dtype first (torch's keyword), e.g. for int inputs.
        Returns:
            A float tensor of self's shape.
        Raises:
            DTypeError: for a non-float tensor without a float `dtype` (as torch).
            BurnIndexError: for a dim out of range.
        """
        from burn.functional.activation import softmax

        x = self._tensor()
        return softmax(x if dtype is None else x.cast(dtype), dim)

    def log_softmax(self, dim: int, dtype: DType | str | None = None) -> Tensor:
        """log(softmax(self, dim)), computed stably, `burn.functional.log_softmax` (arguments
        and errors as `softmax`)."""
        from burn.functional.activation import log_softmax

        x = self._tensor()
        return log_softmax(x if dtype is None else x.cast(dtype), dim)

    def deg2rad(self) -> Tensor:
        """Degrees to radians (int and bool inputs give float32, as torch)."""
        return self._to_float() * (math.pi / 180.0)

    def rad2deg(self) -> Tensor:
        """Radians to degrees (int and bool inputs give float32, as torch)."""
        return self._to_float() * (180.0 / math.pi)

    def abs(self) -> Tensor:
        """Elementwise absolute value (float and int tensors)."""
        return self._same("abs")

    __abs__ = abs

    def sign(self) -> Tensor:
        """Elementwise sign (-1, 0 or 1); bool tensors keep their values."""
        return self._distinct(self._tensor()) if self._k == "bool_" else self._same("sign")
