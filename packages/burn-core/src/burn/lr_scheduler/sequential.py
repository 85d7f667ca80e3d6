"""`SequentialLrScheduler`: schedulers one after another (torch's `SequentialLR`)."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from itertools import pairwise

from burn.lr_scheduler.base import LrScheduler


@dataclass
class SequentialLrScheduler(LrScheduler):
    """Runs `schedulers[0]` until `milestones[0]`, then `schedulers[1]` from its own iteration 0
    until `milestones[1]`, and so on (e.g. a linear warmup, then cosine decay).

    Args:
        schedulers: the schedulers, in order (their own counters are not used).
        milestones: the increasing iterations where the next scheduler starts
            (`len(schedulers) - 1` of them).
    """

    schedulers: list[LrScheduler]
    milestones: list[int]

    def __post_init__(self) -> None:
        if len(self.milestones) != len(self.schedulers) - 1:
            raise ValueError(f"SequentialLrScheduler: {len(self.schedulers)} schedulers need "
                             f"{len(self.schedulers) - 1} milestones, got {self.milestones}")
        if any(b <= a for a, b in pairwise([0, *self.milestones])):
            raise ValueError(f"SequentialLrScheduler: milestones must be increasing and > 0, "
                             f"got {self.milestones}")

    def lr_at(self, iteration: int) -> float:
        index = bisect_right(self.milestones, iteration)
        start = self.milestones[index - 1] if index else 0
        return self.schedulers[index].lr_at(iteration - start)
