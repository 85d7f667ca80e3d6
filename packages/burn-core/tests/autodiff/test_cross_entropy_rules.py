"""cross_entropy under Autodiff: class-index targets run the backend's `cross_entropy` op and one
`cross_entropy_backward`; a probability target is one node with direct rules for the logits and
the target; gradients equal to PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import burn
import burn.functional as F
from burn.errors import AutodiffError, DTypeError

RNG = np.random.default_rng(3)
WEIGHT = np.array([0.5, 2.0, 1.0, 1.5], dtype=np.float32)


def _profiled() -> burn.Device:
    return burn.Device("numpy").profile().autodiff()


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
def test_index_target_backward_is_direct(weighted: bool, smoothing: float) -> None:
    device = _profiled()
    logits = RNG.standard_normal((6, 4, 3)).astype(np.float32)
    target = RNG.integers(0, 4, (6, 3))
    target[1, 2] = -100
    x = burn.tensor(logits, device=device).require_grad()
    w = burn.tensor(WEIGHT, device=device) if weighted else None
    with burn.profile() as prof:
        loss = F.cross_entropy(x, burn.tensor(target, device=device), w,
                               label_smoothing=smoothing)
    forward = [r.record.name for r in prof.records]
    assert forward.count("cross_entropy") == 1 and "log_softmax" not in forward
    with burn.profile() as prof:
        grads = loss.backward()
    backward = [r.record.name for r in prof.records]
    # one fused backward: no log_softmax rule, no scatter of a gather's grad
    assert backward.count("cross_entropy_backward") == 1
    assert "float_scatter" not in backward and "float_exp" not in backward
    xt = torch.from_numpy(logits).requires_grad_()
    want = TF.cross_entropy(xt, torch.from_numpy(target), None if w is None else
                            torch.from_numpy(WEIGHT), label_smoothing=smoothing)
    want.backward()
    grad = x.grad(grads)
    assert loss.shape == () and loss.dtype == burn.float32
    assert grad is not None and xt.grad is not None and grad.shape == logits.shape
    np.testing.assert_allclose(loss.to_numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad.to_numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_probability_target_alone_gets_its_gradient() -> None:
    device = burn.Device("numpy").autodiff()
    logits = RNG.standard_normal((5, 4)).astype(np.float32)
    probs = np.abs(RNG.standard_normal((5, 4))).astype(np.float32)
    y = burn.tensor(probs, device=device).require_grad()
    loss = F.cross_entropy(burn.tensor(logits, device=device), y, reduction="sum",
                           label_smoothing=0.1)
    grad = y.grad(loss.backward())
    yt = torch.from_numpy(probs).requires_grad_()
    TF.cross_entropy(torch.from_numpy(logits), yt, reduction="sum",
                     label_smoothing=0.1).backward()
    assert grad is not None and yt.grad is not None and grad.shape == probs.shape
    np.testing.assert_allclose(grad.to_numpy(), yt.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_probability_target_of_another_dtype_is_refused() -> None:
    device = burn.Device("numpy").autodiff()
    x = burn.tensor(RNG.standard_normal((2, 3)).astype(np.float32), device=device)
    y = burn.tensor(np.full((2, 3), 1 / 3), device=device)  # float64
    with pytest.raises(DTypeError, match="cross_entropy"):
        F.cross_entropy(x, y)


def test_class_weights_that_require_grad_are_refused() -> None:
    """torch has no derivative for cross_entropy's class weights and refuses tracked ones."""
    device = burn.Device("numpy").autodiff()
    logits = RNG.standard_normal((5, 4)).astype(np.float32)
    target = burn.tensor(np.array([0, 1, 2, 3, 1]), device=device)
    weight = burn.tensor(WEIGHT, device=device).require_grad()
    with pytest.raises(AutodiffError, match="cross_entropy: class weights"):
        F.cross_entropy(burn.tensor(logits, device=device).require_grad(), target, weight)
    with pytest.raises(RuntimeError, match="weight"):
        TF.cross_entropy(torch.from_numpy(logits), torch.tensor([0, 1, 2, 3, 1]),
                         torch.from_numpy(WEIGHT).requires_grad_())
    with burn.no_grad():  # nothing is recorded: nothing to refuse
        out = F.cross_entropy(burn.tensor(logits, device=device), target, weight)
    assert out.shape == () and out.dtype == burn.float32
