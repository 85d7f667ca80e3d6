"""Comparison machinery of the conformance suite: burn against PyTorch on the same numpy data.

Every check builds a burn tensor and a torch tensor from one numpy array, runs the op on both
and compares, in this order: the type (burn.Tensor), the shape, the dtype (burn.float32 <->
torch.float32, ...) and only then the values, with the tolerance of the result's dtype from
`TOLERANCES`.

- `T(data, dtype, layout)` describes a tensor argument: its logical values and how the tensor is
  laid out (contiguous, or a non-contiguous view made with swap_dims / a stepped slice, built the
  same way in burn and in torch).
- `check_forward(burn_fn, torch_fn, args, device)` compares outputs (tensors or nested tuples).
- `check_backward(burn_fn, torch_fn, args, grad_device, rng)` compares the gradients of
  `(out * g).sum()` for a random upstream `g` with respect to every float `T` argument.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import ml_dtypes
import numpy as np
import pytest
import torch

import burn

Layout = Literal["contiguous", "transposed", "strided"]
Phase = Literal["forward", "backward"]

# --------------------------------------------------------------------------------------- dtypes

DTYPES: dict[str, burn.DType] = {
    "float64": burn.float64,
    "float32": burn.float32,
    "float16": burn.float16,
    "bfloat16": burn.bfloat16,
    "int64": burn.int64,
    "int32": burn.int32,
    "int8": burn.int8,
    "uint8": burn.uint8,
    "bool": burn.bool_,
}
BURN_TO_TORCH: dict[burn.DType, torch.dtype] = {
    burn.float64: torch.float64,
    burn.float32: torch.float32,
    burn.float16: torch.float16,
    burn.bfloat16: torch.bfloat16,
    burn.int64: torch.int64,
    burn.int32: torch.int32,
    burn.int8: torch.int8,
    burn.uint8: torch.uint8,
    burn.bool_: torch.bool,
}
TORCH_TO_BURN: dict[torch.dtype, burn.DType] = {v: k for k, v in BURN_TO_TORCH.items()}
NUMPY_OF: dict[burn.DType, np.dtype] = {
    burn.float64: np.dtype(np.float64),
    burn.float32: np.dtype(np.float32),
    burn.float16: np.dtype(np.float16),
    burn.bfloat16: np.dtype(ml_dtypes.bfloat16),
    burn.int64: np.dtype(np.int64),
    burn.int32: np.dtype(np.int32),
    burn.int8: np.dtype(np.int8),
    burn.uint8: np.dtype(np.uint8),
    burn.bool_: np.dtype(np.bool_),
}
FLOATS = ("float64", "float32", "float16", "bfloat16")
LOW_FLOATS = ("float16", "bfloat16")
INTS = ("int64", "int32", "int8", "uint8")
GRAD_DTYPES = ("float64", "float32")


def dtype_of(name: str | burn.DType) -> burn.DType:
    """The burn dtype named `name` (or `name` itself)."""
    return name if isinstance(name, burn.DType) else DTYPES[name]


def is_float(dtype: str | burn.DType) -> bool:
    return dtype_of(dtype) in (burn.float64, burn.float32, burn.float16, burn.bfloat16)


# ----------------------------------------------------------------------------------- tolerances


@dataclass(frozen=True)
class Tolerance:
    """|got - want| <= atol + rtol * |want|, elementwise."""

    rtol: float
    atol: float


EXACT = Tolerance(0.0, 0.0)
#: The one tolerance table of the suite: dtype -> (forward, backward).
TOLERANCES: dict[burn.DType, tuple[Tolerance, Tolerance]] = {
    burn.float64: (Tolerance(1e-7, 1e-9), Tolerance(1e-7, 1e-8)),
    burn.float32: (Tolerance(1e-5, 1e-5), Tolerance(1e-4, 1e-4)),
    burn.float16: (Tolerance(1e-2, 1e-2), Tolerance(2e-2, 2e-2)),
    burn.bfloat16: (Tolerance(4e-2, 4e-2), Tolerance(8e-2, 8e-2)),
    burn.int64: (EXACT, EXACT),
    burn.int32: (EXACT, EXACT),
    burn.int8: (EXACT, EXACT),
    burn.uint8: (EXACT, EXACT),
    burn.bool_: (EXACT, EXACT),
}


def tolerance(dtype: burn.DType, phase: Phase = "forward") -> Tolerance:
    fwd, bwd = TOLERANCES[dtype]
    return fwd if phase == "forward" else bwd


# ------------------------------------------------------------------------------------ data


@dataclass(frozen=True)
class Domain:
    """Where random float test values come from.

    Args:
        low, high: the interval.
        avoid: "zero" keeps |x| >= margin (abs, recip: no kink / pole); "int" keeps x at least
            `margin` away from integers and "half" away from half-integers (round, floor, ...).
        margin: distance kept from the avoided points.
    """

    low: float = -2.0
    high: float = 2.0
    avoid: Literal["none", "zero", "int", "half"] = "none"
    margin: float = 0.1

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        x = rng.uniform(self.low, self.high, size=shape)
        if self.avoid == "zero":
            x = np.where(np.abs(x) < self.margin, np.copysign(self.margin, x) * 2, x)
        elif self.avoid in ("int", "half"):
            shift = 0.0 if self.avoid == "int" else 0.5
            frac = rng.uniform(self.margin, 1 - self.margin, size=shape)
            x = np.floor(x - shift) + shift + frac
        return x


DEFAULT_DOMAIN = Domain()


def rand(
    rng: np.random.Generator,
    shape: tuple[int, ...],
    dtype: str | burn.DType,
    domain: Domain = DEFAULT_DOMAIN,
    *,
    int_range: tuple[int, int] | None = None,
) -> np.ndarray:
    """Random values of `shape` in the numpy type of `dtype` (exactly representable there)."""
    dt = dtype_of(dtype)
    if dt == burn.bool_:
        return rng.random(shape) < 0.5
    if is_float(dt):
        return domain.sample(rng, shape).astype(NUMPY_OF[dt])
    lo, hi = int_range or ((0, 10) if dt == burn.uint8 else (-9, 10))
    return rng.integers(lo, hi, size=shape).astype(NUMPY_OF[dt])


def distinct(rng: np.random.Generator, shape: tuple[int, ...], dtype: str | burn.DType,
             spacing: float = 0.25) -> np.ndarray:
    """Values without ties (sort, max, topk, ... have unambiguous indices and gradients)."""
    n = math.prod(shape)
    values = (rng.permutation(n) - n // 2) * spacing
    dt = dtype_of(dtype)
    if not is_float(dt):
        values = rng.permutation(n) + (0 if dt == burn.uint8 else -(n // 2))
    return values.reshape(shape).astype(NUMPY_OF[dt])


# ------------------------------------------------------------------------- tensors and layouts


def held(dtype: str, device: burn.Device) -> str:
    """`dtype`, or float32 in place of float64 on a device without float64 (most WebGPU
    adapters), so that a test written in float64 for precision still runs there instead of
    passing as a declared-unsupported dtype."""
    if dtype == "float64" and not device.backend.supports(burn.float64):
        return "float32"
    return dtype


@dataclass
class T:
    """A tensor argument: logical values, dtype, layout, and whether to differentiate w.r.t. it."""

    data: np.ndarray
    dtype: burn.DType | str
    layout: Layout = "contiguous"
    grad: bool = True

    def __post_init__(self) -> None:
        self.dtype = dtype_of(self.dtype)
        self.data = np.asarray(self.data).astype(NUMPY_OF[self.dtype])
        if self.data.ndim < 2 and self.layout == "transposed":
            self.layout = "contiguous"
        if self.data.ndim < 1 and self.layout == "strided":
            self.layout = "contiguous"

    def base(self) -> np.ndarray:
        """The contiguous array the view of `layout` is taken from."""
        if self.layout == "transposed":
            return np.array(np.swapaxes(self.data, -1, -2), copy=True, order="C")
        if self.layout == "strided":
            shape = (*self.data.shape[:-1], 2 * self.data.shape[-1])
            base = np.zeros(shape, dtype=self.data.dtype)
            base[..., ::2] = self.data
            base[..., 1::2] = self.data[..., ::-1] if self.data.shape[-1] else base[..., 1::2]
            return base
        return np.array(self.data, copy=True, order="C")


def flushes_subnormals(device: burn.Device) -> bool:
    """Whether the device computes float32 subnormal results as zero (NVIDIA's Vulkan driver
    under wgpu does; docs/differences.md), probed once per runtime by burn-cube."""
    if device.name not in ("cpu", "wgpu", "cuda"):
        return False
    import burn_cube
    from burn_cube.runtime.probes import flushes_subnormals as probe

    return probe(burn_cube.runtime(device.name, device.index))


def normal_or_zero(x: np.ndarray) -> np.ndarray:
    """Where float32 `x` (float64 values given as float32 ones) is zero, normal, inf or NaN:
    not subnormal."""
    tiny = np.finfo(np.float32).tiny
    return ~((np.abs(x) < tiny) & (x != 0))


def burn_tensor(a: np.ndarray, dtype: burn.DType, device: burn.Device) -> burn.Tensor:
    """A burn tensor holding a copy of `a` (already in the numpy type of `dtype`)."""
    return burn.tensor(np.array(a, copy=True, order="C"), dtype=dtype, device=device)


def torch_tensor(a: np.ndarray, dtype: burn.DType) -> torch.Tensor:
    """A torch tensor holding a copy of `a`."""
    if dtype == burn.bfloat16:
        return torch.from_numpy(np.asarray(a, dtype=np.float32).copy()).to(torch.bfloat16)
    return torch.from_numpy(np.array(a, copy=True))


def view_burn(x: burn.Tensor, layout: Layout) -> burn.Tensor:
    if layout == "transposed":
        return x.swap_dims(x.ndim - 2, x.ndim - 1)
    if layout == "strided":
        return x[..., ::2]
    return x


def view_torch(x: torch.Tensor, layout: Layout) -> torch.Tensor:
    if layout == "transposed":
        return x.transpose(x.ndim - 2, x.ndim - 1)
    if layout == "strided":
        return x[..., ::2]
    return x


def build(arg: Any, device: burn.Device, *, upcast: torch.dtype | None = None,
          grad: bool = False) -> tuple[Any, Any, Any, Any]:
    """(burn value, torch value, burn leaf, torch leaf) of one argument.

    Non-`T` arguments pass through unchanged (nested tuples / lists are built elementwise).
    With `grad`, float `T`s with `grad=True` become leaves that require grad.
    """
    if isinstance(arg, T):
        base = arg.base()
        leaf_b = burn_tensor(base, arg.dtype, device)
        leaf_t = torch_tensor(base, arg.dtype)
        if upcast is not None and leaf_t.is_floating_point():
            leaf_t = leaf_t.to(upcast)
        wants_grad = grad and arg.grad and is_float(arg.dtype)
        if wants_grad:
            leaf_b = leaf_b.require_grad()
            leaf_t.requires_grad_(True)
        return (view_burn(leaf_b, arg.layout), view_torch(leaf_t, arg.layout),
                leaf_b if wants_grad else None, leaf_t if wants_grad else None)
    if isinstance(arg, (tuple, list)):
        parts = [build(a, device, upcast=upcast, grad=grad) for a in arg]
        kind = type(arg)
        return (kind(p[0] for p in parts), kind(p[1] for p in parts), None, None)
    return arg, arg, None, None


def low_precision_of(args: Sequence[Any]) -> torch.dtype | None:
    """The float16 / bfloat16 dtype when every float tensor argument has that one dtype."""
    dtypes: set[burn.DType] = set()

    def visit(a: Any) -> None:
        if isinstance(a, T) and is_float(a.dtype):
            dtypes.add(a.dtype)
        elif isinstance(a, (tuple, list)):
            for x in a:
                visit(x)

    for a in args:
        visit(a)
    if len(dtypes) == 1 and next(iter(dtypes)) in (burn.float16, burn.bfloat16):
        return BURN_TO_TORCH[next(iter(dtypes))]
    return None


# ---------------------------------------------------------------------------------- comparing


def to_numpy(x: burn.Tensor) -> np.ndarray:
    a = np.asarray(x.to_numpy())
    return a.astype(np.float64) if a.dtype == ml_dtypes.bfloat16 else a


def torch_numpy(x: torch.Tensor) -> np.ndarray:
    x = x.detach()
    if x.dtype == torch.bfloat16:
        x = x.to(torch.float64)
    return x.numpy()


def assert_same(actual: Any, expected: torch.Tensor, *, phase: Phase = "forward",
                what: str = "output", scale: float = 1.0) -> None:
    """Compare one burn tensor with a torch tensor: type, shape, dtype, then values.

    Args:
        actual: the burn result.
        expected: the torch result.
        phase: picks the forward or backward column of `TOLERANCES`.
        what: names the compared value in failure messages.
        scale: multiplies the tolerance (for ops whose conditioning amplifies rounding).
    """
    assert isinstance(actual, burn.Tensor), (
        f"{what}: expected a burn.Tensor, got {type(actual).__name__}")
    assert tuple(actual.shape) == tuple(expected.shape), (
        f"{what}: shape {tuple(actual.shape)} != torch {tuple(expected.shape)}")
    want_dtype = TORCH_TO_BURN[expected.dtype]
    assert actual.dtype == want_dtype, f"{what}: dtype {actual.dtype} != torch {expected.dtype}"
    got = to_numpy(actual)
    want = torch_numpy(expected)
    assert got.shape == want.shape, (
        f"{what}: to_numpy() shape {got.shape} != tensor shape {tuple(actual.shape)}")
    tol = tolerance(want_dtype, phase)
    if tol == EXACT:
        np.testing.assert_array_equal(got, want, err_msg=f"{what} ({actual.dtype})")
    else:
        np.testing.assert_allclose(
            got.astype(np.float64), want.astype(np.float64), rtol=tol.rtol * scale,
            atol=tol.atol * scale, equal_nan=True, err_msg=f"{what} ({actual.dtype}, {phase})")


def assert_same_tree(actual: Any, expected: Any, *, phase: Phase = "forward",
                     what: str = "output", scale: float = 1.0) -> None:
    """`assert_same` over nested tuples / lists of tensors (and equality for plain values)."""
    if isinstance(expected, torch.Tensor):
        assert_same(actual, expected, phase=phase, what=what, scale=scale)
    elif isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)), (
            f"{what}: expected a sequence of {len(expected)}, got {type(actual).__name__}")
        assert len(actual) == len(expected), (
            f"{what}: {len(actual)} results != torch {len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_same_tree(a, e, phase=phase, what=f"{what}[{i}]", scale=scale)
    else:
        assert actual == expected, f"{what}: {actual!r} != {expected!r}"


def _downcast(out: Any, dtype: torch.dtype) -> Any:
    if isinstance(out, torch.Tensor):
        return out.to(dtype) if out.dtype == torch.float32 else out
    if isinstance(out, (tuple, list)):
        return type(out)(_downcast(o, dtype) for o in out)
    return out


# ----------------------------------------------------------------------------------- runners


def check_forward(burn_fn: Callable[..., Any], torch_fn: Callable[..., Any], args: Sequence[Any],
                  device: burn.Device, *, scale: float = 1.0, upcast: bool = False) -> Any:
    """Run `burn_fn` / `torch_fn` on the same arguments and compare the results.

    With `upcast`, a float16 / bfloat16 reference is computed by torch in float32 and rounded to
    the input dtype (for ops torch lacks in low precision; only for ops whose result has the
    inputs' dtype).
    """
    low = low_precision_of(args) if upcast else None
    built = [build(a, device, upcast=torch.float32 if low else None) for a in args]
    expected = torch_fn(*[b[1] for b in built])
    if low is not None:
        expected = _downcast(expected, low)
    actual = burn_fn(*[b[0] for b in built])
    assert_same_tree(actual, expected, phase="forward", scale=scale)
    return actual


def check_backward(burn_fn: Callable[..., Any], torch_fn: Callable[..., Any],
                   args: Sequence[Any], grad_device: burn.Device, rng: np.random.Generator,
                   *, scale: float = 1.0, upstream: np.ndarray | None = None) -> None:
    """Compare the gradients of `(out * g).sum()` w.r.t. every float `T` argument with torch.

    `burn_fn` / `torch_fn` return one float tensor. Leaves are the contiguous bases of the `T`s
    (a non-contiguous layout is a view of its leaf, taken inside the graph). `g` is `upstream`
    (shaped like the output) or random normal values.
    """
    built = [build(a, grad_device, grad=True) for a in args]
    out_t = torch_fn(*[b[1] for b in built])
    out_b = burn_fn(*[b[0] for b in built])
    assert_same(out_b, out_t, phase="forward", what="forward output", scale=scale)
    out_dtype = TORCH_TO_BURN[out_t.dtype]
    g = (rng.standard_normal(tuple(out_t.shape)) if upstream is None else upstream).astype(
        NUMPY_OF[out_dtype])
    loss_t = (out_t * torch_tensor(g, out_dtype)).sum()
    loss_t.backward()
    grads = (out_b * burn_tensor(g, out_dtype, grad_device)).sum().backward()
    leaves = [(i, b[2], b[3]) for i, b in enumerate(built) if b[2] is not None]
    assert leaves, "check_backward needs at least one float tensor argument"
    for i, leaf_b, leaf_t in leaves:
        want = leaf_t.grad if leaf_t.grad is not None else torch.zeros_like(leaf_t)
        got = leaf_b.grad(grads)
        assert got is not None, f"grad of argument {i}: None (torch has one)"
        assert_same(got, want, phase="backward", what=f"grad of argument {i}", scale=scale)


def op_param(op: str, *values: Any, id: str | None = None, marks: Sequence[Any] = ()) -> Any:
    """A pytest.param tagged with `@pytest.mark.op(op)` (how xtask ops-table attributes it)."""
    return pytest.param(op, *values, marks=[pytest.mark.op(op), *marks],
                        id=id or "-".join([op, *(_id(v) for v in values)]))


def _id(v: Any) -> str:
    if isinstance(v, tuple):
        return "x".join(str(d) for d in v) if v else "scalar"
    return str(v)


@dataclass
class Case:
    """One forward case of an elementwise op: dtype, shape(s) and layout."""

    dtype: str
    shapes: tuple[tuple[int, ...], ...]
    layout: Layout = "contiguous"
    tags: tuple[str, ...] = field(default_factory=tuple)

    @property
    def id(self) -> str:
        return "-".join([self.dtype, ",".join(_id(s) for s in self.shapes), self.layout])


class Lazy:
    """Attribute access resolved at call time: `Lazy(mod).f(x)` calls `mod.f(x)`.

    Test tables name library functions at import time; a function the library lacks then fails
    the tests that call it instead of the whole module's collection.
    """

    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            return getattr(self._target, name)(*args, **kwargs)

        call.__name__ = name
        return call


# ------------------------------------------------------------- special values, error bounds

#: Float values where implementations part ways: NaN, infinities, signed zeros, the largest
#: finite and the smallest normal float32 magnitudes.
SPECIAL_FLOATS = (math.nan, math.inf, -math.inf, 0.0, -0.0, 3e38, -3e38, 1.5e-38, -1.5e-38)
#: Int32 values where implementations part ways: the limits (wrapping arithmetic) and zero.
SPECIAL_INT32 = (2**31 - 1, -(2**31), 0)


def with_specials(rng: np.random.Generator, shape: tuple[int, ...], dtype: str | burn.DType,
                  fraction: float = 0.25) -> np.ndarray:
    """`rand` values of `dtype` with about `fraction` of them replaced by `SPECIAL_FLOATS`
    (float dtypes) or `SPECIAL_INT32` (int32); other dtypes are plain `rand` values."""
    dt = dtype_of(dtype)
    values = rand(rng, shape, dt, Domain(-3.0, 3.0))
    pool = SPECIAL_FLOATS if is_float(dt) else SPECIAL_INT32 if dt == burn.int32 else ()
    if pool:
        picks = np.asarray(pool, dtype=NUMPY_OF[dt])[rng.integers(0, len(pool), size=shape)]
        values = np.where(rng.random(shape) < fraction, picks, values)
    return np.asarray(values, dtype=NUMPY_OF[dt])


def assert_within(actual: Any, expected: torch.Tensor, err: torch.Tensor,
                  unknown: torch.Tensor, *, what: str = "output") -> None:
    """Compare a burn tensor with torch's value given a bound on torch's own rounding error.

    Type, shape and dtype first. Then, elementwise, where `unknown` is false: NaN, infinities
    and (where `err` is 0) the sign of zeros exactly, integers and bools exactly, and finite
    floats within `2 * err` (`err` is 0 where the value is exact: then they must be equal).

    Args:
        actual: the burn result.
        expected: torch's result (float32 ops give float32 values).
        err: float64 bound on |exact float32 result - expected|, elementwise, finite.
        unknown: bool, elements whose value depends on rounding (left out).
        what: names the compared value in failure messages.
    """
    assert isinstance(actual, burn.Tensor), (
        f"{what}: expected a burn.Tensor, got {type(actual).__name__}")
    assert tuple(actual.shape) == tuple(expected.shape), (
        f"{what}: shape {tuple(actual.shape)} != torch {tuple(expected.shape)}")
    assert actual.dtype == TORCH_TO_BURN[expected.dtype], (
        f"{what}: dtype {actual.dtype} != torch {expected.dtype}")
    got = to_numpy(actual)
    want = torch_numpy(expected)
    known = ~unknown.numpy()
    bound = err.numpy()
    if not expected.is_floating_point():
        bad = known & (got != want)
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        with np.errstate(invalid="ignore"):
            off = np.abs(g - w) > 2 * bound
        same_special = (np.isnan(g) == np.isnan(w)) & (np.isinf(w) <= (g == w))
        zero_sign = (bound > 0) | (w != 0) | (np.signbit(g) == np.signbit(w))
        finite = np.isfinite(w)
        bad = known & ~(same_special & zero_sign & ~(finite & off))
    if bad.any():
        where = np.argwhere(bad)[:5]
        lines = [f"  at {tuple(int(i) for i in idx)}: burn {got[tuple(idx)]!r}, torch "
                 f"{want[tuple(idx)]!r}, error bound {bound[tuple(idx)]:.3g}" for idx in where]
        raise AssertionError(f"{what} ({actual.dtype}): {int(bad.sum())} of {bad.size} values "
                             "differ\n" + "\n".join(lines))
