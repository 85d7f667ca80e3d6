"""softmax and log_softmax under Autodiff: one forward op each with a direct backward rule,
gradients equal to PyTorch's (masked -inf entries included)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burn
import burn.functional as F

OPS = {"softmax": (F.softmax, torch.softmax), "log_softmax": (F.log_softmax, torch.log_softmax)}


@pytest.mark.parametrize("dim", [-1, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(OPS))
def test_softmax_gradients_are_direct_and_match_torch(name: str, dtype: type, dim: int) -> None:
    ours, theirs = OPS[name]
    device = burn.Device("numpy").profile().autodiff()
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 5, 7)) * 4).astype(dtype)
    x[0, 1, 2] = -np.inf  # a masked entry
    g = rng.standard_normal(x.shape).astype(dtype)
    xb = burn.tensor(x, device=device).require_grad()
    with burn.profile() as prof:
        out = ours(xb, dim)
    assert [r.record.name for r in prof.records] == [name]
    with burn.profile() as prof:
        grads = (out * burn.tensor(g, device=device)).sum().backward()
    assert {r.record.name for r in prof.records}.isdisjoint({"float_div", "float_log"})
    xt = torch.from_numpy(x).requires_grad_()
    theirs(xt, dim).backward(torch.from_numpy(g))
    grad = xb.grad(grads)
    assert grad is not None and xt.grad is not None
    assert grad.shape == x.shape and grad.to_numpy().dtype == np.dtype(dtype)
    np.testing.assert_allclose(out.to_numpy(), theirs(torch.from_numpy(x), dim).numpy(),
                               rtol=1e-5, atol=1e-6)
    tol = 1e-5 if dtype is np.float32 else 1e-12
    np.testing.assert_allclose(grad.to_numpy(), xt.grad.numpy(), rtol=tol, atol=tol)
