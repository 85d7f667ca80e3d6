"""Creation, conversion and random ops against torch (random ones: shape, dtype, statistics)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import burn
from burn.errors import UnsupportedDTypeError

from .reference import (
    BURN_TO_TORCH,
    DTYPES,
    FLOATS,
    GRAD_DTYPES,
    INTS,
    NUMPY_OF,
    T,
    assert_same,
    check_backward,
    check_forward,
    dtype_of,
    held,
    op_param,
    rand,
    to_numpy,
)

CREATE_DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int8", "uint8",
                 "bool"]


def _t(dtype: str) -> torch.dtype:
    return BURN_TO_TORCH[dtype_of(dtype)]


def _check(make_b: Callable[[], Any], make_t: Callable[[], Any], device: burn.Device) -> None:
    check_forward(make_b, make_t, [], device)


def _device_is(t: Any, device: burn.Device) -> None:
    assert t.device == device, f"tensor on {t.device}, expected {device}"


# ---------------------------------------------------------------------------------- tensor


@pytest.mark.op("tensor")
def test_tensor_from_python(device: burn.Device) -> None:
    """Lists / scalars infer float32, int64 or bool as torch does; dtype= overrides."""
    for data in ([[1.5, 2.0], [3.0, -4.25]], [1, 2, 3], [[True, False]], 2.5, 7, True, [],
                 [[1, 2.5]], [[]]):
        t = burn.tensor(data, device=device)
        _device_is(t, device)
        assert_same(t, torch.tensor(data), what=f"burn.tensor({data!r})")
    for dtype in ("float64", "float16", "bfloat16", "int32", "uint8"):
        if not device.backend.supports(dtype_of(dtype)):  # refused, naming dtype and device
            with pytest.raises(UnsupportedDTypeError, match=dtype):
                burn.tensor([[1, 2], [3, 4]], dtype=dtype_of(dtype), device=device)
            continue
        assert_same(burn.tensor([[1, 2], [3, 4]], dtype=dtype_of(dtype), device=device),
                    torch.tensor([[1, 2], [3, 4]], dtype=_t(dtype)), what=f"dtype={dtype}")


@pytest.mark.parametrize("dtype", CREATE_DTYPES)
@pytest.mark.op("tensor")
def test_tensor_from_numpy_and_tensor(dtype: str, device: burn.Device,
                                      rng: np.random.Generator) -> None:
    a = rand(rng, (3, 4), dtype)
    t = burn.tensor(a, device=device)
    assert_same(t, torch.from_numpy(a.astype(np.float32) if dtype == "bfloat16" else a).to(
        _t(dtype)), what="burn.tensor(ndarray)")
    copy = burn.tensor(t)
    assert_same(copy, torch.from_numpy(to_numpy(t)).to(_t(dtype)), what="burn.tensor(Tensor)")
    strided = burn.tensor(a[:, ::2], device=device)
    assert_same(strided, torch.from_numpy(np.ascontiguousarray(
        a[:, ::2].astype(np.float32) if dtype == "bfloat16" else a[:, ::2])).to(_t(dtype)),
        what="burn.tensor(strided ndarray)")


@pytest.mark.parametrize("dtype", CREATE_DTYPES)
@pytest.mark.op("from_numpy")
def test_from_numpy(dtype: str, device: burn.Device, rng: np.random.Generator) -> None:
    a = rand(rng, (3, 4), dtype)
    for arr in (a, a[:, ::2], a.T, a[0, 0]):
        t = burn.from_numpy(arr, device=device)
        _device_is(t, device)
        ref = np.array(arr, copy=True, order="C")
        ref_t = torch.from_numpy(ref.astype(np.float32) if dtype == "bfloat16" else ref.copy())
        assert_same(t, ref_t.to(_t(dtype)), what=f"from_numpy {arr.shape}")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "bool"])
@pytest.mark.op("from_dlpack")
def test_dlpack(dtype: str, device: burn.Device, rng: np.random.Generator) -> None:
    a = rand(rng, (3, 4), dtype)
    src = torch.from_numpy(a.copy())
    t = burn.from_dlpack(src)
    assert_same(t, src, what="burn.from_dlpack(torch)")
    t2 = burn.from_dlpack(np.ascontiguousarray(a))
    assert_same(t2, src, what="burn.from_dlpack(numpy)")
    back = torch.from_dlpack(burn.tensor(a, device=device.inner()))  # on a GPU: a GPU tensor
    assert back.dtype == src.dtype and tuple(back.shape) == a.shape
    np.testing.assert_array_equal(back.cpu().numpy(), a)


# --------------------------------------------------------------------------------- fills


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in ("zeros", "ones", "full")
                                        for d in CREATE_DTYPES])
def test_fill(name: str, dtype: str, device: burn.Device) -> None:
    bdt, tdt = dtype_of(dtype), _t(dtype)
    value: Any = {"bool": True, "uint8": 200, "int8": -7}.get(dtype, 3 if "int" in dtype else 2.5)
    fb, ft = getattr(burn, name), getattr(torch, name)
    for shape in ((2, 3), (0, 4), ()):
        if name == "full":
            _check(lambda s=shape: burn.full(s, value, dtype=bdt, device=device),
                   lambda s=shape: torch.full(s, value, dtype=tdt), device)
        else:
            _check(lambda s=shape: fb(s, dtype=bdt, device=device),
                   lambda s=shape: ft(s, dtype=tdt), device)
            if shape:
                _check(lambda s=shape: fb(*s, dtype=bdt, device=device),
                       lambda s=shape: ft(*s, dtype=tdt), device)


@pytest.mark.parametrize("name", [op_param(n) for n in ("zeros", "ones", "full", "empty")])
def test_fill_defaults(name: str, device: burn.Device) -> None:
    """Without dtype: float32 (full: the value's type decides, as torch)."""
    if name == "full":
        for v in (1.5, 3, True):
            t = burn.full((2, 2), v, device=device)
            assert_same(t, torch.full((2, 2), v), what=f"full(.., {v!r})")
        return
    t = getattr(burn, name)((2, 3), device=device)
    ref = getattr(torch, name)((2, 3))
    if name == "empty":
        assert tuple(t.shape) == (2, 3) and t.dtype == burn.float32
    else:
        assert_same(t, ref)
    _device_is(t, device)


@pytest.mark.parametrize("dtype", CREATE_DTYPES)
@pytest.mark.op("empty")
def test_empty(dtype: str, device: burn.Device) -> None:
    for shape in ((2, 3), (0,), ()):
        t = burn.empty(shape, dtype=dtype_of(dtype), device=device)
        assert tuple(t.shape) == shape, f"shape {t.shape} != {shape}"
        assert t.dtype == dtype_of(dtype), f"dtype {t.dtype} != {dtype}"
        assert to_numpy(t).shape == shape


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in
                                        ("zeros_like", "ones_like", "full_like", "empty_like")
                                        for d in ("float32", "float64", "int32", "bool")])
def test_like(name: str, dtype: str, device: burn.Device, rng: np.random.Generator) -> None:
    x = T(rand(rng, (2, 3), dtype), dtype, "transposed")
    wide = dtype_of(held("float64", device))
    fb, ft = getattr(burn, name), getattr(torch, name)
    args: tuple[Any, ...] = (1,) if name == "full_like" else ()
    if name == "empty_like":
        t = fb(burn.tensor(x.data, dtype=x.dtype, device=device))
        assert tuple(t.shape) == x.data.shape and t.dtype == x.dtype
        t = fb(burn.tensor(x.data, dtype=x.dtype, device=device), dtype=wide)
        assert tuple(t.shape) == x.data.shape and t.dtype == wide
        return
    check_forward(lambda a: fb(a, *args), lambda a: ft(a, *args), [x], device)
    check_forward(lambda a: fb(a, *args, dtype=wide),
                  lambda a: ft(a, *args, dtype=BURN_TO_TORCH[wide]), [x], device)


ARANGES: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((5,), {}), ((2, 9), {}), ((2, 9, 3), {}), ((9, 2, -2), {}), ((0.5, 3.0, 0.5), {}),
    ((0, 1, 0.1), {}), ((5,), {"dtype": "float64"}), ((1, 4), {"dtype": "int32"}),
    ((3, 3), {}), ((-2.5, 2), {}),
]


@pytest.mark.parametrize("args,kwargs", ARANGES, ids=str)
@pytest.mark.op("arange")
def test_arange(args: tuple[Any, ...], kwargs: dict[str, Any], device: burn.Device) -> None:
    bk = {k: dtype_of(v) for k, v in kwargs.items()}
    tk = {k: _t(v) for k, v in kwargs.items()}
    _check(lambda: burn.arange(*args, **bk, device=device), lambda: torch.arange(*args, **tk),
           device)


@pytest.mark.parametrize("args", [(3,), (2, 4), (4, 2), (0,), (3, 0)], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.op("eye")
def test_eye(args: tuple[int, ...], dtype: str, device: burn.Device) -> None:
    _check(lambda: burn.eye(*args, dtype=dtype_of(dtype), device=device),
           lambda: torch.eye(*args, dtype=_t(dtype)), device)
    if dtype == "float32":
        _check(lambda: burn.eye(*args, device=device), lambda: torch.eye(*args), device)


# -------------------------------------------------------------------------------- random

N = 20_000


def _meta(t: Any, shape: tuple[int, ...], dtype: burn.DType, what: str) -> np.ndarray:
    assert isinstance(t, burn.Tensor), f"{what}: not a burn.Tensor"
    assert tuple(t.shape) == shape, f"{what}: shape {tuple(t.shape)} != {shape}"
    assert t.dtype == dtype, f"{what}: dtype {t.dtype} != {dtype}"
    return to_numpy(t).astype(np.float64)


@pytest.mark.op("seed")
def test_seed_reproducible(device: burn.Device) -> None:
    burn.seed(1234)
    a = [to_numpy(burn.rand((50,), device=device)), to_numpy(burn.randn((50,), device=device)),
         to_numpy(burn.randint(0, 100, (50,), device=device))]
    burn.seed(1234)
    b = [to_numpy(burn.rand((50,), device=device)), to_numpy(burn.randn((50,), device=device)),
         to_numpy(burn.randint(0, 100, (50,), device=device))]
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    burn.seed(4321)
    assert not np.array_equal(to_numpy(burn.rand((50,), device=device)), a[0])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.op("rand")
def test_rand(dtype: str, device: burn.Device) -> None:
    x = _meta(burn.rand((N,), dtype=dtype_of(dtype), device=device), (N,), dtype_of(dtype),
              "rand")
    assert x.min() >= 0 and x.max() < 1
    assert abs(x.mean() - 0.5) < 0.02 and abs(x.std() - (1 / 12) ** 0.5) < 0.02
    _meta(burn.rand(2, 3, device=device), (2, 3), burn.float32, "rand(2, 3)")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.op("randn")
def test_randn(dtype: str, device: burn.Device) -> None:
    x = _meta(burn.randn((N,), dtype=dtype_of(dtype), device=device), (N,), dtype_of(dtype),
              "randn")
    assert abs(x.mean()) < 0.05 and abs(x.std() - 1) < 0.05
    _meta(burn.randn(2, 3, device=device), (2, 3), burn.float32, "randn(2, 3)")


@pytest.mark.op("uniform")
def test_uniform(device: burn.Device) -> None:
    x = _meta(burn.uniform((N,), -3.0, 5.0, device=device), (N,), burn.float32, "uniform")
    assert x.min() >= -3 and x.max() < 5 and abs(x.mean() - 1) < 0.1


@pytest.mark.op("normal")
def test_normal(device: burn.Device) -> None:
    x = _meta(burn.normal((N,), 2.0, 0.5, device=device), (N,), burn.float32, "normal")
    assert abs(x.mean() - 2) < 0.03 and abs(x.std() - 0.5) < 0.03


@pytest.mark.op("bernoulli")
def test_bernoulli(device: burn.Device) -> None:
    x = _meta(burn.bernoulli((N,), 0.3, device=device), (N,), burn.float32, "bernoulli(shape, p)")
    assert set(np.unique(x)) <= {0.0, 1.0} and abs(x.mean() - 0.3) < 0.02
    wide = dtype_of(held("float64", device))
    probs = burn.tensor(np.tile(np.array([0.0, 1.0, 0.5], dtype=wide.numpy), N // 3),
                        device=device)
    y = _meta(burn.bernoulli(probs), (N // 3 * 3,), wide, "bernoulli(probs)")
    assert np.all(y[0::3] == 0) and np.all(y[1::3] == 1) and abs(y[2::3].mean() - 0.5) < 0.04


@pytest.mark.op("randint")
def test_randint(device: burn.Device) -> None:
    x = _meta(burn.randint(-3, 4, (N,), device=device), (N,), burn.int64, "randint")
    assert set(np.unique(x).tolist()) == set(range(-3, 4))


# ---------------------------------------------------------------------------- conversion


@pytest.mark.parametrize("dtype", CREATE_DTYPES)
@pytest.mark.op("to_numpy")
def test_to_numpy(dtype: str, device: burn.Device, rng: np.random.Generator) -> None:
    a = rand(rng, (3, 4), dtype)
    t = burn.tensor(a, device=device)
    for got in (t.to_numpy(), np.asarray(t), t.swap_dims(0, 1).to_numpy()):
        assert got.dtype == NUMPY_OF[dtype_of(dtype)], f"numpy dtype {got.dtype}"
    np.testing.assert_array_equal(t.to_numpy(), a)
    np.testing.assert_array_equal(np.asarray(t), a)
    np.testing.assert_array_equal(t.swap_dims(0, 1).to_numpy(), a.T)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int8", "bool"])
@pytest.mark.op("item")
def test_item_tolist(dtype: str, device: burn.Device, rng: np.random.Generator) -> None:
    a = rand(rng, (2, 3), dtype)
    ref = torch.from_numpy(a.copy())
    t = burn.tensor(a, device=device)
    assert t.tolist() == ref.tolist()
    assert type(t.tolist()[0][0]) is type(ref.tolist()[0][0])
    item = t[1, 2].item()
    assert item == ref[1, 2].item() and type(item) is type(ref[1, 2].item())
    assert burn.tensor(a[0, 0], device=device).tolist() == ref[0, 0].tolist()


CASTS = [("float32", "float64"), ("float64", "float16"), ("float32", "bfloat16"),
         ("float32", "int64"), ("float64", "int8"), ("int64", "float32"), ("int32", "int8"),
         ("bool", "float32"), ("bool", "int64"), ("float32", "bool"), ("int64", "bool"),
         ("uint8", "int64"), ("bfloat16", "float32"), ("int8", "uint8")]


@pytest.mark.parametrize("src,dst", CASTS)
@pytest.mark.op("cast")
def test_cast(src: str, dst: str, device: burn.Device, rng: np.random.Generator) -> None:
    data = rand(rng, (3, 4), src, int_range=(0, 10) if dst == "uint8" else None)
    if src.startswith("float"):
        data = np.where(rng.random((3, 4)) < 0.2, 0, data * 3).astype(data.dtype)
    x = T(data, src, "transposed")
    bd, td = dtype_of(dst), _t(dst)
    check_forward(lambda a: a.cast(bd), lambda a: a.to(td), [x], device)
    check_forward(lambda a: a.to(bd), lambda a: a.to(td), [x], device)
    check_forward(lambda a: a.cast(dst), lambda a: a.to(td), [x], device)


#: Floats an int cast cannot hold exactly (NaN, infinities, past int32 / int64 / 8 bits) and
#: the edges of truncation.
OUT_OF_RANGE = [np.nan, np.inf, -np.inf, 3e9, -3e9, 1e20, -1e20, 300.0, -1.0, -129.0, 127.9,
                -128.9, 255.5, 2.5, -2.5, 0.0, -0.0, 65504.0]


@pytest.mark.parametrize("src,dst", [(s, d) for s in FLOATS for d in INTS])
@pytest.mark.op("into_int")
def test_cast_float_to_int_out_of_range(src: str, dst: str, device: burn.Device) -> None:
    """Truncation toward zero; NaN, inf and values past int32 (int64) give the minimum, and
    8-bit ints convert through int32 and wrap: numpy's and PyTorch's results on x86 CPUs,
    every backend alike (docs/differences.md)."""
    values = np.array(OUT_OF_RANGE)
    bd, td = dtype_of(dst), _t(dst)
    for x in (T(values, src), T(np.stack([values, values[::-1]]), src, "transposed"),
              T(np.array(np.nan), src), T(np.zeros((0, 2)), src)):
        check_forward(lambda a: a.cast(bd), lambda a: a.to(td), [x], device)


@pytest.mark.parametrize("name", [op_param(n) for n in ("float", "int", "bool")])
def test_kind_conversions(name: str, device: burn.Device, rng: np.random.Generator) -> None:
    """float() -> float32, int() -> int64, bool() -> bool (torch's .float() / .long() / .bool())."""
    ft = {"float": torch.Tensor.float, "int": torch.Tensor.long, "bool": torch.Tensor.bool}[name]
    for src in (held("float64", device), "int32", "bool", "float16"):
        data = rand(rng, (2, 3), src) * 3 if src.startswith("float") else rand(rng, (2, 3), src)
        check_forward(lambda a: getattr(a, name)(), ft, [T(data, src)], device)


@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.op("cast")
def test_cast_backward(dtype: str, grad_device: burn.Device, rng: np.random.Generator) -> None:
    other = "float32" if dtype == "float64" else held("float64", grad_device)
    x = T(rand(rng, (3, 4), dtype), dtype, "transposed")
    check_backward(lambda a: a.cast(dtype_of(other)) * 2, lambda a: a.to(_t(other)) * 2, [x],
                   grad_device, rng)


@pytest.mark.op("to_device")
def test_to_device(device: burn.Device, grad_device: burn.Device,
                   rng: np.random.Generator) -> None:
    a = rand(rng, (2, 3), "float32")
    t = burn.tensor(a, device=device.inner())
    for target in (device, grad_device, device.inner()):
        moved = t.to_device(target)
        _device_is(moved, target)
        np.testing.assert_array_equal(moved.to_numpy(), a)
        _device_is(t.to(target), target)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
@pytest.mark.op("attributes")
def test_attributes(dtype: str, device: burn.Device, rng: np.random.Generator) -> None:
    a = rand(rng, (2, 3, 4), dtype)
    t = burn.tensor(a, device=device)
    ref = torch.from_numpy(a.copy())
    assert t.shape == (2, 3, 4) and isinstance(t.shape, tuple)
    assert t.ndim == 3 and t.numel() == ref.numel() and t.size() == (2, 3, 4)
    assert t.size(1) == 3 and t.size(-1) == 4
    assert t.dtype == DTYPES[dtype]
    assert t.kind == DTYPES[dtype].kind
    assert t.device == device
    text = repr(t)
    assert isinstance(text, str) and text
    assert burn.tensor(3.0, device=device).shape == ()
