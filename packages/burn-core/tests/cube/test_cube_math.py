"""Math kernels of the cube backends (`CubeMathOps`): int_powi / int_powi_scalar, float_atan2,
gelu (exact and tanh), softplus, log_sigmoid, mish and selu against torch and the NumPy
backend, on cpu and wgpu: ordinary, transposed, broadcast, empty and 0-d inputs, edge values;
every op runs on its kernel (no host fallback); GPU runtimes' kernels taking `GPU_RUN`
positions a unit over sizes around the threshold; and the kernels generate CUDA C."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import burn
from burn.backends.cube.elementwise import CUBE_DIM, GPU_RUN
from burn.backends.cube.math import MATH, math_kernel
from burn.backends.numpy import NumpyBackend
from burn.dtype import DType

DEVICES = ["cpu", "wgpu"]
EDGES = [-np.inf, -100.0, -30.0, -20.5, -3.0, -1.0, -1e-3, -0.0, 0.0, 1e-3, 0.5, 1.0, 3.0, 19.9,
         20.5, 30.0, 100.0, np.inf, np.nan]
NUMPY: Any = NumpyBackend()  # type: ignore[abstract]  # (table methods added at import)


def float_dtypes(name: str) -> list[DType]:
    return [DType.float32, DType.float16] + ([DType.float64, DType.bfloat16]
                                             if name == "cpu" else [])


def tol(dtype: DType) -> dict[str, Any]:
    """Against a result of the same formula: a few ulp (one of the dtype for 16-bit floats)."""
    return {DType.float64: dict(rtol=1e-12, atol=1e-14), DType.float32: dict(rtol=2e-6, atol=1e-6),
            DType.float16: dict(rtol=1e-3, atol=1e-4),
            DType.bfloat16: dict(rtol=8e-3, atol=1e-3)}[dtype]


#: against torch: log_sigmoid and mish are linear past softplus' threshold (exp(-20) off).
TORCH_TOL: dict[DType, dict[str, Any]] = {
    DType.float64: dict(rtol=1e-12, atol=1e-8), DType.float32: dict(rtol=2e-6, atol=1e-6),
    DType.float16: dict(rtol=1e-3, atol=1e-4), DType.bfloat16: dict(rtol=8e-3, atol=1e-3)}


def inputs(rng: np.random.Generator, dtype: DType) -> list[np.ndarray]:
    """Ordinary values, edge values, an empty and a 0-d array."""
    x = (rng.standard_normal((6, 7)) * 4).astype(dtype.numpy)
    return [x, np.array(EDGES).astype(dtype.numpy), np.zeros((0, 3), dtype.numpy),
            np.array(0.75).astype(dtype.numpy)]


def run(be: Any, method: str, *args: Any) -> Any:
    return getattr(be, method)(*args)


def check(got: np.ndarray, ref: np.ndarray, dtype: DType, exact: bool = False) -> None:
    assert got.shape == ref.shape and got.dtype == ref.dtype == dtype.numpy
    if exact:
        np.testing.assert_array_equal(got, ref)
    else:
        np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64),
                                   equal_nan=True, **tol(dtype))


ACTIVATIONS: dict[str, tuple[tuple[Any, ...], Callable[[torch.Tensor], torch.Tensor]]] = {
    "gelu": (("none",), lambda t: F.gelu(t)),
    "gelu_tanh": (("tanh",), lambda t: F.gelu(t, approximate="tanh")),
    "softplus": ((1.0, 20.0), lambda t: F.softplus(t)),
    "softplus_beta": ((2.5, 3.0), lambda t: F.softplus(t, 2.5, 3.0)),
    "log_sigmoid": ((), F.logsigmoid),
    "mish": ((), F.mish),
    "selu": ((), F.selu),
}


@pytest.mark.parametrize("name", DEVICES)
@pytest.mark.parametrize("act", list(ACTIVATIONS))
def test_activations_match_numpy_backend_and_torch(name: str, act: str) -> None:
    device = burn.Device(name)
    be: Any = device.backend
    method = act.split("_beta")[0].replace("gelu_tanh", "gelu")
    args, torch_fn = ACTIVATIONS[act]
    rng = np.random.default_rng(0)
    for dtype in float_dtypes(name):
        for x in inputs(rng, dtype):
            got = be.float_into_data(run(be, method, be.float_from_data(x, device), *args))
            # float16 / bfloat16: the float32 result rounded once, as torch computes them
            # (the NumPy backend's defaults round every step: softplus(19.9) overflows)
            wide = x.astype(np.float64 if dtype is DType.float64 else np.float32)
            ref = np.asarray(run(NUMPY, method, wide.reshape(-1), *args))  # (not 0-d: the
            check(got, ref.reshape(x.shape).astype(dtype.numpy), dtype)  # tanh gelu refuses)
            finite = np.isfinite(wide)
            torch_ref = torch_fn(torch.from_numpy(wide[finite])).numpy()
            np.testing.assert_allclose(got[finite].astype(wide.dtype), torch_ref,
                                       **TORCH_TOL[dtype])
    assert be.fallbacks[method] == 0


@pytest.mark.parametrize("name", DEVICES)
def test_activations_read_strided_views(name: str) -> None:
    device = burn.Device(name)
    be: Any = device.backend
    x = np.random.default_rng(1).standard_normal((5, 8)).astype(np.float32) * 5
    prim = be.float_permute(be.float_from_data(x, device), (1, 0))
    assert not prim.is_contiguous
    for method, args in (("gelu", ("none",)), ("softplus", (1.0, 20.0)), ("mish", ()),
                         ("selu", ()), ("log_sigmoid", ())):
        got = be.float_into_data(run(be, method, prim, *args))
        check(got, np.asarray(run(NUMPY, method, np.ascontiguousarray(x.T), *args)),
              DType.float32)


def test_activations_through_the_frontend() -> None:
    device = burn.Device("cpu")
    x = burn.tensor([[-2.0, 0.5], [3.0, -0.25]], device=device)
    ref = torch.tensor([[-2.0, 0.5], [3.0, -0.25]])
    for fn, tfn in ((burn.functional.gelu, F.gelu), (burn.functional.mish, F.mish),
                    (burn.functional.selu, F.selu), (burn.functional.log_sigmoid, F.logsigmoid),
                    (burn.functional.softplus, F.softplus)):
        np.testing.assert_allclose(fn(x).numpy(), tfn(ref).numpy(), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("name", DEVICES)
def test_atan2(name: str) -> None:
    device = burn.Device(name)
    be: Any = device.backend
    rng = np.random.default_rng(2)
    special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-30, 3.0])
    ys, xs = (a.reshape(-1) for a in np.meshgrid(special, special))
    for dtype in float_dtypes(name):
        y = np.concatenate([ys, rng.standard_normal(200) * 10]).astype(dtype.numpy)
        x = np.concatenate([xs, rng.standard_normal(200)]).astype(dtype.numpy)
        got = be.float_into_data(be.float_atan2(be.float_from_data(y, device),
                                                be.float_from_data(x, device)))
        ref = np.arctan2(y.astype(np.float64), x.astype(np.float64)).astype(dtype.numpy)
        check(got, ref, dtype)
        assert np.array_equal(np.signbit(got), np.signbit(ref)), dtype  # signed zeros and pi
        if dtype is DType.float32:
            torch_ref = torch.atan2(torch.from_numpy(y), torch.from_numpy(x)).numpy()
            np.testing.assert_allclose(got, torch_ref, rtol=1e-6, atol=1e-7, equal_nan=True)
    # broadcast (3, 1) with (4,), transposed, empty and 0-d operands
    a = rng.standard_normal((3, 1)).astype(np.float32)
    b = rng.standard_normal((4, 3)).astype(np.float32)
    bt = be.float_permute(be.float_from_data(b, device), (1, 0))
    got = be.float_into_data(be.float_atan2(be.float_from_data(a, device), bt))
    check(got, np.arctan2(a, b.T), DType.float32)
    for shape_a, shape_b in (((0, 2), (1, 2)), ((), ()), ((), (2, 3))):
        ya = rng.standard_normal(shape_a).astype(np.float32)
        xb = rng.standard_normal(shape_b).astype(np.float32)
        got = be.float_into_data(be.float_atan2(be.float_from_data(ya, device),
                                                be.float_from_data(xb, device)))
        check(got, np.asarray(np.arctan2(ya, xb)), DType.float32)
    assert be.fallbacks["float_atan2"] == 0


@pytest.mark.parametrize("size", [GPU_RUN * CUBE_DIM - 1, GPU_RUN * CUBE_DIM,
                                  GPU_RUN * CUBE_DIM * 3 + 5])
def test_gpu_runs_of_positions(size: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """On wgpu, from `GPU_RUN` * `CUBE_DIM` elements a unit computes `GPU_RUN` positions a span
    apart (the last span partial): every position once, dense, broadcast and transposed."""
    device = burn.Device("wgpu")
    be: Any = device.backend
    runs: list[int] = []
    real = math_kernel

    def recorded(*args: Any) -> Any:
        runs.append(args[-1])
        return real(*args)

    monkeypatch.setattr("burn.backends.cube.math.math_kernel", recorded)
    rng = np.random.default_rng(size)
    x = (rng.standard_normal(size) * 3).astype(np.float32)
    got = be.float_into_data(be.gelu(be.float_from_data(x, device), "none"))
    want = F.gelu(torch.from_numpy(x)).numpy()
    assert got.shape == want.shape and got.dtype == want.dtype
    check(got, np.asarray(NUMPY.gelu(x, "none")), DType.float32)  # the same erf formula
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=3e-6)
    rows = rng.standard_normal((size // 7 + 1, 7)).astype(np.float32)
    col = rng.standard_normal((7,)).astype(np.float32)
    xt = be.float_permute(be.float_from_data(np.ascontiguousarray(rows.T), device), (1, 0))
    got = be.float_into_data(be.float_atan2(xt, be.float_from_data(col, device)))
    check(got, np.arctan2(rows, col), DType.float32)
    expected = GPU_RUN if size >= GPU_RUN * CUBE_DIM else 1
    assert runs[0] == expected and runs[1] == (GPU_RUN if rows.size >= GPU_RUN * CUBE_DIM
                                               else 1)


@pytest.mark.parametrize("name", DEVICES)
@pytest.mark.parametrize("dtype", [DType.int32, DType.int64])
def test_int_powi(name: str, dtype: DType) -> None:
    """Wrapping integer powers (torch's), negative exponents as torch's 1 / x**|e| truncated."""
    device = burn.Device(name)
    be: Any = device.backend
    bits = np.iinfo(dtype.numpy).bits
    base = np.array([-7, -3, -2, -1, 0, 1, 2, 3, 5, 7, 1000, -1000], dtype.numpy)
    exps = np.array([0, 1, 2, 3, 5, bits - 1, bits, 2 * bits + 1, 13, -1, -2, -3], dtype.numpy)
    got = be.int_into_data(be.int_powi(be.int_from_data(base, device),
                                       be.int_from_data(exps, device)))
    check(got, torch.pow(torch.from_numpy(base), torch.from_numpy(exps)).numpy(), dtype, True)
    # broadcast base column against an exponent row, and a transposed base
    col = base[:, None]
    row = np.arange(0, 9, dtype=dtype.numpy)[None, :]
    got = be.int_into_data(be.int_powi(be.int_from_data(col, device),
                                       be.int_from_data(row, device)))
    check(got, np.power(col, row), dtype, True)
    square = np.arange(-6, 6, dtype=dtype.numpy).reshape(3, 4)
    view = be.int_permute(be.int_from_data(square, device), (1, 0))
    got = be.int_into_data(be.int_powi(view, be.int_from_data(square.T.copy(), device)))
    exps_t = torch.from_numpy(square.T.copy())
    check(got, torch.pow(exps_t, exps_t).numpy(), dtype, True)
    for exponent in (0, 1, 2, 7, bits + 3, 2 ** 40 + 3):
        got = be.int_into_data(be.int_powi_scalar(be.int_from_data(base, device), exponent))
        check(got, np.asarray(NUMPY.int_powi_scalar(base, exponent)), dtype, True)
    for shape in ((0, 4), ()):
        x = np.full(shape, 3, dtype.numpy)
        got = be.int_into_data(be.int_powi_scalar(be.int_from_data(x, device), 4))
        check(got, np.full(shape, 81, dtype.numpy), dtype, True)
    assert be.fallbacks["int_powi"] == be.fallbacks["int_powi_scalar"] == 0


def test_int_pow_through_the_frontend() -> None:
    device = burn.Device("cpu")
    x = burn.tensor([[1, -2, 3]], dtype=burn.int32, device=device)
    np.testing.assert_array_equal((x ** 3).numpy(), np.array([[1, -8, 27]], np.int32))
    np.testing.assert_array_equal(
        x.pow(burn.tensor([[2], [0]], dtype=burn.int32, device=device)).numpy(),
        np.array([[1, 4, 9], [1, 1, 1]], np.int32))


@pytest.mark.parametrize("key", sorted(MATH))
def test_kernels_generate_cuda(key: str) -> None:
    for dtype in ([DType.int32, DType.int64] if key.startswith("int_") else
                  [DType.float32, DType.float16, DType.bfloat16, DType.float64]):
        tensors = {"gelu_backward_cdf": 3}.get(
            key, 1 if key == "int_powi_scalar" or not key.startswith(("int_", "float_")) else 2)
        scalars = {"softplus": 2, "int_powi_scalar": 1}.get(key, 0)
        arrays = [np.zeros(4, dtype.numpy) for _ in range(tensors)]
        numbers = [2.0 if dtype.is_float else 2] * scalars
        for run in (1, GPU_RUN):
            kernel = math_kernel(key, dtype, tensors, scalars, 1, run)
            assert kernel.source("cuda", 256, *arrays, *numbers, np.zeros(4, dtype.numpy))
