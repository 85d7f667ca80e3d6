"""Gradients at ties of the values-only extremes, against torch (found by edge sweep 2; the
fix needs an autodiff rule, the lead's area: xfail until then)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burn

DEV = burn.Device("numpy").autodiff()


@pytest.mark.xfail(strict=True, reason="max(dim) / min(dim) (torch.amax / amin) reduce through "
                   "max_dim_with_indices, whose rule sends the gradient to one index; torch "
                   "splits it evenly between ties, as this package's full max() already does "
                   "(Autodiff._extreme): needs a values-only per-dim rule in burn.autodiff")
@pytest.mark.parametrize("op", ["max", "min"])
def test_amax_along_a_dim_splits_the_gradient_between_ties(op: str) -> None:
    data = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0], [-1.0, -1.0, -1.0]])
    x = burn.tensor(data, device=DEV).require_grad()
    xt = torch.tensor(data, requires_grad=True)
    grads = getattr(x, op)(1).sum().backward()
    getattr(xt, "a" + op)(1).sum().backward()
    got = x.grad(grads)
    assert got is not None
    np.testing.assert_allclose(got.to_numpy(), xt.grad.numpy())
