"""Burn's numeric composites against torch: fmod, is_finite, contains_nan, is_close, all_close,
max_pair, min_pair, max_abs, max_abs_dim and take."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burn
from burn.errors import BurnIndexError, DTypeError, ShapeError, ValueRangeError

from .reference import (
    FLOATS,
    GRAD_DTYPES,
    INTS,
    NUMPY_OF,
    Domain,
    T,
    burn_tensor,
    check_backward,
    check_forward,
    dtype_of,
    held,
    op_param,
    rand,
    to_numpy,
    torch_numpy,
    torch_tensor,
    view_burn,
    view_torch,
)

#: dividends at least 0.05 from every integer: x / +-2 stays away from integers in every dtype.
OFF_INT = Domain(-7, 7, avoid="int", margin=0.05)
LAYOUTS = ("contiguous", "transposed", "strided")


def _twos(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return np.where(rng.random(shape) < 0.5, -2.0, 2.0)


def _signed_distinct(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Values with distinct absolute values (no ties for max_abs), random signs."""
    n = int(np.prod(shape))
    mags = (rng.permutation(n) + 1) * 0.25
    return (mags * np.where(rng.random(n) < 0.5, -1, 1)).reshape(shape)


@pytest.mark.parametrize("name,dtype,layout", [op_param("fmod", d, lay) for d in (*FLOATS, *INTS)
                                               for lay in LAYOUTS[:2]])
def test_fmod_forward(name: str, dtype: str, layout: str, device: burn.Device,
                      rng: np.random.Generator) -> None:
    for shape in ((3, 4), (0, 2), ()):
        if dtype in FLOATS:
            x, y = rand(rng, shape, dtype, OFF_INT), _twos(rng, shape)
        else:
            x = rand(rng, shape, dtype)
            y = rand(rng, shape, dtype, int_range=(1, 5) if dtype == "uint8" else (-4, 5))
            y = np.where(y == 0, 3, y)
        args = [T(x, dtype, layout), T(y, dtype)]
        check_forward(lambda a, b: a.fmod(b), torch.fmod, args, device)
        check_forward(lambda a: a.fmod(3), lambda a: torch.fmod(a, 3), args[:1], device)
    for wide in dict.fromkeys(("float32", held("float64", device))):
        special = T(np.array([5.5, -5.5, np.inf, 1.0, -0.0]), wide)
        divisor = T(np.array([np.inf, -np.inf, 2.0, 0.0, 3.0]), wide)
        check_forward(lambda a, b: a.fmod(b), torch.fmod, [special, divisor], device)


@pytest.mark.parametrize("name,dtype,layout", [op_param("fmod", d, lay) for d in FLOATS
                                               for lay in LAYOUTS])
def test_fmod_is_exact(name: str, dtype: str, layout: str, device: burn.Device,
                       rng: np.random.Generator) -> None:
    """Float fmod is C's, exact for every quotient and dividend in every dtype, as torch's: the
    composite `x - y * trunc(x / y)` it replaced rounded the quotient (in float16 a remainder
    came out a whole divisor off) and lost zeros' signs (fmod(-4, 2) is -0.0). Bit for bit,
    scalar divisors too (rounded to the tensor's dtype first, as torch)."""
    dtype = dtype_of(held(dtype, device))
    x = np.concatenate([rng.normal(size=60) * 50, [-4.0, -0.0, 0.0, 7.0, -7.5, 1e4, -3e4, 0.1]])
    y = np.concatenate([rng.normal(size=60) * 3, [2.0, 1.0, -1.0, np.inf, -np.inf, 0.3, -7.0,
                                                   0.0]])
    x, y = x.astype(NUMPY_OF[dtype]), y.astype(NUMPY_OF[dtype])
    a, b = burn_tensor(x, dtype, device), burn_tensor(y, dtype, device)
    ta, tb = torch_tensor(x, dtype), torch_tensor(y, dtype)
    for got, want in ((a.fmod(b), torch.fmod(ta, tb)), (a.fmod(0.3), torch.fmod(ta, 0.3)),
                      (a.fmod(-2.5), torch.fmod(ta, -2.5))):
        assert got.dtype == dtype and tuple(got.shape) == tuple(want.shape)
        got_bits, want_bits = to_numpy(got).astype(np.float64), torch_numpy(want).astype(
            np.float64)
        np.testing.assert_array_equal(got_bits, want_bits)  # NaN at the same places
        assert (np.signbit(got_bits) == np.signbit(want_bits))[~np.isnan(want_bits)].all(), \
            "fmod: a zero's sign differs from torch's"
    grid = view_torch(torch_tensor(x[:64].reshape(8, 8), dtype), layout)
    row = y[:grid.shape[-1]]
    want = torch.fmod(grid, torch_tensor(row, dtype))
    got = view_burn(burn_tensor(x[:64].reshape(8, 8), dtype, device), layout).fmod(
        burn_tensor(row, dtype, device))
    np.testing.assert_array_equal(to_numpy(got).astype(np.float64),
                                  torch_numpy(want).astype(np.float64))


@pytest.mark.parametrize("name,dtype", [op_param("fmod", d) for d in GRAD_DTYPES])
def test_fmod_backward(name: str, dtype: str, grad_device: burn.Device,
                       rng: np.random.Generator) -> None:
    x, y = T(rand(rng, (3, 4), dtype, OFF_INT), dtype, "transposed"), T(_twos(rng, (3, 4)), dtype)
    check_backward(lambda a, b: a.fmod(b), torch.fmod, [x, y], grad_device, rng)


def _special(rng: np.random.Generator, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Pairs: equal, within tolerance, far, both inf (same / other sign), nan, inf vs finite."""
    a = np.array([1.0, 1.0, 1.0, np.inf, np.inf, np.nan, np.inf, 0.0, -2.0])
    b = np.array([1.0, 1.000001, 1.1, np.inf, -np.inf, np.nan, 3.0, 1e-9, -2.0])
    if dtype not in FLOATS:
        a = np.nan_to_num(a, posinf=3, neginf=-3).round()
        b = np.nan_to_num(b, posinf=3, neginf=-3).round()
    return a, b


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in ("is_close", "all_close")
                                        for d in ("float32", "float64", "bfloat16", "int64")])
def test_is_close(name: str, dtype: str, device: burn.Device, rng: np.random.Generator) -> None:
    a, b = _special(rng, dtype)
    args = [T(a, dtype), T(b, dtype)]
    if name == "is_close":
        check_forward(lambda x, y: x.is_close(y), torch.isclose, args, device)
        check_forward(lambda x, y: x.is_close(y, rtol=0.2, atol=0.0),
                      lambda x, y: torch.isclose(x, y, rtol=0.2, atol=0.0), args, device)
        check_forward(lambda x: x.is_close(1), lambda x: torch.isclose(x, torch.ones_like(x)),
                      args[:1], device)
    else:
        for rtol in (1e-5, 0.2):
            for x, y in ((a, b), (a[:2], b[:2]), (a[:0], b[:0])):
                xt, yt = (T(v, dtype) for v in (x, y))
                got = check_forward(lambda p, q, r=rtol: p.all_close(q, rtol=r),
                                    lambda p, q, r=rtol: torch.allclose(p, q, rtol=r),
                                    [xt, yt], device)
                assert isinstance(got, bool)
    with pytest.raises(ValueRangeError, match="is_close"):
        burn.ones(2, device=device).is_close(burn.ones(2, device=device), rtol=-1.0)
    with pytest.raises(DTypeError, match="is_close"):
        flags = burn.ones(2, dtype=burn.bool_, device=device)
        flags.is_close(flags)


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in ("is_finite", "contains_nan")
                                        for d in ("float32", "float16", "int8", "bool")])
def test_finite_nan(name: str, dtype: str, device: burn.Device, rng: np.random.Generator) -> None:
    ref = torch.isfinite if name == "is_finite" else lambda x: x.isnan().any()
    for data in (np.array([[1.0, np.inf], [np.nan, -np.inf]]), np.array([[0.5, -1.0]]).T,
                 np.zeros((0, 3)), np.array(2.0)):
        if dtype not in FLOATS:
            data = rand(rng, data.shape, dtype)
        check_forward(lambda x: getattr(x, name)(), ref, [T(data, dtype, "transposed")], device)


PAIR_REF = {"max_pair": torch.maximum, "min_pair": torch.minimum}


@pytest.mark.parametrize("name,dtype,layout", [op_param(n, d, lay) for n in PAIR_REF
                                               for d in ("float32", "float64", "bfloat16",
                                                         "int64", "uint8")
                                               for lay in LAYOUTS])
def test_pair_forward(name: str, dtype: str, layout: str, device: burn.Device,
                      rng: np.random.Generator) -> None:
    ft = PAIR_REF[name]
    a, b = rand(rng, (3, 4), dtype), rand(rng, (3, 4), dtype)
    check_forward(lambda x, y: getattr(x, name)(y), ft, [T(a, dtype, layout), T(b, dtype)],
                  device)
    check_forward(lambda x, y: getattr(x, name)(y), ft,
                  [T(a, dtype, layout), T(b[:1], dtype)], device)  # broadcast
    check_forward(lambda x: getattr(x, name)(2), lambda x: ft(x, torch.tensor(2, dtype=x.dtype)),
                  [T(a, dtype, layout)], device)
    check_forward(lambda x, y: getattr(x, name)(y), ft,
                  [T(np.zeros((0, 4)), dtype), T(np.zeros((0, 4)), dtype)], device)


def test_pair_nan_keeps_self(device: burn.Device) -> None:
    """Burn's max_pair / min_pair take self unless the comparison holds: a nan in `other`
    keeps self (torch.maximum would give nan)."""
    x = T(np.array([1.0, np.nan, 3.0]), "float32")
    y = T(np.array([np.nan, 2.0, 4.0]), "float32")
    check_forward(lambda a, b: a.max_pair(b),
                  lambda a, b: torch.where(a < b, b, a), [x, y], device)


test_pair_nan_keeps_self = pytest.mark.op("max_pair")(test_pair_nan_keeps_self)


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in PAIR_REF for d in GRAD_DTYPES])
def test_pair_backward(name: str, dtype: str, grad_device: burn.Device,
                       rng: np.random.Generator) -> None:
    v = _signed_distinct(rng, (2, 3, 4))
    x, y = T(v[0], dtype, "transposed"), T(v[1], dtype)
    check_backward(lambda a, b: getattr(a, name)(b), PAIR_REF[name], [x, y], grad_device, rng)


@pytest.mark.parametrize("name,dtype,layout", [op_param(n, d, lay)
                                               for n in ("max_abs", "max_abs_dim")
                                               for d in ("float32", "float64", "float16",
                                                         "int64", "int8")
                                               for lay in LAYOUTS[1:]])
def test_max_abs_forward(name: str, dtype: str, layout: str, device: burn.Device,
                         rng: np.random.Generator) -> None:
    x = T(_signed_distinct(rng, (3, 4)), dtype, layout)
    if name == "max_abs":
        check_forward(lambda a: a.max_abs(), lambda a: a.abs().amax(), [x], device)
        check_forward(lambda a: a.max_abs(1), lambda a: a.abs().amax(1), [x], device)
        check_forward(lambda a: a.max_abs(0, keepdim=True),
                      lambda a: a.abs().amax(0, keepdim=True), [x], device)
        with pytest.raises(ValueRangeError, match="max"):
            burn.zeros(0, 2, device=device).max_abs()
    else:
        check_forward(lambda a: a.max_abs_dim(-1), lambda a: a.abs().amax(-1, keepdim=True), [x],
                      device)
        check_forward(lambda a: a.max_abs_dim(1), lambda a: a.abs().amax(1, keepdim=True),
                      [T(np.zeros((0, 3)), dtype)], device)
    with pytest.raises(DTypeError, match=name):
        getattr(burn.ones(2, dtype=burn.bool_, device=device), name)(0)


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in ("max_abs", "max_abs_dim")
                                        for d in GRAD_DTYPES])
def test_max_abs_backward(name: str, dtype: str, grad_device: burn.Device,
                          rng: np.random.Generator) -> None:
    x = T(_signed_distinct(rng, (3, 4)), dtype, "transposed")
    if name == "max_abs":
        check_backward(lambda a: a.max_abs(), lambda a: a.abs().amax(), [x], grad_device, rng)
    else:
        check_backward(lambda a: a.max_abs_dim(1), lambda a: a.abs().amax(1, keepdim=True), [x],
                       grad_device, rng)


def _take_ref(x: torch.Tensor, dim: int, idx: torch.Tensor) -> torch.Tensor:
    d = dim % x.ndim
    out = x.index_select(d, idx.flatten() % x.shape[d])
    return out.reshape(x.shape[:d] + idx.shape + x.shape[d + 1:])


TAKE_CASES = [((2, 3, 4), 1, np.array([[0, -1], [2, 1]])), ((3, 4), -1, np.array([3, 0, 3])),
              ((3, 4), 0, np.array(1)), ((3, 4), 1, np.zeros((0, 2), dtype=np.int64))]


@pytest.mark.parametrize("name,dtype,layout", [op_param("take", d, lay)
                                               for d in ("float32", "bfloat16", "int8", "bool")
                                               for lay in LAYOUTS])
def test_take_forward(name: str, dtype: str, layout: str, device: burn.Device,
                      rng: np.random.Generator) -> None:
    for shape, dim, idx in TAKE_CASES:
        check_forward(lambda a, i, d=dim: a.take(d, i), lambda a, i, d=dim: _take_ref(a, d, i),
                      [T(rand(rng, shape, dtype), dtype, layout), T(idx, "int64")], device)
    with pytest.raises(BurnIndexError, match="take"):  # at once, or at the next sync
        burn.zeros(2, 3, device=device).take(1, burn.tensor([3], device=device))
        burn.sync(device)


@pytest.mark.parametrize("name,dtype", [op_param("take", d) for d in GRAD_DTYPES])
def test_take_backward(name: str, dtype: str, grad_device: burn.Device,
                       rng: np.random.Generator) -> None:
    for shape, dim, idx in TAKE_CASES[:3]:
        check_backward(lambda a, i, d=dim: a.take(d, i), lambda a, i, d=dim: _take_ref(a, d, i),
                       [T(rand(rng, shape, dtype), dtype, "transposed"),
                        T(idx, "int64", grad=False)], grad_device, rng)


@pytest.mark.parametrize("name,dtype", [op_param("categorical", d) for d in FLOATS])
def test_categorical(name: str, dtype: str, device: burn.Device) -> None:
    burn.seed(7, device)
    onehot = np.zeros((2, 3, 4))
    onehot[..., 2] = 1.0
    onehot[1, 0] = [0, 0, 0, 5]
    want = torch.from_numpy(onehot.argmax(-1)).unsqueeze(-1).expand(2, 3, 6)
    check_forward(lambda w: w.categorical(6), lambda w: want.contiguous(),
                  [T(onehot, dtype, "transposed")], device)
    weights = np.array([1.0, 2.0, 0.0, 7.0])
    n = 20000
    got = burn.tensor(weights, dtype=dtype, device=device).categorical(n)
    assert got.shape == (n,) and got.dtype == burn.int64
    freq = np.bincount(got.numpy(), minlength=4) / n
    # binomial standard error <= 0.0036 at n = 20000: 0.015 is beyond 4 of them
    np.testing.assert_allclose(freq, weights / weights.sum(), atol=0.015)
    with pytest.raises(ValueRangeError, match="categorical"):
        burn.ones(3, device=device).categorical(0)
    with pytest.raises(ShapeError, match="categorical"):
        burn.ones(2, 0, device=device).categorical(1)
    with pytest.raises(DTypeError, match="categorical"):
        burn.ones(3, dtype=burn.int64, device=device).categorical(1)
