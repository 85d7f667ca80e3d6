"""Elementwise ops of the NumPy backend, generated from one table.

Each table row names an op, the numpy function computing it (one, or one per kind), the kinds it
exists for (f = float, i = int, b = bool), whether numpy may warn on it (then it runs under a
quiet error state, so that inf / nan come out silently as in torch) and the scalar form it has
(`_scalar`, `_elem` or none). `float_add` and `int_add` are made from the same row.

Hot ops are plain closures around the numpy ufunc (a 0-d result, a numpy scalar, is wrapped
back into an array). float16 / bfloat16 elementwise ops run through numpy's / ml_dtypes' own
loops, which compute each element in float32 and round once. Scalar forms first give the scalar
the tensor's dtype (as torch; ml_dtypes would promote bfloat16 with a Python float to float32).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from . import blas
from ._common import QUIET_RESET, QUIET_SET, QUIET_TOKEN, erf, lowp
from .allocation import GUARDED, allocation_error, op_name

Array = np.ndarray
ndarray = np.ndarray
asarray = np.asarray
Fn = Callable[..., Any]

_KINDS = {"f": "float", "i": "int", "b": "bool"}


def _sign(x: Array) -> Array:
    """np.sign with sign(nan) = sign(-0.0) = +0.0 (as torch.sign; ml_dtypes' bfloat16 sign
    kept -0.0)."""
    r = np.sign(x, out=...)
    if r.dtype.kind not in "iu":
        np.copyto(r, 0, where=~(np.abs(r) > 0))
    return r


def _float_remainder(a: Array, b: Any) -> Array:
    """torch's float remainder: fmod, shifted by the divisor when the signs differ (a zero result
    keeps the dividend's sign: 3.0 % -1.5 is 0.0, -3.0 % 1.5 is -0.0)."""
    m = np.fmod(a, b)
    shift = (m != 0) & ((m < 0) != (np.asarray(b) < 0))
    return np.where(shift, m + b, m).astype(m.dtype, copy=False)


def _int_power(a: Array, b: Any) -> Array:
    """Integer power as torch's: a negative exponent gives 0, or +-1 for a base of +-1 (numpy
    refuses negative integer exponents with a ValueError)."""
    if np.all(np.asarray(b) >= 0):
        return np.power(a, b)
    out = np.power(a, np.maximum(b, 0))
    unit = np.where(a == -1, np.where(np.remainder(b, 2) == 0, 1, -1), np.where(a == 1, 1, 0))
    return np.where(np.asarray(b) < 0, unit.astype(out.dtype, copy=False), out)


# erf of float32 / float16 / bfloat16 in float32: the rational approximation of Eigen and XLA
# (odd numerator of degree 13, even denominator of degree 8, on x clamped to [-4, 4], where
# float32 erf is +-1); a few ulp from the exact value. float64 keeps fdlibm's `erf`.
_ERF_ALPHA = tuple(np.float32(c) for c in (
    -2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
    -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02))
_ERF_BETA = tuple(np.float32(c) for c in (
    -1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
    -1.42647390514189e-02))


_ERF_BLOCK = 32768  # elements per pass: inputs, output and scratch (~0.8 MB) stay in the L2 cache


def _blocked(inputs: tuple[Array, ...], kernel: Callable[..., None], scratch: int,
             outputs: int = 1) -> tuple[Array, ...]:
    """`kernel(*input_blocks, *output_blocks, scratch_buffers)` over same-shape float arrays
    block by block, so that its passes run in cache; returns the outputs, of the inputs' shape
    and dtype."""
    flats = [np.ascontiguousarray(a).reshape(-1) for a in inputs]
    outs = [np.empty_like(flats[0]) for _ in range(outputs)]
    total = outs[0].size
    size = min(total, _ERF_BLOCK)
    buffers = [np.empty(size, outs[0].dtype) for _ in range(scratch)]
    for lo in range(0, total, _ERF_BLOCK):
        n = min(_ERF_BLOCK, total - lo)
        kernel(*(f[lo:lo + n] for f in flats), *(o[lo:lo + n] for o in outs),
               [b[:n] for b in buffers])
    return tuple(o.reshape(inputs[0].shape) for o in outs)


def _erf32(x: Array) -> Array:
    """erf of a float32 array in float32 (NaN stays NaN, +-inf gives +-1)."""
    return _blocked((x,), _erf32_block, 3)[0]


def _erf32_block(x: Array, p: Array, scratch: list[Array]) -> None:
    """erf of `x` into `p`, with three scratch buffers of x's size; the quotient capped to
    [-1, 1] (it reached 1.0000002 near |x| = 3.9, where float32 erf is +-1)."""
    xc, x2, q = scratch
    np.clip(x, np.float32(-4.0), np.float32(4.0), out=xc)
    np.multiply(xc, xc, out=x2)
    p.fill(_ERF_ALPHA[0])
    for c in _ERF_ALPHA[1:]:
        p *= x2
        p += c
    p *= xc
    q.fill(_ERF_BETA[0])
    for c in _ERF_BETA[1:]:
        q *= x2
        q += c
    p /= q
    np.clip(p, np.float32(-1.0), np.float32(1.0), out=p)  # (NaN stays)


# GELU's cdf through erfc in the form of PyTorch's vectorised CPU erf (Abramowitz & Stegun
# 7.1.26, |error| < 1.5e-7): erfc(z) = t (a1 + t (a2 + ... + t a5)) exp(-z^2), t = 1 / (1 + p z),
# z = |x| / sqrt(2) >= 0; the coefficients carry cdf's factor 1/2.
_AS_P = np.float32(0.3275911 / math.sqrt(2))
_SIGN_BIT = np.int32(-(2**31))
_AS_A = tuple(np.float32(0.5 * a) for a in (
    1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))


def _gelu32_block(x: Array, out: Array, cdf: Array, scratch: list[Array]) -> None:
    """Exact GELU of `x` into `out` and its cdf(x) into `cdf` in 22 passes with two scratch
    buffers: cdf(x) = 1/2 + copysign(1/2 - h, x) with h = erfc(|x| / sqrt(2)) / 2, out = x cdf
    (gelu(inf) = inf, gelu(-inf) = -inf * 0 = nan, as torch's float64)."""
    ax, t = scratch
    h = cdf
    np.abs(x, out=ax)
    np.multiply(ax, _AS_P, out=t)
    t += np.float32(1.0)
    np.divide(np.float32(1.0), t, out=t)
    np.multiply(t, _AS_A[0], out=h)
    for a in _AS_A[1:]:
        h += a
        h *= t
    np.multiply(x, x, out=out)
    out *= np.float32(-0.5)
    np.exp(out, out=out)
    h *= out
    np.subtract(np.float32(0.5), h, out=h)
    # copysign(h, x) through the sign bit (2 integer passes; np.copysign is ~2.5x slower)
    sign = t.view(np.int32)
    np.bitwise_and(x.view(np.int32), _SIGN_BIT, out=sign)
    np.bitwise_or(h.view(np.int32), sign, out=h.view(np.int32))
    h += np.float32(0.5)
    np.multiply(x, h, out=out)


def _gelu32_only_block(x: Array, out: Array, scratch: list[Array]) -> None:
    """`_gelu32_block` with the cdf in a scratch buffer."""
    _gelu32_block(x, out, scratch[2], scratch[:2])


def _gelu_grad_block(x: Array, cdf: Array, g: Array, out: Array, scratch: list[Array]) -> None:
    """Exact GELU's input gradient g (cdf(x) + x pdf(x)) into `out` (7 passes) from the cdf the
    forward computed."""
    np.multiply(x, x, out=out)
    out *= -0.5  # Python floats take the array's dtype (float32 or float64)
    np.exp(out, out=out)
    out *= 1 / math.sqrt(2 * math.pi)
    out *= x
    out += cdf
    out *= g


def _erf(x: Array) -> Array:
    """erf: float64 through fdlibm, narrower floats in float32 (`_erf32`), cast back."""
    if x.dtype == np.float64:
        return erf(x)
    if x.dtype == np.float32:
        return _erf32(x)
    return _erf32(x.astype(np.float32)).astype(x.dtype)


_SQRT2_PI = np.float32(np.sqrt(2 / np.pi))


def _gelu32(x: Array, approximate: str) -> Array:
    """GELU of a float32 array in float32 (torch's formulas): exact block by block in cache,
    tanh in one buffer."""
    if approximate != "tanh":
        return _blocked((x,), _gelu32_only_block, 3)[0]
    out = x * x  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    out *= np.float32(0.044715)
    out += np.float32(1.0)
    out *= x
    out *= _SQRT2_PI
    np.tanh(out, out=out)
    out += np.float32(1.0)
    out *= np.float32(0.5)  # halved before the product: x past 1.7e38 stays finite
    out *= x
    return out


# op -> (numpy function, or {kind letter: function}; kinds; may warn; scalar form suffix)
BINARY: dict[str, tuple[Fn | dict[str, Fn], str, bool, str]] = {
    "add": (np.add, "fi", True, "_scalar"),
    "sub": (np.subtract, "fi", True, "_scalar"),
    "mul": (np.multiply, "fi", True, "_scalar"),
    "div": ({"f": np.divide, "i": np.floor_divide}, "fi", True, "_scalar"),
    "remainder": ({"f": _float_remainder, "i": np.remainder}, "fi", True, "_scalar"),
    "fmod": (np.fmod, "f", True, "_scalar"),
    "powf": (np.power, "f", True, "_scalar"),
    "powi": (_int_power, "i", True, "_scalar"),
    "atan2": (np.arctan2, "f", True, ""),
    "equal": (np.equal, "fib", False, "_elem"),
    "greater": (np.greater, "fi", False, "_elem"),
    "greater_equal": (np.greater_equal, "fi", False, "_elem"),
    "lower": (np.less, "fi", False, "_elem"),
    "lower_equal": (np.less_equal, "fi", False, "_elem"),
    "bitwise_and": (np.bitwise_and, "i", False, ""),
    "bitwise_or": (np.bitwise_or, "i", False, ""),
    "bitwise_xor": (np.bitwise_xor, "i", False, ""),
    "bitwise_left_shift": (np.left_shift, "i", False, ""),
    "bitwise_right_shift": (np.right_shift, "i", False, ""),  # arithmetic for signed dtypes
    "and": (np.logical_and, "b", False, ""),
    "or": (np.logical_or, "b", False, ""),
    "xor": (np.logical_xor, "b", False, ""),
}

# op -> (numpy function or {kind: function}; kinds; may warn)
UNARY: dict[str, tuple[Fn | dict[str, Fn], str, bool]] = {
    "neg": (np.negative, "fi", False),
    "abs": (np.absolute, "fi", False),
    "sign": ({"f": _sign, "i": np.sign}, "fi", False),
    "recip": (np.reciprocal, "f", True),
    "exp": (np.exp, "f", True),
    "log": (np.log, "f", True),
    "log1p": (np.log1p, "f", True),
    "sqrt": (np.sqrt, "f", True),
    "sin": (np.sin, "f", True),
    "cos": (np.cos, "f", True),
    "tan": (np.tan, "f", True),
    "sinh": (np.sinh, "f", True),
    "cosh": (np.cosh, "f", True),
    "tanh": (np.tanh, "f", True),
    "asin": (np.arcsin, "f", True),
    "acos": (np.arccos, "f", True),
    "atan": (np.arctan, "f", True),
    "asinh": (np.arcsinh, "f", True),
    "acosh": (np.arccosh, "f", True),
    "atanh": (np.arctanh, "f", True),
    "erf": (_erf, "f", True),
    "round": (np.rint, "f", False),  # half to even, as torch
    "floor": (np.floor, "f", False),
    "ceil": (np.ceil, "f", False),
    "trunc": (np.trunc, "f", False),
    "is_nan": (np.isnan, "f", False),
    "is_inf": (np.isinf, "f", False),
    "bitwise_not": (np.invert, "i", False),
    "not": (np.logical_not, "b", False),
}


def _wrap_scalar(value: Any, dtype: np.dtype) -> Array:
    """A Python int out of `dtype`'s range, wrapped into it (as torch does for uint8 - 1)."""
    return np.array(value).astype(dtype)


#: [min, max] of the int dtypes: a Python int outside is wrapped into the dtype first, as
#: torch and the cube backends do (numpy compares it exactly: int8 > 300 was all False, torch
#: compares with 44).
_INT_RANGES = {np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
               for t in (np.int8, np.uint8, np.int16, np.int32, np.int64)}


# --- factories ----------------------------------------------------------------------------
def _make_binary(fn: Fn, warns: bool, name: str) -> Fn:
    op_ = op_name(name)
    if not warns:
        def op(self: Any, lhs: Array, rhs: Array) -> Array:
            try:
                out = fn(lhs, rhs)
            except MemoryError as exc:
                raise allocation_error(op_, exc) from exc
            return out if out.__class__ is ndarray else asarray(out)
        return op

    def quiet_op(self: Any, lhs: Array, rhs: Array) -> Array:
        token = QUIET_SET(QUIET_TOKEN)
        try:
            out = fn(lhs, rhs)
        except MemoryError as exc:
            raise allocation_error(op_, exc) from exc
        finally:
            QUIET_RESET(token)
        return out if out.__class__ is ndarray else asarray(out)
    return quiet_op


def _make_scalar(fn: Fn, warns: bool, low_float: bool, name: str) -> Fn:
    """`op(tensor, python scalar)`. As torch, the scalar takes the tensor's dtype first (numpy
    does that itself, except for bfloat16); `low_float`: the float forms, which check that."""
    op_ = op_name(name)

    def op(self: Any, lhs: Array, rhs: Any) -> Array:
        if low_float and lhs.dtype.itemsize == 2:
            with np.errstate(all="ignore"):  # 1e10 -> float16 is inf, quietly
                rhs = lhs.dtype.type(rhs)
        span = _INT_RANGES.get(lhs.dtype) if rhs.__class__ is int else None
        if span is not None and not span[0] <= rhs <= span[1]:
            rhs = _wrap_scalar(rhs, lhs.dtype)
        token = QUIET_SET(QUIET_TOKEN) if warns else None
        try:
            out = fn(lhs, rhs)
        except MemoryError as exc:
            raise allocation_error(op_, exc) from exc
        finally:
            if token is not None:
                QUIET_RESET(token)
        return out if out.__class__ is ndarray else asarray(out)
    return op


def _make_unary(fn: Fn, warns: bool, name: str) -> Fn:
    op_ = op_name(name)
    if not warns:
        def op(self: Any, x: Array) -> Array:
            try:
                out = fn(x)
            except MemoryError as exc:
                raise allocation_error(op_, exc) from exc
            return out if out.__class__ is ndarray else asarray(out)
        return op

    def quiet_op(self: Any, x: Array) -> Array:
        token = QUIET_SET(QUIET_TOKEN)
        try:
            out = fn(x)
        except MemoryError as exc:
            raise allocation_error(op_, exc) from exc
        finally:
            QUIET_RESET(token)
        return out if out.__class__ is ndarray else asarray(out)
    return quiet_op


def _pick(fn: Fn | dict[str, Fn], kind: str) -> Fn:
    return fn[kind] if isinstance(fn, dict) else fn


def _keeps_zeros(low: float | None, high: float | None) -> bool:
    """Whether a clamp returns a zero input itself (its signed zero, as torch), where np.clip
    may not: a zero bound, no NaN bound, and neither bound excluding zero.

    Args:
        low: the lower bound or None.
        high: the upper bound or None.

    Returns:
        True when zeros must be copied through.
    """
    if (low is not None and low != low) or (high is not None and high != high):
        return False
    zero_bound = low == 0 or high == 0
    return zero_bound and not (low is not None and low > 0) and not (high is not None and high < 0)


class ElementwiseOps:
    """Unary / binary / scalar / comparison / bitwise ops; the table methods are added below."""

    # --- ops that are not a plain ufunc call --------------------------------------------------
    @functools.partial(lowp, quiet=True)
    def float_matmul(self, lhs: Array, rhs: Array) -> Array:
        """Batched matmul; float16 / bfloat16 multiply in float32; small products on one BLAS
        thread (`blas.matmul`); NaN and inf products quietly (numpy warned)."""
        return blas.matmul(lhs, rhs)

    def int_matmul(self, lhs: Array, rhs: Array) -> Array:
        return np.asarray(np.matmul(lhs, rhs))

    @lowp
    def gelu(self, x: Array, approximate: str) -> Array:
        """GELU, exact or tanh; float32 (and float16 / bfloat16, upcast) computed in float32."""
        token = QUIET_SET(QUIET_TOKEN)
        try:
            if x.dtype == np.float32:
                return _gelu32(x, approximate)
            return _gelu64(x, approximate)
        finally:
            QUIET_RESET(token)

    # Not protocol ops: Autodiff's exact GELU rule uses them where the inner backend has them.
    @lowp
    def gelu_with_cdf(self, x: Array) -> tuple[Array, Array]:
        """Exact GELU of x and cdf(x), which its backward reads (float32 as `gelu`, float64
        through fdlibm's erf)."""
        token = QUIET_SET(QUIET_TOKEN)
        try:
            if x.dtype == np.float32:
                out, cdf = _blocked((x,), _gelu32_block, 2, outputs=2)
                return out, cdf
            cdf = _cdf64(x)
            return np.asarray(x * cdf), cdf
        finally:
            QUIET_RESET(token)

    @lowp
    def gelu_backward_from_cdf(self, x: Array, cdf: Array, grad: Array) -> Array:
        """Exact GELU's input gradient grad (cdf + x pdf(x)) in one pass over cache-sized
        blocks instead of the rule's array ops."""
        token = QUIET_SET(QUIET_TOKEN)
        try:
            return _blocked((x, cdf, grad), _gelu_grad_block, 0)[0]
        finally:
            QUIET_RESET(token)

    def float_clamp(self, x: Array, min: float | None, max: float | None) -> Array:
        """Clamp; NaN stays NaN (np.clip propagates it). A zero bound keeps x's signed zero,
        as torch (`x < min ? min : x`), where np.clip(-0.0, 0.0) gives +0.0."""
        if min is None and max is None:
            return x
        if x.dtype.itemsize == 2:  # bounds take x's dtype first (as torch)
            with np.errstate(all="ignore"):
                low = None if min is None else x.dtype.type(min)
                high = None if max is None else x.dtype.type(max)
            out = np.clip(x, low, high, out=...).astype(  # type: ignore[call-overload]
                x.dtype, copy=False)
        else:
            out = np.clip(x, min, max, out=...)  # type: ignore[call-overload]
        if _keeps_zeros(min, max):
            zeros = x == 0  # sparse: cheaper than a select over every element
            if zeros.any():
                out[zeros] = x[zeros]
        return out

    def float_powf_scalar(self, lhs: Array, rhs: float) -> Array:
        """x ** rhs; the exponents torch computes specially (sqrt, square, ...) the same way."""
        special = _POW_SPECIAL.get(rhs)
        if special is None:
            return _float_powf_scalar(self, lhs, rhs)
        token = QUIET_SET(QUIET_TOKEN)
        try:
            out = special(lhs)
        finally:
            QUIET_RESET(token)
        return out if out.__class__ is ndarray else asarray(out)

    def int_clamp(self, x: Array, min: int | None, max: int | None) -> Array:
        if min is None and max is None:
            return x
        info = np.iinfo(x.dtype)
        if min is not None:
            min = int(np.clip(min, info.min, info.max))
        if max is not None:
            max = int(np.clip(max, info.min, info.max))
        return np.clip(x, min, max, out=...)  # type: ignore[call-overload]


def _cdf64(x: Array) -> Array:
    """The normal cdf of a float64 array through fdlibm's erf."""
    return np.asarray(0.5 * (1.0 + erf(x / np.sqrt(2))))


def _gelu64(x: Array, approximate: str) -> Array:
    """GELU of a float64 array (exact through fdlibm's erf)."""
    if approximate == "tanh":
        gate = np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x * x * x))
        return np.asarray(0.5 * x * (1.0 + gate))
    return np.asarray(x * _cdf64(x))


def _rsqrt(x: Array) -> Array:
    return np.reciprocal(np.sqrt(x))


def _cube(x: Array) -> Array:
    return x * x * x


def _inv_square(x: Array) -> Array:
    return np.reciprocal(x * x)


# torch's pow(tensor, scalar) fast paths (exactly rounded sqrt rather than power(x, 0.5), ...)
_POW_SPECIAL: dict[float, Fn] = {0.5: np.sqrt, 2.0: np.square, 3.0: _cube, -0.5: _rsqrt,
                                 -1.0: np.reciprocal, -2.0: _inv_square}


def _install_method(method: Fn, name: str) -> None:
    """Set a table-made method on ElementwiseOps, marked as raising AllocationError itself."""
    method.__name__ = method.__qualname__ = name
    setattr(method, GUARDED, True)
    setattr(ElementwiseOps, name, method)


def _install() -> None:
    for name, (fn, kinds, warns, suffix) in BINARY.items():
        for k in kinds:
            prefix = _KINDS[k]
            f = _pick(fn, k)
            _install_method(_make_binary(f, warns, f"{prefix}_{name}"), f"{prefix}_{name}")
            scalar_name = f"{prefix}_{name}{suffix}"
            if suffix and k != "b" and hasattr(ElementwiseOps, scalar_name):
                continue  # written by hand in the class (float_powf_scalar)
            if suffix and k != "b":
                _install_method(_make_scalar(f, warns, k == "f", scalar_name), scalar_name)
    for name, (fn, kinds, warns) in UNARY.items():
        for k in kinds:
            method_name = f"{_KINDS[k]}_{name}"
            _install_method(_make_unary(_pick(fn, k), warns, method_name), method_name)


_install()
_float_powf_scalar = _make_scalar(np.power, True, True, "float_powf_scalar")
