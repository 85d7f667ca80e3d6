"""Edge inputs the family tests do not try, against torch: ties of signed zeros, NaN and
overflow through the math functions and reductions, non-contiguous views. Each case here was a
difference from torch on some backend once; values are compared bit for bit where the sign of
a zero or a NaN matters."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import burn
import burn.functional as F

from .reference import T, check_backward, check_forward, held, op_param


def assert_signs(actual: burn.Tensor, expected: torch.Tensor) -> None:
    """The signs of `actual`'s zeros and NaN positions equal `expected`'s (values are compared
    by `check_forward`, which takes -0.0 == 0.0)."""
    got = np.asarray(actual.to_numpy(), dtype=np.float64)
    want = expected.detach().to(torch.float64).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg="NaN positions")
    zeros = (got == 0) & (want == 0)
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]),
                                  err_msg="signs of zeros")


@pytest.mark.op("cummax")
@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("n", [4, 5000])
def test_running_extreme_value_follows_its_index(op: str, n: int, device: burn.Device) -> None:
    """At a tie of -0.0 and 0.0 the running extreme takes the later index and its value, as
    torch (one line per unit, and a long line scanned in chunks on the cube backends)."""
    rng = np.random.default_rng(n)
    data = np.where(rng.random((2, n)) < 0.5, -0.0, 0.0)
    data[1, ::3] = np.nan if n > 4 else data[1, ::3]
    x = T(data, held("float64", device), "transposed" if n == 4 else "contiguous")
    dim = 0 if n == 4 else 1
    values, _ = check_forward(lambda a: getattr(a, op)(dim), lambda a: tuple(getattr(a, op)(dim)),
                              [x], device)
    assert_signs(values, getattr(torch.from_numpy(data), op)(dim).values)


#: Arguments of the inverse and log functions: tiny values (where 1 + x rounds), the ends of
#: the domains, values whose square overflows float16 or float32, NaN, infinities, zeros.
INVERSE_ARGS = [1e-4, 1e-7, -1e-7, 3e-8, 0.3, 0.99, 1.0, 1.0001, 1.5, 2.0, 300.0, 1e30, 3.4e38,
                -3.4e38, np.inf, -np.inf, -1.0, -2.0, np.nan, -0.0, 0.0, 1e-3, 1e-2, 0.2499,
                -0.2499, -0.9, -300.0, -1e30]
#: Relative error allowed against the correctly rounded value (a few ulps).
RELATIVE = {"float64": 1e-13, "float32": 1e-6, "float16": 2e-3, "bfloat16": 1.6e-2}


def assert_relative(actual: burn.Tensor, x: np.ndarray, fn: Callable[[torch.Tensor], Any],
                    dtype: str, rtol: float | None = None) -> None:
    """`actual` is within `rtol` (default `RELATIVE[dtype]`) of torch's float64 `fn` of `x`
    (rounded to `dtype`), with NaN at the same places and the same signs of zeros; values past
    the dtype's range count as its infinities."""
    want_t = fn(torch.from_numpy(x.astype(np.float64)))
    want = want_t.to(getattr(torch, dtype)).to(torch.float64).numpy()
    # the dtype's own values (a cast fused with the op may keep its float32 value: NVIDIA's
    # Vulkan driver folds the float16 rounding of a value widened again in the same kernel)
    got = np.asarray(actual.to_numpy()).astype(np.float64)
    assert actual.dtype == burn.DType(dtype) and got.shape == want.shape
    assert_signs(actual, torch.from_numpy(want))
    close = np.isclose(got, want, rtol=rtol or RELATIVE[dtype], atol=0.0) | np.isnan(want)
    assert close.all(), f"{fn} of {x[~close]}: {got[~close]} != {want[~close]}"


@pytest.mark.parametrize("fn", [
    pytest.param(f, marks=pytest.mark.op(f), id=f)
    for f in ("log1p", "asin", "acos", "atan", "asinh", "acosh", "atanh", "sinh", "erf",
              "tanh")])
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "bfloat16"])
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_math_functions_to_a_few_ulps(fn: str, dtype: str, layout: str,
                                      device: burn.Device) -> None:
    """The inverse trigonometric and hyperbolic functions, log1p, sinh, erf and tanh to a few
    ulps of the exact value over tiny, huge and out-of-domain arguments (NaN where torch's is
    NaN), as lines and strided, against torch's float64 rounded to the dtype."""
    with np.errstate(over="ignore"):
        x = np.array(INVERSE_ARGS).astype(T(np.zeros(1), dtype).data.dtype).astype(np.float64)
    view = T(x, dtype, layout)
    built = burn.tensor(view.base(), dtype=burn.DType(dtype), device=device)
    arg = built[..., ::2] if layout == "strided" else built
    # llvmpipe's atan, and its scalar atan2, are within 3e-5 (docs/differences.md)
    driver = device.name == "wgpu" and fn in ("asin", "acos", "atan")
    assert_relative(getattr(arg, fn)(), x, getattr(torch, fn), dtype, 3e-5 if driver else None)


#: Where sinh and cosh overflow: float32 near 89.4 (e^x alone overflows past 88.72), float16
#: near 11.8.
OVERFLOW_ARGS = {"float32": [11.5, 20.0, 88.7, 89.0, 89.4, 89.41, 89.42, 90.0, 100.0],
                 "float16": [9.5, 10.5, 11.0, 11.7, 11.77, 11.8, 12.0]}


@pytest.mark.parametrize("fn", [pytest.param(f, marks=pytest.mark.op(f), id=f)
                                for f in ("sinh", "cosh")])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_sinh_and_cosh_up_to_their_overflow(fn: str, dtype: str, device: burn.Device) -> None:
    """sinh and cosh stay finite up to where their own value overflows, as torch's float64
    rounded to the dtype (wgpu gave inf from sinh(89), which is 2.2e38: the driver's exp(x)
    overflowed first); both signs. (llvmpipe's exp of a large argument is within 5e-6.)"""
    with np.errstate(over="ignore"):
        x = np.array([*OVERFLOW_ARGS[dtype], *(-v for v in OVERFLOW_ARGS[dtype])]).astype(
            T(np.zeros(1), dtype).data.dtype).astype(np.float64)
    rtol = 1e-5 if device.name == "wgpu" and dtype == "float32" else None
    arg = burn.tensor(x, dtype=burn.DType(dtype), device=device)
    assert_relative(getattr(arg, fn)(), x, getattr(torch, fn), dtype, rtol)


@pytest.mark.op("median")
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_median_of_lines_with_nan(dim: int, layout: str, device: burn.Device,
                                  grad_device: burn.Device, rng: np.random.Generator) -> None:
    """A line holding NaN has the median NaN at the index of its first NaN (torch.median); the
    other lines keep the lower middle value; the gradient goes to that element."""
    nan = np.nan
    data = np.array([[1.0, nan, 3.0, nan, 0.5], [2.0, 1.0, 0.0, 4.0, 3.0],
                     [nan, 2.0, 0.25, 1.5, 5.0], [7.0, 6.0, 5.0, nan, 8.0]])
    x = T(data, "float32", layout)
    check_forward(lambda a: a.median_with_indices(dim),
                  lambda a: tuple(a.median(dim, keepdim=True)), [x], device)
    check_backward(lambda a: a.median(dim), lambda a: a.median(dim, keepdim=True).values, [x],
                   grad_device, rng)


#: Points where the activations and inverse functions have kinks or poles.
KINKS = np.array([0.0, -0.0, 1.0, -1.0, 6.0, -0.5, 0.5, 7.0, -2.0])


@pytest.mark.parametrize("op,burn_fn,torch_fn", [
    op_param("leaky_relu", lambda x: F.leaky_relu(x, 0.1), lambda x: TF.leaky_relu(x, 0.1),
             id="leaky_relu"),
    op_param("prelu", lambda x: F.prelu(x, burn.tensor([0.25], dtype=x.dtype, device=x.device)),
             lambda x: TF.prelu(x, torch.tensor([0.25], dtype=x.dtype)), id="prelu"),
    op_param("hardtanh", F.hardtanh, TF.hardtanh, id="hardtanh"),
    op_param("hardtanh", lambda x: F.hardtanh(x, -0.5, 0.5), lambda x: TF.hardtanh(x, -0.5, 0.5),
             id="hardtanh-half"),
    op_param("relu6", F.relu6, TF.relu6, id="relu6"),
    op_param("asin", lambda x: x.asin(), torch.asin, id="asin"),
    op_param("acos", lambda x: x.acos(), torch.acos, id="acos"),
    op_param("atanh", lambda x: x.atanh(), torch.atanh, id="atanh"),
])
def test_gradients_at_kinks_and_poles(op: str, burn_fn: object, torch_fn: object,
                                      grad_device: burn.Device,
                                      rng: np.random.Generator) -> None:
    """torch's one-sided choices at the kinks (leaky_relu's slope at 0, hardtanh / relu6 flat at
    their bounds) and the signs of the infinite gradients at +-1."""
    check_backward(burn_fn, torch_fn, [T(KINKS, held("float64", grad_device))], grad_device, rng)


@pytest.mark.op("vector_norm")
@pytest.mark.parametrize("p", [2.0, 3.0, 0.5])
def test_vector_norm_gradient_of_a_zero_vector(p: float, grad_device: burn.Device,
                                               rng: np.random.Generator) -> None:
    """The norm of a zero row is 0 with a zero gradient (torch's subgradient), not NaN."""
    data = np.array([[0.0, 0.0, 0.0], [3.0, -4.0, 0.0], [-0.0, 0.0, 0.0]])
    check_backward(lambda a: burn.linalg.vector_norm(a, p, -1),
                   lambda a: torch.linalg.vector_norm(a, p, -1, keepdim=True),
                   [T(data, held("float64", grad_device))], grad_device, rng)


@pytest.mark.op("to_device")
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16", "int64", "int32",
                                   "int8", "uint8", "bool"])
def test_to_device_checks_the_dtype(dtype: str, device: burn.Device) -> None:
    """A stepped view moves from numpy to the device under test with its values and dtype;
    a dtype the device cannot hold raises UnsupportedDTypeError naming dtype and device (a
    float64 tensor reached wgpu as float64)."""
    data = T(np.arange(-3, 5).reshape(2, 4) % 3, dtype, "strided")
    source = burn.tensor(data.base(), dtype=burn.DType(dtype), device="numpy")[..., ::2]
    if not device.backend.supports(burn.DType(dtype)):
        with pytest.raises(burn.errors.UnsupportedDTypeError,
                           match=f"to_device.*{dtype}.*{device.name}"):
            source.to_device(device)
        return
    moved = source.to_device(device)
    assert moved.device == device and moved.dtype == burn.DType(dtype)
    np.testing.assert_array_equal(np.asarray(moved.to_numpy()), data.data)


@pytest.mark.op("from_dlpack")
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "int32", "int8", "uint8",
                                   "bool"])
@pytest.mark.parametrize("make", ["tensor", "from_dlpack"])
def test_torch_tensors_keep_their_dtype(make: str, dtype: str, device: burn.Device) -> None:
    """`burn.tensor` and `burn.from_dlpack` of a torch tensor keep its dtype and values, as of a
    numpy array (burn.tensor read a float64 torch tensor as Python floats: float32)."""
    source = torch.tensor([[1, 0, 3], [2, 5, 7]]).to(getattr(torch, dtype)).T
    if not device.backend.supports(burn.DType(dtype)):
        with pytest.raises(burn.errors.UnsupportedDTypeError, match=dtype):
            getattr(burn, make)(source, device=device)
        return
    out = getattr(burn, make)(source, device=device)
    assert out.shape == tuple(source.shape) and out.dtype == burn.DType(dtype)
    np.testing.assert_array_equal(out.to_numpy(), source.numpy())


@pytest.mark.op("from_dlpack")
@pytest.mark.parametrize("make", ["tensor", "from_dlpack"])
def test_torch_bfloat16_is_a_typed_error(make: str, device: burn.Device) -> None:
    """Where numpy cannot read torch's bfloat16 (numpy before 2.5 has no DLPack import of it;
    no numpy converts it with asarray) the import raises DTypeError naming the op, not torch's
    or numpy's RuntimeError / TypeError; where it can, the tensor is bfloat16 with torch's
    values."""
    source = torch.tensor([1.0, -2.5, 3e38], dtype=torch.bfloat16)
    try:
        out = getattr(burn, make)(source, device=device)
    except burn.errors.DTypeError as exc:
        assert make in str(exc)
        return
    assert out.shape == (3,) and out.dtype == burn.bfloat16
    np.testing.assert_array_equal(out.to(burn.float32).to_numpy(), source.float().numpy())


INT_EXTREMES = {"int8": [-128, 127, -1, 0, 1, 100], "uint8": [0, 255, 1, 128, 200, 7],
                "int32": [-2**31, 2**31 - 1, -1, 0, 1, 65536],
                "int64": [-2**63, 2**63 - 1, -1, 0, 1, 2**40]}


@pytest.mark.parametrize("op,fn", [
    op_param("greater", lambda x: x > 300, id="greater-300"),
    op_param("greater_equal", lambda x: x >= -129, id="greater_equal-neg129"),
    op_param("lower", lambda x: x < -1, id="lower-neg1"),
    op_param("equal", lambda x: x == 2**40 + 44, id="equal-big"),
    op_param("add", lambda x: x + 300, id="add-300"),
    op_param("mul", lambda x: x * -1000, id="mul-neg1000"),
])
@pytest.mark.parametrize("dtype", list(INT_EXTREMES))
def test_int_scalars_outside_the_dtype_wrap_into_it(op: str, fn: object, dtype: str,
                                                    device: burn.Device) -> None:
    """A Python int outside an int tensor's range wraps into its dtype, in comparisons as in
    arithmetic, as torch (numpy compared it exactly: int8 > 300 was all False on numpy)."""
    check_forward(fn, fn, [T(np.array(INT_EXTREMES[dtype]), dtype, "strided")], device)


@pytest.mark.op("clamp")
@pytest.mark.parametrize("dtype", list(INT_EXTREMES))
@pytest.mark.parametrize("bounds", [(-300, 300), (2**40, None), (None, -2**40), (-1, 2**70)])
def test_int_clamp_bounds_outside_the_dtype(dtype: str, bounds: tuple[int | None, int | None],
                                            device: burn.Device) -> None:
    """Int clamp bounds past the dtype's range act as its limits (torch refuses them,
    docs/differences.md; the cube backends wrapped them: int8 clamp(-300, 300) was
    clamp(-44, 44))."""
    data = np.array(INT_EXTREMES[dtype], dtype=np.dtype(dtype))
    got = burn.tensor(data, device=device).clamp(*bounds)
    info = np.iinfo(data.dtype)
    low, high = (None if b is None else min(max(b, int(info.min)), int(info.max))
                 for b in bounds)
    assert got.dtype == burn.DType(dtype) and got.shape == data.shape
    np.testing.assert_array_equal(got.to_numpy(), np.clip(data, low, high))


@pytest.mark.parametrize("op,burn_fn,torch_fn", [
    op_param("elu", F.elu, TF.elu, id="elu"),
    op_param("selu", F.selu, TF.selu, id="selu"),
    op_param("celu", lambda x: F.celu(x, 2.0), lambda x: TF.celu(x, 2.0), id="celu"),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_elu_family_of_small_negative_values(op: str, burn_fn: Any, torch_fn: Any, dtype: str,
                                             device: burn.Device,
                                             grad_device: burn.Device,
                                             rng: np.random.Generator) -> None:
    """alpha (exp(x) - 1) to a few ulps for tiny x too (exp(x) - 1 gave elu(-1e-7) = -1.19e-7
    and elu(-1e-10) = 0) and -0.0 kept; the gradient stays exp(x) for large negative x."""
    x = np.array([-1e-30, -1e-10, -1e-7, -1e-5, -1e-3, -0.3, -0.5, -0.7, -3.0, -100.0, -0.0,
                  0.0, 2.0, np.nan, -np.inf])
    built = burn.tensor(x, dtype=burn.DType(held(dtype, device)), device=device)
    assert_relative(burn_fn(built), x, torch_fn, held(dtype, device))
    finite = T(x[np.isfinite(x)], held(dtype, device))
    check_backward(burn_fn, torch_fn, [finite], grad_device, rng)


@pytest.mark.op("hypot")
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_hypot_without_underflow_or_overflow(dtype: str, device: burn.Device) -> None:
    """hypot of tiny and huge operands (the squares under- or overflow the dtype), zeros, NaN
    and infinities, as torch (hypot(1e-30, 5e-31) was 0 in float32, hypot(1e30, 1e30) inf)."""
    tiny, huge = (1e-30, 1e30) if dtype == "float32" else (1e-4, 3e4)
    x = np.array([tiny, huge, 3.0, 0.0, -0.0, np.nan, np.inf, np.nan, 1.0, -5.0, 0.0, -np.inf])
    y = np.array([tiny / 2, huge, 4.0, 0.0, 0.0, 1.0, np.nan, np.nan, np.nan, 12.0, 7.0, 3.0])
    a, b = T(x, dtype), T(y, dtype, "strided")
    check_forward(lambda p, q: p.hypot(q), torch.hypot, [a, b], device)
    got = burn.tensor(x, dtype=burn.DType(dtype), device=device).hypot(
        burn.tensor(y, dtype=burn.DType(dtype), device=device))
    assert_relative(got, x, lambda t: torch.hypot(t, torch.from_numpy(y)), dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op,burn_fn,torch_fn", [
    op_param("mean", lambda x: x.mean(), lambda x: x.mean(), id="mean"),
    op_param("mean", lambda x: x.transpose(0, 1).mean(), lambda x: x.T.mean(), id="mean-T"),
    op_param("layer_norm", lambda x: F.layer_norm(x, (4,)), lambda x: TF.layer_norm(x, (4,)),
             id="layer_norm"),
    op_param("layer_norm", lambda x: F.layer_norm(x, (3, 4)),
             lambda x: TF.layer_norm(x, (3, 4)), id="layer_norm-2d"),
    op_param("vector_norm", lambda x: burn.linalg.vector_norm(x * 0.01, 2.0, -1),
             lambda x: torch.linalg.vector_norm(x * 0.01, 2.0, -1, keepdim=True),
             id="vector_norm"),
    op_param("vector_norm", lambda x: burn.linalg.vector_norm(x * 0.01, 3.0, 0),
             lambda x: torch.linalg.vector_norm(x * 0.01, 3.0, 0, keepdim=True),
             id="vector_norm-3"),
])
def test_low_precision_statistics_accumulate_wide(op: str, burn_fn: Any, torch_fn: Any,
                                                  dtype: str, device: burn.Device) -> None:
    """The mean, layer norm and norms of float16 / bfloat16 values whose sum, squares or
    squared deviations overflow float16 compute in float32 as torch (the mean of [60000, 60000]
    was inf, the norm of [300, -300] inf; wgpu's layer norm of short rows gave zeros)."""
    data = np.array([[60000.0, 60000.0, -1000.0, 50000.0], [1.0, 2.0, 3.0, 4.0],
                     [-30000.0, 200.0, 0.5, 900.0]])
    check_forward(burn_fn, torch_fn, [T(data, dtype)], device)


@pytest.mark.op("swap_dims")
def test_dims_of_a_0d_tensor(device: burn.Device) -> None:
    """transpose and movedim take dim 0 / -1 of a 0-d tensor as torch; an op that takes no dim
    of a 0-d tensor says so (the message read "valid=[0, -1]", which named 0 as valid),
    naming the op and the rank."""
    x = T(np.array(2.5), "float32")
    check_forward(lambda a: a.transpose(0, -1), lambda a: a.transpose(0, -1), [x], device)
    check_forward(lambda a: a.movedim(-1, 0), lambda a: a.movedim(-1, 0), [x], device)
    with pytest.raises(burn.errors.BurnIndexError, match=r"swap_dims.*dim=1.*ndim=0"):
        burn.tensor(2.0, device=device).swap_dims(0, 1)
    with pytest.raises(burn.errors.BurnIndexError, match=r"narrow.*ndim=0.*0-d tensor"):
        burn.tensor(2.0, device=device).narrow(0, 0, 1)
    with pytest.raises(burn.errors.BurnIndexError, match=r"sum.*dim=2.*\[-2, 1\]"):
        burn.ones((2, 3), device=device).sum(2)


@pytest.mark.op("gather")
@pytest.mark.parametrize(("data", "index", "dim"), [
    (2.5, 0, 0), (2.5, 0, -1), (2.5, [0, 0, 0], 0), ([1.5, -2.0, 4.0], 2, 0),
    ([1.5, -2.0, 4.0], [2, 0], -1), (2.5, np.zeros(0, np.int64), 0)],
    ids=["0d-0d", "0d-0d-neg-dim", "0d-1d", "1d-0d", "1d-1d", "0d-empty"])
def test_gather_with_0d_input_or_index(data: Any, index: Any, dim: int, device: burn.Device,
                                       grad_device: burn.Device,
                                       rng: np.random.Generator) -> None:
    """gather takes a 0-d input or index next to a 0-d or 1-d other as one element, as torch
    (a 0-d input raised "dim out of range"); forward and gradient."""
    x = T(np.array(data, np.float64), "float32")
    idx = np.asarray(index, np.int64)

    def burn_fn(a: Any) -> Any:
        return a.gather(dim, burn.tensor(idx, device=a.device))

    def torch_fn(a: Any) -> Any:
        return torch.gather(a, dim, torch.from_numpy(idx))

    check_forward(burn_fn, torch_fn, [x], device)
    check_backward(burn_fn, torch_fn, [x], grad_device, rng)
    with pytest.raises(burn.errors.BurnIndexError, match=r"gather: dim out of range"):
        burn.tensor(2.5, device=device).gather(1, burn.tensor(0, device=device))


@pytest.mark.op("cast")
def test_overflowing_casts_are_quiet(device: burn.Device) -> None:
    """Values past a float16 / int dtype's range become inf or wrap without a numpy
    RuntimeWarning, at creation and in casts (the NumPy backend warned "overflow encountered
    in cast"), with torch's values."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        big = burn.tensor([1e10, -1e10, 1.0], dtype=burn.float16, device=device)
        ints = burn.tensor([2**62, -2**63, 70000], device=device).cast(burn.float16)
    np.testing.assert_array_equal(big.to_numpy().astype(np.float64), [np.inf, -np.inf, 1.0])
    np.testing.assert_array_equal(ints.to_numpy().astype(np.float64), [np.inf, -np.inf, np.inf])


@pytest.mark.op("mean_dim")
def test_empty_means_and_nan_products_are_quiet(device: burn.Device) -> None:
    """The mean along an empty dim is NaN and a matmul through NaN / inf gives NaN, without a
    numpy RuntimeWarning ("Mean of empty slice", "invalid value encountered in matmul"), as
    torch."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        means = burn.zeros((3, 0), device=device).mean(1)
        product = burn.tensor([[np.nan, 0.0], [np.inf, 1.0]], device=device) @ burn.tensor(
            [[0.0, 1.0], [0.0, 0.0]], device=device)
    assert means.shape == (3,) and np.isnan(means.to_numpy()).all()
    want = torch.tensor([[np.nan, 0.0], [np.inf, 1.0]]) @ torch.tensor([[0.0, 1.0], [0.0, 0.0]])
    np.testing.assert_array_equal(product.to_numpy(), want.numpy())


@pytest.mark.op("sign")
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_sign_of_negative_zero_in_low_precision(dtype: str, device: burn.Device) -> None:
    """sign(-0.0) is +0.0 and sign(NaN) 0 in bfloat16 too (the NumPy backend's bfloat16 sign
    kept -0.0)."""
    x = T(np.array([-0.0, 0.0, np.nan, -2.0, 3.0, -np.inf]), dtype)
    out = check_forward(lambda a: a.sign(), torch.sign, [x], device)
    assert_signs(out, torch.sign(torch.tensor([-0.0, 0.0, np.nan, -2.0, 3.0, -np.inf])))


@pytest.mark.op("log_sigmoid")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_log_sigmoid_of_large_values_is_positive_zero(dtype: str, device: burn.Device,
                                                      grad_device: burn.Device,
                                                      rng: np.random.Generator) -> None:
    """log_sigmoid of x past ~104 (and of inf) is +0.0 as torch's min(x, 0) - log1p(exp(-|x|))
    (the negated softplus gave -0.0); the gradient is unchanged."""
    x = np.array([200.0, 1e30, np.inf, 3e38, 0.0, -3.0, 5.0, -np.inf])
    out = check_forward(F.log_sigmoid, TF.logsigmoid, [T(x, held(dtype, device))], device)
    assert_signs(out, TF.logsigmoid(torch.from_numpy(x)))
    check_backward(F.log_sigmoid, TF.logsigmoid, [T(x[np.isfinite(x)], held(dtype, device))],
                   grad_device, rng)


@pytest.mark.op("grid_sample_2d")
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_of_non_finite_points(mode: str, padding: str, align: bool,
                                          device: burn.Device) -> None:
    """NaN and infinite grid points as torch: NaN under bilinear zeros padding (the cube
    kernels gave 0), clamped to the border otherwise (the NumPy backend kept NaN), without
    numpy warnings."""
    x = T(np.arange(1.0, 10.0).reshape(1, 1, 3, 3), "float32")
    points = [[np.nan, 0.0], [np.inf, 0.0], [0.0, -np.inf], [0.2, 0.3], [1e30, 0.5]]
    grid = T(np.array([[points]]), "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_forward(lambda a, g: F.grid_sample_2d(a, g, mode=mode, padding_mode=padding,
                                                    align_corners=align),
                      lambda a, g: TF.grid_sample(a, g, mode=mode, padding_mode=padding,
                                                  align_corners=align), [x, grid], device)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op,fn", [
    op_param("mul", lambda x: x * 70000, id="mul-70000"),
    op_param("mul", lambda x: x * 1e39, id="mul-1e39"),
    op_param("div", lambda x: x / 1e5, id="div-1e5"),
    op_param("mul", lambda x: x * 1e-6, id="mul-1e-6"),
    op_param("div", lambda x: 1e5 / x, id="rdiv-1e5"),
    op_param("sub", lambda x: x - 1e5, id="sub-1e5"),
    op_param("lower", lambda x: x < 1e5, id="lower-1e5"),
    op_param("add", lambda x: x + 1e-7, id="add-1e-7"),
])
def test_low_precision_with_scalars_past_its_range(op: str, fn: Any, dtype: str,
                                                   device: burn.Device) -> None:
    """A float16 / bfloat16 tensor times or over a Python scalar its dtype cannot hold
    normally computes in float32 and rounds once, as torch's mul and div (float16 0.5 * 70000
    was inf and x / 1e5 was 0: the scalar was rounded to the tensor's dtype first); add, sub
    and comparisons round the scalar first, as torch's."""
    x = T(np.array([0.5, 1e-3, 1000.0, -2.0, 0.0, np.inf]), dtype, "strided")
    check_forward(fn, fn, [x], device)
