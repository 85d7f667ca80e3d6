"""`StepLrScheduler`: decay by `gamma` every `step_size` iterations (torch's `StepLR`)."""

from __future__ import annotations

from dataclasses import dataclass

from burn.lr_scheduler.base import LrScheduler, require_positive


@dataclass
class StepLrScheduler(LrScheduler):
    """`initial_lr * gamma ** (iteration // step_size)`.

    Args:
        initial_lr: the lr of the first iteration.
        step_size: iterations between decays.
        gamma: the decay factor.
    """

    initial_lr: float
    step_size: int
    gamma: float = 0.1

    def __post_init__(self) -> None:
        require_positive("StepLrScheduler", step_size=self.step_size)

    def lr_at(self, iteration: int) -> float:
        return self.initial_lr * self.gamma ** (iteration // self.step_size)
