"""What one training / validation step returns, and the protocols of the step providers
(after Burn's `TrainStep` / `ValidStep`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from burn.device import Device
from burn.frontend.tensor import Tensor


@dataclass
class StepOutput:
    """The result of one step: the loss (a scalar tensor; the Learner calls `backward` on it
    in training) and what the metrics read.

    Args:
        loss: the scalar loss of the batch.
        output: the model's output (logits, predictions), or None.
        targets: the batch's targets, or None.
    """

    loss: Tensor
    output: Tensor | None = None
    targets: Tensor | None = None

    @property
    def batch_size(self) -> int:
        """Items in the batch: the first dim of `targets` (or `output`), else 1."""
        ref = self.targets if self.targets is not None else self.output
        return int(ref.shape[0]) if ref is not None and ref.ndim else 1


@dataclass
class ClassificationOutput(StepOutput):
    """A classification step: `output` holds logits (or scores) [..., C] and `targets` int class
    indices [...] (what the accuracy / precision / recall / F1 metrics read)."""


@dataclass
class RegressionOutput(StepOutput):
    """A regression step: `output` holds predictions shaped as `targets`."""


#: What `TrainStep.train_step` returns (any `StepOutput`).
TrainOutput = StepOutput
#: What `ValidStep.valid_step` returns (any `StepOutput`).
ValidOutput = StepOutput


@runtime_checkable
class TrainStep(Protocol):
    """Provides the training step: the forward pass and loss of one batch (no backward)."""

    def train_step(self, batch: Any) -> TrainOutput: ...


@runtime_checkable
class ValidStep(Protocol):
    """Provides the validation step (run in eval mode under `burn.no_grad()`)."""

    def valid_step(self, batch: Any) -> ValidOutput: ...


def move_batch(batch: Any, device: Device) -> Any:
    """`batch` with every Tensor moved to `device` (through dicts, lists, tuples, named tuples
    and dataclasses); other values are kept.

    Args:
        batch: a tensor or a structure of them.
        device: the target device.
    Returns:
        The same structure on `device`.
    """
    if isinstance(batch, Tensor):
        return batch if batch.device == device else batch.to_device(device)
    if isinstance(batch, dict):
        return {k: move_batch(v, device) for k, v in batch.items()}
    if dataclasses.is_dataclass(batch) and not isinstance(batch, type):
        return dataclasses.replace(batch, **{f.name: move_batch(getattr(batch, f.name), device)
                                             for f in dataclasses.fields(batch) if f.init})
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(move_batch(v, device) for v in batch))
    if isinstance(batch, list | tuple):
        return type(batch)(move_batch(v, device) for v in batch)
    return batch
