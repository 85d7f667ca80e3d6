"""Max pooling of the NumPy backend against PyTorch: values, indices (first maximum, NaN wins)
and the backward, with overlapping and non-overlapping windows."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from burn.backend.options import PoolOptions
from burn.backends.numpy import NumpyBackend

B = NumpyBackend()
SETTINGS = [  # kernel, stride, padding, dilation, ceil_mode
    ((2, 2), (2, 2), (0, 0), (1, 1), False),
    ((3, 2), (1, 2), (1, 0), (1, 1), False),
    ((3, 3), (2, 2), (1, 1), (2, 1), True),
    ((2, 2), (3, 3), (0, 0), (1, 1), True),
]


def _input() -> np.ndarray:
    rng = np.random.default_rng(0)
    x = rng.integers(-3, 4, (2, 3, 9, 10)).astype(np.float32)  # many ties
    x[0, 0, 1, 1] = np.nan
    x[0, 1, 4, :] = -np.inf
    x[1, 2, 0, 0] = np.inf
    return x


@pytest.mark.parametrize("setting", SETTINGS, ids=[str(s[:2]) for s in SETTINGS])
def test_max_pool_and_backward_match_torch(setting: tuple) -> None:
    kernel, stride, padding, dilation, ceil_mode = setting
    x = _input()
    options = PoolOptions(kernel, stride, padding, dilation, ceil_mode)
    y, indices = B.max_pool_with_indices(x, options)
    ref, ref_indices = torch.nn.functional.max_pool2d(
        torch.from_numpy(x), kernel, stride, padding, dilation, ceil_mode, return_indices=True)
    assert y.shape == tuple(ref.shape) and y.dtype == np.float32 and indices.dtype == np.int64
    np.testing.assert_array_equal(y, ref.numpy())
    np.testing.assert_array_equal(indices, ref_indices.numpy())
    grad = np.random.default_rng(1).standard_normal(y.shape).astype(np.float32)
    gx = B.max_pool_backward(x, indices, grad, options)
    xt = torch.from_numpy(x).requires_grad_()
    torch.nn.functional.max_pool2d(xt, kernel, stride, padding, dilation, ceil_mode).backward(
        torch.from_numpy(grad))
    assert xt.grad is not None and gx.shape == x.shape and gx.dtype == np.float32
    np.testing.assert_allclose(gx, xt.grad.numpy(), rtol=1e-6, atol=1e-6)
