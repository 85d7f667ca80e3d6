"""Arithmetic: + - * / // % ** @, neg, recip, clamp, cross."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from burn.backend.special_pow import powf_scalar
from burn.dtype import DType, promote
from burn.errors import DivisionByZeroError, DTypeError, ShapeError, ValueRangeError
from burn.frontend.base import TensorBase
from burn.frontend.dispatch import BinaryOp, Impl, binary, binary_op
from burn.frontend.layout import cat
from burn.frontend.validation import (
    as_scalar,
    broadcast_shapes,
    check_device,
    norm_dim,
    require_tensor,
)

if TYPE_CHECKING:

    from burn.backend.protocol import Backend
    from burn.frontend.tensor import Tensor

def _into_range(value: int, dtype: DType) -> int:
    """`value` clipped into the range of the int `dtype`."""
    bits = 8 * dtype.itemsize
    least = 0 if dtype is DType.uint8 else -(1 << (bits - 1))
    return min(max(value, least), (1 << bits) - 1 + least)


ADD = BinaryOp("add", {"float_": "float_add", "int_": "int_add"},
               {"float_": "float_add_scalar", "int_": "int_add_scalar"}, commutative=True,
               on_bool="bool")
SUB = BinaryOp("sub", {"float_": "float_sub", "int_": "int_sub"},
               {"float_": "float_sub_scalar", "int_": "int_sub_scalar"}, on_bool="refuse")
MUL = BinaryOp("mul", {"float_": "float_mul", "int_": "int_mul"},
               {"float_": "float_mul_scalar", "int_": "int_mul_scalar"}, commutative=True,
               on_bool="bool")
DIV = BinaryOp("div", {"float_": "float_div"}, {"float_": "float_div_scalar"})


def _float_floor_div(b: Backend, x: Any, y: Any) -> Any:
    """torch's float floor division: round((x - x % y) / y), exact where floor(x / y) rounds up
    (1 // 0.1 is 9); floor(x / y) where y is 0 or infinite; nan for an infinite x."""
    quotient = b.float_div(x, y)
    exact = b.float_round(b.float_div(b.float_sub(x, b.float_remainder(x, y)), y))
    naive = b.float_floor(quotient)
    edge = b.bool_or(b.float_equal_elem(y, 0.0), b.float_is_inf(y))
    return b.float_mask_where(_signed_zero(b, exact, quotient), edge, naive)


def _float_floor_div_scalar(b: Backend, x: Any, s: float) -> Any:
    quotient = b.float_div_scalar(x, s)
    if s == 0 or math.isinf(s):
        return b.float_floor(quotient)
    shifted = b.float_sub(x, b.float_remainder_scalar(x, s))
    return _signed_zero(b, b.float_round(b.float_div_scalar(shifted, s)), quotient)


def _signed_zero(b: Backend, result: Any, quotient: Any) -> Any:
    """A zero floor quotient takes the sign of x / y, as torch's (-0.0 // 1 is -0.0, -0.0 // -1
    is 0.0; x - x % y of a zero x is +0.0)."""
    return b.float_mask_where(result, b.float_equal_elem(result, 0.0),
                              b.float_mul_scalar(quotient, 0.0))


def refuse_zero_divisor(op: str, divisor: int, dtype: DType, shape: tuple[int, ...]) -> None:
    """Refuse a host int divisor of an int op that is 0 in the dividend's `dtype` (it wraps
    into the dtype first, as torch's: 2**32 on int32, 256 on int8).

    Raises:
        DivisionByZeroError: naming `op`, the divisor and the dividend's dtype and `shape`.
    """
    if divisor % (1 << 8 * dtype.itemsize) == 0:
        raise DivisionByZeroError(op, "integer division by zero", divisor=divisor,
                                  dtype=dtype.value, shape=shape)


def _nonzero_divisor(op: str, backend_op: str) -> Impl:
    """An int op `backend_op(x, y)` (tensor or scalar y) refusing a zero divisor (as torch),
    a host int that wraps to 0 in x's dtype too (`refuse_zero_divisor`)."""

    def impl(b: Backend, x: Any, y: Any) -> Any:
        if not isinstance(y, int):
            b.check_nonzero(op, y)  # where the data lives: the backend decides
        else:
            refuse_zero_divisor(op, y, b.dtype(x), b.shape(x))
        return getattr(b, backend_op)(x, y)

    return impl


FLOOR_DIV = BinaryOp(
    "floor_div",
    {"float_": _float_floor_div, "int_": _nonzero_divisor("floor_div", "int_div")},
    {"float_": _float_floor_div_scalar,
     "int_": _nonzero_divisor("floor_div", "int_div_scalar")},
    on_bool="refuse_pair",
)
REMAINDER = BinaryOp(
    "remainder", {"float_": "float_remainder",
                  "int_": _nonzero_divisor("remainder", "int_remainder")},
    {"float_": "float_remainder_scalar",
     "int_": _nonzero_divisor("remainder", "int_remainder_scalar")}, on_bool="refuse_pair")
def _float_powf_scalar(b: Backend, x: Any, s: float) -> Any:
    """x ** s, the exponents torch computes specially by the same ops (`special_pow`); under
    Autodiff one op, whose gradient is pow's (as torch's)."""
    return b.float_powf_scalar(x, s) if b.is_autodiff else powf_scalar(b, x, s)


POW = BinaryOp("pow", {"float_": "float_powf", "int_": "int_powi"},
               {"float_": _float_powf_scalar, "int_": "int_powi_scalar"})
POWF = BinaryOp("powf", {"float_": "float_powf"}, {"float_": _float_powf_scalar})


class ArithmeticMixin(TensorBase):
    """Arithmetic methods and operators of `burn.Tensor`."""

    __slots__ = ()

    add = __add__ = binary_op(ADD, doc="Elementwise sum (broadcasts; dtypes promote as torch).")
    __radd__ = binary_op(ADD, reflected=True)
    sub = __sub__ = binary_op(SUB, doc="Elementwise difference (broadcasts).")
    __rsub__ = binary_op(SUB, reflected=True)
    mul = __mul__ = binary_op(MUL, doc="Elementwise product (broadcasts).")
    __rmul__ = binary_op(MUL, reflected=True)
    div = __truediv__ = binary_op(DIV, doc="True division; int operands give a float result.")
    __rtruediv__ = binary_op(DIV, reflected=True)
    floor_div = __floordiv__ = binary_op(
        FLOOR_DIV, doc="Floor division: floor(a / b) (torch's rounding; DivisionByZeroError for "
        "an int divisor of 0, or a host int that wraps to 0 in the dtype).")
    __rfloordiv__ = binary_op(FLOOR_DIV, reflected=True)
    remainder = __mod__ = binary_op(
        REMAINDER, doc="Remainder with the divisor's sign (`%`; DivisionByZeroError for an int "
        "divisor of 0, or a host int that wraps to 0 in the dtype).")
    __rmod__ = binary_op(REMAINDER, reflected=True)
    powf = binary_op(POWF, doc="Power with a float result (tensor or scalar exponent).")
    __rpow__ = binary_op(POW, reflected=True)

    def pow(self, exponent: Tensor | float) -> Tensor:
        """`self ** exponent`: float power for float operands, integer power for int ones.

        Raises:
            ValueRangeError: for an int tensor raised to a negative int scalar (as torch).
        """
        exponent = as_scalar(exponent)  # type: ignore[assignment]
        if (self._k != "float_" and isinstance(exponent, int) and not isinstance(exponent, bool)
                and exponent < 0):
            raise ValueRangeError("pow", "integers to negative integer powers are not allowed",
                                  dtype=self._dtype.value, exponent=exponent)
        return binary(self, exponent, POW)

    __pow__ = pow

    def powi(self, exponent: Tensor | int) -> Tensor:
        """Power with an int scalar or int tensor exponent (float tensors stay float).

        Raises:
            DTypeError: for a float exponent.
        """
        exponent = as_scalar(exponent)  # type: ignore[assignment]
        if isinstance(exponent, float) or (isinstance(exponent, TensorBase)
                                           and exponent._k == "float_"):
            raise DTypeError("powi", "exponent must be an int or an int tensor",
                             dtype=self._dtype.value, exponent=getattr(exponent, "dtype", exponent))
        return self.pow(exponent)

    def square(self) -> Tensor:
        """`self * self`; bool tensors square as int64 (torch's ``square``, a power)."""
        x = self._cast(DType.int64) if self._dtype is DType.bool else self
        return binary(x, x, MUL)

    def neg(self) -> Tensor:
        """`-self` (float and int tensors)."""
        return self._same("neg")

    __neg__ = neg

    def __pos__(self) -> Tensor:
        return self  # type: ignore[return-value]

    def recip(self) -> Tensor:
        """`1 / self`, as a float tensor."""
        return self._to_float()._same("recip")

    reciprocal = recip

    def matmul(self, other: Tensor) -> Tensor:
        """Matrix product with PyTorch's rules: 1-d operands are vectors, batch dims broadcast.

        Raises:
            ShapeError: for 0-d operands, inner dims that differ or batch dims that do not
                broadcast.
        """
        if not isinstance(other, TensorBase):
            raise DTypeError("matmul", "operand must be a Tensor", rhs=type(other).__name__)
        sa, sb = self._shape or self.shape, other._shape or other.shape
        if (len(sa) == 2 == len(sb) and sa[1] == sb[0] and other._dtype is self._dtype
                and (other._device is self._device or other._device == self._device)):
            # two matrices: the hot path
            out = self._wrap(self._fn("matmul")(self._prim, other._prim))
            out._shape = (sa[0], sb[1])
            return out
        check_device("matmul", self, other)
        dtype = promote(self._dtype, other._dtype)
        a, b = self._cast(dtype), other._cast(dtype)
        sa, sb = a.shape, b.shape
        if not sa or not sb:
            raise ShapeError("matmul", "both operands must be at least 1-d", lhs=sa, rhs=sb,
                             lhs_dtype=self._dtype.value, rhs_dtype=other._dtype.value)
        if len(sa) == 1:
            a = a.reshape((1, sa[0]))
        if len(sb) == 1:
            b = b.reshape((sb[0], 1))
        ka, kb = a.shape[-1], b.shape[-2]
        if ka != kb:
            raise ShapeError("matmul", "inner dims differ", lhs=sa, rhs=sb,
                             lhs_dtype=self._dtype.value, rhs_dtype=other._dtype.value)
        broadcast_shapes("matmul", a.shape[:-2], b.shape[:-2],
                         dtypes=(self._dtype, other._dtype))
        out = a._wrap(a._fn("matmul")(a._prim, b._prim))
        if len(sa) == 1 or len(sb) == 1:
            shape = out.shape
            keep = shape[:-2] + (() if len(sa) == 1 else shape[-2:-1]) + (
                () if len(sb) == 1 else shape[-1:])
            out = out.reshape(keep)
        return out

    __matmul__ = matmul

    def mm(self, other: Tensor) -> Tensor:
        """Product of two matrices (torch.mm): `matmul` of 2-d operands only; dtypes promote
        as `matmul`'s (torch.mm refuses two dtypes).

        Raises:
            DTypeError: for an operand that is not a Tensor.
            ShapeError: unless both are 2-d and self's columns match other's rows.
        """
        self._check_matrices("mm", other, 2)
        return self.matmul(other)

    def bmm(self, other: Tensor) -> Tensor:
        """Batched matrix product (torch.bmm): `matmul` of two 3-d [batch, n, k] and
        [batch, k, m] operands, batch sizes equal (no broadcasting, as torch); dtypes promote
        as `matmul`'s.

        Raises:
            DTypeError: for an operand that is not a Tensor.
            ShapeError: unless both are 3-d with equal batch sizes and matching inner dims.
        """
        self._check_matrices("bmm", other, 3)
        return self.matmul(other)

    def _check_matrices(self, op: str, other: object, ndim: int) -> None:
        """Raise unless self and `other` are `ndim`-d tensors whose matrix product exists
        without broadcasting."""
        other = require_tensor(op, other, self._dtype)
        sa, sb = self.shape, other.shape
        details = {"lhs": sa, "rhs": sb, "lhs_dtype": self._dtype.value,
                   "rhs_dtype": other._dtype.value}
        if len(sa) != ndim or len(sb) != ndim:
            raise ShapeError(op, f"both operands must be {ndim}-d", **details)
        if sa[:-2] != sb[:-2]:
            raise ShapeError(op, "batch sizes differ", **details)
        if sa[-1] != sb[-2]:
            raise ShapeError(op, "inner dims differ", **details)

    def __rmatmul__(self, other: Tensor) -> Tensor:
        return other.matmul(self._tensor())

    def cross(self, other: Tensor, dim: int = -1) -> Tensor:
        """Cross product of 3-vectors along `dim` (operands broadcast).

        Raises:
            ShapeError: when `dim` does not have size 3.
        """
        check_device("cross", self, other)
        dtype = promote(self._dtype, other._dtype)
        shape = broadcast_shapes("cross", self.shape, other.shape)
        d = norm_dim("cross", dim, len(shape))
        if shape[d] != 3:
            raise ShapeError("cross", "dim must have size 3", dim=dim, lhs=self.shape,
                             rhs=other.shape)
        a0, a1, a2 = self._cast(dtype).expand(shape).chunk(3, d)
        b0, b1, b2 = other._cast(dtype).expand(shape).chunk(3, d)
        return cat([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)

    def clamp(self, min: float | None = None, max: float | None = None) -> Tensor:  # noqa: A002
        """Clamp into [min, max] (scalar bounds; a None bound is open; float bounds on an int
        or bool tensor give a float result, int bounds on a bool tensor an int64 one, as
        torch).

        Raises:
            ValueRangeError: when both bounds are None.
            DTypeError: for bool tensors with only bool bounds, or non-scalar bounds.
        """
        lo, hi = as_scalar(min), as_scalar(max)
        if lo is None and hi is None:
            raise ValueRangeError("clamp", "at least one of min and max must be given")
        x = self
        for bound in (lo, hi):
            if bound is not None:
                if not isinstance(bound, int | float):
                    raise DTypeError("clamp", "bounds must be scalars",
                                     bound=type(bound).__name__)
                if isinstance(bound, float) and x._k != "float_":
                    x = x._to_float()
                elif type(bound) is int and x._k == "bool_":  # (as torch: bool with an int)
                    x = x._cast(DType.int64)
        if x._k == "float_":
            if any(b is not None and b != b for b in (lo, hi)):
                return x * math.nan  # a NaN bound makes every element NaN, as torch
            return x._same("clamp", None if lo is None else float(lo),
                           None if hi is None else float(hi))
        # int bounds past the dtype's range act as its limits (torch refuses them; wrapped
        # into the dtype as other host numbers are, int8 clamp(-300, 300) gave clamp(-44, 44))
        return x._same("clamp", *(None if b is None else _into_range(int(b), x._dtype)
                                  for b in (lo, hi)))

    clip = clamp

    def clamp_min(self, min: float) -> Tensor:  # noqa: A002
        """Clamp from below."""
        return self.clamp(min=min)

    def clamp_max(self, max: float) -> Tensor:  # noqa: A002
        """Clamp from above."""
        return self.clamp(max=max)
