"""Classification metrics: accuracy, top-k accuracy, macro precision / recall / F1.

They read `output` (scores [..., C]) and `targets` (class indices [...]) of a step output
(e.g. `ClassificationOutput`).
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from burn.train.metrics.base import BatchInfo, MeanMetric, Metric
from burn.train.step import StepOutput


def class_arrays(output: StepOutput, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """(scores [M, C], int targets [M]) of a step output, flattened over the leading dims.

    Raises:
        TypeError: when the output has no `output` or `targets`.
    """
    if output.output is None or output.targets is None:
        raise TypeError(f"{metric}: the step output needs `output` (scores) and `targets` "
                        f"(class indices), e.g. a ClassificationOutput")
    scores = np.asarray(output.output.detach().to_numpy())
    scores = scores.reshape(-1, scores.shape[-1])
    targets = np.asarray(output.targets.detach().to_numpy()).reshape(-1).astype(np.int64)
    return scores, targets


class AccuracyMetric(MeanMetric):
    """Fraction of items whose highest score is the target class."""

    name = "accuracy"
    higher_is_better = True

    def update(self, output: StepOutput, info: BatchInfo) -> None:
        scores, targets = class_arrays(output, self.name)
        self.add(float(np.mean(scores.argmax(-1) == targets)), len(targets))


class TopKAccuracyMetric(MeanMetric):
    """Fraction of items whose target class is among the `k` highest scores.

    Args:
        k: how many of the highest scores count.
    """

    higher_is_better = True

    def __init__(self, k: int) -> None:
        if k < 1:
            raise ValueError(f"TopKAccuracyMetric: k must be >= 1, got {k}")
        self.k = k
        self.name = f"top{k}_accuracy"
        super().__init__()

    def update(self, output: StepOutput, info: BatchInfo) -> None:
        scores, targets = class_arrays(output, self.name)
        top = np.argsort(-scores, axis=-1, kind="stable")[:, :self.k]
        self.add(float(np.mean((top == targets[:, None]).any(-1))), len(targets))


class ConfusionMetric(Metric):
    """A metric computed from the epoch's confusion matrix, macro-averaged over the classes
    that occur in the targets or the predictions (as sklearn's default; 0 where undefined)."""

    higher_is_better = True

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._confusion = np.zeros((0, 0), np.int64)

    def update(self, output: StepOutput, info: BatchInfo) -> None:
        scores, targets = class_arrays(output, self.name)
        n = max(scores.shape[-1], int(targets.max(initial=-1)) + 1, len(self._confusion))
        if n > len(self._confusion):
            grown = np.zeros((n, n), np.int64)
            grown[:len(self._confusion), :len(self._confusion)] = self._confusion
            self._confusion = grown
        np.add.at(self._confusion, (targets, scores.argmax(-1)), 1)

    def value(self) -> float:
        c = self._confusion
        present = (c.sum(0) + c.sum(1)) > 0
        if not present.any():
            return float("nan")
        tp = np.diag(c).astype(np.float64)
        per_class = self._per_class(tp, c.sum(0) - tp, c.sum(1) - tp)
        return float(per_class[present].mean())

    @abstractmethod
    def _per_class(self, tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
        """The per-class scores from true positives, false positives, false negatives."""


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den is 0."""
    return np.divide(num, den, out=np.zeros_like(num, dtype=np.float64), where=den > 0)


class PrecisionMetric(ConfusionMetric):
    """Macro precision: mean over classes of TP / (TP + FP)."""

    name = "precision"

    def _per_class(self, tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
        return _ratio(tp, tp + fp)


class RecallMetric(ConfusionMetric):
    """Macro recall: mean over classes of TP / (TP + FN)."""

    name = "recall"

    def _per_class(self, tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
        return _ratio(tp, tp + fn)


class F1Metric(ConfusionMetric):
    """Macro F1: mean over classes of 2 TP / (2 TP + FP + FN)."""

    name = "f1"

    def _per_class(self, tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
        return _ratio(2 * tp, 2 * tp + fp + fn)
