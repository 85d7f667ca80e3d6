"""Gradients of the full max() / min() of inputs holding NaN, against torch: the autodiff rule
`_extreme` counts the NaNs as the ties of a NaN result (test_edge_sweep_4 runs it per backend)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burn

DEV = burn.Device("numpy").autodiff()
WITH_NAN = np.array([[3.0, np.nan, 1.0], [np.nan, -2.0, np.inf]])


@pytest.mark.parametrize("op", ["max", "min"])
def test_full_extreme_of_nan_splits_the_gradient_between_the_nans(op: str) -> None:
    x = burn.tensor(WITH_NAN, device=DEV).require_grad()
    xt = torch.tensor(WITH_NAN, requires_grad=True)
    grads = getattr(x, op)().backward()
    getattr(xt, op)().backward()
    got = x.grad(grads)
    assert got is not None and got.shape == tuple(xt.shape) and got.dtype == burn.float64
    np.testing.assert_array_equal(got.to_numpy(), xt.grad.numpy())  # [[0, .5, 0], [.5, 0, 0]]
