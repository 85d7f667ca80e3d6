"""Gradients at kinks and saturated points, against torch: relu at 0, atan2 at the origin,
binary cross-entropy at probabilities 0 and 1 (finite, never nan)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burn
import burn.functional as F

DEV = burn.Device("numpy").autodiff()
DTYPES = [(burn.float32, torch.float32), (burn.float64, torch.float64)]


def _leaf(values: np.ndarray, dtype: burn.DType) -> tuple[burn.Tensor, torch.Tensor]:
    tdt = torch.float32 if dtype == burn.float32 else torch.float64
    return (burn.tensor(values, dtype=dtype, device=DEV).require_grad(),
            torch.tensor(values, dtype=tdt, requires_grad=True))


def _check(got: burn.Tensor | None, want: torch.Tensor | None) -> None:
    assert got is not None and want is not None
    assert got.shape == tuple(want.shape)
    assert got.dtype.value == str(want.dtype).removeprefix("torch.")
    np.testing.assert_allclose(got.to_numpy(), want.numpy(), rtol=1e-6, atol=0)


@pytest.mark.parametrize("dtype,_t", DTYPES)
def test_relu_gradient_is_zero_at_zero(dtype: burn.DType, _t: torch.dtype) -> None:
    x, xt = _leaf(np.array([-1.0, 0.0, -0.0, 2.0, np.nan]), dtype)
    grads = (F.relu(x) * 3.0).sum().backward()
    torch.nn.functional.relu(xt).mul(3.0).sum().backward()
    _check(x.grad(grads), xt.grad)


@pytest.mark.parametrize("dtype,_t", DTYPES)
def test_atan2_gradient_at_origin(dtype: burn.DType, _t: torch.dtype) -> None:
    a, at = _leaf(np.array([0.0, 1.0, 0.0, -2.0]), dtype)
    b, bt = _leaf(np.array([0.0, 0.0, 3.0, -1.0]), dtype)
    grads = a.atan2(b).sum().backward()
    torch.atan2(at, bt).sum().backward()
    _check(a.grad(grads), at.grad)
    _check(b.grad(grads), bt.grad)


@pytest.mark.parametrize("dtype,_t", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy_saturated(dtype: burn.DType, _t: torch.dtype,
                                        reduction: str) -> None:
    saturated = float(torch.sigmoid(torch.tensor(20.0)))  # exactly 1.0 in float32
    p, pt = _leaf(np.array([0.0, 1.0, 1.0, 0.0, 0.3, saturated, 1e-30, 0.999]), dtype)
    y, yt = _leaf(np.array([1.0, 1.0, 0.0, 0.0, 0.6, 0.0, 1.0, 0.5]), dtype)
    loss = F.binary_cross_entropy(p, y, reduction=reduction)  # type: ignore[arg-type]
    want = torch.nn.functional.binary_cross_entropy(pt, yt, reduction=reduction)
    _check(loss, want.detach())
    upstream = np.linspace(0.5, 1.5, num=8) if reduction == "none" else np.array(1.0)
    grads = (loss * burn.tensor(upstream, dtype=dtype, device=DEV)).sum().backward()
    (want * torch.tensor(upstream, dtype=want.dtype)).sum().backward()
    _check(p.grad(grads), pt.grad)
    # torch's target gradient is log(1 - p) - log(p) unclamped (+-inf at 0 / 1); burn clamps
    # both logs at -100 as the forward does (docs/differences.md), so it stays finite.
    gy = y.grad(grads)
    assert gy is not None and np.isfinite(gy.to_numpy()).all()
    finite = np.isfinite(yt.grad.numpy())
    np.testing.assert_allclose(gy.to_numpy()[finite], yt.grad.numpy()[finite], rtol=1e-5)
