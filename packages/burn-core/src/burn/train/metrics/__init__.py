"""Metrics of the Learner, one module per family; each keeps a running value per epoch."""

from burn.train.metrics.base import BatchInfo, MeanMetric, Metric
from burn.train.metrics.classification import (
    AccuracyMetric,
    ConfusionMetric,
    F1Metric,
    PrecisionMetric,
    RecallMetric,
    TopKAccuracyMetric,
)
from burn.train.metrics.loss import LossMetric
from burn.train.metrics.system import CpuUseMetric, MemoryUseMetric
from burn.train.metrics.training import IterationSpeedMetric, LearningRateMetric

__all__ = [
    "AccuracyMetric", "BatchInfo", "ConfusionMetric", "CpuUseMetric", "F1Metric",
    "IterationSpeedMetric", "LearningRateMetric", "LossMetric", "MeanMetric",
    "MemoryUseMetric", "Metric", "PrecisionMetric", "RecallMetric", "TopKAccuracyMetric",
]
