"""Dropout."""

from __future__ import annotations

from dataclasses import dataclass

import burn
from burn.errors import ValueRangeError
from burn.frontend.tensor import Tensor
from burn.nn._layer import LayerConfig
from burn.nn.module import Module


class Dropout(Module):
    """Zeroes each value with probability `prob` in training and scales the rest by
    1 / (1 - prob) (inverted dropout); the identity in eval. The mask comes from the input
    device's random generator (`burn.seed(n, device)` makes it reproducible).

    Args:
        prob: probability of zeroing, in [0, 1].
    """

    def __init__(self, prob: float = 0.5) -> None:
        if not 0.0 <= prob <= 1.0:
            raise ValueRangeError("Dropout", "prob must be in [0, 1]", prob=prob)
        self.prob = prob

    def forward(self, x: Tensor) -> Tensor:
        """Args:
            x: float tensor of any shape.
        Returns:
            same shape.
        """
        if not self.training or self.prob == 0.0:
            return x
        if self.prob == 1.0:
            return x * 0.0
        keep = burn.bernoulli(x.shape, 1.0 - self.prob, dtype=x.dtype, device=x.device)
        return x * (keep * (1.0 / (1.0 - self.prob)))

    def extra_repr(self) -> str:
        return f"prob={self.prob}"


@dataclass
class DropoutConfig(LayerConfig):
    """Config of `Dropout`."""

    prob: float = 0.5
    module = Dropout
    takes_device = False
