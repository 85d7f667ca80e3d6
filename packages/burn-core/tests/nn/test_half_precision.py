"""float16 layers whose intermediate values pass float16's range (65504) while their results
fit: computed as torch's (in float32, or scaled first), against torch in half precision."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burn
import burn.functional as F
from burn import nn

torch.set_num_threads(1)
DEVICES = ["numpy", "cpu", "cpu+fusion"]


def half(array: np.ndarray, device: str) -> burn.Tensor:
    return burn.tensor(array, device=device).cast(burn.float16)


def check(got: burn.Tensor, want: torch.Tensor, atol: float = 2e-3) -> None:
    assert got.shape == tuple(want.shape) and got.dtype == burn.float16
    values = got.cast(burn.float32).to_numpy()
    assert np.isfinite(values).all()
    np.testing.assert_allclose(values, want.float().detach().numpy(), rtol=2e-3, atol=atol)


@pytest.mark.parametrize("device", DEVICES)
def test_rms_norm_of_values_whose_squares_overflow(device: str) -> None:
    x = np.array([[300.0, -20.0, 5.0, 1.0], [0.5, -0.25, 1000.0, 2.0]], np.float32)
    layer = nn.RmsNorm(4, eps=1e-5, device=device).map(lambda _, p: p.cast(burn.float16))
    check(layer(half(x, device)), torch.nn.RMSNorm(4, eps=1e-5).half()(torch.tensor(x).half()))


@pytest.mark.parametrize("device", DEVICES)
def test_batch_norm_statistics_past_float16_range(device: str) -> None:
    """Training normalises with a batch variance of 84071 and folds it into running_var
    (8408 after one step of momentum 0.1); eval then normalises with it."""
    x = np.array([[[-400.0, 10.0]], [[300.0, 50.0]]], np.float32)
    layer = nn.BatchNorm(1, device=device).map(lambda _, p: p.cast(burn.float16))
    reference = torch.nn.BatchNorm1d(1).half()
    check(layer(half(x, device)), reference(torch.tensor(x).half()))
    assert layer.running_var.dtype == burn.float16
    np.testing.assert_allclose(layer.running_var.cast(burn.float32).to_numpy(),
                               reference.running_var.float().numpy(), rtol=1e-3)
    np.testing.assert_allclose(layer.running_mean.cast(burn.float32).to_numpy(),
                               reference.running_mean.float().numpy(), rtol=1e-3)
    layer.eval()
    reference.eval()
    check(layer(half(x, device)), reference(torch.tensor(x).half()))


@pytest.mark.parametrize("device", DEVICES)
def test_attention_whose_raw_scores_overflow(device: str) -> None:
    """q k^T of 64 dims of 40 is 102400; scaled by 1 / 8 it fits."""
    q = np.full((1, 1, 2, 64), 40.0, np.float32)
    q[0, 0, 1] *= -1
    k = np.full((1, 1, 3, 64), 40.0, np.float32)
    k[0, 0, 1] *= 0.5
    k[0, 0, 2] *= -1
    v = np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4)
    want = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(a).half() for a in (q, k, v)))
    check(F.attention(*(half(a, device) for a in (q, k, v))), want)
