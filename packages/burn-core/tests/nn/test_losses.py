"""Losses against torch: values and gradients, functional forms and Modules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import burn
from burn import nn
from burn.errors import ShapeError, ValueRangeError
from burn.nn import loss as L

torch.set_num_threads(1)
DEV = burn.Device("numpy").autodiff()
RNG = np.random.default_rng(1)


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def check(fn: Callable[..., burn.Tensor], tfn: Callable[..., torch.Tensor],
          inputs: list[np.ndarray], grad_of: tuple[int, ...] = (0,), **kw: Any) -> None:
    """fn(*inputs, **kw) and tfn(*inputs, **kw) agree in shape, value and input gradients."""
    xs = [burn.tensor(a, device=DEV) for a in inputs]
    txs = [torch.tensor(a) for a in inputs]
    for i in grad_of:
        xs[i].require_grad()
        txs[i].requires_grad_(True)
    out, tout = fn(*xs, **kw), tfn(*txs, **kw)
    assert out.shape == tuple(tout.shape) and out.dtype == burn.float32
    np.testing.assert_allclose(out.to_numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-6)
    cot = RNG.standard_normal(out.shape).astype(np.float32)
    grads = (out * burn.tensor(cot, device=DEV)).sum().backward()
    (tout * torch.tensor(cot)).sum().backward()
    for i in grad_of:
        np.testing.assert_allclose(xs[i].grad(grads).to_numpy(), txs[i].grad.numpy(),
                                   rtol=1e-4, atol=1e-6)


REDUCTIONS = ["mean", "sum", "none"]
WEIGHT = np.array([0.5, 2.0, 1.0, 1.5], dtype=np.float32)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_indices(reduction: str, smoothing: float, weighted: bool) -> None:
    target = np.array([0, 3, -100, 2, 1, 3], dtype=np.int64)
    inputs = [randn(6, 4), target] + ([WEIGHT] if weighted else [])
    check(L.cross_entropy, TF.cross_entropy, inputs, reduction=reduction,
          label_smoothing=smoothing)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_spatial_and_ignore_index(reduction: str) -> None:
    target = RNG.integers(0, 4, (2, 3, 5))
    target[0, 1, 2] = 1  # ignored below
    check(L.cross_entropy, TF.cross_entropy, [randn(2, 4, 3, 5), target, WEIGHT],
          reduction=reduction, ignore_index=1, label_smoothing=0.1)


def test_cross_entropy_unbatched() -> None:
    check(L.cross_entropy, TF.cross_entropy, [randn(4), np.array(2)])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_probabilities(reduction: str, smoothing: float) -> None:
    probs = torch.softmax(torch.randn(5, 4), 1).numpy()
    check(L.cross_entropy, TF.cross_entropy, [randn(5, 4), probs, WEIGHT], grad_of=(0, 1),
          reduction=reduction, label_smoothing=smoothing)


def test_cross_entropy_module_and_config() -> None:
    logits, target = randn(6, 4), np.array([0, 1, 2, 3, 0, 1])
    module = nn.CrossEntropyLossConfig(weight=tuple(WEIGHT), label_smoothing=0.1).init(DEV)
    assert [n for n, _ in module.named_tensors()] == ["weight"] and module.num_params() == 0
    out = module(burn.tensor(logits, device=DEV), burn.tensor(target, device=DEV))
    expected = TF.cross_entropy(torch.tensor(logits), torch.tensor(target),
                                torch.tensor(WEIGHT), label_smoothing=0.1)
    np.testing.assert_allclose(out.item(), expected.item(), rtol=1e-5)


def test_cross_entropy_bad_inputs() -> None:
    logits = burn.zeros(3, 4)
    with pytest.raises(ShapeError, match="cross_entropy"):
        L.cross_entropy(logits, burn.tensor([0, 1]))
    with pytest.raises(ShapeError, match="cross_entropy"):
        L.cross_entropy(logits, burn.zeros(3, 5))
    with pytest.raises(ShapeError, match="weight"):
        L.cross_entropy(logits, burn.tensor([0, 1, 2]), weight=burn.ones(3))
    with pytest.raises(ValueRangeError, match="reduction"):
        L.cross_entropy(logits, burn.tensor([0, 1, 2]), reduction="avg")  # type: ignore


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy(reduction: str, weighted: bool) -> None:
    probs = RNG.uniform(0.05, 0.95, (4, 3)).astype(np.float32)
    target = RNG.uniform(0, 1, (4, 3)).astype(np.float32)
    weight = [np.array([1.0, 2.0, 0.5], dtype=np.float32)] if weighted else []
    check(L.binary_cross_entropy, TF.binary_cross_entropy, [probs, target, *weight],
          grad_of=(0, 1), reduction=reduction)
    check(L.binary_cross_entropy_with_logits, TF.binary_cross_entropy_with_logits,
          [randn(4, 3) * 5, target, *weight],
          grad_of=(0, 1), reduction=reduction)


def test_binary_cross_entropy_module() -> None:
    logits, target = randn(4, 3), RNG.integers(0, 2, (4, 3)).astype(np.float32)
    module = nn.BinaryCrossEntropyLoss([1.0, 2.0, 3.0], with_logits=True, device=DEV)
    out = module(burn.tensor(logits, device=DEV), burn.tensor(target, device=DEV))
    expected = TF.binary_cross_entropy_with_logits(torch.tensor(logits), torch.tensor(target),
                                                   torch.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(out.item(), expected.item(), rtol=1e-5)
    assert isinstance(nn.BinaryCrossEntropyLossConfig().init(), nn.BinaryCrossEntropyLoss)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses(reduction: str) -> None:
    a, b = randn(3, 5) * 2, randn(3, 5)
    check(L.mse_loss, TF.mse_loss, [a, b], grad_of=(0, 1), reduction=reduction)
    check(L.huber_loss, TF.huber_loss, [a, b], grad_of=(0, 1), reduction=reduction, delta=0.7)
    for beta in (0.0, 0.5, 2.0):
        check(L.smooth_l1_loss, TF.smooth_l1_loss, [a, b], grad_of=(0, 1),
              reduction=reduction, beta=beta)


@pytest.mark.parametrize("reduction", ["mean", "batchmean", "sum", "none"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction: str, log_target: bool) -> None:
    logp = torch.log_softmax(torch.randn(3, 4), 1).numpy()
    target = torch.softmax(torch.randn(3, 4), 1).numpy()
    target[0, 1] = 0.0  # 0 * log 0 = 0
    if log_target:
        target = np.log(target + 1e-3)
    check(L.kl_div, TF.kl_div, [logp, target], grad_of=(0, 1), reduction=reduction,
          log_target=log_target)


def test_kl_div_zero_and_negative_targets() -> None:
    """A target of 0 adds 0 with a NaN target gradient, a negative one NaN, as torch's
    xlogy(target, target) - target * input."""
    logp = np.array([[-1.0, -0.5, -2.0, -np.inf]], np.float32)
    target = np.array([[0.0, 0.5, -0.25, 0.0]], np.float32)
    out = L.kl_div(*(burn.tensor(a, device=DEV) for a in (logp, target)), reduction="none")
    tout = TF.kl_div(*(torch.tensor(a) for a in (logp, target)), reduction="none")
    assert out.shape == tuple(tout.shape) and out.dtype == burn.float32
    np.testing.assert_array_equal(out.to_numpy(), tout.numpy())
    xs = [burn.tensor(a[:, :2], device=DEV).require_grad() for a in (logp, target)]
    txs = [torch.tensor(a[:, :2], requires_grad=True) for a in (logp, target)]
    grads = L.kl_div(*xs, reduction="sum").backward()
    TF.kl_div(*txs, reduction="sum").backward()
    for x, tx in zip(xs, txs, strict=True):
        assert x.grad(grads).shape == tuple(tx.grad.shape)
        np.testing.assert_array_equal(x.grad(grads).to_numpy(), tx.grad.numpy())


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.3])
def test_cosine_embedding(reduction: str, margin: float) -> None:
    y = np.array([1, -1, 1, -1, -1], dtype=np.int64)
    check(L.cosine_embedding_loss, TF.cosine_embedding_loss, [randn(5, 3), randn(5, 3), y],
          grad_of=(0, 1), reduction=reduction, margin=margin)


def test_cosine_embedding_unbatched_and_bad_shape() -> None:
    check(L.cosine_embedding_loss, TF.cosine_embedding_loss,
          [randn(3), randn(3), np.array(-1)], grad_of=(0, 1), margin=-0.5)
    with pytest.raises(ShapeError, match="cosine_embedding_loss"):
        L.cosine_embedding_loss(burn.zeros(4, 3), burn.zeros(4, 3), burn.ones(3))


@pytest.mark.parametrize("module,tmodule,n_inputs", [
    (nn.MseLoss("sum"), torch.nn.MSELoss(reduction="sum"), 2),
    (nn.HuberLoss(0.5), torch.nn.HuberLoss(delta=0.5), 2),
    (nn.SmoothL1Loss(0.5, "none"), torch.nn.SmoothL1Loss(beta=0.5, reduction="none"), 2),
    (nn.KlDivLoss("batchmean"), torch.nn.KLDivLoss(reduction="batchmean"), 2),
])
def test_loss_modules(module: nn.Module, tmodule: torch.nn.Module, n_inputs: int) -> None:
    a, b = randn(3, 4), np.abs(randn(3, 4))
    np.testing.assert_allclose(module(burn.tensor(a), burn.tensor(b)).to_numpy(),
                               tmodule(torch.tensor(a), torch.tensor(b)).numpy(), rtol=1e-5)


def test_loss_configs_and_shape_errors() -> None:
    assert nn.HuberLossConfig(2.0).init().delta == 2.0
    assert nn.SmoothL1LossConfig(beta=0.1).init().beta == 0.1
    assert nn.KlDivLossConfig(log_target=True).init().log_target
    assert nn.MseLossConfig("sum").init().reduction == "sum"
    assert nn.CosineEmbeddingLossConfig(0.2).init().margin == 0.2
    for fn in (L.mse_loss, L.huber_loss, L.smooth_l1_loss, L.kl_div, L.binary_cross_entropy):
        with pytest.raises(ShapeError, match=fn.__name__):
            fn(burn.zeros(2, 3), burn.zeros(3, 2))
