"""Stochastic gradient descent with momentum, dampening and Nesterov (torch's `SGD`)."""

from __future__ import annotations

from dataclasses import dataclass

from burn.device import Device
from burn.frontend.tensor import Tensor
from burn.optim.base import Optimizer, OptimizerConfig, State
from burn.optim.buffers import Buf, TensorOps


@dataclass(kw_only=True)
class SgdConfig(OptimizerConfig):
    """SGD hyperparameters.

    Args:
        weight_decay: L2 penalty (see `OptimizerConfig`).
        momentum: momentum factor (0 disables momentum).
        dampening: dampening of the gradient in the momentum buffer.
        nesterov: use Nesterov momentum (needs momentum > 0 and dampening 0).
    """

    momentum: float = 0.0
    dampening: float = 0.0
    nesterov: bool = False

    def __post_init__(self) -> None:
        if self.nesterov and (self.momentum <= 0 or self.dampening != 0):
            raise ValueError("SgdConfig: Nesterov momentum needs momentum > 0 and dampening 0")

    def init(self, device: Device | str | None = None) -> Sgd:
        """The optimizer (`device` is unused: state lives on each param's device)."""
        return Sgd(self)


class Sgd(Optimizer):
    """SGD, updating as `torch.optim.SGD`. Build with `SgdConfig(...).init()`."""

    config: SgdConfig

    def _fused(self, lr: float, param: Tensor, grad: Tensor, state: State) -> Tensor | None:
        from burn.backends.cube.optim_kernels import sgd_step

        c = self.config
        return sgd_step(param, grad, state, lr, c.momentum, c.dampening, c.weight_decay,
                        c.nesterov)

    def _update(self, lr: float, param: Buf, grad: Buf, state: State, ops: type[TensorOps]
                ) -> Buf:
        momentum = self.config.momentum
        if momentum:
            buf = state.get("momentum")
            buf = ops.owned(grad) if buf is None else ops.add_(
                ops.mul_(buf, momentum), ops.mul(grad, 1 - self.config.dampening))
            state["momentum"] = buf
            grad = ops.add_into(grad, ops.mul(buf, momentum)) if self.config.nesterov else buf
        return ops.sub_into(param, ops.mul(grad, lr))
