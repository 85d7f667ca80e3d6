"""Exact GELU under Autodiff: the backward reads cdf(x) back from the saved output (no erf
recomputed), with torch's gradient across the range, 0 and large magnitudes included."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burn
import burn.functional as F


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exact_gelu_backward_skips_erf_and_matches_torch(dtype: type) -> None:
    device = burn.Device("numpy").profile().autodiff()
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.standard_normal(200) * 3,
                        [0.0, -0.0, 1e-30, -1e-30, 1e-6, -1e-6, -9.0, -20.0, -40.0, 9.0,
                         40.0]]).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    xb = burn.tensor(x, device=device).require_grad()
    out = F.gelu(xb)
    with burn.profile() as prof:
        grads = (out * burn.tensor(g, device=device)).sum().backward()
    assert "float_erf" not in {r.record.name for r in prof.records}
    xt = torch.from_numpy(x).requires_grad_()
    torch.nn.functional.gelu(xt).backward(torch.from_numpy(g))
    grad = xb.grad(grads)
    assert grad is not None and xt.grad is not None
    assert grad.shape == x.shape and grad.to_numpy().dtype == np.dtype(dtype)
    tol = 1e-5 if dtype is np.float32 else 1e-12
    np.testing.assert_allclose(grad.to_numpy(), xt.grad.numpy(), rtol=tol, atol=tol)
