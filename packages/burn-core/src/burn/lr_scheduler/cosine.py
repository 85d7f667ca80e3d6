"""`CosineAnnealingLrScheduler`: cosine decay (torch's `CosineAnnealingLR`, closed form)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from burn.lr_scheduler.base import LrScheduler, require_positive


@dataclass
class CosineAnnealingLrScheduler(LrScheduler):
    """`min_lr + (initial_lr - min_lr) * (1 + cos(pi * iteration / num_iters)) / 2`: it reaches
    `min_lr` at `num_iters` and rises again after, as torch's closed form.

    Args:
        initial_lr: the lr of the first iteration.
        num_iters: the half period (torch's `T_max`).
        min_lr: the lowest lr (torch's `eta_min`).
    """

    initial_lr: float
    num_iters: int
    min_lr: float = 0.0

    def __post_init__(self) -> None:
        require_positive("CosineAnnealingLrScheduler", num_iters=self.num_iters)

    def lr_at(self, iteration: int) -> float:
        cosine = 1 + math.cos(math.pi * iteration / self.num_iters)
        return self.min_lr + (self.initial_lr - self.min_lr) * cosine / 2
