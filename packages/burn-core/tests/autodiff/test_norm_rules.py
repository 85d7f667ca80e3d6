"""LayerNorm and GroupNorm under Autodiff: the normalisation is the backend's `layer_norm` op,
differentiated by one `layer_norm_backward` (no per-op chain in backward), values and gradients
equal to PyTorch's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import burn
from burn import nn

RNG = np.random.default_rng(5)


def _layers(device: burn.Device) -> dict[str, tuple[Any, Any, tuple[int, ...]]]:
    return {
        "layer": (nn.LayerNorm((4, 6), device=device), torch.nn.LayerNorm((4, 6)), (3, 5, 4, 6)),
        "group": (nn.GroupNorm(2, 6, device=device), torch.nn.GroupNorm(2, 6), (3, 6, 5)),
    }


@pytest.mark.parametrize("kind", ["layer", "group"])
def test_norm_backward_is_direct_and_matches_torch(kind: str) -> None:
    device = burn.Device("numpy").profile().autodiff()
    layer, tlayer, shape = _layers(device)[kind]
    weight = RNG.standard_normal(tlayer.weight.shape).astype(np.float32)
    bias = RNG.standard_normal(tlayer.bias.shape).astype(np.float32)
    layer.weight.set_(burn.tensor(weight, device=device))
    layer.bias.set_(burn.tensor(bias, device=device))
    with torch.no_grad():
        tlayer.weight.copy_(torch.from_numpy(weight))
        tlayer.bias.copy_(torch.from_numpy(bias))
    x = (RNG.standard_normal(shape) * 3 + 1).astype(np.float32)
    g = RNG.standard_normal(shape).astype(np.float32)
    xb = burn.tensor(x, device=device).require_grad()
    out = layer(xb)
    with burn.profile() as prof:
        grads = (out * burn.tensor(g, device=device)).sum().backward()
    backward = [r.record.name for r in prof.records]
    # one fused backward; the chained rules would take means and spread their grads
    assert backward.count("layer_norm_backward") == 1
    assert "float_mean_dim" not in backward and "float_div_scalar" not in backward
    xt = torch.from_numpy(x).requires_grad_()
    tout = tlayer(xt)
    tout.backward(torch.from_numpy(g))
    assert out.shape == tuple(tout.shape) and out.dtype == burn.float32
    np.testing.assert_allclose(out.to_numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-5)
    pairs = [(xb, xt), (layer.weight, tlayer.weight), (layer.bias, tlayer.bias)]
    for ours, theirs in pairs:
        grad = ours.grad(grads)
        assert grad is not None and theirs.grad is not None
        assert grad.shape == tuple(theirs.grad.shape)
        np.testing.assert_allclose(grad.to_numpy(), theirs.grad.numpy(), rtol=1e-4, atol=1e-5)
