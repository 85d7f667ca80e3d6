"""Exact GELU under Autodiff: the backward reads cdf(x) back from the forward where the inner
backend computes it (`gelu_with_cdf`), else recomputes erf from the input (fusion, a profiled
device), with torch's gradient across the range, 0, tiny, subnormal and large magnitudes
included."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import burn
import burn.functional as F

#: Devices whose inner backend has no `gelu_with_cdf`: the rule recomputes erf.
WITHOUT_CDF = ["numpy+profile", "cpu+fusion"]


@pytest.mark.parametrize("spec", WITHOUT_CDF)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_exact_gelu_backward_without_a_cdf_matches_torch(spec: str, dtype: Any) -> None:
    """Tiny inputs included: a cdf of gelu(x) / x (the rule before) was 0 or 0.6 where gelu(x)
    is subnormal or rounds in float16, against torch's 0.5."""
    device = burn.Device(spec).autodiff()
    rng = np.random.default_rng(7)
    tiny = [6e-8, 3e-7, 1e-6, -1e-6, 1e-4] if dtype is np.float16 else \
        [1e-45, 2e-40, -1e-45, 1e-30, -1e-30, 1e-6, -1e-6]
    x = np.concatenate([rng.standard_normal(200) * 3,
                        [0.0, -0.0, *tiny, -9.0, -20.0, -40.0, 9.0, 40.0]]).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    for _ in range(3):  # (a fusion device's decisions change over repetitions)
        xb = burn.tensor(x, device=device).require_grad()
        grads = (F.gelu(xb) * burn.tensor(g, device=device)).sum().backward()
        xt = torch.from_numpy(x.astype(np.float64)).requires_grad_()
        torch.nn.functional.gelu(xt).backward(torch.from_numpy(g.astype(np.float64)))
        grad = xb.grad(grads)
        assert grad is not None and xt.grad is not None
        assert grad.shape == x.shape and grad.to_numpy().dtype == np.dtype(dtype)
        tol = {np.float16: 2e-2, np.float32: 1e-5, np.float64: 1e-12}[dtype]
        np.testing.assert_allclose(grad.to_numpy(), xt.grad.numpy().astype(dtype), rtol=tol,
                                   atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_numpy_fused_gelu_with_cdf_and_its_backward(dtype: Any) -> None:
    """The NumPy backend's exact GELU with its cdf (used by Autodiff on plain numpy) gives
    `gelu`'s output bit for bit and the cdf torch's gelu implies; its one-op backward from that
    cdf gives torch's gradient (float16 computes in float32 and rounds once), NaN / inf / 0 /
    non-contiguous inputs included."""
    from burn.backends.numpy import NumpyBackend

    inner: Any = NumpyBackend()  # type: ignore[abstract]
    rng = np.random.default_rng(11)
    base = np.concatenate([rng.standard_normal(40_000) * 3,  # several cache blocks
                           [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-30, -40.0, 40.0]])
    x: np.ndarray = base.astype(dtype).reshape(-1, 2)[:, ::-1]  # non-contiguous
    g = rng.standard_normal(x.shape).astype(dtype)
    out, cdf = inner.gelu_with_cdf(x)
    assert out.shape == cdf.shape == x.shape and out.dtype == cdf.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, inner.gelu(x, "none"))
    fused = inner.gelu_backward_from_cdf(x, cdf, g)
    assert fused.shape == x.shape and fused.dtype == np.dtype(dtype)
    x64 = torch.from_numpy(x.astype(np.float64))
    tol = {np.float16: 2e-2, np.float32: 1e-5, np.float64: 1e-12}[dtype]
    finite = np.isfinite(x)
    want_cdf = (0.5 * (1 + torch.erf(x64 / np.sqrt(2)))).numpy()
    np.testing.assert_allclose(cdf[finite], want_cdf[finite], rtol=tol, atol=tol)
    xt = x64.clone().requires_grad_()
    torch.nn.functional.gelu(xt).backward(torch.from_numpy(g.astype(np.float64)))
    assert xt.grad is not None
    np.testing.assert_allclose(fused[finite], xt.grad.numpy()[finite], rtol=tol, atol=tol)
    assert np.array_equal(np.isnan(fused), np.isnan(xt.grad.numpy()))


def test_plain_numpy_autodiff_gelu_grad_matches_torch() -> None:
    device = burn.Device("numpy").autodiff()
    rng = np.random.default_rng(5)
    x: np.ndarray = rng.standard_normal((4, 33, 70)).astype(np.float32)
    g: np.ndarray = rng.standard_normal(x.shape).astype(np.float32)
    xb = burn.tensor(x, device=device).require_grad()
    grads = (F.gelu(xb) * burn.tensor(g, device=device)).sum().backward()
    xt = torch.from_numpy(x).requires_grad_()
    torch.nn.functional.gelu(xt).backward(torch.from_numpy(g))
    grad = xb.grad(grads)
    assert grad is not None and xt.grad is not None
    assert grad.shape == x.shape and grad.to_numpy().dtype == np.float32
    np.testing.assert_allclose(grad.to_numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-5)
