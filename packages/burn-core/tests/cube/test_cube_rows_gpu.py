"""The streaming GPU rows kernels (`rows_gpu`: a cube per row, units walking its columns, the
row re-read for the result) against torch (float64) on wgpu (Mesa llvmpipe here) and cuda
where there is one: layer norm with and without weight and bias, softmax and log-softmax, rows
that are and are not a multiple of a step, several schedules, offsets far from the spread,
-inf runs and whole -inf rows, float16 / bfloat16 / float64; CUDA source generation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burn
from burn.backends.cube import CubeTensor, rows_gpu
from burn.backends.cube.backend import CubeBackend, CudaBackend
from burn.backends.cube.layer_norm_rows import _dtypes
from burn.backends.cube.tensor import host_array
from burn.dtype import DType

GPUS = ["wgpu", *(["cuda"] if CudaBackend.unavailable_reason() is None else [])]
FLOATS = {"wgpu": ["float32", "float16"], "cuda": ["float32", "float16", "bfloat16", "float64"]}
TOL = {"float32": (2e-5, 2e-5), "float64": (1e-10, 1e-10), "float16": (1e-2, 1e-2),
       "bfloat16": (5e-2, 5e-2)}
#: (rows, length, units, unroll): exact steps, partial steps, rows shorter than a step
SHAPES = [(3, 2048, 256, 4), (5, 1000, 256, 4), (4, 300, 64, 2), (2, 37, 32, 1),
          (3, 4096, 128, 8)]


def _backend(device: str) -> CubeBackend:
    backend = burn.Device(device).backend
    assert isinstance(backend, CubeBackend)
    return backend


def _upload(backend: CubeBackend, data: np.ndarray, dtype: str) -> CubeTensor:
    return burn.tensor(data, device=backend.device, dtype=getattr(burn, dtype))._prim


def _values(t: CubeTensor, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    assert t.shape == shape and t.dtype is getattr(DType, dtype)
    return np.asarray(host_array(t)).astype(np.float64)


def _held(data: np.ndarray, dtype: str) -> torch.Tensor:
    """`data` as the device holds it in `dtype`, as a float64 torch tensor."""
    return torch.from_numpy(data).to(getattr(torch, dtype)).double()


def _cases() -> list[tuple[str, str]]:
    return [(device, dtype) for device in GPUS for dtype in FLOATS[device]]


@pytest.mark.parametrize(("device", "dtype"), _cases())
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("affine", [(True, True), (False, False), (True, False)])
def test_layer_norm_matches_torch(device: str, dtype: str, shape: tuple[int, int, int, int],
                                  affine: tuple[bool, bool]) -> None:
    backend = _backend(device)
    m, n, units, unroll = shape
    rng = np.random.default_rng(m * n)
    offset = 1000.0 if dtype in ("float32", "float64") else 10.0
    x = (rng.standard_normal((m, n)) * 3 + offset).astype(np.float32)
    w, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    weight = _upload(backend, w, dtype) if affine[0] else None
    bias = _upload(backend, b, dtype) if affine[1] else None
    out, mean, rstd = rows_gpu.layer_norm(backend, _upload(backend, x, dtype), weight, bias,
                                          (m, 1), n, 1e-5, units, unroll)
    tx = _held(x, dtype)
    want = torch.nn.functional.layer_norm(tx, (n,), _held(w, dtype) if affine[0] else None,
                                          _held(b, dtype) if affine[1] else None, 1e-5)
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(_values(out, (m, n), dtype), want.numpy(), rtol, atol * 10)
    var = tx.var(1, unbiased=False)
    np.testing.assert_allclose(_values(mean, (m, 1), dtype)[:, 0], tx.mean(1).numpy(), rtol, atol)
    np.testing.assert_allclose(_values(rstd, (m, 1), dtype)[:, 0], (var + 1e-5).rsqrt().numpy(),
                               rtol * 10, atol)


@pytest.mark.parametrize(("device", "dtype"), _cases())
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_matches_torch(device: str, dtype: str, shape: tuple[int, int, int, int],
                               log: bool) -> None:
    backend = _backend(device)
    m, n, units, unroll = shape
    x = (np.random.default_rng(n).standard_normal((m, n)) * 10).astype(np.float32)
    x[0, : n // 2] = -np.inf  # units whose elements are all -inf
    if m > 2:
        x[2] = -np.inf  # a whole -inf row: NaN, as torch
    xt = _upload(backend, x, dtype)
    out = backend.empty(xt.shape, xt.dtype)
    rows_gpu.softmax(backend, xt, out, m, n, log,
                     DType.float64 if dtype == "float64" else DType.float32, units, unroll)
    fn = torch.log_softmax if log else torch.softmax
    want = fn(_held(x, dtype), 1).numpy()
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(_values(out, (m, n), dtype), want, rtol, atol * (100 if log else 1),
                               equal_nan=True)


@pytest.mark.parametrize("dtype", [DType.float32, DType.float16, DType.bfloat16, DType.float64])
def test_kernels_generate_cuda_source(dtype: DType) -> None:
    """Both kernels render as CUDA C for every float dtype, with and without planes."""
    for plane in (False, True):
        for kernel in (rows_gpu.layer_norm_kernel(_dtypes(dtype), 256, 4, plane, False, True,
                                                  True),
                       rows_gpu.softmax_kernel(_dtypes(dtype), 256, 4, plane, False, True)):
            x = np.zeros(1024, dtype.numpy)
            args = ([x, x[:256], x[:256], x, x[:4], x[:4], np.uint32(256),
                     _dtypes(dtype)[1].numpy.type(1e-5)] if "layer" in kernel.name else
                    [x, x, np.uint32(256)])
            src = kernel.source("cuda", 256, *args)
            assert "__global__" in src


def _counted(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Count the calls of `rows_gpu.<name>` (the backend's dispatch reaches it by attribute)."""
    calls: list[int] = []
    run = getattr(rows_gpu, name)

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return run(*args, **kwargs)

    monkeypatch.setattr(rows_gpu, name, counted)
    return calls


@pytest.mark.parametrize("device", GPUS)
def test_backend_takes_streaming_kernels_past_register_rows(device: str,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """Rows longer than the register-held kernels hold (32768) run the streaming kernels from
    the backend's softmax / log_softmax and layer_norm; the layer norm's composite backward
    takes their mean and rstd; 8192-long rows keep the register-held kernels."""
    backend = _backend(device)
    softmaxes, norms = _counted(monkeypatch, "softmax"), _counted(monkeypatch, "layer_norm")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 33000)).astype(np.float32) * 4
    tx = torch.from_numpy(x).double()
    for log, fn in ((False, torch.softmax), (True, torch.log_softmax)):
        got = (backend.log_softmax if log else backend.softmax)(_upload(backend, x, "float32"), 2)
        np.testing.assert_allclose(_values(got, x.shape, "float32"), fn(tx, 2).numpy(),
                                   1e-5, 1e-6 if not log else 1e-4)
    assert len(softmaxes) == 2
    w, b = rng.standard_normal(33000).astype(np.float32), rng.standard_normal(33000).astype(
        np.float32)
    xt, wt, bt = (_upload(backend, a, "float32") for a in (x, w, b))
    out, mean, rstd = backend.layer_norm(xt, wt, bt, 1, 1e-5)
    assert len(norms) == 1 and mean.shape == (2, 3, 1)
    tw, tb = (torch.from_numpy(a).double().requires_grad_() for a in (w, b))
    txg = tx.clone().requires_grad_()
    want = torch.nn.functional.layer_norm(txg, (33000,), tw, tb, 1e-5)
    np.testing.assert_allclose(_values(out, x.shape, "float32"), want.detach().numpy(),
                               1e-4, 1e-4)
    g = rng.standard_normal(x.shape).astype(np.float32)
    grads = backend.layer_norm_backward(xt, wt, bt, mean, rstd, _upload(backend, g, "float32"),
                                        1)
    want_grads = torch.autograd.grad(want, (txg, tw, tb), torch.from_numpy(g).double())
    for got_grad, want_grad in zip(grads, want_grads, strict=True):
        assert got_grad is not None
        np.testing.assert_allclose(_values(got_grad, tuple(want_grad.shape), "float32"),
                                   want_grad.numpy(), 1e-3, 1e-3)
    short = _upload(backend, x[..., :8192], "float32")
    backend.softmax(short, 2)
    backend.layer_norm(short, None, None, 1, 1e-5)
    assert len(softmaxes) == 2 and len(norms) == 1
