"""Metrics of the training process: learning rate and iteration speed."""

from __future__ import annotations

import time

from burn.train.metrics.base import BatchInfo, Metric
from burn.train.step import StepOutput


class LearningRateMetric(Metric):
    """The learning rate of the latest step (training only)."""

    name = "lr"
    train_only = True

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._lr = float("nan")

    def update(self, output: StepOutput, info: BatchInfo) -> None:
        if info.lr is not None:
            self._lr = float(info.lr)

    def value(self) -> float:
        return self._lr


class IterationSpeedMetric(Metric):
    """Items processed per second since the epoch started."""

    name = "items_per_sec"
    higher_is_better = True

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._start, self._items = time.perf_counter(), 0

    def update(self, output: StepOutput, info: BatchInfo) -> None:
        self._items += info.batch_size

    def value(self) -> float:
        elapsed = time.perf_counter() - self._start
        return self._items / elapsed if self._items and elapsed > 0 else float("nan")
