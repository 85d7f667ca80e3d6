"""`ConstantLr`: the same lr at every iteration."""

from __future__ import annotations

from dataclasses import dataclass

from burn.lr_scheduler.base import LrScheduler


@dataclass
class ConstantLr(LrScheduler):
    """A constant learning rate.

    Args:
        lr: the learning rate.
    """

    lr: float

    def lr_at(self, iteration: int) -> float:
        return self.lr
