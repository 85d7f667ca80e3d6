"""The loss metric: the running mean of the step losses."""

from __future__ import annotations

from burn.train.metrics.base import BatchInfo, MeanMetric
from burn.train.step import StepOutput


class LossMetric(MeanMetric):
    """Mean loss of the epoch, weighted by batch size."""

    name = "loss"

    def update(self, output: StepOutput, info: BatchInfo) -> None:
        self.add(float(output.loss.detach().item()), info.batch_size)
