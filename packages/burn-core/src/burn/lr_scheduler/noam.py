"""`NoamLrScheduler`: warmup then inverse-square-root decay (Burn's, from "Attention Is All You
Need")."""

from __future__ import annotations

from dataclasses import dataclass

from burn.lr_scheduler.base import LrScheduler, require_positive


@dataclass
class NoamLrScheduler(LrScheduler):
    """`initial_lr * model_size**-0.5 * min(s**-0.5, s * warmup_steps**-1.5)` with `s` the
    1-based step (`iteration + 1`), as Burn's `NoamLrScheduler`.

    Args:
        initial_lr: the scale of the schedule.
        warmup_steps: steps of linear warmup (the peak is at step `warmup_steps`).
        model_size: the model (embedding) size.
    """

    initial_lr: float
    warmup_steps: int = 4000
    model_size: int = 512

    def __post_init__(self) -> None:
        require_positive("NoamLrScheduler", warmup_steps=self.warmup_steps,
                         model_size=self.model_size)

    def lr_at(self, iteration: int) -> float:
        step = iteration + 1
        scale = min(step**-0.5, step * self.warmup_steps**-1.5)
        return self.initial_lr * self.model_size**-0.5 * scale
