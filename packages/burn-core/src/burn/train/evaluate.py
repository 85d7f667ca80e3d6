"""`evaluate`: metrics of a trained model over a loader (a test set), as the Learner's
validation computes them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

from burn.autodiff import no_grad
from burn.nn.module import Module
from burn.train.metrics import BatchInfo, Metric
from burn.train.step import StepOutput, TrainStep


def eval_step(steps: TrainStep | Module, batch: Any) -> StepOutput:
    """`steps.valid_step(batch)`, else `steps.train_step(batch)`, without gradients.

    Raises:
        TypeError: `steps` has neither step.
    """
    step = getattr(steps, "valid_step", None) or getattr(steps, "train_step", None)
    if step is None:
        raise TypeError(f"{type(steps).__name__} has no valid_step or train_step")
    with no_grad():
        return cast(StepOutput, step(batch))


def evaluate(steps: TrainStep | Module, loader: Iterable[Any],
             metrics: Sequence[Metric]) -> dict[str, float]:
    """The `metrics` of `steps` over every batch of `loader`.

    Args:
        steps: the step provider (usually the model `Learner.fit` returned, ready for
            inference); batches go to its step as the loader made them.
        loader: the batches (e.g. a `DataLoader` of the test set).
        metrics: the metrics to compute (reset first); train-only ones are refused.
    Returns:
        {metric name: value over all batches}.
    Raises:
        ValueError: a train-only metric (such as the learning rate) is given.
        TypeError: `steps` has neither `valid_step` nor `train_step`.
    """
    for metric in metrics:
        if metric.train_only:
            raise ValueError(f"evaluate: {metric.name} is a train-only metric")
        metric.reset()
    for batch in loader:
        output = eval_step(steps, batch)
        for metric in metrics:
            metric.update(output, BatchInfo(None, output.batch_size))
    return {metric.name: metric.value() for metric in metrics}
