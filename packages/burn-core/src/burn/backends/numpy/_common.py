"""Shared helpers of the NumPy backend: dtype maps, quiet floating errors, low-precision upcast."""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeVar

import numpy as np

from burn.dtype import FROM_NUMPY_MAP, DType

F = TypeVar("F", bound=Callable[..., Any])

#: numpy dtype -> burn DType (one dict lookup in `NumpyBackend.dtype`; bfloat16 added lazily).
FROM_NUMPY: dict[np.dtype, DType] = FROM_NUMPY_MAP
F32 = np.dtype(np.float32)

# --- quiet floating-point errors -------------------------------------------------------------
# `np.errstate` costs ~1 us per use; setting numpy's error-state context variable directly costs
# ~0.2 us, which matters on the hot elementwise path. Fall back to np.errstate if numpy changes.
try:
    from numpy._core import _ufunc_config as _ufc

    # private numpy API, absent from numpy's stubs (hence the ignores); guarded by the except
    _EXTOBJ: ContextVar[Any] = _ufc._extobj_contextvar  # type: ignore[attr-defined]
    _IGNORE = _ufc._make_extobj(all="ignore")  # type: ignore[attr-defined]
    QUIET_SET: Callable[[Any], Any] = _EXTOBJ.set
    QUIET_RESET: Callable[[Any], None] = _EXTOBJ.reset
    QUIET_TOKEN: Any = _IGNORE
except (ImportError, AttributeError, TypeError):  # pragma: no cover - other numpy versions
    _FALLBACK: ContextVar[Any] = ContextVar("burn_numpy_errstate")

    def QUIET_SET(_: Any) -> Any:  # noqa: N802 - mirrors ContextVar.set
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def QUIET_RESET(token: Any) -> None:  # noqa: N802
        token.__exit__(None, None, None)

    QUIET_TOKEN = None


def quiet(fn: F) -> F:
    """Run `fn` with numpy floating-point warnings ignored (inf / nan as torch, silently)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        token = QUIET_SET(QUIET_TOKEN)
        try:
            return fn(*args, **kwargs)
        finally:
            QUIET_RESET(token)

    return wrapper  # type: ignore[return-value]


# --- low precision (float16 / bfloat16) -----------------------------------------------------
def is_low(x: np.ndarray) -> bool:
    """Whether `x` is float16 / bfloat16 (burn has no other 2-byte dtype)."""
    return x.dtype.itemsize == 2


def _cast_back(result: Any, dtype: np.dtype) -> Any:
    if isinstance(result, np.ndarray):
        return result.astype(dtype, copy=False) if result.dtype.kind == "f" else result
    if isinstance(result, tuple):
        return tuple(_cast_back(r, dtype) for r in result)
    return result


def _up(a: Any) -> Any:
    if isinstance(a, np.ndarray) and a.dtype.itemsize == 2 and a.dtype.kind in "fV":
        return a.astype(F32)
    if isinstance(a, (list, tuple)) and a and isinstance(a[0], np.ndarray):
        return type(a)(_up(v) for v in a)
    return a


def lowp(fn: F, quiet: bool = False) -> F:
    """Compute a method in float32 when its first array argument is float16 / bfloat16.

    The single place where low precision is handled: every float16 / bfloat16 array argument is
    upcast, and float results are cast back to the input dtype. float32 / float64 / int inputs
    pay one attribute check. With `quiet`, numpy floating-point warnings are ignored too.
    """

    def wrapper(self: Any, x: Any, *args: Any) -> Any:
        try:
            dt = x.dtype
        except AttributeError:  # a list of arrays, or a (dim, x, ...) signature
            first = x[0] if isinstance(x, (list, tuple)) else next(
                a for a in args if isinstance(a, np.ndarray))
            dt = first.dtype
        token = QUIET_SET(QUIET_TOKEN) if quiet else None
        try:
            if dt.itemsize != 2 or dt.kind not in "fV":
                return fn(self, x, *args)
            return _cast_back(fn(self, _up(x), *(_up(a) for a in args)), dt)
        finally:
            if token is not None:
                QUIET_RESET(token)

    return functools.wraps(fn)(wrapper)  # type: ignore[return-value]


def keep_axis_index(x: np.ndarray, dim: int, index: np.ndarray) -> tuple[Any, ...]:
    """A fancy index selecting `index` (shape of x with any sizes) along `dim` of `x`.

    Other dims take `arange(index.shape[d])`, so `index` may be smaller than `x` there (torch's
    gather / scatter allow that).
    """
    nd = index.ndim
    out: list[Any] = []
    for d in range(nd):
        if d == dim:
            out.append(index)
        else:
            shape = [1] * nd
            shape[d] = index.shape[d]
            out.append(np.arange(index.shape[d]).reshape(shape))
    return tuple(out)


# --- erf (fdlibm s_erf.c, vectorized; numpy has no erf) ------------------------------------
_EFX = 1.28379167095512586316e-01
_ERX = 8.45062911510467529297e-01
_PP = (1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
       -5.77027029648944159157e-03, -2.37630166566501626084e-05)
_QQ = (1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
       1.32494738004321644526e-04, -3.96022827877536812320e-06)
_PA = (-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
       3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
       -2.16637559486879084300e-03)
_QA = (1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
       1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02)
_RA = (-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
       -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
       -8.12874355063065934246e+01, -9.81432934416914548592e+00)
_SA = (1.0, 1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02,
       6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02,
       6.57024977031928170135e+00, -6.04244152148580987438e-02)
_RB = (-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
       -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
       -4.83519191608651397019e+02)
_SB = (1.0, 3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
       3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
       -2.24409524465858183362e+01)


def _poly(coeffs: tuple[float, ...], z: np.ndarray) -> np.ndarray:
    acc = np.full_like(z, coeffs[-1])
    for c in coeffs[-2::-1]:
        acc = acc * z + c
    return acc


def erf(x: np.ndarray) -> np.ndarray:
    """Vectorized erf (fdlibm's rational approximations), computed in float64, cast back."""
    dtype = x.dtype
    x64 = np.asarray(x, dtype=np.float64)
    ax = np.abs(x64)
    with np.errstate(all="ignore"):
        z = x64 * x64
        small = x64 + x64 * (_poly(_PP, z) / _poly(_QQ, z))
        s = ax - 1.0
        mid = _ERX + _poly(_PA, s) / _poly(_QA, s)
        ss = 1.0 / z
        big_a = _poly(_RA, ss) / _poly(_SA, ss)
        big_b = _poly(_RB, ss) / _poly(_SB, ss)
        rr = np.where(ax < 1 / 0.35, big_a, big_b)
        zz = (ax.view(np.int64) & np.int64(~0xFFFFFFFF)).view(np.float64)
        e = np.exp(-zz * zz - 0.5625) * np.exp((zz - ax) * (zz + ax) + rr)
        tail = 1.0 - e / ax
        out = np.where(ax < 0.84375, small,
                       np.where(ax < 1.25, np.copysign(mid, x64),
                                np.where(ax < 6.0, np.copysign(tail, x64), np.sign(x64))))
        out = np.where(ax < 2.0 ** -28, x64 + _EFX * x64, out)
    return np.asarray(out.astype(dtype, copy=False))


# --- sums over short rows ---------------------------------------------------------------------
#: rows up to this long sum through einsum's running sum (np.add.reduce over a short last axis
#: loops per row and is 3-5x slower); longer rows sum pairwise, which keeps float32 accurate.
EINSUM_ROW = 1024


def row_sums(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """sum(a) (or sum(a * b), same shape) over the last axis, kept with size 1."""
    if a.shape[-1] <= EINSUM_ROW:
        out = np.einsum("...i->...", a) if b is None else np.einsum("...i,...i->...", a, b)
        return np.asarray(out)[..., None]
    return np.add.reduce(a if b is None else a * b, axis=-1, keepdims=True)
