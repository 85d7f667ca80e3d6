"""Loss Modules with Configs; each calls its function in `burn.functional.loss` (re-exported
here)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import burn
from burn.device import Device
from burn.errors import ValueRangeError
from burn.frontend.tensor import Tensor
from burn.functional.loss import (
    Reduction,
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from burn.nn._layer import LayerConfig
from burn.nn.module import Buffer, Module

__all__ = [
    "BinaryCrossEntropyLoss", "BinaryCrossEntropyLossConfig", "CosineEmbeddingLoss",
    "CosineEmbeddingLossConfig", "CrossEntropyLoss", "CrossEntropyLossConfig", "HuberLoss",
    "HuberLossConfig", "KlDivLoss", "KlDivLossConfig", "L1Loss", "L1LossConfig", "MseLoss",
    "MseLossConfig", "NllLoss", "NllLossConfig", "Reduction", "SmoothL1Loss",
    "SmoothL1LossConfig", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "cosine_embedding_loss", "cross_entropy", "huber_loss", "kl_div", "l1_loss", "mse_loss",
    "nll_loss", "smooth_l1_loss",
]


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
        return cross_entropy(logits, target, self.weight, ignore_index=self.ignore_index,
                             reduction=self.reduction, label_smoothing=self.label_smoothing)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}, label_smoothing={self.label_smoothing}"


class BinaryCrossEntropyLoss(Module):
    """Binary cross entropy (see `binary_cross_entropy` and
    `binary_cross_entropy_with_logits`).

    Args:
        weight: rescaling broadcast against the loss (e.g. [C] per class on the last dim).
        reduction: "mean", "sum" or "none".
        with_logits: whether the input is logits (torch's `BCEWithLogitsLoss`).
        pos_weight: weight of the positive term (logits only), broadcast against the target.
        device: where the weights live.
    Raises:
        ValueRangeError: for a pos_weight without `with_logits`.
    """

    def __init__(self, weight: Sequence[float] | Tensor | None = None,
                 reduction: Reduction = "mean", with_logits: bool = False,
                 pos_weight: Sequence[float] | Tensor | None = None,
                 device: Device | str | None = None) -> None:
        if pos_weight is not None and not with_logits:
            raise ValueRangeError("BinaryCrossEntropyLoss", "pos_weight needs with_logits=True")
        self.weight = _weight_buffer(weight, device)
        self.pos_weight = _weight_buffer(pos_weight, device)
        self.reduction, self.with_logits = reduction, with_logits

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Args:
            input: probabilities (or logits); target: same shape.
        Returns:
            the loss.
        """
        if self.with_logits:
            return binary_cross_entropy_with_logits(input, target, self.weight,
                                                    reduction=self.reduction,
                                                    pos_weight=self.pos_weight)
        return binary_cross_entropy(input, target, self.weight, reduction=self.reduction)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}, with_logits={self.with_logits}"


class _Elementwise(Module):
    """Base of the losses of same-shaped input and target with only a reduction option."""

    def __init__(self, reduction: Reduction = "mean") -> None:
        self.reduction = reduction

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"


class L1Loss(_Elementwise):
    """Mean absolute error (see `l1_loss`).

    Args:
        reduction: "mean", "sum" or "none".
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The loss of same-shaped input and target."""
        return l1_loss(input, target, reduction=self.reduction)


class NllLoss(Module):
    """Negative log-likelihood of log-probabilities and class indices (see `nll_loss`).

    Args:
        weight: [C] class weights (a Buffer), or None.
        ignore_index: targets to skip.
        reduction: "mean", "sum" or "none".
        device: where the weight lives.
    """

    def __init__(self, weight: Sequence[float] | Tensor | None = None, ignore_index: int = -100,
                 reduction: Reduction = "mean", device: Device | str | None = None) -> None:
        self.weight = _weight_buffer(weight, device)
        self.ignore_index, self.reduction = ignore_index, reduction

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The loss of log-probabilities [N, C, *] and int targets [N, *]."""
        return nll_loss(input, target, self.weight, ignore_index=self.ignore_index,
                        reduction=self.reduction)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}, ignore_index={self.ignore_index}"


class MseLoss(_Elementwise):
    """Mean squared error (see `mse_loss`).

    Args:
        reduction: "mean", "sum" or "none".
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The loss of same-shaped input and target."""
        return mse_loss(input, target, reduction=self.reduction)


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
        return huber_loss(input, target, reduction=self.reduction, delta=self.delta)

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
        return smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)

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
        return kl_div(input, target, reduction=self.reduction, log_target=self.log_target)

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
        return cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)

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
    """Config of `BinaryCrossEntropyLoss` (weights as lists of floats)."""

    weight: tuple[float, ...] | None = None
    reduction: str = "mean"
    with_logits: bool = False
    pos_weight: tuple[float, ...] | None = None
    module = BinaryCrossEntropyLoss


@dataclass
class NllLossConfig(LayerConfig):
    """Config of `NllLoss` (weight as a list of floats)."""

    weight: tuple[float, ...] | None = None
    ignore_index: int = -100
    reduction: str = "mean"
    module = NllLoss


@dataclass
class L1LossConfig(LayerConfig):
    """Config of `L1Loss`."""

    reduction: str = "mean"
    module = L1Loss
    takes_device = False


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
