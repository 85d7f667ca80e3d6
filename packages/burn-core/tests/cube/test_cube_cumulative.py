"""cumsum / cumprod / cummax / cummin of the cube backends (cpu and wgpu) against the NumPy
backend (the reference, itself tested against torch) and torch: every dim of ordinary,
transposed, strided and broadcast views, empty and 0-d inputs, NaN / inf / ties, every dtype the
device holds, the chunked scan of long lines, and CUDA source generation. Every test checks that
the ops ran on kernels, not on the host fallback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import torch

import burn
from burn.backends.cube import cumulative as cum
from burn.backends.cube.backend import CudaBackend
from burn.dtype import DType

DEVICES = ["cpu", "wgpu", *(["cuda"] if CudaBackend.unavailable_reason() is None else [])]
OPS = ("cumsum", "cumprod", "cummax", "cummin")
View = Callable[[Any], Any]
#: name -> (data shape, view giving a rank-3 operand).
VIEWS: dict[str, tuple[tuple[int, ...], View]] = {
    "plain": ((3, 4, 5), lambda x: x),
    "transposed": ((5, 4, 3), lambda x: x.permute(2, 1, 0)),
    "strided": ((6, 9, 11), lambda x: x[::2, 1::2, 2:7]),
    "broadcast": ((3, 1, 5), lambda x: x.expand(3, 4, 5)),
}
FLOATS = {"cpu": ["float64", "float16", "bfloat16"], "wgpu": ["float16"],
          "cuda": ["float64", "float16", "bfloat16"]}


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> Iterator[str]:
    backend = _backend(request.param)
    backend.fallbacks.clear()
    yield request.param
    ours = {op: n for op, n in backend.fallbacks.items() if "_cum" in op}
    assert not ours, f"ran on the host fallback: {ours}"


def _backend(device: str) -> Any:
    return burn.Device(device).backend


def _data(shape: tuple[int, ...], dtype: str, seed: int = 0) -> np.ndarray:
    """Small values with ties; floats also get NaN, inf and -inf."""
    rng = np.random.default_rng(seed)
    data = rng.integers(-3, 4, shape)
    if dtype.startswith("int"):
        return data.astype(dtype)
    data = (data / 2).astype(np.float32)
    flat = data.reshape(-1)
    for i, v in zip((4, 9, 17, 18), (np.nan, np.inf, -np.inf, np.nan), strict=True):
        if i < flat.size:
            flat[i] = v
    return data


def _run(op: str, x: burn.Tensor, dim: int) -> list[np.ndarray]:
    out = getattr(x, op)(dim)
    return [t.to_numpy() for t in (out if isinstance(out, tuple) else (out,))]


def _check(device: str, op: str, data: np.ndarray, view: View, dim: int, dtype: Any = None,
           rtol: float = 1e-6) -> None:
    """The op on `device` equals the NumPy backend's (dtype, shape, then values)."""
    ours = _run(op, view(burn.tensor(data, dtype=dtype, device=device)), dim)
    refs = _run(op, view(burn.tensor(data, dtype=dtype, device="numpy")), dim)
    for got, ref in zip(ours, refs, strict=True):
        assert got.dtype == ref.dtype and got.shape == ref.shape
        if got.dtype.kind not in "iub":  # floats, bfloat16 too (ml_dtypes kind "V")
            np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64),
                                       rtol=rtol, atol=rtol)
        else:
            np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("kind", ["float32", "int64"])
def test_cum_ops_on_views_match_the_numpy_backend(device: str, op: str, view: str,
                                                  kind: str) -> None:
    shape, fn = VIEWS[view]
    data = _data(shape, kind)
    for dim in (0, 1, 2, -1):
        _check(device, op, data, fn, dim)


@pytest.mark.parametrize("op", OPS)
def test_cum_ops_match_torch(device: str, op: str) -> None:
    data = _data((4, 6), "float32", seed=3)
    for dim in (0, 1):
        got = getattr(burn.tensor(data, device=device), op)(dim)
        want = getattr(torch, op)(torch.from_numpy(data), dim)
        pairs = zip(got, want, strict=True) if isinstance(got, tuple) else [(got, want)]
        for g, w in pairs:
            np.testing.assert_allclose(g.to_numpy(), w.numpy(), rtol=1e-6)


@pytest.mark.parametrize("op", OPS)
def test_low_precision_wide_and_int32_dtypes(device: str, op: str) -> None:
    for dtype in [*FLOATS[device], "int32"]:
        data = _data((5, 7), dtype, seed=1)
        tol = 1e-2 if dtype in ("float16", "bfloat16") else 1e-6
        _check(device, op, data, lambda x: x, 1, dtype=dtype, rtol=tol)
        _check(device, op, data, lambda x: x.swap_dims(0, 1), 0, dtype=dtype, rtol=tol)


@pytest.mark.parametrize("op", OPS)
def test_empty_and_zero_dim_inputs(device: str, op: str) -> None:
    for shape, dim in (((0, 3), 0), ((0, 3), 1), ((2, 0), 1), ((), 0), ((1,), 0), ((3, 1), 1)):
        _check(device, op, _data(shape, "float32"), lambda x: x, dim)


@pytest.mark.parametrize("op", OPS)
def test_backend_methods_widen_int_sums_and_products(device: str, op: str) -> None:
    """Called directly: int32 sums / products give int64 (as the NumPy backend), the rest keep
    the dtype; extremes give int64 indices; 0-d inputs stay 0-d."""
    backend = _backend(device)
    for shape in ((3, 4), ()):
        data = np.arange(1, 13)[:int(np.prod(shape))].reshape(shape).astype(np.int32)
        out = getattr(backend, f"int_{op}")(backend.upload(data), 0)
        results = out if isinstance(out, tuple) else (out,)
        host = burn.Device("numpy").backend
        refs = getattr(host, f"int_{op}")(data.reshape(shape or (1,)), 0)
        refs = refs if isinstance(refs, tuple) else (refs,)
        for got, ref in zip(results, refs, strict=True):
            assert got.shape == shape and got.dtype.numpy == ref.dtype
            np.testing.assert_array_equal(backend.int_into_data(got), ref.reshape(shape))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("kind", ["float32", "int32"])
def test_long_lines_are_scanned_in_chunks(device: str, op: str, kind: str) -> None:
    """Few lines longer than `CHUNK_MIN_LINE`: chunk totals, carries, then each chunk (float
    sums are rounded in another order, hence the tolerance)."""
    n = cum.CHUNK_MIN_LINE + 3 * cum.CHUNK + 17
    rng = np.random.default_rng(5)
    if kind == "float32":
        data = rng.uniform(0.999, 1.001, (2, n)).astype(np.float32)
        data[0, 700], data[1, 1500:1510] = np.nan, 1.0005  # NaN takes over; ties
    else:
        data = rng.integers(-2, 3, (2, n)).astype(np.int32)
    _check(device, op, data, lambda x: x, 1, rtol=1e-4)
    _check(device, op, data.T.copy(), lambda x: x.swap_dims(0, 1), 1, rtol=1e-4)


def test_kernels_generate_cuda_source() -> None:
    x = np.zeros((2, 3), np.float32)
    idx = np.zeros((2, 3), np.int64)
    state = np.zeros(4, np.float32)
    state_idx = np.zeros(4, np.int64)
    units = np.uint32(2)
    for op in ("sum", "max"):
        extreme = op == "max"
        outs = [x, idx] if extreme else [x]
        states = [state, state_idx] if extreme else [state]
        cases = {
            "scan": [x, *outs, units, units],
            "total": [x, *states, units, units],
            "carried": [x, *outs, *states, units, units],
        }
        for mode, args in cases.items():
            kernel = cum.scan_kernel(op, DType.float16, DType.float16, 2, mode)
            args = [a.astype(np.float16) if a.dtype == np.float32 and a.ndim == 2 else a
                    for a in args]
            assert "__global__" in kernel.source("cuda", 256, *args)
        carry = cum.carry_kernel(op, DType.float32, True)
        assert "__global__" in carry.source("cuda", 256, *states, units, units)
