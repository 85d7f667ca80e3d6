"""ctc_loss against torch.nn.functional.ctc_loss, forward and backward."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import burn
import burn.functional as F
from burn.errors import BurnIndexError, ShapeError, ValueRangeError

from .reference import FLOATS, GRAD_DTYPES, T, check_backward, check_forward, op_param

STEPS, BATCH, CLASSES, LABELS = 8, 4, 5, 4


def _case(rng: np.random.Generator, dtype: str, impossible: bool = False) -> list[T]:
    """Log-probabilities (random logits), targets with repeats, ragged lengths (one empty)."""
    x = T(rng.standard_normal((STEPS, BATCH, CLASSES)), dtype, "transposed")
    targets = rng.integers(1, CLASSES, size=(BATCH, LABELS))
    targets[0, 1] = targets[0, 0]  # a repeat needs a blank between
    in_len = np.array([8, 6, 7, 3 if impossible else 5])
    tgt_len = np.array([4, 2, 0, 4 if impossible else 3])
    return [x, T(targets, "int64", grad=False), T(in_len, "int64", grad=False),
            T(tgt_len, "int32", grad=False)]


def _burn(reduction: str, zero_infinity: bool = False, blank: int = 0):  # type: ignore[no-untyped-def]
    def fn(x: burn.Tensor, *rest: burn.Tensor) -> burn.Tensor:
        return F.ctc_loss(F.log_softmax(x, -1), *rest, blank=blank, reduction=reduction,
                          zero_infinity=zero_infinity)
    return fn


def _torch(reduction: str, zero_infinity: bool = False, blank: int = 0):  # type: ignore[no-untyped-def]
    def fn(x: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
        return tF.ctc_loss(x.log_softmax(-1), *rest, blank=blank, reduction=reduction,
                           zero_infinity=zero_infinity)
    return fn


@pytest.mark.parametrize("name,dtype", [op_param("ctc_loss", d) for d in FLOATS])
def test_ctc_loss(name: str, dtype: str, device: burn.Device, rng: np.random.Generator) -> None:
    for reduction in ("none", "sum", "mean"):
        check_forward(_burn(reduction), _torch(reduction), _case(rng, dtype), device,
                      upcast=True)
    impossible = _case(rng, dtype, impossible=True)
    check_forward(_burn("none"), _torch("none"), impossible, device, upcast=True)
    check_forward(_burn("mean", True), _torch("mean", True), impossible, device, upcast=True)
    args = _case(rng, dtype)
    args[1] = T(np.where(args[1].data == 2, 0, args[1].data), "int64", grad=False)
    check_forward(_burn("none", blank=2), _torch("none", blank=2), args, device, upcast=True)


@pytest.mark.parametrize("name,dtype", [op_param("ctc_loss", d) for d in GRAD_DTYPES])
def test_ctc_loss_backward(name: str, dtype: str, grad_device: burn.Device,
                           rng: np.random.Generator) -> None:
    check_backward(_burn("mean"), _torch("mean"), _case(rng, dtype), grad_device, rng)
    check_backward(_burn("none", True), _torch("none", True), _case(rng, dtype, True),
                   grad_device, rng)


@pytest.mark.op("ctc_loss")
def test_ctc_loss_bad_input(device: burn.Device) -> None:
    lp = burn.zeros(4, 2, 3, device=device)
    tg, lens = burn.ones(2, 2, dtype=burn.int64, device=device), burn.tensor([4, 4],
                                                                            device=device)
    with pytest.raises(ShapeError, match="ctc_loss"):
        F.ctc_loss(lp[0], tg, lens, lens)
    with pytest.raises(ValueRangeError, match="blank"):
        F.ctc_loss(lp, tg, lens, burn.tensor([2, 2], device=device), blank=3)
    with pytest.raises(BurnIndexError, match="ctc_loss"):  # at once, or at the next sync
        F.ctc_loss(lp, tg, burn.tensor([5, 4], device=device), burn.tensor([2, 2],
                                                                           device=device))
        burn.sync(device)
    with pytest.raises(BurnIndexError, match="ctc_loss"):
        F.ctc_loss(lp, tg * 3, lens, burn.tensor([2, 2], device=device))
        burn.sync(device)
