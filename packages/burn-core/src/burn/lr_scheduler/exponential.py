"""`ExponentialLrScheduler`: decay by `gamma` every iteration (torch's `ExponentialLR`)."""

from __future__ import annotations

from dataclasses import dataclass

from burn.lr_scheduler.base import LrScheduler


@dataclass
class ExponentialLrScheduler(LrScheduler):
    """`initial_lr * gamma ** iteration`.

    Args:
        initial_lr: the lr of the first iteration.
        gamma: the decay factor.
    """

    initial_lr: float
    gamma: float

    def lr_at(self, iteration: int) -> float:
        return self.initial_lr * self.gamma**iteration
