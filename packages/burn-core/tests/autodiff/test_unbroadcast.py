"""Gradients of broadcast operands (`ops.common.unbroadcast`) against torch: leading dims
(a bias's batch and sequence dims), 0-d and empty operands, size-1 dims between summed ones,
broadcast dims between kept ones."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burn

#: (shape of a, shape of b)
CASES = [((5, 6, 7), (7,)), ((5, 1, 6, 7), (7,)), ((4, 5, 6), (1, 5, 1)),
         ((3, 4, 5, 6), (4, 1, 6)), ((2, 3, 4, 5), (1, 1, 5)), ((2, 3), ()),
         ((0, 2, 3), (3,)), ((0, 3), (3,)), ((2, 3), (2, 3))]


@pytest.mark.parametrize("device", ["numpy", "cpu"])
@pytest.mark.parametrize("a_shape,b_shape", CASES)
def test_broadcast_operand_gradients_match_torch(device: str, a_shape: tuple[int, ...],
                                                 b_shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    dev = burn.Device(device).autodiff()
    x, y = (burn.tensor(v, dtype=burn.float64, device=dev).require_grad() for v in (a, b))
    xt, yt = (torch.tensor(v, requires_grad=True) for v in (a, b))
    out = x * y  # the rule of mul scales the gradient, then unbroadcasts it
    weights = rng.standard_normal(out.shape)
    loss = (out * burn.tensor(weights, dtype=burn.float64, device=dev)).sum()
    grads = loss.backward()
    ((xt * yt) * torch.tensor(weights)).sum().backward()
    for got, want in ((x.grad(grads), xt.grad), (y.grad(grads), yt.grad)):
        assert got is not None and want is not None
        assert got.shape == tuple(want.shape) and got.dtype == burn.float64
        np.testing.assert_allclose(got.to_numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("device", ["numpy", "cpu"])
@pytest.mark.parametrize("a_shape,b_shape", [((4, 5, 6), (6,)), ((3, 4, 5, 6), (4, 1, 6)),
                                             ((4, 5, 6), (1, 1, 6))])
def test_gradients_of_a_transposed_output_match_torch(device: str, a_shape: tuple[int, ...],
                                                      b_shape: tuple[int, ...]) -> None:
    """The gradient reaching unbroadcast is a transposed (non-contiguous) view: the merged
    leading dims are reshaped from it."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    dev = burn.Device(device).autodiff()
    x, y = (burn.tensor(v, dtype=burn.float64, device=dev).require_grad() for v in (a, b))
    xt, yt = (torch.tensor(v, requires_grad=True) for v in (a, b))
    weights = rng.standard_normal((a_shape[1], a_shape[0], *a_shape[2:]))
    loss = ((x + y).swap_dims(0, 1) * burn.tensor(weights, dtype=burn.float64, device=dev)).sum()
    grads = loss.backward()
    ((xt + yt).transpose(0, 1) * torch.tensor(weights)).sum().backward()
    for got, want in ((x.grad(grads), xt.grad), (y.grad(grads), yt.grad)):
        assert got is not None and want is not None
        assert got.shape == tuple(want.shape) and got.dtype == burn.float64
        np.testing.assert_allclose(got.to_numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_a_bias_gradient_over_leading_dims_is_one_reduction(monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """[batch, seq, d] + [d]: the bias's gradient sums the merged [batch * seq, d] once."""
    dev = burn.Device("numpy").autodiff()
    inner = dev.backend.inner
    calls: list[tuple[tuple[int, ...], int]] = []
    original = inner.float_sum_dim

    def counted(x: object, dim: int) -> object:
        calls.append((tuple(inner.shape(x)), dim))
        return original(x, dim)

    monkeypatch.setattr(inner, "float_sum_dim", counted)
    x = burn.ones(4, 5, 6, device=dev)
    bias = burn.zeros(6, device=dev).require_grad()
    grads = (x + bias).sum().backward()
    got = bias.grad(grads)
    assert got is not None and got.shape == (6,)
    np.testing.assert_array_equal(got.to_numpy(), np.full(6, 20.0))
    assert calls == [((20, 6), 0)]
