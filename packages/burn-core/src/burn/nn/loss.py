"""Losses: functional forms (torch.nn.functional style) and Modules with Configs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import burn
from burn import functional as F
from burn.device import Device
from burn.errors import DTypeError, ShapeError, ValueRangeError
from burn.frontend.tensor import Tensor
from burn.nn._layer import LayerConfig
from burn.nn.module import Buffer, Module

Reduction = Literal["mean", "sum", "none"]


def _reduce(op: str, loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueRangeError(op, "reduction must be 'mean', 'sum' or 'none'", reduction=reduction)


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


def cross_entropy(logits: Tensor, target: Tensor, weight: Tensor | None = None,
                  ignore_index: int = -100, reduction: Reduction = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy of logits and class indices or class probabilities
    (torch.nn.functional.cross_entropy).

    Args:
        logits: [N, C, *] or [C] unnormalised scores (classes on dim 1, or 0 for 1-d).
        target: int class indices [N, *] (or [] for 1-d logits), or float probabilities shaped
            like `logits`.
        weight: [C] class weights, or None.
        ignore_index: index targets to skip (class-index targets only).
        reduction: "mean" (weighted mean over non-ignored targets for indices; over samples
            for probabilities), "sum" or "none".
        label_smoothing: in [0, 1]: mixes the target with the uniform distribution.
    Returns:
        the loss (per sample for "none").
    Raises:
        ShapeError: for inconsistent shapes. ValueRangeError: for a bad reduction or
            label_smoothing.
    """
    op = "cross_entropy"
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueRangeError(op, "label_smoothing must be in [0, 1]",
                              label_smoothing=label_smoothing)
    if logits.ndim < 1:
        raise ShapeError(op, "logits must be [N, C, *] or [C]", logits=logits.shape)
    class_dim = 1 if logits.ndim >= 2 else 0
    n_classes = logits.shape[class_dim]
    if weight is not None and weight.shape != (n_classes,):
        raise ShapeError(op, "weight must be [C]", weight=weight.shape, logits=logits.shape)
    logp = F.log_softmax(logits, class_dim)
    w = None if weight is None else _class_view(weight, logits.ndim, class_dim)

    if target.kind == burn.Kind.FLOAT:  # class probabilities
        _same_shape(op, logits, target, ("logits", "target"))
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        prod = logp * target if w is None else logp * target * w
        loss = -prod.sum(class_dim)
        if reduction == "mean":
            return loss.sum() / max(logits.numel() // n_classes, 1)
        return _reduce(op, loss, reduction)

    if target.kind != burn.Kind.INT:
        raise DTypeError(op, "target must be int class indices or float probabilities",
                         target=target.dtype)
    expected = logits.shape[:class_dim] + logits.shape[class_dim + 1:]
    if target.shape != expected:
        raise ShapeError(op, "index target must be logits' shape without the class dim",
                         logits=logits.shape, target=target.shape)
    ignored = target == ignore_index
    keep = (~ignored).cast(logits.dtype)
    safe = target.mask_fill(ignored, 0)
    nll = -logp.gather(class_dim, safe.unsqueeze(class_dim)).squeeze(class_dim)
    w_target = keep if weight is None else weight.select(0, safe.reshape(-1)).reshape(
        target.shape) * keep
    loss = nll * w_target
    if label_smoothing > 0:
        smooth = -(logp if w is None else logp * w).sum(class_dim) * keep
        loss = loss * (1 - label_smoothing) + smooth * (label_smoothing / n_classes)
    if reduction == "mean":
        return loss.sum() / w_target.sum()
    return _reduce(op, loss, reduction)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         reduction: Reduction = "mean", with_logits: bool = False) -> Tensor:
    """Binary cross entropy (torch's F.binary_cross_entropy, or
    F.binary_cross_entropy_with_logits when `with_logits`).

    Args:
        input: probabilities in [0, 1] (logits when `with_logits`).
        target: float targets in [0, 1], same shape.
        weight: rescaling broadcast against the loss (e.g. [C] per class on the last dim).
        reduction: "mean", "sum" or "none".
        with_logits: whether `input` is logits (computed stably through log_sigmoid).
    Returns:
        the loss.
    Raises:
        ShapeError: for different shapes.
    """
    op = "binary_cross_entropy"
    _same_shape(op, input, target)
    if with_logits:
        loss = -(target * F.log_sigmoid(input) + (1 - target) * F.log_sigmoid(-input))
    else:  # torch clamps the logs at -100
        loss = -(target * input.log().clamp_min(-100.0)
                 + (1 - target) * (1 - input).log().clamp_min(-100.0))
    if weight is not None:
        loss = loss * weight
    return _reduce(op, loss, reduction)


def mse_loss(input: Tensor, target: Tensor, reduction: Reduction = "mean") -> Tensor:
    """Squared error (torch.nn.functional.mse_loss).

    Raises:
        ShapeError: for different shapes.
    """
    _same_shape("mse_loss", input, target)
    diff = input - target
    return _reduce("mse_loss", diff * diff, reduction)


def huber_loss(input: Tensor, target: Tensor, delta: float = 1.0,
               reduction: Reduction = "mean") -> Tensor:
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
    loss = burn.where(abs_diff <= delta, diff * diff * 0.5, (abs_diff - 0.5 * delta) * delta)
    return _reduce(op, loss, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, beta: float = 1.0,
                   reduction: Reduction = "mean") -> Tensor:
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
    loss = burn.where(abs_diff < beta, abs_diff * abs_diff * (0.5 / beta), abs_diff - 0.5 * beta)
    return _reduce(op, loss, reduction)


def kl_div(input: Tensor, target: Tensor,
           reduction: Literal["mean", "batchmean", "sum", "none"] = "mean",
           log_target: bool = False) -> Tensor:
    """Kullback-Leibler divergence KL(target || exp(input)) (torch.nn.functional.kl_div).

    Args:
        input: log-probabilities.
        target: probabilities (log-probabilities when `log_target`), same shape.
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
    else:  # 0 * log 0 = 0
        positive = target > 0
        loss = target * (burn.where(positive, target, burn.ones_like(target)).log() - input)
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return _reduce(op, loss, reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: Reduction = "mean") -> Tensor:
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


def _weight_buffer(weight: Sequence[float] | Tensor | None,
                   device: Device | str | None) -> Buffer | None:
    if weight is None:
        return None
    value = weight if isinstance(weight, Tensor) else burn.tensor(list(weight), device=device)
    return Buffer(value)


class CrossEntropyLoss(Module):
    """Cross entropy over logits (see `cross_entropy`).

    Args:
        weight: [C] class weights (a Buffer), or None.
        ignore_index: index targets to skip.
        reduction: "mean", "sum" or "none".
        label_smoothing: in [0, 1].
        device: where the weight lives.
    """

    def __init__(self, weight: Sequence[float] | Tensor | None = None, ignore_index: int = -100,
                 reduction: Reduction = "mean", label_smoothing: float = 0.0,
                 device: Device | str | None = None) -> None:
        self.weight = _weight_buffer(weight, device)
        self.ignore_index, self.reduction = ignore_index, reduction
        self.label_smoothing = label_smoothing

    def forward(self, logits: Tensor, target: Tensor) -> Tensor:
        """Args:
            logits: [N, C, *] or [C].
            target: int indices [N, *] or probabilities like `logits`.
        Returns:
            the loss.
        """
        return cross_entropy(logits, target, self.weight, self.ignore_index, self.reduction,
                             self.label_smoothing)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}, label_smoothing={self.label_smoothing}"


class BinaryCrossEntropyLoss(Module):
    """Binary cross entropy (see `binary_cross_entropy`).

    Args:
        weight: rescaling broadcast against the loss (e.g. [C] per class on the last dim).
        reduction: "mean", "sum" or "none".
        with_logits: whether the input is logits.
        device: where the weight lives.
    """

    def __init__(self, weight: Sequence[float] | Tensor | None = None,
                 reduction: Reduction = "mean", with_logits: bool = False,
                 device: Device | str | None = None) -> None:
        self.weight = _weight_buffer(weight, device)
        self.reduction, self.with_logits = reduction, with_logits

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Args:
            input: probabilities (or logits); target: same shape.
        Returns:
            the loss.
        """
        return binary_cross_entropy(input, target, self.weight, self.reduction,
                                    self.with_logits)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}, with_logits={self.with_logits}"


class MseLoss(Module):
    """Mean squared error (see `mse_loss`).

    Args:
        reduction: "mean", "sum" or "none".
    """

    def __init__(self, reduction: Reduction = "mean") -> None:
        self.reduction = reduction

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The loss of same-shaped input and target."""
        return mse_loss(input, target, self.reduction)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"


class HuberLoss(Module):
    """Huber loss (see `huber_loss`).

    Args:
        delta: where it turns linear.
        reduction: "mean", "sum" or "none".
    """

    def __init__(self, delta: float = 1.0, reduction: Reduction = "mean") -> None:
        self.delta, self.reduction = delta, reduction

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The loss of same-shaped input and target."""
        return huber_loss(input, target, self.delta, self.reduction)

    def extra_repr(self) -> str:
        return f"delta={self.delta}, reduction={self.reduction!r}"


class SmoothL1Loss(Module):
    """Smooth L1 loss (see `smooth_l1_loss`).

    Args:
        beta: where it turns linear.
        reduction: "mean", "sum" or "none".
    """

    def __init__(self, beta: float = 1.0, reduction: Reduction = "mean") -> None:
        self.beta, self.reduction = beta, reduction

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The loss of same-shaped input and target."""
        return smooth_l1_loss(input, target, self.beta, self.reduction)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, reduction={self.reduction!r}"


class KlDivLoss(Module):
    """KL divergence of log-probability inputs (see `kl_div`).

    Args:
        reduction: "mean", "batchmean", "sum" or "none".
        log_target: whether targets are log-probabilities.
    """

    def __init__(self, reduction: Literal["mean", "batchmean", "sum", "none"] = "mean",
                 log_target: bool = False) -> None:
        self.reduction, self.log_target = reduction, log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The loss of log-probabilities `input` against `target`."""
        return kl_div(input, target, self.reduction, self.log_target)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}, log_target={self.log_target}"


class CosineEmbeddingLoss(Module):
    """Cosine embedding loss (see `cosine_embedding_loss`).

    Args:
        margin: for dissimilar pairs.
        reduction: "mean", "sum" or "none".
    """

    def __init__(self, margin: float = 0.0, reduction: Reduction = "mean") -> None:
        self.margin, self.reduction = margin, reduction

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        """The loss of pairs [N, D] with targets [N] of 1 / -1."""
        return cosine_embedding_loss(input1, input2, target, self.margin, self.reduction)

    def extra_repr(self) -> str:
        return f"margin={self.margin}, reduction={self.reduction!r}"


@dataclass
class CrossEntropyLossConfig(LayerConfig):
    """Config of `CrossEntropyLoss` (weight as a list of floats)."""

    weight: tuple[float, ...] | None = None
    ignore_index: int = -100
    reduction: str = "mean"
    label_smoothing: float = 0.0
    module = CrossEntropyLoss


@dataclass
class BinaryCrossEntropyLossConfig(LayerConfig):
    """Config of `BinaryCrossEntropyLoss` (weight as a list of floats)."""

    weight: tuple[float, ...] | None = None
    reduction: str = "mean"
    with_logits: bool = False
    module = BinaryCrossEntropyLoss


@dataclass
class MseLossConfig(LayerConfig):
    """Config of `MseLoss`."""

    reduction: str = "mean"
    module = MseLoss
    takes_device = False


@dataclass
class HuberLossConfig(LayerConfig):
    """Config of `HuberLoss`."""

    delta: float = 1.0
    reduction: str = "mean"
    module = HuberLoss
    takes_device = False


@dataclass
class SmoothL1LossConfig(LayerConfig):
    """Config of `SmoothL1Loss`."""

    beta: float = 1.0
    reduction: str = "mean"
    module = SmoothL1Loss
    takes_device = False


@dataclass
class KlDivLossConfig(LayerConfig):
    """Config of `KlDivLoss`."""

    reduction: str = "mean"
    log_target: bool = False
    module = KlDivLoss
    takes_device = False


@dataclass
class CosineEmbeddingLossConfig(LayerConfig):
    """Config of `CosineEmbeddingLoss`."""

    margin: float = 0.0
    reduction: str = "mean"
    module = CosineEmbeddingLoss
    takes_device = False
