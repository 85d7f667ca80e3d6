"""Gradients at ties of the extremes, against torch: max(dim) / min(dim) send a tie's
gradient to the first extreme, as torch.max(dim).values and Burn's max_dim (torch.amax would
split it: docs/differences.md); the full max() / min() split it evenly, as torch's."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burn

DEV = burn.Device("numpy").autodiff()
TIES = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0], [-1.0, -1.0, -1.0]])


@pytest.mark.parametrize("op", ["max", "min"])
def test_extreme_along_a_dim_sends_a_tie_gradient_to_the_first(op: str) -> None:
    x = burn.tensor(TIES, device=DEV).require_grad()
    xt = torch.tensor(TIES, requires_grad=True)
    grads = getattr(x, op)(1).sum().backward()
    getattr(xt, op)(1).values.sum().backward()
    got = x.grad(grads)
    assert got is not None and got.shape == tuple(xt.shape) and got.dtype == burn.float64
    np.testing.assert_array_equal(got.to_numpy(), xt.grad.numpy())


@pytest.mark.parametrize("op", ["max", "min"])
def test_full_extreme_splits_a_tie_gradient(op: str) -> None:
    x = burn.tensor(TIES, device=DEV).require_grad()
    xt = torch.tensor(TIES, requires_grad=True)
    grads = getattr(x, op)().backward()
    getattr(xt, op)().backward()
    got = x.grad(grads)
    assert got is not None and got.shape == tuple(xt.shape)
    np.testing.assert_allclose(got.to_numpy(), xt.grad.numpy())


@pytest.mark.parametrize("device", ["numpy", "cpu", "cpu+fusion"])
@pytest.mark.parametrize("op", ["max", "min"])
def test_full_extreme_with_an_infinite_gradient(op: str, device: str) -> None:
    """The full max() / min() divided by 0 (an infinite gradient): the extreme's ties get inf,
    the other elements 0 as in torch (a mask multiplied by the gradient made them NaN)."""
    dev = burn.Device(device).autodiff()
    x = burn.tensor(TIES.astype(np.float32), device=dev).require_grad()
    xt = torch.tensor(TIES.astype(np.float32), requires_grad=True)
    grads = (getattr(x, op)() / 0.0).backward()
    (getattr(xt, op)() / 0.0).backward()
    got = x.grad(grads)
    assert got is not None and got.shape == tuple(xt.shape) and got.dtype == burn.float32
    np.testing.assert_array_equal(got.to_numpy(), xt.grad.numpy())
