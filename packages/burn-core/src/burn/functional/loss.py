"""Loss functions with torch.nn.functional's names, argument names and reduction modes.

The first two arguments (`input`, `target`) and, where torch has one, the class `weight` are
positional; every other option is keyword-only (torch's positional order goes through its
deprecated `size_average` / `reduce` arguments, which burn does not have).
"""

from __future__ import annotations

from typing import Literal

import burn
from burn.errors import DTypeError, ShapeError, ValueRangeError
from burn.frontend.indexing import checked_indices
from burn.frontend.tensor import Tensor
from burn.functional._common import float_input
from burn.functional.activation import log_sigmoid, log_softmax

Reduction = Literal["mean", "sum", "none"]


def _check_reduction(op: str, reduction: str) -> None:
    if reduction not in ("mean", "sum", "none"):
        raise ValueRangeError(op, "reduction must be 'mean', 'sum' or 'none'",
                              reduction=reduction)


def _reduce(op: str, loss: Tensor, reduction: str) -> Tensor:
    _check_reduction(op, reduction)
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _same_shape(op: str, a: Tensor, b: Tensor, names: tuple[str, str] = ("input", "target")
                ) -> None:
    if a.shape != b.shape:
        raise ShapeError(op, f"{names[0]} and {names[1]} must have the same shape",
                         **{names[0]: a.shape, names[1]: b.shape})


def _class_view(weight: Tensor, ndim: int, class_dim: int) -> Tensor:
    """A [C] weight shaped to broadcast along `class_dim` of an `ndim`-d tensor."""
    shape = [1] * ndim
    shape[class_dim] = weight.shape[0]
    return weight.reshape(shape)


def _class_dim(op: str, input: Tensor, weight: Tensor | None) -> tuple[int, int]:
    """(class dim, number of classes) of [N, C, *] or [C] scores, checking `weight` is [C]."""
    if input.ndim < 1:
        raise ShapeError(op, "input must be [N, C, *] or [C]", input=input.shape)
    class_dim = 1 if input.ndim >= 2 else 0
    n_classes = input.shape[class_dim]
    if weight is not None and weight.shape != (n_classes,):
        raise ShapeError(op, "weight must be [C]", weight=weight.shape, input=input.shape)
    return class_dim, n_classes


def _check_target(op: str, input: Tensor, target: Tensor, class_dim: int) -> None:
    """Check a class-index target's kind and shape: int, input's shape without the class dim.

    Raises:
        DTypeError, ShapeError: naming `op`.
    """
    expected = input.shape[:class_dim] + input.shape[class_dim + 1:]
    if target.kind == burn.Kind.FLOAT and target.shape != expected:
        raise ShapeError(op, "a class-probability target must be shaped like input",
                         input=input.shape, target=target.shape)
    if target.kind != burn.Kind.INT:
        raise DTypeError(op, "a class-index target must be an int tensor (a float target is "
                         "read as class probabilities, shaped like input)",
                         target=target.dtype, input=input.dtype)
    if target.shape != expected:
        raise ShapeError(op, "class-index target must be input's shape without the class dim",
                         input=input.shape, target=target.shape)


def _check_indices(op: str, input: Tensor, target: Tensor, class_dim: int, n_classes: int,
                   ignore_index: int) -> tuple[Tensor, Tensor]:
    """Check a class-index target (`_check_target`) and that every value but `ignore_index` is
    in [0, n_classes) (checked where the backend keeps the data).

    Returns:
        (the ignored targets' mask, the targets with ignored ones set to class 0).

    Raises:
        DTypeError, ShapeError, BurnIndexError: naming `op`.
    """
    _check_target(op, input, target, class_dim)
    ignored = target == ignore_index
    kept = target.mask_fill(ignored, 0)
    checked_indices(op, kept, n_classes, wrap_negative=False)  # where the backend decides
    return ignored, kept


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, *,
                  ignore_index: int = -100, reduction: Reduction = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy of logits and class indices or class probabilities
    (torch.nn.functional.cross_entropy).

    Args:
        input: [N, C, *] or [C] logits (classes on dim 1, or 0 for 1-d).
        target: int class indices [N, *] (or [] for 1-d input), or float probabilities shaped
            like `input`.
        weight: [C] class weights, or None.
        ignore_index: index targets to skip (class-index targets only).
        reduction: "mean" (weighted mean over non-ignored targets for indices; over samples
            for probabilities: NaN for an empty input), "sum" or "none".
        label_smoothing: in [0, 1]: mixes the target with the uniform distribution.
    Returns:
        the loss (per sample for "none").
    Raises:
        ShapeError: for inconsistent shapes. DTypeError: for a float target shaped as class
            indices, or a bool one. BurnIndexError: for a class index outside [0, C).
        ValueRangeError: for a bad reduction or label_smoothing.
    """
    op = "cross_entropy"
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueRangeError(op, "label_smoothing must be in [0, 1]",
                              label_smoothing=label_smoothing)
    class_dim, n_classes = _class_dim(op, input, weight)
    input = float_input(op, "input", input)
    if weight is not None:
        weight = float_input(op, "weight", weight, input)
    if target.kind != burn.Kind.FLOAT or target.shape != input.shape:
        _check_target(op, input, target, class_dim)
        _check_reduction(op, reduction)
        # one backend op on [M, C] rows (classes last) and [M] targets; no classes have no
        # uniform distribution to smooth towards (docs/differences.md)
        rows = input.reshape(1, n_classes) if input.ndim == 1 else input if input.ndim == 2 \
            else input.movedim(1, -1).reshape(-1, n_classes)
        loss = rows._wrap(rows._bk.cross_entropy(
            rows._prim, (target if target.ndim == 1 else target.reshape(-1))._prim,
            None if weight is None else weight._prim,
            ignore_index, float(label_smoothing) if n_classes else 0.0, reduction))
        return loss.reshape(target.shape) if reduction == "none" else loss
    target = float_input(op, "target", target, input)
    w = None if weight is None else _class_view(weight, input.ndim, class_dim)
    if label_smoothing > 0 and n_classes:  # class probabilities (none: an empty input)
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    loss = _logits_entropy(input, target if w is None else target * w, class_dim)
    if reduction == "mean":  # over the samples; an empty input's 0 / 0 is NaN, as torch
        return loss.sum() / (input.numel() // n_classes if input.numel() else 0)
    return _reduce(op, loss, reduction)


def _logits_entropy(x: Tensor, q: Tensor, dim: int) -> Tensor:
    """-sum(q * log_softmax(x, dim), dim): one node with direct rules on Autodiff."""
    from burn.autodiff.backend import Autodiff  # not at import: it builds the op table

    if isinstance(x._bk, Autodiff):
        return x._wrap(x._bk.cross_entropy_logits(x._prim, q._prim, dim))
    return -(log_softmax(x, dim) * q).sum(dim)


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, *,
             ignore_index: int = -100, reduction: Reduction = "mean") -> Tensor:
    """Negative log-likelihood of class indices (torch.nn.functional.nll_loss).

    An ignored sample's loss is 0 and its gradient 0, whatever its log-probabilities or output
    gradient (NaN / inf included), as torch; a kept sample's is ``-w[t] * input[t]``.

    Args:
        input: [N, C, *] or [C] log-probabilities.
        target: int class indices [N, *] (or []).
        weight: [C] class weights, or None.
        ignore_index: targets to skip.
        reduction: "mean" (weighted mean over non-ignored targets: NaN where their weights
            sum to 0 or none is kept, with inf / NaN gradients on kept samples), "sum" or
            "none".
    Returns:
        the loss.
    Raises:
        ShapeError, DTypeError, BurnIndexError, ValueRangeError: as `cross_entropy`.
    """
    op = "nll_loss"
    class_dim, n_classes = _class_dim(op, input, weight)
    ignored, safe = _check_indices(op, input, target, class_dim, n_classes, ignore_index)
    keep = (~ignored).cast(input.dtype)
    nll = -input.gather(class_dim, safe.unsqueeze(class_dim)).squeeze(class_dim)
    w_target = keep if weight is None else weight.select(0, safe.reshape(-1)).reshape(
        target.shape) * keep
    loss = (nll * w_target).mask_fill(ignored, 0.0)  # its backward zeroes ignored rows
    if reduction == "mean":
        return loss.sum() / w_target.sum()
    return _reduce(op, loss, reduction)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, *,
                         reduction: Reduction = "mean") -> Tensor:
    """Binary cross entropy of probabilities (torch.nn.functional.binary_cross_entropy; the
    logs are clamped at -100 as torch does).

    Args:
        input: probabilities in [0, 1].
        target: float targets in [0, 1], same shape.
        weight: rescaling broadcast against the loss (e.g. [C] per class on the last dim).
        reduction: "mean", "sum" or "none".
    Returns:
        the loss.
    Raises:
        ShapeError: for different shapes.
    """
    op = "binary_cross_entropy"
    _same_shape(op, input, target)
    loss = _bce_terms(input, target)
    return _reduce(op, loss if weight is None else loss * weight, reduction)


def _clamped_log(x: Tensor) -> Tensor:
    """log(x) clamped at -100 (as torch's BCE), detached: log(0) gives -100, never nan."""
    x = x.detach()
    return burn.where(x > 0, x, 1.0).log().mask_fill(x <= 0, -100.0).clamp_min(-100.0)


def _bce_terms(p: Tensor, y: Tensor) -> Tensor:
    """Elementwise -(y log p + (1 - y) log(1 - p)) with torch's gradients, finite everywhere:
    d/dp = (p - y) / max(p (1 - p), 1e-12) and d/dy = log(1 - p) - log p (logs clamped)."""
    log_p, log_q = _clamped_log(p), _clamped_log(1 - p)
    value = -(y * log_p + (1 - y) * log_q)
    slope = ((p - y) / (p * (1 - p)).clamp_min(1e-12)).detach()
    through_p = p * slope  # carries d/dp = slope; adds 0 to the value
    return value + (through_p - through_p.detach())


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None, *,
                                     reduction: Reduction = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Binary cross entropy of logits, computed stably through log_sigmoid
    (torch.nn.functional.binary_cross_entropy_with_logits):
    -(pos_weight * y * log sigmoid(x) + (1 - y) * log sigmoid(-x)).

    Args:
        input: logits.
        target: float targets in [0, 1], same shape.
        weight: rescaling broadcast against the loss.
        reduction: "mean", "sum" or "none".
        pos_weight: weight of the positive term, broadcast against the target (e.g. [C] per
            class on the last dim).
    Returns:
        the loss.
    Raises:
        ShapeError: for different shapes.
    """
    op = "binary_cross_entropy_with_logits"
    _same_shape(op, input, target)
    positive = target * log_sigmoid(input)
    if pos_weight is not None:
        positive = positive * pos_weight
    loss = -(positive + (1 - target) * log_sigmoid(-input))
    return _reduce(op, loss if weight is None else loss * weight, reduction)


def mse_loss(input: Tensor, target: Tensor, *, reduction: Reduction = "mean") -> Tensor:
    """Squared error (torch.nn.functional.mse_loss).

    Raises:
        ShapeError: for different shapes.
    """
    _same_shape("mse_loss", input, target)
    diff = input - target
    return _reduce("mse_loss", diff * diff, reduction)


def l1_loss(input: Tensor, target: Tensor, *, reduction: Reduction = "mean") -> Tensor:
    """Absolute error (torch.nn.functional.l1_loss).

    Raises:
        ShapeError: for different shapes.
    """
    _same_shape("l1_loss", input, target)
    return _reduce("l1_loss", (input - target).abs(), reduction)


def huber_loss(input: Tensor, target: Tensor, *, reduction: Reduction = "mean",
               delta: float = 1.0) -> Tensor:
    """Huber loss: 0.5 d^2 where |d| <= delta, delta * (|d| - 0.5 delta) beyond
    (torch.nn.functional.huber_loss).

    Raises:
        ShapeError: for different shapes. ValueRangeError: for delta <= 0.
    """
    op = "huber_loss"
    if delta <= 0:
        raise ValueRangeError(op, "delta must be positive", delta=delta)
    _same_shape(op, input, target)
    diff = input - target
    abs_diff = diff.abs()
    # (the square of the difference held to +-delta past it: equal where chosen, and a
    # difference that overflowed to inf no longer sends 0 * inf = NaN back through the
    # branch not taken; a NaN difference still does, as torch's)
    near = burn.where(abs_diff > delta, diff.sign() * delta, diff)
    loss = burn.where(abs_diff <= delta, near * near * 0.5, (abs_diff - 0.5 * delta) * delta)
    return _reduce(op, loss, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, *, reduction: Reduction = "mean",
                   beta: float = 1.0) -> Tensor:
    """Smooth L1: 0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta beyond (plain L1 for
    beta = 0), as torch.nn.functional.smooth_l1_loss.

    Raises:
        ShapeError: for different shapes. ValueRangeError: for beta < 0.
    """
    op = "smooth_l1_loss"
    if beta < 0:
        raise ValueRangeError(op, "beta must be non-negative", beta=beta)
    _same_shape(op, input, target)
    abs_diff = (input - target).abs()
    if beta == 0:
        return _reduce(op, abs_diff, reduction)
    near = burn.where(abs_diff >= beta, beta, abs_diff)  # (as huber_loss's)
    loss = burn.where(abs_diff < beta, near * near * (0.5 / beta), abs_diff - 0.5 * beta)
    return _reduce(op, loss, reduction)


def kl_div(input: Tensor, target: Tensor, *,
           reduction: Literal["mean", "batchmean", "sum", "none"] = "mean",
           log_target: bool = False) -> Tensor:
    """Kullback-Leibler divergence KL(target || exp(input)) (torch.nn.functional.kl_div).

    Args:
        input: log-probabilities.
        target: probabilities (log-probabilities when `log_target`), same shape; a target
            of 0 adds 0 (its gradient is NaN, as torch's), a negative one NaN.
        reduction: "mean" (over all values), "batchmean" (sum / batch size, the true KL),
            "sum" or "none".
        log_target: whether `target` holds log-probabilities.
    Returns:
        the loss.
    Raises:
        ShapeError: for different shapes.
    """
    op = "kl_div"
    _same_shape(op, input, target)
    if log_target:
        loss = target.exp() * (target - input)
    else:  # target log target (0 at a target of 0, NaN below it) - target input, as torch
        entropy = burn.where(target == 0, burn.zeros_like(target), target * target.log())
        loss = entropy - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return _reduce(op, loss, reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, *,
                          margin: float = 0.0, reduction: Reduction = "mean") -> Tensor:
    """1 - cos(x1, x2) where target = 1, max(0, cos(x1, x2) - margin) where target = -1
    (torch.nn.functional.cosine_embedding_loss).

    Args:
        input1, input2: [N, D] or [D].
        target: [N] (or []) of 1 / -1.
        margin: in [-1, 1].
        reduction: "mean", "sum" or "none".
    Returns:
        the loss.
    Raises:
        ShapeError: for inconsistent shapes.
    """
    op = "cosine_embedding_loss"
    _same_shape(op, input1, input2, ("input1", "input2"))
    if input1.ndim not in (1, 2) or target.shape != input1.shape[:-1]:
        raise ShapeError(op, "need inputs [N, D] with target [N] (or [D] with [])",
                         input1=input1.shape, target=target.shape)
    eps = 1e-12
    dot = (input1 * input2).sum(-1)
    denom = (((input1 * input1).sum(-1) + eps) * ((input2 * input2).sum(-1) + eps)).sqrt()
    cos = dot / denom
    zero = burn.zeros_like(cos)
    loss = (burn.where(target == 1, 1 - cos, zero)
            + burn.where(target == -1, (cos - margin).clamp_min(0.0), zero))
    return _reduce(op, loss, reduction)
