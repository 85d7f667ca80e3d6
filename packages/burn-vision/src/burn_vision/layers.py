"""Regularisation layers for vision models (DropPath / stochastic depth, DropBlock) and a
Gram-matrix style loss."""

from __future__ import annotations

import burn
import burn.functional as F
from burn import Tensor
from burn.dtype import Kind
from burn.errors import ShapeError
from burn.nn import Module
from burn_vision._checks import image_arg, positive_int, probability

_FLOAT = (Kind.FLOAT,)


class DropPath(Module):
    """Stochastic depth (timm's DropPath): in training, zero whole samples of a residual
    branch with probability `prob` and scale the kept ones by 1 / (1 - prob); the identity in
    eval. The mask comes from the input device's generator (`burn.seed`).

    Args:
        prob: drop probability in [0, 1].
        scale_by_keep: divide kept samples by 1 - prob (default True, as timm).
    Raises:
        ValueRangeError: for prob outside [0, 1].
    """

    def __init__(self, prob: float = 0.1, scale_by_keep: bool = True) -> None:
        self.prob = probability("DropPath", "prob", prob)
        self.scale_by_keep = scale_by_keep

    def forward(self, x: Tensor) -> Tensor:
        """Args:
            x: float [N, ...].
        Returns:
            same shape.
        """
        x = image_arg("DropPath", "x", x, _FLOAT, 1, None, "float [N, ...]")
        if not self.training or self.prob == 0.0:
            return x
        keep = 1.0 - self.prob
        mask = burn.bernoulli((x.shape[0],) + (1,) * (x.ndim - 1), keep, dtype=x.dtype,
                              device=x.device)
        if self.scale_by_keep and keep > 0.0:
            mask = mask * (1.0 / keep)
        return x * mask

    def extra_repr(self) -> str:
        return f"prob={self.prob}"


class DropBlock(Module):
    """DropBlock (Ghiasi et al., 2018): in training, zero square blocks of `block_size` x
    `block_size` of each feature map, seeded with the rate that drops about `prob` of the
    values, and rescale by numel / kept; the identity in eval.

    Args:
        prob: fraction of values to drop, in [0, 1].
        block_size: side of the blocks, >= 1.
    Raises:
        ValueRangeError: for prob outside [0, 1] or block_size < 1.
    """

    def __init__(self, prob: float = 0.1, block_size: int = 7) -> None:
        self.prob = probability("DropBlock", "prob", prob)
        self.block_size = positive_int("DropBlock", "block_size", block_size)

    def forward(self, x: Tensor) -> Tensor:
        """Args:
            x: float [N, C, H, W].
        Returns:
            same shape.
        """
        x = image_arg("DropBlock", "x", x, _FLOAT, 4, 4, "float [N, C, H, W]")
        if not self.training or self.prob == 0.0 or x.numel() == 0:
            return x
        n, c, h, w = x.shape
        bs = min(self.block_size, h, w)
        gamma = self.prob / (bs * bs) * (h * w) / ((h - bs + 1) * (w - bs + 1))
        seeds = burn.bernoulli((n, c, h - bs + 1, w - bs + 1), min(gamma, 1.0), dtype=x.dtype,
                               device=x.device)
        # each seed drops the block whose top-left corner it marks.
        dropped = F.max_pool2d(seeds.pad((bs - 1, bs - 1, bs - 1, bs - 1)), bs, stride=1)
        keep = 1.0 - dropped
        kept = keep.sum()
        scale = burn.where(kept > 0, float(keep.numel()) / burn.where(kept > 0, kept, 1.0), 0.0)
        return x * keep * scale

    def extra_repr(self) -> str:
        return f"prob={self.prob}, block_size={self.block_size}"


def gram_matrix(x: Tensor) -> Tensor:
    """Gram matrices of feature maps, normalised by C * H * W (Gatys et al.'s style
    representation).

    Args:
        x: float [N, C, H, W].
    Returns:
        float [N, C, C].
    Raises:
        DTypeError / ShapeError: for x not float [N, C, H, W].
    """
    x = image_arg("gram_matrix", "x", x, _FLOAT, 4, 4, "float [N, C, H, W]")
    n, c, h, w = x.shape
    f = x.reshape(n, c, h * w)
    return f.matmul(f.swap_dims(1, 2)) / float(max(c * h * w, 1))


class GramLoss(Module):
    """Style loss: mean squared difference of the Gram matrices of `x` and `target`."""

    def forward(self, x: Tensor, target: Tensor) -> Tensor:
        """Args:
            x, target: float [N, C, H, W] of the same shape.
        Returns:
            float scalar.
        Raises:
            ShapeError: for different shapes.
        """
        if isinstance(x, Tensor) and isinstance(target, Tensor) and x.shape != target.shape:
            raise ShapeError("GramLoss", "x and target must be float [N, C, H, W] of one shape",
                             x=x.shape, target=target.shape)
        diff = gram_matrix(x) - gram_matrix(target)
        return (diff * diff).mean()
