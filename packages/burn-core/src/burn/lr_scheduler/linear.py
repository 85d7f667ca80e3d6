"""`LinearLrScheduler`: linear interpolation between two lrs (torch's `LinearLR`)."""

from __future__ import annotations

from dataclasses import dataclass

from burn.lr_scheduler.base import LrScheduler, require_positive


@dataclass
class LinearLrScheduler(LrScheduler):
    """From `initial_lr` at iteration 0 to `final_lr` at `num_iters`, constant after (torch's
    `LinearLR` with `start_factor=1`, `end_factor=final_lr/initial_lr`, `total_iters=num_iters`).

    Args:
        initial_lr: the lr of the first iteration.
        final_lr: the lr from iteration `num_iters` on.
        num_iters: the length of the ramp.
    """

    initial_lr: float
    final_lr: float
    num_iters: int

    def __post_init__(self) -> None:
        require_positive("LinearLrScheduler", num_iters=self.num_iters)

    def lr_at(self, iteration: int) -> float:
        progress = min(iteration, self.num_iters) / self.num_iters
        return self.initial_lr + (self.final_lr - self.initial_lr) * progress
