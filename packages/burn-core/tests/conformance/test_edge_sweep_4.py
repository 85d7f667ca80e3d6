"""Edge inputs of a fourth sweep, against torch: gradients of extremes over NaN, of products
and running products through zeros, infinities and NaN."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burn

from .reference import T, check_backward, check_forward, held

NAN, INF = float("nan"), float("inf")

#: [2, 3] inputs of max / min: NaN once, NaN twice (in both rows), ties without NaN, infinities.
EXTREME_INPUTS = {
    "one_nan": [[3.0, NAN, 1.0], [0.5, -2.0, 4.0]],
    "two_nans": [[3.0, NAN, 1.0], [NAN, -2.0, INF]],
    "ties": [[1.0, 3.0, 3.0], [3.0, -1.0, 3.0]],
    "infinities": [[-INF, INF, 1.0], [INF, -INF, -INF]],
}


@pytest.mark.op("max")
@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("values", list(EXTREME_INPUTS))
def test_full_extreme_splits_its_gradient_between_ties_and_nans(
        op: str, values: str, grad_device: burn.Device, rng: np.random.Generator) -> None:
    """max() / min() over every element send the gradient evenly to the elements equal to the
    result, and to the NaNs when the result is NaN (torch's evenly_distribute_backward)."""
    x = T(np.array(EXTREME_INPUTS[values]), held("float64", grad_device), "transposed")
    check_backward(lambda a: getattr(a, op)(), lambda a: getattr(a, op)(), [x], grad_device,
                   rng)


@pytest.mark.op("max_dim_with_indices")
@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("values", list(EXTREME_INPUTS))
@pytest.mark.parametrize("dim", [0, 1])
def test_extreme_along_a_dim_sends_its_gradient_to_the_first_nan_or_tie(
        op: str, values: str, dim: int, device: burn.Device, grad_device: burn.Device,
        rng: np.random.Generator) -> None:
    """max(dim) / max_dim_with_indices pick the first NaN of a line (else the first extreme),
    values and indices as torch.max(dim); the gradient goes there alone, as torch.max(dim)'s
    (torch.amax gives every element of a line holding NaN a NaN gradient)."""
    x = T(np.array(EXTREME_INPUTS[values]), held("float64", device), "transposed")
    check_forward(lambda a: getattr(a, f"{op}_dim_with_indices")(dim),
                  lambda a: tuple(getattr(torch, op)(a, dim, keepdim=True)), [x], device)
    check_backward(lambda a: getattr(a, op)(dim), lambda a: getattr(torch, op)(a, dim).values,
                   [x], grad_device, rng)
