"""`burn.functional` losses with torch's argument names, and their error messages."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import burn
import burn.functional as F
from burn import nn
from burn.errors import BurnIndexError, DTypeError, ShapeError, ValueRangeError

DEV = burn.Device("numpy").autodiff()
RNG = np.random.default_rng(5)
REDUCTIONS = ["mean", "sum", "none"]


def _both(a: np.ndarray, grad: bool = True) -> tuple[burn.Tensor, torch.Tensor]:
    x = burn.tensor(a, device=DEV)
    return (x.require_grad() if grad else x), torch.tensor(a, requires_grad=grad)


def _compare(out: burn.Tensor, tout: torch.Tensor, leaves: list[tuple[burn.Tensor, torch.Tensor]]
             ) -> None:
    """Shape, dtype, values, then the gradients of sum(out * cot) w.r.t. the leaves."""
    assert out.shape == tuple(tout.shape) and out.dtype == burn.float32
    np.testing.assert_allclose(out.to_numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-6)
    if not leaves:
        return
    cot = RNG.standard_normal(out.shape).astype(np.float32)
    grads = (out * burn.tensor(cot, device=DEV)).sum().backward()
    (tout * torch.tensor(cot)).sum().backward()
    for x, tx in leaves:
        np.testing.assert_allclose(x.grad(grads).to_numpy(), tx.grad.numpy(), rtol=1e-4,
                                   atol=1e-6)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss(reduction: str, weighted: bool) -> None:
    logp = torch.log_softmax(torch.randn(6, 4, 3), 1).numpy()
    target = RNG.integers(0, 4, (6, 3))
    target[1, 2] = -100
    x, tx = _both(logp)
    w = np.array([0.5, 2.0, 1.0, 1.5], np.float32) if weighted else None
    out = F.nll_loss(x, burn.tensor(target, device=DEV),
                     None if w is None else burn.tensor(w, device=DEV), reduction=reduction)
    tout = TF.nll_loss(tx, torch.tensor(target), None if w is None else torch.tensor(w),
                       reduction=reduction)
    _compare(out, tout, [(x, tx)])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_l1_loss(reduction: str) -> None:
    (a, ta), (b, tb) = _both(RNG.standard_normal((3, 5)).astype(np.float32)), \
        _both(RNG.standard_normal((3, 5)).astype(np.float32))
    _compare(F.l1_loss(a, b, reduction=reduction), TF.l1_loss(ta, tb, reduction=reduction),
             [(a, ta), (b, tb)])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_bce_with_logits_pos_weight(reduction: str, weighted: bool) -> None:
    x, tx = _both((RNG.standard_normal((4, 3)) * 4).astype(np.float32))
    y, ty = _both(RNG.uniform(0, 1, (4, 3)).astype(np.float32))
    pw = np.array([0.5, 3.0, 1.5], np.float32)
    w = np.array([[1.0], [2.0], [0.5], [1.0]], np.float32) if weighted else None
    out = F.binary_cross_entropy_with_logits(
        x, y, None if w is None else burn.tensor(w, device=DEV), reduction=reduction,
        pos_weight=burn.tensor(pw, device=DEV))
    tout = TF.binary_cross_entropy_with_logits(
        tx, ty, None if w is None else torch.tensor(w), reduction=reduction,
        pos_weight=torch.tensor(pw))
    _compare(out, tout, [(x, tx), (y, ty)])


def test_loss_modules_call_the_functions() -> None:
    logits = RNG.standard_normal((5, 3)).astype(np.float32)
    target = RNG.integers(0, 2, (5, 3)).astype(np.float32)
    module = nn.BinaryCrossEntropyLossConfig(with_logits=True, pos_weight=(2.0, 1.0, 0.5)).init()
    ref = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor([2.0, 1.0, 0.5]))
    _compare(module(burn.tensor(logits), burn.tensor(target)),
             ref(torch.tensor(logits), torch.tensor(target)), [])
    with pytest.raises(ValueRangeError, match="pos_weight"):
        nn.BinaryCrossEntropyLoss(pos_weight=[1.0])
    logp = torch.log_softmax(torch.randn(4, 3), 1)
    idx = torch.tensor([0, 2, 1, 2])
    _compare(nn.NllLossConfig(weight=(1.0, 2.0, 3.0)).init()(burn.tensor(logp.numpy()),
                                                             burn.tensor(idx.numpy())),
             torch.nn.NLLLoss(torch.tensor([1.0, 2.0, 3.0]))(logp, idx), [])
    _compare(nn.L1LossConfig("sum").init()(burn.tensor(logits), burn.tensor(target)),
             torch.nn.L1Loss(reduction="sum")(torch.tensor(logits), torch.tensor(target)), [])
    assert nn.loss.cross_entropy is F.cross_entropy


def test_cross_entropy_float_index_target_is_a_dtype_error() -> None:
    logits = burn.zeros(3, 5)
    with pytest.raises(DTypeError, match=r"cross_entropy: a class-index target must be an int"):
        F.cross_entropy(logits, burn.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(ShapeError, match="cross_entropy: a class-probability target"):
        F.cross_entropy(logits, burn.zeros(3, 4))
    with pytest.raises(RuntimeError):  # torch raises too, for float class indices
        TF.cross_entropy(torch.zeros(3, 5), torch.tensor([0.0, 1.0, 2.0]))


@pytest.mark.parametrize("bad", [7, -1, 5])
def test_class_index_out_of_range_names_the_loss(bad: int) -> None:
    logits = burn.zeros(3, 5)
    target = burn.tensor([0, bad, 2])
    with pytest.raises(BurnIndexError,
                       match=rf"cross_entropy: index {bad} out of range \[0, 5\)"):
        F.cross_entropy(logits, target)
    with pytest.raises(BurnIndexError, match=rf"nll_loss: index {bad} out of range"):
        F.nll_loss(logits, target)
    with pytest.raises(IndexError):  # torch refuses it as well
        TF.cross_entropy(torch.zeros(3, 5), torch.tensor([0, bad, 2]))


def test_ignore_index_is_not_out_of_range() -> None:
    logits = RNG.standard_normal((3, 5)).astype(np.float32)
    target = np.array([0, -100, 4])
    out = F.cross_entropy(burn.tensor(logits), burn.tensor(target))
    np.testing.assert_allclose(out.item(), TF.cross_entropy(torch.tensor(logits),
                                                            torch.tensor(target)).item(),
                               rtol=1e-6)
