"""RMSProp, plain or centered, with optional momentum (torch's `RMSprop`)."""

from __future__ import annotations

from dataclasses import dataclass

from burn.device import Device
from burn.frontend import zeros_like
from burn.frontend.tensor import Tensor
from burn.optim.base import Optimizer, OptimizerConfig, State
from burn.optim.buffers import Buf, TensorOps


@dataclass(kw_only=True)
class RmsPropConfig(OptimizerConfig):
    """RMSProp hyperparameters (Burn's defaults).

    Defaults that differ from torch: `epsilon` 1e-5 (torch's `eps` 1e-8).

    Args:
        weight_decay: L2 penalty (see `OptimizerConfig`).
        alpha: decay of the squared-gradient average.
        epsilon: added to the denominator.
        centered: divide by the variance estimate (squared average minus squared mean).
        momentum: momentum factor (0 disables momentum).
    """

    alpha: float = 0.99
    epsilon: float = 1e-5
    centered: bool = False
    momentum: float = 0.0

    def init(self, device: Device | str | None = None) -> RmsProp:
        """The optimizer (`device` is unused: state lives on each param's device)."""
        return RmsProp(self)


class RmsProp(Optimizer):
    """RMSProp, updating as `torch.optim.RMSprop`. Build with `RmsPropConfig(...).init()`."""

    config: RmsPropConfig

    def _init_state(self, param: Tensor) -> State:
        state = {"square_avg": zeros_like(param)}
        if self.config.centered:
            state["grad_avg"] = zeros_like(param)
        if self.config.momentum:
            state["momentum"] = zeros_like(param)
        return state

    def _fused(self, lr: float, param: Tensor, grad: Tensor, state: State) -> Tensor | None:
        from burn.backends.cube.optim_kernels import rmsprop_step

        c = self.config
        return rmsprop_step(param, grad, state, lr, c.alpha, c.epsilon, c.weight_decay,
                            c.centered, c.momentum)

    def _update(self, lr: float, param: Buf, grad: Buf, state: State, ops: type[TensorOps]
                ) -> Buf:
        c = self.config
        square_avg = state["square_avg"] = ops.add_(
            ops.mul_(state["square_avg"], c.alpha), ops.mul_(ops.square(grad), 1 - c.alpha))
        if c.centered:
            grad_avg = state["grad_avg"] = ops.add_(ops.mul_(state["grad_avg"], c.alpha),
                                                    ops.mul(grad, 1 - c.alpha))
            square_avg = ops.sub_into(square_avg, ops.square(grad_avg))
        step = ops.div_into(grad, ops.add_scalar_(ops.sqrt(square_avg), c.epsilon))
        if c.momentum:
            step = state["momentum"] = ops.add_(ops.mul_(state["momentum"], c.momentum), step)
        return ops.sub_into(param, ops.mul(step, lr))
