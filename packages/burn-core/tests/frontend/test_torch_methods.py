"""PyTorch's Tensor method names (sigmoid, softmax, amax, maximum, eq, mm, type_as, ...),
composed from the frontend's ops: each against torch on numpy, cpu, cpu+fusion and
cpu+autodiff (shape and dtype first, then values), with 0-d, empty, transposed and NaN / inf
inputs; gradients against torch's; bad input raises burn.errors types naming the op."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import burn
from burn.errors import (
    BurnError,
    BurnIndexError,
    DTypeError,
    EmptyReductionError,
    ShapeError,
    UnsupportedDTypeError,
)

DEVICES = ["numpy", "cpu", "cpu+fusion", "cpu+autodiff"]
GRAD_DEVICES = ["numpy+autodiff", "cpu+autodiff", "cpu+fusion+autodiff"]
NAN, INF = float("nan"), float("inf")
TORCH_DTYPE = {torch.float64: burn.float64, torch.float32: burn.float32,
               torch.float16: burn.float16, torch.int64: burn.int64, torch.int32: burn.int32,
               torch.bool: burn.bool_}

rng = np.random.default_rng(7)
F2 = rng.standard_normal((3, 4)).astype(np.float32)  # 2-d float
F3 = rng.standard_normal((2, 3, 4)).astype(np.float32)
I2 = rng.integers(-4, 5, (3, 4))  # int64
B2 = F2 > 0
SPECIAL = np.array([[NAN, 1.0, -INF, 0.0], [INF, -2.5, 3.0, -0.0], [1e-8, -1e-6, 88.0, -90.0]],
                   np.float32)
TIES = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [-1.0, 5.0, -1.0, 5.0]], np.float32)
#: named inputs: 2-d, 0-d, empty, int, bool, NaN / inf, ties
INPUTS: dict[str, np.ndarray] = {
    "2d": F2, "0d": np.array(0.75, np.float32), "empty": np.zeros((0, 3), np.float32),
    "int": I2, "bool": B2, "special": SPECIAL, "ties": TIES,
}


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> burn.Device:
    return burn.Device(request.param)


def pair(arr: np.ndarray, device: burn.Device, transposed: bool = False
         ) -> tuple[burn.Tensor, torch.Tensor]:
    """`arr` as a burn tensor on `device` and as a torch tensor (both transposed, i.e. not
    contiguous, when asked)."""
    b, t = burn.tensor(arr, device=device), torch.tensor(arr)
    return (b.transpose(0, 1), t.transpose(0, 1)) if transposed else (b, t)


def check(out: Any, ref: Any, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """`out` (a burn tensor or a Python value) against torch's `ref`: type, shape and dtype
    first, then the values (NaN equal to NaN; the sign of a zero is not compared)."""
    if not isinstance(ref, torch.Tensor):
        assert out == ref and type(out) is type(ref), (out, ref)
        return
    assert isinstance(out, burn.Tensor), type(out)
    assert out.shape == tuple(ref.shape), (out.shape, tuple(ref.shape))
    assert out.dtype == TORCH_DTYPE[ref.dtype], (out.dtype, ref.dtype)
    got = out.to_numpy()
    want = ref.detach().numpy()
    if ref.dtype.is_floating_point:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


# --- elementwise: (method, inputs it is checked on); torch's method of the same name
UNARY = {
    "sigmoid": ("2d", "0d", "empty", "int", "bool", "special"),
    "relu": ("2d", "0d", "empty", "int", "special"),
    "reciprocal": ("2d", "0d", "empty", "int", "special"),
    "rsqrt": ("2d", "0d", "empty", "int", "special"),
    "log2": ("2d", "0d", "empty", "int", "bool", "special"),
    "log10": ("2d", "0d", "empty", "int", "special"),
    "expm1": ("2d", "0d", "empty", "int", "special"),
    "exp2": ("2d", "0d", "empty", "int", "special"),
    "isfinite": ("2d", "0d", "empty", "int", "bool", "special"),
    "isnan": ("2d", "0d", "empty", "int", "special"),
    "isinf": ("2d", "0d", "empty", "int", "special"),
    "nan_to_num": ("2d", "0d", "empty", "int", "bool", "special"),
}
UNARY_CASES = [(m, i) for m, inputs in UNARY.items() for i in inputs]


@pytest.mark.parametrize(("method", "name"), UNARY_CASES, ids=[f"{m}-{i}" for m, i in
                                                                UNARY_CASES])
def test_elementwise(device: burn.Device, method: str, name: str) -> None:
    b, t = pair(INPUTS[name], device)
    check(getattr(b, method)(), getattr(t, method)())


@pytest.mark.parametrize("method", list(UNARY))
def test_elementwise_transposed(device: burn.Device, method: str) -> None:
    b, t = pair(SPECIAL, device, transposed=True)
    check(getattr(b, method)(), getattr(t, method)())


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_nan_to_num_values_and_gradient(device: burn.Device, dtype: str) -> None:
    """Given replacements, the dtype's finite extremes by default, a replacement outside the
    dtype's range rounding to inf as torch's; the gradient is 1 where a value is kept."""
    data = SPECIAL.astype(dtype)
    b = burn.tensor(data, device=device)
    t = torch.tensor(data)
    check(b.nan_to_num(), t.nan_to_num(), rtol=0, atol=0)
    check(b.nan_to_num(1.5, 2.0, -3.0), t.nan_to_num(1.5, 2.0, -3.0), rtol=0, atol=0)
    check(b.nan_to_num(posinf=1e300), t.nan_to_num(posinf=1e300), rtol=0, atol=0)
    if not device.is_autodiff:
        return
    x = burn.tensor(data, device=device).require_grad()
    grads = (x.nan_to_num() * 2.0).sum().backward()
    tx = torch.tensor(data, requires_grad=True)
    (tx.nan_to_num() * 2.0).sum().backward()
    check(x.grad(grads), tx.grad, rtol=0, atol=0)


def test_expm1_near_zero_keeps_precision(device: burn.Device) -> None:
    """exp(x) - 1 would give 0 for 1e-10: expm1 keeps the relative precision near 0."""
    values = np.array([1e-10, -1e-10, 3e-7, -2e-5, 0.3, -0.49, 0.5, 0.51, -0.5], np.float32)
    b, t = pair(values, device)
    check(b.expm1(), t.expm1(), rtol=2e-6, atol=0.0)


def test_exp2_log2_log10_exact_powers(device: burn.Device) -> None:
    b, t = pair(np.array([0.0, 1.0, 3.0, 10.0, -4.0], np.float32), device)
    check(b.exp2(), t.exp2(), rtol=1e-6, atol=0.0)
    b, t = pair(np.array([1.0, 2.0, 8.0, 1024.0, 0.125, 10.0, 1000.0], np.float32), device)
    check(b.log2(), t.log2(), rtol=1e-6, atol=1e-7)
    check(b.log10(), t.log10(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("method", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1, -1, -2])
@pytest.mark.parametrize("transposed", [False, True], ids=["contiguous", "transposed"])
def test_softmax(device: burn.Device, method: str, dim: int, transposed: bool) -> None:
    b, t = pair(F2 * 4, device, transposed)
    check(getattr(b, method)(dim), getattr(t, method)(dim))


@pytest.mark.parametrize("method", ["softmax", "log_softmax"])
def test_softmax_edges(device: burn.Device, method: str) -> None:
    for name, dim in (("0d", 0), ("0d", -1), ("empty", 1), ("empty", 0), ("special", 1)):
        b, t = pair(INPUTS[name], device)
        check(getattr(b, method)(dim), getattr(t, method)(dim))
    b, t = pair(F3, device)
    check(getattr(b, method)(-2), getattr(t, method)(-2))
    b, t = pair(I2, device)  # torch's dtype keyword casts first
    check(getattr(b, method)(1, dtype=burn.float32), getattr(t, method)(1, dtype=torch.float32))


# --- reductions
AMAX_DIMS: list[Any] = [None, 0, 1, -1, -2, (0, 1), (-1, 0), [1], ()]


@pytest.mark.parametrize("method", ["amax", "amin"])
@pytest.mark.parametrize("dim", AMAX_DIMS, ids=[repr(d) for d in AMAX_DIMS])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("name", ["2d", "int", "bool", "special", "ties"])
def test_amax_amin(device: burn.Device, method: str, dim: Any, keepdim: bool,
                   name: str) -> None:
    b, t = pair(INPUTS[name], device)
    kwargs = {"keepdim": keepdim} if dim is None else {"dim": dim, "keepdim": keepdim}
    check(getattr(b, method)(**kwargs), getattr(t, method)(**kwargs))


@pytest.mark.parametrize("method", ["amax", "amin"])
def test_amax_amin_edges(device: burn.Device, method: str) -> None:
    b, t = pair(F3, device, transposed=True)
    check(getattr(b, method)((0, 2)), getattr(t, method)((0, 2)))
    check(getattr(b, method)(-1, True), getattr(t, method)(-1, True))
    b, t = pair(INPUTS["0d"], device)
    for kwargs in ({}, {"dim": 0}, {"dim": -1, "keepdim": True}, {"dim": ()}):
        check(getattr(b, method)(**kwargs), getattr(t, method)(**kwargs))
    b, t = pair(INPUTS["empty"], device)  # [0, 3]: reducing dim 1 leaves an empty result
    check(getattr(b, method)(1), getattr(t, method)(1))
    check(getattr(b, method)(-1, keepdim=True), getattr(t, method)(-1, keepdim=True))


@pytest.mark.parametrize("method", ["amax", "amin"])
@pytest.mark.parametrize("kwargs", [{}, {"dim": 0}, {"dim": (0, 1)}, {"dim": -2}],
                         ids=["all", "dim0", "dims", "dim-2"])
def test_amax_amin_of_nothing(device: burn.Device, method: str, kwargs: dict) -> None:
    b, t = pair(INPUTS["empty"], device)
    with pytest.raises(EmptyReductionError, match=method) as info:
        getattr(b, method)(**kwargs)
    assert isinstance(info.value, IndexError) and "(0, 3)" in str(info.value)
    with pytest.raises((IndexError, RuntimeError)):
        getattr(t, method)(**kwargs)


# --- sizes
@pytest.mark.parametrize("name", ["2d", "0d", "empty", "int"])
def test_sizes(device: burn.Device, name: str) -> None:
    b, t = pair(INPUTS[name], device)
    for method in ("dim", "ndimension", "nelement"):
        check(getattr(b, method)(), getattr(t, method)())
    b, t = pair(F3, device, transposed=True)
    check(b.dim(), t.dim())
    check(b.nelement(), t.nelement())


# --- comparisons and pairwise extremes
OTHERS: list[tuple[str, Callable[[burn.Device], tuple[Any, Any]]]] = [
    ("tensor", lambda d: pair(np.flip(F2, 0).copy(), d)),
    ("broadcast row", lambda d: pair(F2[1], d)),
    ("int tensor", lambda d: pair(I2, d)),
    ("0-d tensor", lambda d: pair(np.array(0.25, np.float32), d)),
    ("int scalar", lambda d: (1, 1)),
    ("float scalar", lambda d: (-0.5, -0.5)),
]


@pytest.mark.parametrize("method", ["eq", "ne", "lt", "le", "gt", "ge"])
@pytest.mark.parametrize("other", OTHERS, ids=[o[0] for o in OTHERS])
def test_comparisons(device: burn.Device, method: str, other: Any) -> None:
    b, t = pair(np.where(F2 > 0.5, 1.0, F2).astype(np.float32), device)  # some equal to 1
    bo, to = other[1](device)
    check(getattr(b, method)(bo), getattr(t, method)(to))
    bi, ti = pair(I2, device, transposed=True)
    bo, to = other[1](device)
    if isinstance(bo, burn.Tensor) and bo.ndim == 2:
        bo, to = bo.transpose(0, 1), to.transpose(0, 1)
    elif isinstance(bo, burn.Tensor) and bo.ndim == 1:
        bo, to = bo[:3], to[:3]
    check(getattr(bi, method)(bo), getattr(ti, method)(to))


def test_comparisons_edges(device: burn.Device) -> None:
    b, t = pair(SPECIAL, device)
    for method in ("eq", "ne", "lt", "le", "gt", "ge"):
        check(getattr(b, method)(b.flip(0)), getattr(t, method)(t.flip(0)))
        check(getattr(b, method)(NAN), getattr(t, method)(NAN))
    be, te = pair(INPUTS["empty"], device)
    check(be.eq(1.0), te.eq(1.0))
    b0, t0 = pair(INPUTS["0d"], device)
    check(b0.ge(b0), t0.ge(t0))


MAX_OTHERS: list[tuple[str, Callable[[burn.Device], tuple[Any, Any]]]] = [
    ("nan inf", lambda d: pair(np.flip(SPECIAL, 1).copy(), d)),
    ("ties", lambda d: pair(TIES, d)),
    ("broadcast row", lambda d: pair(SPECIAL[2], d)),
    ("broadcast column", lambda d: pair(np.array([[0.0], [NAN], [2.0]], np.float32), d)),
    ("float64", lambda d: pair(TIES.astype(np.float64), d)),
    ("int", lambda d: pair(I2, d)),
    ("0-d", lambda d: pair(np.array(1.0, np.float32), d)),
]


@pytest.mark.parametrize("method", ["maximum", "minimum"])
@pytest.mark.parametrize("other", MAX_OTHERS, ids=[o[0] for o in MAX_OTHERS])
def test_maximum_minimum(device: burn.Device, method: str, other: Any) -> None:
    b, t = pair(np.where(np.isfinite(SPECIAL), TIES, SPECIAL), device)  # TIES with NaN / inf
    bo, to = other[1](device)
    check(getattr(b, method)(bo), getattr(t, method)(to))
    check(getattr(bo, method)(b), getattr(to, method)(t))


@pytest.mark.parametrize("method", ["maximum", "minimum"])
def test_maximum_minimum_kinds(device: burn.Device, method: str) -> None:
    bi, ti = pair(I2, device)
    check(getattr(bi, method)(bi.flip(1)), getattr(ti, method)(ti.flip(1)))
    bb, tb = pair(B2, device)
    check(getattr(bb, method)(bb.flip(0)), getattr(tb, method)(tb.flip(0)))
    bt, tt = pair(F2, device, transposed=True)
    check(getattr(bt, method)(bt.flip(0)), getattr(tt, method)(tt.flip(0)))
    be, te = pair(INPUTS["empty"], device)
    check(getattr(be, method)(be), getattr(te, method)(te))


@pytest.mark.parametrize("bounds", [(-0.5, 0.5), (None, 0.0), (0.0, None), (1, 2), (0.5, -0.5)],
                         ids=["both", "max", "min", "int bounds", "crossed"])
@pytest.mark.parametrize("name", ["2d", "int", "special", "0d", "empty"])
def test_clip(device: burn.Device, bounds: tuple[Any, Any], name: str) -> None:
    b, t = pair(INPUTS[name], device)
    check(b.clip(*bounds), t.clip(*bounds))
    check(b.clip(min=bounds[0], max=bounds[1]), t.clip(min=bounds[0], max=bounds[1]))


@pytest.mark.parametrize("other", ["tensor", "broadcast", "int tensor", "scalar", "int scalar"])
def test_where(device: burn.Device, other: str) -> None:
    b, t = pair(F2, device)
    cond_b, cond_t = b > 0, t > 0
    bo, to = {"tensor": lambda: pair(F2 * 10, device),
              "broadcast": lambda: pair(F2[0], device),
              "int tensor": lambda: pair(I2, device),
              "scalar": lambda: (2.5, 2.5), "int scalar": lambda: (7, 7)}[other]()
    check(b.where(cond_b, bo), t.where(cond_t, to))
    bi, ti = pair(I2, device)
    check(bi.where(cond_b, bo), ti.where(cond_t, to))
    bt, tt = pair(F2, device, transposed=True)  # a transposed condition and self
    check(bt.where(cond_b.transpose(0, 1), 0.0), tt.where(cond_t.transpose(0, 1), 0.0))
    b0, t0 = pair(INPUTS["0d"], device)
    check(b0.where(cond_b, bo), t0.where(cond_t, to))


# --- shapes and dtypes
def test_as_methods(device: burn.Device) -> None:
    b, t = pair(F2, device)
    row_b, row_t = pair(F2[:1], device)
    check(row_b.expand_as(b), row_t.expand_as(t))
    col_b, col_t = pair(F2[:, :1], device)
    big_b, big_t = pair(np.zeros((2, 3, 4), np.float32), device)
    check(col_b.expand_as(big_b), col_t.expand_as(big_t))
    z_b, z_t = pair(INPUTS["0d"], device)
    check(z_b.expand_as(b), z_t.expand_as(t))
    shape_b, shape_t = pair(np.zeros((2, 6), np.int64), device)
    check(b.view_as(shape_b), t.view_as(shape_t))
    check(b.reshape_as(shape_b), t.reshape_as(shape_t))
    tb, tt = pair(F2, device, transposed=True)  # torch's view_as refuses a transposed input
    check(tb.reshape_as(shape_b), tt.reshape_as(shape_t))
    e_b, e_t = pair(INPUTS["empty"], device)
    check(e_b.reshape_as(e_b.transpose(0, 1)), e_t.reshape_as(e_t.transpose(0, 1)))
    check(z_b.view_as(burn.ones(1, 1, device=device)), z_t.view_as(torch.ones(1, 1)))


@pytest.mark.parametrize("name", ["2d", "int", "bool", "0d", "empty", "special"])
def test_dtype_methods(device: burn.Device, name: str) -> None:
    b, t = pair(INPUTS[name], device)
    check(b.double(), t.double())
    check(b.half(), t.half(), rtol=1e-3)
    if name != "special":  # (NaN / inf to int: undefined)
        check(b.long(), t.long())
    for other in (np.zeros(2, np.float64), np.zeros(2, np.int32), np.zeros(2, bool),
                  np.zeros(2, np.float32)):
        ob, ot = pair(other, device)
        if name == "special" and not ot.dtype.is_floating_point and ot.dtype != torch.bool:
            continue  # (NaN / inf to int: undefined)
        check(b.type_as(ob), t.type_as(ot))
    bt, tt = pair(INPUTS[name], device, transposed=name in ("2d", "int", "bool", "special"))
    check(bt.double(), tt.double())


def test_same_dtype_conversions_return_self(device: burn.Device) -> None:
    b = burn.tensor(F2, device=device)
    assert b.type_as(b) is b and b.double().double().dtype == burn.float64
    i = burn.tensor(I2, device=device)
    assert i.long() is i


@pytest.mark.parametrize("name", ["2d", "0d", "empty", "int"])
def test_swapaxes_swapdims(device: burn.Device, name: str) -> None:
    b, t = pair(INPUTS[name], device)
    for method in ("swapaxes", "swapdims"):
        for d0, d1 in ((0, -1), (-1, 0), (0, 0)) if t.ndim else ((0, -1), (0, 0)):
            check(getattr(b, method)(d0, d1), getattr(t, method)(d0, d1))
    b, t = pair(F3, device)
    check(b.swapaxes(0, 2).swapdims(-1, 1), t.swapaxes(0, 2).swapdims(-1, 1))


def test_mm_bmm(device: burn.Device) -> None:
    a_b, a_t = pair(F2, device)  # [3, 4]
    c_b, c_t = pair(F2.T.copy(), device)  # [4, 3]
    check(a_b.mm(c_b), a_t.mm(c_t))
    check(a_b.mm(a_b.transpose(0, 1)), a_t.mm(a_t.transpose(0, 1)))  # transposed operand
    i_b, i_t = pair(I2, device)
    check(i_b.mm(i_b.transpose(0, 1)), i_t.mm(i_t.transpose(0, 1)))
    e_b, e_t = pair(np.zeros((3, 0), np.float32), device)  # an empty inner dim: zeros
    f_b, f_t = pair(np.zeros((0, 5), np.float32), device)
    check(e_b.mm(f_b), e_t.mm(f_t))
    x_b, x_t = pair(F3, device)  # [2, 3, 4]
    check(x_b.bmm(x_b.transpose(1, 2)), x_t.bmm(x_t.transpose(1, 2)))
    check(x_b.transpose(1, 2).bmm(x_b), x_t.transpose(1, 2).bmm(x_t))
    z_b, z_t = pair(np.zeros((0, 3, 4), np.float32), device)
    w_b, w_t = pair(np.zeros((0, 4, 2), np.float32), device)
    check(z_b.bmm(w_b), z_t.bmm(w_t))


# --- gradients under autodiff, against torch's
def _grads(device: str, arrays: list[np.ndarray], fn: Callable[..., Any],
           torch_fn: Callable[..., Any]) -> None:
    """The gradients of `sum(fn(*xs) * w)` (w fixed, random) against torch's."""
    dev = burn.Device(device)
    bs = [burn.tensor(a, device=dev).require_grad() for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out_b, out_t = fn(*bs), torch_fn(*ts)
    check(out_b, out_t)
    weight = np.random.default_rng(1).uniform(0.5, 1.5, tuple(out_t.shape)).astype(
        np.float32)
    grads = (out_b * burn.tensor(weight, device=dev)).sum().backward()
    (out_t * torch.tensor(weight)).sum().backward()
    for b, t in zip(bs, ts, strict=True):
        assert t.grad is not None
        check(b.grad(grads), t.grad)


GRAD_CASES: list[tuple[str, list[np.ndarray], Callable[..., Any], Callable[..., Any]]] = [
    ("sigmoid", [F2], lambda x: x.sigmoid(), lambda x: x.sigmoid()),
    ("softmax -1", [F2], lambda x: x.softmax(-1), lambda x: x.softmax(-1)),
    ("softmax 0 transposed", [F2], lambda x: x.transpose(0, 1).softmax(0),
     lambda x: x.transpose(0, 1).softmax(0)),
    ("log_softmax 1", [F3], lambda x: x.log_softmax(1), lambda x: x.log_softmax(1)),
    ("amax dim ties", [TIES], lambda x: x.amax(1), lambda x: x.amax(1)),
    ("amax dim0 keepdim ties", [TIES], lambda x: x.amax(0, keepdim=True),
     lambda x: x.amax(0, keepdim=True)),
    ("amax dims ties", [TIES], lambda x: x.amax((0, 1)), lambda x: x.amax((0, 1))),
    ("amax all ties", [TIES], lambda x: x.amax(), lambda x: x.amax()),
    ("amin dim ties", [TIES], lambda x: x.amin(-1), lambda x: x.amin(-1)),
    ("amax 3d transposed", [np.round(F3)], lambda x: x.transpose(0, 2).amax((1, 2)),
     lambda x: x.transpose(0, 2).amax((1, 2))),
    ("amax infinite ties", [np.array([[INF, 1.0, INF], [-INF, -INF, -INF]], np.float32)],
     lambda x: x.amax(1), lambda x: x.amax(1)),
    ("amin signed zeros", [np.array([[0.0, -0.0, 1.0]], np.float32)],
     lambda x: x.amin(1), lambda x: x.amin(1)),
    ("maximum ties", [TIES, np.flip(TIES, 1).copy()], lambda x, y: x.maximum(y),
     lambda x, y: x.maximum(y)),
    ("maximum broadcast", [TIES, np.array([2.0, 2.0, 3.0, 0.0], np.float32)],
     lambda x, y: x.maximum(y), lambda x, y: x.maximum(y)),
    ("minimum ties", [TIES, np.flip(TIES, 0).copy()], lambda x, y: x.minimum(y),
     lambda x, y: x.minimum(y)),
    ("maximum infinite ties", [np.array([INF, -INF, 1.0], np.float32),
                               np.array([INF, -INF, 2.0], np.float32)],
     lambda x, y: x.maximum(y), lambda x, y: x.maximum(y)),
    ("maximum minimum nan", [np.array([NAN, 1.0, NAN, -INF, 2.0], np.float32),
                             np.array([3.0, NAN, NAN, NAN, 2.0], np.float32)],
     lambda x, y: x.maximum(y) * 2.0 + x.minimum(y),
     lambda x, y: x.maximum(y) * 2.0 + x.minimum(y)),
    ("rsqrt log2 expm1 exp2", [np.abs(F2) + 0.1],
     lambda x: x.rsqrt() + x.log2() + x.log10() + x.expm1() + x.exp2(),
     lambda x: x.rsqrt() + x.log2() + x.log10() + x.expm1() + x.exp2()),
    ("expm1 wide", [np.array([-100.0, -0.7, -0.2, 0.0, 1e-4, 0.49, 3.0, 20.0], np.float32)],
     lambda x: x.expm1(), lambda x: x.expm1()),
    ("relu clip where", [F2], lambda x: x.relu() + x.clip(-0.5, 0.5) + x.where(x > 0, 1.0),
     lambda x: x.relu() + x.clip(-0.5, 0.5) + x.where(x > 0, 1.0)),
    ("mm bmm", [F2, F3], lambda a, x: a.mm(a.transpose(0, 1)).sum() + x.bmm(x.swapaxes(1, 2)),
     lambda a, x: a.mm(a.transpose(0, 1)).sum() + x.bmm(x.swapaxes(1, 2))),
]


@pytest.mark.parametrize("device_name", GRAD_DEVICES)
@pytest.mark.parametrize(("name", "arrays", "fn", "torch_fn"), GRAD_CASES,
                         ids=[c[0] for c in GRAD_CASES])
def test_gradients(device_name: str, name: str, arrays: list[np.ndarray], fn: Callable[..., Any],
                   torch_fn: Callable[..., Any]) -> None:
    _grads(device_name, arrays, fn, torch_fn)


# --- bad input: burn.errors types naming the op, shapes and dtypes
def _bad(device: burn.Device) -> list[tuple[str, Callable[[], object], type[BurnError],
                                            tuple[str, ...]]]:
    x = burn.tensor(F2, device=device)  # [3, 4] float32
    i = burn.tensor(I2, device=device)
    b = burn.tensor(B2, device=device)
    x3 = burn.tensor(F3, device=device)  # [2, 3, 4]
    empty = burn.zeros(0, 3, device=device)
    return [
        ("softmax int", lambda: i.softmax(0), DTypeError, ("softmax", "int64")),
        ("log_softmax bool", lambda: b.log_softmax(0), DTypeError, ("log_softmax", "bool")),
        ("softmax dim", lambda: x.softmax(2), BurnIndexError, ("softmax", "dim=2")),
        ("log_softmax dim", lambda: x.log_softmax(-3), BurnIndexError, ("log_softmax",)),
        ("softmax float dim", lambda: x.softmax(1.0), DTypeError, ("softmax",)),  # type: ignore
        ("relu bool", lambda: b.relu(), DTypeError, ("relu", "bool")),
        ("amax dim", lambda: x.amax(2), BurnIndexError, ("amax", "dim=2")),
        ("amin dim", lambda: x.amin(-3), BurnIndexError, ("amin", "dim=-3")),
        ("amax repeated", lambda: x.amax((0, -2)), BurnIndexError, ("amax", "repeated")),
        ("amax float dim", lambda: x.amax(0.5), DTypeError, ("amax",)),  # type: ignore
        ("amax empty", lambda: empty.amax(), EmptyReductionError, ("amax", "(0, 3)")),
        ("amin empty dim", lambda: empty.amin(0), EmptyReductionError, ("amin", "(0, 3)")),
        ("maximum scalar", lambda: x.maximum(1.0), DTypeError, ("maximum", "float")),  # type: ignore
        ("minimum shapes", lambda: x.minimum(x3[:, :2]), ShapeError, ("minimum", "(3, 4)")),
        ("maximum device", lambda: x.maximum(burn.tensor(F2, device="numpy+autodiff")),
         BurnError, ("maximum",)),
        ("where int condition", lambda: x.where(i, 0.0), DTypeError, ("where", "int64")),
        ("where float condition", lambda: x.where(x, 0.0), DTypeError, ("where", "float32")),
        ("where shapes", lambda: x.where(x > 0, x3[:, :2]), ShapeError, ("where", "(3, 4)")),
        ("where list", lambda: x.where([True], 0.0), DTypeError, ("where", "list")),  # type: ignore
        ("eq shapes", lambda: x.eq(x3[:, :2]), ShapeError, ("equal", "(3, 4)")),
        ("lt str", lambda: x.lt("a"), DTypeError, ("lower", "str")),  # type: ignore
        ("ge shapes", lambda: x.ge(burn.ones(5, device=device)), ShapeError,
         ("greater_equal",)),
        ("clip no bound", lambda: x.clip(), BurnError, ("clamp",)),
        ("clip tensor bound", lambda: x.clip(x), DTypeError, ("clamp",)),  # type: ignore
        ("mm 1-d", lambda: x.mm(x[0]), ShapeError, ("mm", "2-d", "(3, 4)", "(4,)", "float32")),
        ("mm 3-d", lambda: x3.mm(x), ShapeError, ("mm", "(2, 3, 4)")),
        ("mm inner", lambda: x.mm(x), ShapeError, ("mm", "inner", "(3, 4)")),
        ("mm tensor list", lambda: x.mm([[1.0]]), DTypeError, ("mm", "list")),  # type: ignore
        ("bmm 2-d", lambda: x.bmm(x.transpose(0, 1)), ShapeError, ("bmm", "3-d", "(3, 4)")),
        ("bmm batch", lambda: x3.bmm(burn.ones(1, 4, 2, device=device)), ShapeError,
         ("bmm", "batch", "(1, 4, 2)")),
        ("bmm inner", lambda: x3.bmm(x3), ShapeError, ("bmm", "inner", "(2, 3, 4)")),
        ("expand_as", lambda: x.expand_as(x3[:, :2]), ShapeError,
         ("expand_as", "(3, 4)", "(2, 2, 4)")),
        ("expand_as fewer dims", lambda: x.expand_as(x[0]), ShapeError, ("expand_as",)),
        ("expand_as array", lambda: x.expand_as(F2), DTypeError, ("expand_as", "ndarray")),  # type: ignore
        ("view_as", lambda: x.view_as(x3), ShapeError, ("view_as", "(3, 4)", "(2, 3, 4)")),
        ("reshape_as", lambda: x.reshape_as(x[0]), ShapeError, ("reshape_as", "(4,)")),
        ("reshape_as shape", lambda: x.reshape_as((4, 3)), DTypeError, ("reshape_as",)),  # type: ignore
        ("type_as dtype", lambda: x.type_as(burn.int32), DTypeError, ("type_as",)),  # type: ignore
        ("swapaxes dim", lambda: x.swapaxes(0, 2), BurnIndexError, ("swap_dims", "dim=2")),
        ("swapdims dim", lambda: x.swapdims(-3, 0), BurnIndexError, ("swap_dims",)),
    ]


BAD_IDS = [c[0] for c in _bad(burn.Device("numpy"))]


@pytest.mark.parametrize("index", range(len(BAD_IDS)), ids=BAD_IDS)
def test_bad_input(device: burn.Device, index: int) -> None:
    _, fn, error, words = _bad(device)[index]
    with pytest.raises(error) as info:
        fn()
    message = str(info.value)
    for word in words:
        assert word in message, (word, message)


def test_unsupported_dtype_names_the_method(monkeypatch: pytest.MonkeyPatch) -> None:
    """A device without float64 / float16 (wgpu, for float64) refuses double / half / type_as
    with UnsupportedDTypeError naming the method, the dtype and the device."""
    device = burn.Device("numpy")
    x = burn.tensor(F2, device=device)
    f64 = burn.zeros(2, dtype=burn.float64, device=device)
    backend = device.backend
    monkeypatch.setattr(backend, "supports",
                        lambda dtype: dtype not in (burn.float64, burn.float16))
    for op, fn, dtype in (("double", x.double, "float64"), ("half", x.half, "float16"),
                          ("type_as", lambda: x.type_as(f64), "float64")):
        with pytest.raises(UnsupportedDTypeError) as info:
            fn()
        assert isinstance(info.value, TypeError)
        for word in (op, dtype, "numpy", "(3, 4)", "float32"):
            assert word in str(info.value), (word, str(info.value))


@pytest.mark.parametrize("device_name", GRAD_DEVICES)
def test_nan_gradients_documented_differences(device_name: str) -> None:
    """docs/differences.md: a line holding NaN splits amax's gradient between its NaNs (torch:
    NaN everywhere); maximum, as torch, gives the whole gradient to both operands where either
    is NaN."""
    dev = burn.Device(device_name)
    x = burn.tensor([[1.0, NAN, 2.0, NAN], [1.0, 2.0, 2.0, 0.0]], device=dev).require_grad()
    out = x.amax(1)
    assert np.isnan(out.tolist()[0]) and out.tolist()[1] == 2.0
    grad = x.grad(out.sum().backward())
    assert grad is not None and grad.tolist() == [[0.0, 0.5, 0.0, 0.5], [0.0, 0.5, 0.5, 0.0]]
    a = burn.tensor([1.0, NAN], device=dev).require_grad()
    b = burn.tensor([NAN, 1.0], device=dev).require_grad()
    grads = a.maximum(b).sum().backward()
    ga, gb = a.grad(grads), b.grad(grads)
    assert ga is not None and gb is not None
    assert ga.tolist() == [1.0, 1.0] and gb.tolist() == [1.0, 1.0]


# --- dtype arguments, bool operands, formatting and `in`, as torch's
def test_to_none_keeps_the_tensor_and_bad_dtypes_raise(device: burn.Device) -> None:
    """`to(None)` is torch's no-op; `cast` of None (numpy reads it as float64), a number or
    a kind raises DTypeError naming the op."""
    b = burn.tensor(F2, device=device)
    assert b.to(None) is b
    for bad in (None, 5, burn.Kind.INT):
        with pytest.raises(DTypeError, match=r"^cast: "):
            b.cast(bad)
        with pytest.raises(DTypeError, match=r"^to: "):
            b.to(bad) if bad is not None else b.to(5)


SUB_WITH_BOOL: list[tuple[str, Callable[[Any, Any, Any], Any]]] = [
    ("float - bool", lambda f, i, m: f - m), ("bool - float", lambda f, i, m: m - f),
    ("int - bool", lambda f, i, m: i - m), ("bool - bool", lambda f, i, m: m - m),
    ("bool - 1", lambda f, i, m: m - 1), ("1.5 - bool", lambda f, i, m: 1.5 - m),
    ("float - True", lambda f, i, m: f - True), ("True - int", lambda f, i, m: True - i),
]


@pytest.mark.parametrize(("case", "expr"), SUB_WITH_BOOL, ids=[c for c, _ in SUB_WITH_BOOL])
def test_sub_refuses_bool_operands(device: burn.Device, case: str, expr: Callable[..., Any]
                                   ) -> None:
    """torch refuses `-` with any bool operand, tensor or Python bool; so does burn."""
    with pytest.raises(RuntimeError, match="Subtraction"):
        expr(torch.tensor(F2), torch.tensor(I2), torch.tensor(B2))
    args = [burn.tensor(a, device=device) for a in (F2, I2, B2)]
    with pytest.raises(DTypeError, match=r"^sub: not supported with a bool operand"):
        expr(*args)


def test_bool_square_and_int_logsumexp(device: burn.Device) -> None:
    """A bool square is int64, an int or bool logsumexp float32, as torch's."""
    for name in ("bool", "int", "0d"):
        b, t = pair(INPUTS[name], device)
        check(b.square(), t.square())
    for name in ("int", "bool"):
        b, t = pair(INPUTS[name], device)
        check(b.logsumexp(1), t.logsumexp(1))
        check(b.logsumexp((0, 1), keepdim=True), t.logsumexp((0, 1), keepdim=True))


def test_format_and_contains(device: burn.Device) -> None:
    """A 0-d tensor formats as its value; a format spec on another tensor raises ShapeError
    (torch a TypeError); `x in t` is whether any element equals x."""
    b, t = pair(np.array(2.5, np.float32), device)
    assert f"{b:.3f}" == f"{t:.3f}" == "2.500"
    assert f"{b}" == f"{t}" == "2.5"
    assert f"{burn.tensor(F2, device=device)}" == str(burn.tensor(F2, device=device))
    with pytest.raises(ShapeError, match=r"^format: "):
        f"{burn.tensor(F2, device=device):.2f}"
    b2, t2 = pair(I2, device)
    for element in (int(I2[1, 2]), 99, float(I2[0, 0]), -4):
        assert (element in b2) == (element in t2), element
    row = burn.tensor(I2[1], device=device)
    assert (row in b2) == (torch.tensor(I2[1]) in t2)


# --- half powers, logical ops of mixed int dtypes, bool clamps, as torch's
HALF_POWERS = np.array([256.0, 1000.0, 0.004, 0.003101, 1.01e-6, 65504.0, -3.0, 0.0, INF, NAN],
                       np.float16)


@pytest.mark.parametrize("exponent", [-2, 3, -0.5, 2, 0.5, -1])
def test_half_powers_round_once(device: burn.Device, exponent: float) -> None:
    """float16 ** s for the exponents computed by other ops rounds once, as torch's half
    kernels computing in float32 (256 ** -2 is 1.5e-5, not 1 / inf)."""
    b, t = pair(HALF_POWERS, device)
    check(b ** exponent, t ** exponent)


def test_logical_ops_take_the_promoted_dtype_first(device: burn.Device) -> None:
    """A 0-d int64 operand of an int32 tensor wraps into int32 first (-2**63 to 0, 2**32 + 1
    to 1), as for `==`; operands of one kind and Python numbers are unchanged."""
    ints = np.array([0, 1, -1], np.int32)
    for scalar in (-2**63, 2**32, 2**32 + 1, 0, 5):
        b, t = pair(ints, device)
        bs, ts = pair(np.array(scalar, np.int64), device)
        for name in ("logical_and", "logical_or", "logical_xor"):
            check(getattr(b, name)(bs), getattr(t, name)(ts))
            check(getattr(bs, name)(b), getattr(ts, name)(t))
    bf, tf = pair(F2, device)
    bi, ti = pair(I2, device)
    check(bf.logical_and(bi), tf.logical_and(ti))
    check(bi.logical_or(0.0), ti.logical_or(torch.tensor(0.0)))


def test_bool_clamp_with_int_bounds_gives_int64(device: burn.Device) -> None:
    """A bool tensor clamped by int bounds is int64, by a float bound float32; bool bounds
    alone raise DTypeError (torch: not implemented for bool)."""
    b, t = pair(B2, device)
    for bounds in ({"max": 0}, {"min": 1}, {"min": 0, "max": True}, {"max": 0.5},
                   {"min": -3, "max": 7}):
        check(b.clamp(**bounds), t.clamp(**bounds))
    with pytest.raises(RuntimeError):
        t.clamp(min=True)
    with pytest.raises(DTypeError, match=r"^clamp: "):
        b.clamp(min=True)


@pytest.mark.parametrize("dims", [(0, 1), ((0, 1),), ([2, 0],), (-1,), (-1, 0, 1), ((),)],
                         ids=repr)
def test_flip_takes_dims_as_arguments(device: burn.Device, dims: tuple[Any, ...]) -> None:
    """`x.flip(0, 1)` as `x.flip((0, 1))`, as torch.Tensor.flip, on contiguous and transposed
    inputs; a repeated or out-of-range dim raises BurnIndexError, a float DTypeError."""
    for transposed in (False, True):
        b, t = pair(F3, device, transposed)
        check(b.flip(*dims), t.flip(*dims))
    b, t = pair(F3, device)
    with pytest.raises(RuntimeError):
        t.flip(0, 0)
    with pytest.raises(BurnIndexError, match=r"^flip: "):
        b.flip(0, 0)
    with pytest.raises(BurnIndexError, match=r"^flip: "):
        b.flip(0, 3)
    with pytest.raises(DTypeError, match=r"^flip: "):
        b.flip(0, 1.5)
