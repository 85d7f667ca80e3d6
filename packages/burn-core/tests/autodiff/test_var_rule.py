"""`var` (and `std` through it) under Autodiff: one node with torch's direct rule
dx = g 2 (x - mean) / (n - correction), values and gradients equal to PyTorch's, also where
`correction` reaches or passes the number of reduced elements (NaN / inf values, gradients
finite or infinite as torch's, not NaN)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import burn

DEVICES = ["numpy", "cpu", "cpu+fusion"]
CASES = [((2, 1), 1), ((2, 2), 1), ((2, 3), -1), ((3, 4, 5), (0, 2)), ((3, 4, 5), None),
         ((4,), 0), ((3, 4), (1, 0)), ((), None), ((0, 3), 0)]


@pytest.mark.parametrize("spec", DEVICES)
@pytest.mark.parametrize("shape,dim", CASES)
@pytest.mark.parametrize("correction", [0, 1, 2, 3])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("op", ["var", "std"])
def test_var_and_std_match_torch_with_any_correction(
        spec: str, shape: tuple[int, ...], dim: int | tuple[int, ...] | None, correction: int,
        keepdim: bool, op: str) -> None:
    rng = np.random.default_rng(len(shape) * 10 + correction)
    x = rng.standard_normal(shape).astype(np.float32)
    xb = burn.tensor(x, device=burn.Device(spec).autodiff()).require_grad()
    out = getattr(xb, op)(dim, correction=correction, keepdim=keepdim)
    tx = torch.tensor(x, requires_grad=True)
    with warnings.catch_warnings():  # (torch warns where correction >= n)
        warnings.simplefilter("ignore")
        tout = (getattr(torch, op)(tx, dim, correction=correction, keepdim=keepdim)
                if dim is not None else getattr(torch, op)(tx, correction=correction))
    if dim is None and keepdim:
        tout = tout.reshape((1,) * len(shape))
    assert out.shape == tuple(tout.shape) and out.dtype == burn.float32
    np.testing.assert_allclose(out.to_numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-6)
    g = rng.standard_normal(tout.shape).astype(np.float32)
    grad = xb.grad((out * burn.tensor(g, device=xb.device)).sum().backward())
    (tout * torch.from_numpy(g)).sum().backward()
    assert grad is not None and tx.grad is not None
    assert grad.shape == shape and grad.dtype == burn.float32
    np.testing.assert_allclose(grad.to_numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_var_is_one_node_of_the_graph() -> None:
    """The variance records one node (its backward does not run the mean's and the square's)."""
    device = burn.Device("numpy").autodiff()
    x = burn.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device=device).require_grad()
    out = x.var(1, keepdim=True)
    node = out._prim.node
    assert node is not None and [p.id for p in node.parents] == [x._prim.node.id]
