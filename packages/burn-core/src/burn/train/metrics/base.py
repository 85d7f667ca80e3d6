"""The `Metric` base: a per-epoch running value updated after every step."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from burn.train.step import StepOutput


@dataclass(frozen=True)
class BatchInfo:
    """What the Learner knows about a step besides its output.

    Args:
        lr: the learning rate of the step (None in validation).
        batch_size: the items in the batch.
    """

    lr: float | None
    batch_size: int


class Metric(ABC):
    """A metric of one split: `reset()` at each epoch start, `update()` after each step,
    `value()` gives the running value of the epoch so far (a float that can be logged).

    Attributes:
        name: the column name in logs and summaries.
        train_only: skipped in validation (e.g. the learning rate).
        higher_is_better: the direction a best checkpoint / early stopping would follow.
    """

    name: str
    train_only: ClassVar[bool] = False
    higher_is_better: ClassVar[bool] = False

    @abstractmethod
    def reset(self) -> None:
        """Forget the previous epoch."""

    @abstractmethod
    def update(self, output: StepOutput, info: BatchInfo) -> None:
        """Add one step's output."""

    @abstractmethod
    def value(self) -> float:
        """The running value of the epoch (nan before any update)."""


class MeanMetric(Metric):
    """A metric whose value is the batch-size weighted mean of per-batch values."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._total, self._count = 0.0, 0

    def add(self, value: float, weight: int) -> None:
        """Add `value` with `weight` items."""
        self._total += value * weight
        self._count += weight

    def value(self) -> float:
        return self._total / self._count if self._count else float("nan")
