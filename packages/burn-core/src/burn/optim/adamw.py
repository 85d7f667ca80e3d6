"""AdamW: Adam with decoupled weight decay (torch's `AdamW`)."""

from __future__ import annotations

from dataclasses import dataclass

from burn.device import Device
from burn.optim.adam import Adam, AdamConfig
from burn.optim.buffers import Buf, TensorOps


@dataclass(kw_only=True)
class AdamWConfig(AdamConfig):
    """AdamW hyperparameters: Adam's (including `amsgrad`), with `weight_decay` decoupled: the
    params shrink by `lr * weight_decay` before the Adam update.

    Defaults that differ from torch: `weight_decay` 1e-4 (torch 1e-2), `epsilon` 1e-5
    (torch's `eps` 1e-8).
    """

    weight_decay: float = 1e-4

    def init(self, device: Device | str | None = None) -> AdamW:
        """The optimizer (`device` is unused: state lives on each param's device)."""
        return AdamW(self)


class AdamW(Adam):
    """AdamW, updating as `torch.optim.AdamW`. Build with `AdamWConfig(...).init()`."""

    config: AdamWConfig
    _decoupled = True

    def _weight_decay(self, lr: float, param: Buf, grad: Buf, ops: type[TensorOps]
                      ) -> tuple[Buf, Buf]:
        decay = self.config.weight_decay
        return (ops.mul(param, 1 - lr * decay) if decay else param), grad
