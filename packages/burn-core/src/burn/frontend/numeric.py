"""Burn's numeric ops: fmod (one backend op for floats, a composite for ints), and the
composites: finiteness and closeness tests, pairwise max / min, max_abs, categorical sampling."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from burn.backend.distribution import Distribution
from burn.dtype import Kind
from burn.errors import DTypeError, ShapeError, ValueRangeError
from burn.frontend.arithmetic import refuse_zero_divisor
from burn.frontend.base import TensorBase
from burn.frontend.dispatch import BinaryOp, binary
from burn.frontend.validation import (
    as_scalar,
    broadcast_shapes,
    check_device,
    finite_scalar,
    norm_dim,
    promote_tensors,
    require_kind,
    require_tensor,
    scalar_dtype,
)

if TYPE_CHECKING:
    from burn.frontend.tensor import Tensor

FMOD = BinaryOp("fmod", {"float_": "float_fmod"}, {"float_": "float_fmod_scalar"})

#: is_close's default tolerances (Burn's and torch.isclose's).
DEFAULT_RTOL = 1e-5
DEFAULT_ATOL = 1e-8


class NumericMixin(TensorBase):
    """fmod, is_finite, contains_nan, is_close, all_close, max_pair, min_pair, maximum,
    minimum, max_abs, categorical."""

    __slots__ = ()

    def _operands(self, op: str, other: object) -> tuple[Tensor, Tensor]:
        """(self, other) promoted to one float or int dtype (`other`: tensor or scalar, the
        scalar as a 0-d tensor).

        Raises:
            DTypeError: for bool operands or a non-scalar `other`.
            DeviceError: for tensors on different devices.
        """
        x, y = self._promoted(op, other)
        return x, y if isinstance(y, TensorBase) else x._full((), y, x._dtype)

    def _promoted(self, op: str, other: object) -> tuple[Tensor, Tensor | int | float]:
        """`_operands` with a scalar `other` left a Python scalar (the tensor promoted)."""
        if isinstance(other, TensorBase):
            check_device(op, self, other)
            dtype = promote_tensors((self, other))
            y: Tensor | int | float = other._cast(dtype)
        else:
            scalar = as_scalar(other)
            dtype = scalar_dtype(op, self._dtype, scalar)  # (a Python number past it)
            y = cast("int | float", scalar)
        require_kind(op, dtype, Kind.FLOAT, Kind.INT)
        return self._cast(dtype), y

    def fmod(self, other: Tensor | float) -> Tensor:
        """C's fmod: the remainder of division truncated towards zero, with the dividend's sign
        (torch.fmod), exact for floats (one op: `float_fmod`), so `fmod(x, inf)` is x and
        `fmod(-4.0, 2.0)` is -0.0. A scalar `other` takes the tensor's dtype first, as torch.

        Raises:
            DTypeError: for bool operands.
            DivisionByZeroError: for an int zero divisor.
        """
        x, y = self._promoted("fmod", other)
        if x._k == "int_":
            if isinstance(y, TensorBase):
                x._bk.check_nonzero("fmod", y._prim)  # the error names fmod, not %
            else:  # a host divisor: refused at the call, naming x's shape
                refuse_zero_divisor("fmod", int(y), x._dtype, x.shape)
                y = x._full((), y, x._dtype)
            r = x % y  # floor remainder: the divisor's sign
            wrong_sign = (r != 0) & ((r < 0) ^ (x < 0))
            return r.mask_where(wrong_sign, r - y)
        return binary(x, y, FMOD)

    def is_finite(self) -> Tensor:
        """Elementwise: neither nan nor +-inf (all true for int and bool tensors)."""
        t = self._tensor()
        return ~(t.is_nan() | t.is_inf())

    isfinite = is_finite

    def nan_to_num(self, nan: float = 0.0, posinf: float | None = None,
                   neginf: float | None = None) -> Tensor:
        """NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (torch.nan_to_num;
        the infinities default to the dtype's largest and lowest finite values); an int or
        bool tensor comes back as it is (torch: a copy; tensors are values here). The gradient
        is 1 where a value is kept, 0 where it is replaced.

        Args:
            nan: what NaN becomes.
            posinf: what +inf becomes (None: the dtype's largest finite value).
            neginf: what -inf becomes (None: the dtype's lowest finite value).
        Returns:
            A tensor of the same shape and dtype.
        """
        t = self._tensor()
        if t._k != "float_":
            return t
        import ml_dtypes

        info = ml_dtypes.finfo(t._dtype.numpy)
        high = float(info.max) if posinf is None else posinf
        low = float(info.min) if neginf is None else neginf
        inf = float("inf")
        return t.mask_fill(t.is_nan(), nan).mask_fill(t == inf, high).mask_fill(t == -inf, low)

    def contains_nan(self) -> Tensor:
        """Whether any element is nan, as a 0-d bool tensor (Burn: shape [1])."""
        return self._tensor().is_nan().any()

    def is_close(self, other: Tensor | float, rtol: float = DEFAULT_RTOL,
                 atol: float = DEFAULT_ATOL) -> Tensor:
        """Elementwise `|self - other| <= atol + rtol * |other|` for finite values; infinities
        are close when equal; nan is never close (torch.isclose without equal_nan).

        Raises:
            DTypeError: for bool operands.
            ValueRangeError: for a negative or non-finite tolerance.
        """
        for name, tol in (("rtol", rtol), ("atol", atol)):
            if finite_scalar("is_close", name, tol) < 0:
                raise ValueRangeError("is_close", f"{name} must be non-negative", **{name: tol})
        x, y = self._operands("is_close", other)
        if x._k == "int_":
            from burn.frontend.creation import wide_float  # creation imports the Tensor

            wide = wide_float(x.device)
            x, y = x._cast(wide), y._cast(wide)
        both_finite = x.is_finite() & y.is_finite()
        near = ((x - y).abs() <= y.abs() * float(rtol) + float(atol)) & both_finite
        return near | (~both_finite & (x == y))

    def all_close(self, other: Tensor | float, rtol: float = DEFAULT_RTOL,
                  atol: float = DEFAULT_ATOL) -> bool:
        """Whether `is_close` holds everywhere, as a Python bool (torch.allclose)."""
        return bool(self.is_close(other, rtol, atol).all().item())

    def max_pair(self, other: Tensor | float) -> Tensor:
        """Elementwise max of two tensors (broadcast, promoted) as Burn: `other` where
        `self < other`, else self (a nan in `other` keeps self; torch.maximum gives nan)."""
        x, y = self._operands("max_pair", other)
        return x.mask_where(x < y, y)

    def min_pair(self, other: Tensor | float) -> Tensor:
        """Elementwise min as Burn: `other` where `other < self`, else self (see max_pair)."""
        x, y = self._operands("min_pair", other)
        return x.mask_where(y < x, y)

    def maximum(self, other: Tensor) -> Tensor:
        """Elementwise max of two tensors (broadcast, promoted), as torch.maximum: NaN where
        either is NaN; on an autodiff device a tie's gradient is split evenly between both,
        and where either is NaN both get the whole gradient; two bool tensors give their `or`.

        Raises:
            DTypeError: for an `other` that is not a Tensor (as torch).
            ShapeError, DeviceError: for shapes that do not broadcast, or two devices.
        """
        return self._pick("maximum", other, larger=True)

    def minimum(self, other: Tensor) -> Tensor:
        """Elementwise min as torch.minimum (see `maximum`; two bool tensors give their
        `and`)."""
        return self._pick("minimum", other, larger=False)

    def _pick(self, op: str, other: object, larger: bool) -> Tensor:
        other = require_tensor(op, other, self._dtype)
        broadcast_shapes(op, self.shape, other.shape, dtypes=(self._dtype, other._dtype))
        if self._k == "bool_" and other._k == "bool_":
            check_device(op, self, other)
            a, b = self._tensor(), other._tensor()
            return a | b if larger else a & b
        x, y = self._operands(op, other)  # (checks the devices)
        take = x < y if larger else y < x
        if x._k != "float_":
            return x.mask_where(take, y)
        out = x.mask_where(take | y.is_nan(), y)
        if not x._bk.is_autodiff:
            return out
        # torch's gradient of a tie: half to each. A finite tie subtracts (x - y) / 2, +0.0
        # forward; an infinite one (inf - inf is NaN) takes x / 2 + y / 2.
        tie = x == y
        finite = x.is_finite()
        out = out - ((x - y) * 0.5).mask_fill(~(tie & finite), 0.0)
        out = out.mask_where(tie & ~finite, x * 0.5 + y * 0.5)
        # and where either is NaN, the whole gradient to both (x + y is NaN there too)
        return out.mask_where(x.is_nan() | y.is_nan(), x + y)

    def max_abs(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """Largest absolute value over all elements or along `dim` (float and int tensors).

        Raises:
            ValueRangeError: when reducing an empty extent.
        """
        require_kind("max_abs", self._dtype, Kind.FLOAT, Kind.INT)
        return self._tensor().abs().max(dim, keepdim)

    def max_abs_dim(self, dim: int) -> Tensor:
        """Largest absolute value along one dim, kept with size 1."""
        require_kind("max_abs_dim", self._dtype, Kind.FLOAT, Kind.INT)
        return self._tensor().abs().max_dim(norm_dim("max_abs_dim", dim, self.ndim,
                                                     scalar=True))

    def categorical(self, num_samples: int) -> Tensor:
        """Sample class indices from the (unnormalised, non-negative) weights of the last dim,
        Burn's inverse-CDF sampler: int64 [..., num_samples], leading dims are batches. Rows of
        all-zero weights give undefined indices (as Burn); the backend's generator draws.

        Raises:
            DTypeError: for a non-float tensor or a non-int num_samples.
            ValueRangeError: for num_samples < 1.
            ShapeError: for a 0-d tensor or no categories.
        """
        require_kind("categorical", self._dtype, Kind.FLOAT)
        if not isinstance(num_samples, int) or isinstance(num_samples, bool):
            raise DTypeError("categorical", "num_samples must be an int",
                             num_samples=type(num_samples).__name__)
        if num_samples < 1:
            raise ValueRangeError("categorical", "num_samples must be >= 1",
                                  num_samples=num_samples)
        shape = self.shape
        if not shape or shape[-1] == 0:
            raise ShapeError("categorical", "need a last dim of categories", shape=shape)
        k = shape[-1]
        rows = self._tensor().reshape(-1, k)
        cdf = (rows / rows.sum_dim(1)).cumsum(1)
        draws = self._wrap(self._bk.float_random((rows.shape[0], num_samples),
                                                 Distribution("uniform", 0.0, 1.0), self._dtype,
                                                 self._device))
        below = (cdf.unsqueeze(2) < draws.unsqueeze(1)).sum_dim(1)  # int64 [rows, 1, samples]
        return below.clamp(0, k - 1).reshape(shape[:-1] + (num_samples,))
