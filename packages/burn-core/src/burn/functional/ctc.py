"""Connectionist temporal classification loss (Burn's ctc_loss), as tensor composites: the
forward (alpha) recursion in log space over time, vectorised over the batch and the extended
label positions, so every backend runs it and Autodiff differentiates it."""

from __future__ import annotations

import math
from typing import Literal

from burn.dtype import DType, Kind
from burn.errors import ShapeError, ValueRangeError
from burn.frontend.creation import arange, full
from burn.frontend.indexing import checked_indices, where
from burn.frontend.layout import cat, stack
from burn.frontend.tensor import Tensor
from burn.frontend.validation import require_kind
from burn.functional._common import float_input


def _logsumexp3(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
    """log(exp(a) + exp(b) + exp(c)) elementwise, -inf (with zero gradients) where all three
    are -inf."""
    m = a.max_pair(b).max_pair(c)
    finite = m != -math.inf
    shift = m.mask_fill(~finite, 0.0)
    total = (a - shift).exp() + (b - shift).exp() + (c - shift).exp()
    return (shift + total.mask_fill(~finite, 1.0).log()).mask_fill(~finite, -math.inf)


def _shift(x: Tensor, k: int) -> Tensor:
    """x moved k positions right along dim 1, -inf entering on the left."""
    n, s = x.shape
    if k >= s:
        return full((n, s), -math.inf, x.dtype, x.device)
    return cat([full((n, k), -math.inf, x.dtype, x.device), x.narrow(1, 0, s - k)], 1)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Tensor,
             target_lengths: Tensor, *, blank: int = 0,
             reduction: Literal["mean", "sum", "none"] = "mean",
             zero_infinity: bool = False) -> Tensor:
    """CTC loss of log-probabilities [T, N, C] against padded targets [N, S] (torch's
    F.ctc_loss with 2-d targets; Burn's ctc_loss and CTCLoss).

    Args:
        log_probs: [T, N, C] log-softmax outputs.
        targets: [N, S] int class indices (not `blank`), padded past each target length.
        input_lengths: [N] ints <= T.
        target_lengths: [N] ints <= S.
        blank: the blank class.
        reduction: "none" ([N] losses), "sum", or "mean" (each loss divided by its target
            length, then the batch mean, as torch and Burn).
        zero_infinity: replace infinite losses (impossible alignments) and their gradients by 0.
    Returns:
        The loss.
    Raises:
        DTypeError: for non-float log_probs or non-int targets / lengths.
        ShapeError: for mismatched shapes.
        ValueRangeError: for a blank outside [0, C) or an unknown reduction.
        BurnIndexError: for target classes outside [0, C) or lengths out of range.
    """
    op = "ctc_loss"
    log_probs = float_input(op, "log_probs", log_probs)
    for arg in (targets, input_lengths, target_lengths):
        require_kind(op, arg.dtype, Kind.INT)
    if log_probs.ndim != 3:
        raise ShapeError(op, "log_probs must be [T, N, C]", log_probs=log_probs.shape)
    steps, n, classes = log_probs.shape
    if (targets.ndim != 2 or targets.shape[0] != n or input_lengths.shape != (n,)
            or target_lengths.shape != (n,)):
        raise ShapeError(op, "need targets [N, S] and lengths [N]", log_probs=log_probs.shape,
                         targets=targets.shape, input_lengths=input_lengths.shape,
                         target_lengths=target_lengths.shape)
    if not 0 <= blank < classes:
        raise ValueRangeError(op, "blank must be a class index", blank=blank, classes=classes)
    if reduction not in ("mean", "sum", "none"):
        raise ValueRangeError(op, "reduction must be 'mean', 'sum' or 'none'",
                              reduction=reduction)
    labels = targets.shape[1]
    checked_indices(op, targets, classes, wrap_negative=False)
    in_len = checked_indices(op, input_lengths, steps + 1, wrap_negative=False)._tensor()
    tgt_len = checked_indices(op, target_lengths, labels + 1, wrap_negative=False)._tensor()
    tgt = targets.cast(DType.int64)
    blanks = full((n, labels), blank, DType.int64, log_probs.device)
    ext = cat([stack([blanks, tgt], -1).reshape(n, 2 * labels),
               full((n, 1), blank, DType.int64, log_probs.device)], 1)  # [N, 2S + 1]
    width = 2 * labels + 1
    skip = (ext != blank) & (ext != _shift_int(ext, 2, blank))
    alpha = full((n, width), -math.inf, log_probs.dtype, log_probs.device)
    position = arange(width, device=log_probs.device).reshape(1, width)
    for t in range(steps):
        emit = log_probs[t].gather(1, ext)  # [N, 2S + 1]
        if t == 0:
            new = emit.mask_fill(position > 1, -math.inf)
        else:
            new = _logsumexp3(alpha, _shift(alpha, 1),
                              _shift(alpha, 2).mask_fill(~skip, -math.inf)) + emit
        alpha = where((in_len > t).reshape(n, 1), new, alpha)
    last = (tgt_len * 2).reshape(n, 1)
    end = alpha.gather(1, last)
    before = alpha.gather(1, (last - 1).clamp_min(0)).mask_fill(last == 0, -math.inf)
    loss = -_logsumexp3(end, before, full((n, 1), -math.inf, alpha.dtype, alpha.device))
    loss = loss.reshape(n)
    if zero_infinity:
        loss = loss.mask_fill(loss == math.inf, 0.0)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return (loss / tgt_len.clamp_min(1).cast(loss.dtype)).mean()


def _shift_int(x: Tensor, k: int, fill: int) -> Tensor:
    """Int x moved k positions right along dim 1, `fill` entering on the left."""
    n, s = x.shape
    pad = full((n, min(k, s)), fill, x.dtype, x.device)
    return cat([pad, x.narrow(1, 0, s - k)], 1) if k < s else pad
