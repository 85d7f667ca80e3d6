"""AdaGrad (torch's `Adagrad`)."""

from __future__ import annotations

from dataclasses import dataclass

from burn.device import Device
from burn.frontend import full_like
from burn.frontend.tensor import Tensor
from burn.optim.base import Optimizer, OptimizerConfig, State
from burn.optim.buffers import Buf, TensorOps


@dataclass(kw_only=True)
class AdaGradConfig(OptimizerConfig):
    """AdaGrad hyperparameters (Burn's defaults).

    Defaults that differ from torch: `epsilon` 1e-5 (torch's `eps` 1e-10).

    Args:
        weight_decay: L2 penalty (see `OptimizerConfig`).
        lr_decay: the lr of step t is `lr / (1 + (t - 1) * lr_decay)`.
        epsilon: added to the denominator.
        initial_accumulator_value: start value of the sum of squared gradients.
    """

    lr_decay: float = 0.0
    epsilon: float = 1e-5
    initial_accumulator_value: float = 0.0

    def init(self, device: Device | str | None = None) -> AdaGrad:
        """The optimizer (`device` is unused: state lives on each param's device)."""
        return AdaGrad(self)


class AdaGrad(Optimizer):
    """AdaGrad, updating as `torch.optim.Adagrad`. Build with `AdaGradConfig(...).init()`."""

    config: AdaGradConfig

    def _init_state(self, param: Tensor) -> State:
        return {"step": 0, "sum": full_like(param, self.config.initial_accumulator_value)}

    def _fused(self, lr: float, param: Tensor, grad: Tensor, state: State) -> Tensor | None:
        from burn.backends.cube.optim_kernels import adagrad_step

        c = self.config
        return adagrad_step(param, grad, state, lr, c.lr_decay, c.epsilon, c.weight_decay)

    def _update(self, lr: float, param: Buf, grad: Buf, state: State, ops: type[TensorOps]
                ) -> Buf:
        c = self.config
        step = state["step"] = state["step"] + 1
        total = state["sum"] = ops.add_(state["sum"], ops.square(grad))
        scaled = ops.div_into(grad, ops.add_scalar_(ops.sqrt(total), c.epsilon))
        return ops.sub_into(param, ops.mul_(scaled, lr / (1 + (step - 1) * c.lr_decay)))
