"""The GPU row layer norm (`layer_norm_rows`: one cube per row held in registers) and its
backward against torch (float64 autograd) on wgpu (Mesa llvmpipe here) and cuda where there is
one: rows of several lengths (partial last chunks), one and two normalised dims, with and
without weight and bias, strided inputs, float16 / bfloat16, NaN and inf; the composite default
keeps short rows; CUDA source generation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import burn
from burn.backend.protocol import Backend
from burn.backends.cube import CubeTensor
from burn.backends.cube import layer_norm_rows as ln
from burn.backends.cube.backend import CubeBackend, CudaBackend
from burn.backends.cube.tensor import host_array
from burn.dtype import DType
from burn.ir.cube import cube_dtype

GPUS = ["wgpu", *(["cuda"] if CudaBackend.unavailable_reason() is None else [])]
FLOATS = {"wgpu": ["float32", "float16"], "cuda": ["float32", "float16", "bfloat16", "float64"]}
TOL = {"float32": (2e-5, 2e-5), "float64": (1e-10, 1e-10), "float16": (1e-2, 1e-2),
       "bfloat16": (5e-2, 5e-2)}


def _backend(device: str) -> CubeBackend:
    backend = burn.Device(device).backend
    assert isinstance(backend, CubeBackend)
    return backend


def _no_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the protocol's composite defaults fail: the rows kernels must serve."""
    def refuse(*args: Any) -> Any:
        raise AssertionError("the composite default ran")

    monkeypatch.setattr(Backend, "layer_norm", refuse)
    monkeypatch.setattr(Backend, "layer_norm_backward", refuse)


def _upload(backend: CubeBackend, data: np.ndarray | None, dtype: str) -> CubeTensor | None:
    if data is None:
        return None
    return burn.tensor(data, device=backend.device, dtype=getattr(burn, dtype))._prim


def _values(t: CubeTensor | None, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    assert t is not None
    assert t.shape == shape and t.dtype is getattr(DType, dtype)
    return np.asarray(host_array(t)).astype(np.float64)


def _rounded(data: np.ndarray, dtype: str) -> np.ndarray:
    """`data` as the device holds it in `dtype`, back in float64."""
    return torch.from_numpy(data).to(getattr(torch, dtype)).double().numpy()


def _run_and_check(device: str, dtype: str, x: np.ndarray, num_dims: int, weight: bool,
                   bias: bool, seed: int = 0, view: Any = None) -> None:
    """Forward (out, mean, rstd) and backward (dx, dweight, dbias) against torch in float64
    on the values as rounded to `dtype`; `view` (optional): (source data, a function of a
    burn tensor) making the device input a strided view of the uploaded source, equal to x."""
    backend = _backend(device)
    rng = np.random.default_rng(seed)
    x = _rounded(x, dtype)
    d = x.shape[x.ndim - num_dims:]
    w = _rounded(rng.standard_normal(d), dtype) if weight else None
    b = _rounded(rng.standard_normal(d), dtype) if bias else None
    g = _rounded(rng.standard_normal(x.shape), dtype)
    px = _upload(backend, x, dtype)
    if view is not None:
        px = view[1](burn.tensor(view[0], device=device, dtype=getattr(burn, dtype)))._prim
        assert px is not None and not px.is_contiguous
    pw, pb, pg = (_upload(backend, t, dtype) for t in (w, b, g))
    assert px is not None and pg is not None
    out, mean, rstd = backend.layer_norm(px, pw, pb, num_dims, 1e-5)
    tx = torch.from_numpy(x).requires_grad_()
    tw = None if w is None else torch.from_numpy(w).requires_grad_()
    tb = None if b is None else torch.from_numpy(b).requires_grad_()
    want = torch.nn.functional.layer_norm(tx, d, tw, tb, 1e-5)
    dims = tuple(range(x.ndim - num_dims, x.ndim))
    stats = (*x.shape[:x.ndim - num_dims], *(1,) * num_dims)
    t_mean = tx.detach().mean(dims, keepdim=True)
    t_rstd = 1 / torch.sqrt(tx.detach().var(dims, unbiased=False, keepdim=True) + 1e-5)
    rtol, atol = TOL[dtype]
    for got, ref, shape in ((out, want.detach(), x.shape), (mean, t_mean, stats),
                            (rstd, t_rstd, stats)):
        np.testing.assert_allclose(_values(got, shape, dtype), ref.numpy(), rtol=rtol, atol=atol)
    want.backward(torch.from_numpy(g))
    dx, dw, db = backend.layer_norm_backward(px, pw, pb, mean, rstd, pg, num_dims)
    assert tx.grad is not None
    np.testing.assert_allclose(_values(dx, x.shape, dtype), tx.grad.numpy(), rtol=rtol,
                               atol=atol * 10)
    for got_d, ref_t in ((dw, tw), (db, tb)):
        if ref_t is None:
            assert got_d is None
            continue
        assert ref_t.grad is not None
        np.testing.assert_allclose(_values(got_d, d, dtype), ref_t.grad.numpy(),
                                   rtol=rtol * 10, atol=atol * 10 * x.size / np.prod(d))


@pytest.mark.parametrize("device", GPUS)
@pytest.mark.parametrize("length", [128, 300, 1024, 8192])
def test_rows_of_each_length(device: str, length: int, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_default(monkeypatch)
    rng = np.random.default_rng(length)
    for dtype in FLOATS[device]:
        x = rng.uniform(-3, 5, (3, length))
        _run_and_check(device, dtype, x, 1, weight=True, bias=True, seed=length)


@pytest.mark.parametrize("device", GPUS)
@pytest.mark.parametrize("weight,bias", [(False, False), (True, False), (False, True)])
def test_two_dims_and_optional_affine(device: str, weight: bool, bias: bool,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    _no_default(monkeypatch)
    x = np.random.default_rng(2).standard_normal((2, 3, 8, 40)) * 4 + 100  # mean far from 0
    _run_and_check(device, "float32", x, 2, weight, bias, seed=2)


@pytest.mark.parametrize("device", GPUS)
@pytest.mark.parametrize("rows", [19, 16, 5])
def test_backward_cubes_walking_several_rows(device: str, rows: int,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Cubes of 8, 4 or 2 rows (fewer cubes asked for), the last one partly past the rows:
    the input gradients and the weight's and bias's column sums as torch's."""
    _no_default(monkeypatch)
    monkeypatch.setattr(ln, "BACKWARD_MIN_CUBES", 2)
    x = np.random.default_rng(rows).standard_normal((rows, 200)) * 2 - 1
    _run_and_check(device, "float32", x, 1, True, True, seed=rows)
    _run_and_check(device, "float32", x, 1, False, True, seed=rows)


@pytest.mark.parametrize("device", GPUS)
def test_strided_input(device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A transposed and a sliced input (copied dense first) give torch's values."""
    _no_default(monkeypatch)
    rng = np.random.default_rng(3)
    data = _rounded(rng.standard_normal((200, 6)), "float32")
    _run_and_check(device, "float32", data.T.copy(), 1, True, True, seed=3,
                   view=(data, lambda t: t.swap_dims(0, 1)))
    wide = _rounded(rng.standard_normal((4, 600)), "float32")
    _run_and_check(device, "float32", wide[:, 100:400], 1, True, False, seed=3,
                   view=(wide, lambda t: t[:, 100:400]))


@pytest.mark.parametrize("device", GPUS)
def test_nan_and_inf_rows(device: str) -> None:
    """A NaN or inf in a row makes that row's outputs NaN (as torch) and its mean NaN or inf;
    other rows are exact; a constant row normalises to 0 (variance 0 + eps)."""
    backend = _backend(device)
    x = np.random.default_rng(4).standard_normal((4, 256)).astype(np.float32)
    x[0, 7], x[1, 200], x[2] = np.nan, np.inf, 5.0
    px = _upload(backend, x, "float32")
    assert px is not None
    out, mean, rstd = backend.layer_norm(px, None, None, 1, 1e-5)
    want = torch.nn.functional.layer_norm(torch.from_numpy(x), (256,), eps=1e-5).numpy()
    got = _values(out, x.shape, "float32")
    assert np.isnan(got[:2]).all() and np.isnan(want[:2]).all()
    np.testing.assert_allclose(got[2:], want[2:], rtol=1e-5, atol=1e-5)
    # NaN, inf, ...; a mean near 0 within rounding of the row's values (the first element
    # plus the mean of the differences from it)
    np.testing.assert_allclose(_values(mean, (4, 1), "float32")[:, 0],
                               x.astype(np.float64).mean(1), rtol=1e-6, atol=2e-7)


@pytest.mark.parametrize("device", GPUS)
def test_short_rows_take_the_default(device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows under `softmax_rows.MIN_LENGTH` run the protocol's composite default, with torch's
    values (the cpu runtime has its own rows kernels: test_cube_norm_rows_cpu.py)."""
    calls: list[str] = []
    real = Backend.layer_norm

    def counted(*args: Any) -> Any:
        calls.append("default")
        return real(*args)

    monkeypatch.setattr(Backend, "layer_norm", counted)
    x = np.random.default_rng(5).standard_normal((5, 16))
    _run_and_check(device, "float32", x, 1, True, True, seed=5)
    assert calls == ["default"]


@pytest.mark.parametrize("dtype", [DType.float32, DType.float16, DType.bfloat16,
                                   DType.float64])
def test_kernels_generate_cuda_source(dtype: DType) -> None:
    dtypes = (cube_dtype("layer_norm", dtype), cube_dtype("layer_norm", ln._acc(dtype)))
    x = np.zeros(512, dtype.numpy)
    s = np.zeros(2, dtype.numpy)
    src = ln.forward_kernel(dtypes, 256, 2, True, True, True, True).source(
        "cuda", 256, x, x[:256], x[:256], x, s, s, np.uint32(512), ln._acc(dtype).numpy.type(1))
    assert "__shared__" in src
    acc = np.zeros(512, ln._acc(dtype).numpy)
    src = ln.backward_kernel(dtypes, 256, 2, True, False, True, True, 8).source(
        "cuda", 256, x, x[:256], s, s, x, x, acc, acc, np.uint32(512), np.uint32(1))
    assert "__shared__" in src


@pytest.mark.parametrize("device", GPUS)
def test_public_api_and_autodiff_run_the_rows_kernels(device: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """burn.functional.layer_norm on `<device>+autodiff` (the composite defaults refused):
    the output and the gradients of x, weight and bias against torch."""
    _no_default(monkeypatch)
    import burn.functional as F

    rng = np.random.default_rng(6)
    x, w, b = rng.standard_normal((4, 3, 160)), rng.standard_normal(160), rng.standard_normal(160)
    grad_device = burn.Device(f"{device}+autodiff")
    leaves = [burn.tensor(a, device=grad_device, dtype=burn.float32).require_grad()
              for a in (x, w, b)]
    y = F.layer_norm(leaves[0], 160, leaves[1], leaves[2])
    grads = (y * y).sum().backward()
    t_leaves = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    ty = torch.nn.functional.layer_norm(t_leaves[0], (160,), t_leaves[1], t_leaves[2])
    (ty * ty).sum().backward()
    assert tuple(y.shape) == tuple(ty.shape) and y.dtype == burn.float32
    np.testing.assert_allclose(y.to_numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    for leaf, t_leaf in zip(leaves, t_leaves, strict=True):
        got = leaf.grad(grads)
        assert got is not None and t_leaf.grad is not None
        assert tuple(got.shape) == tuple(t_leaf.grad.shape)
        np.testing.assert_allclose(got.to_numpy(), t_leaf.grad.numpy(), rtol=1e-3, atol=1e-3)
