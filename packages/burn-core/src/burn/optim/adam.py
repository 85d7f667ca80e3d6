"""Adam (torch's `Adam`, with its AMSGrad variant)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from burn.device import Device
from burn.frontend import zeros_like
from burn.frontend.tensor import Tensor
from burn.nn import Param
from burn.optim.base import Optimizer, OptimizerConfig, State
from burn.optim.buffers import Buf, TensorOps


@dataclass(kw_only=True)
class AdamConfig(OptimizerConfig):
    """Adam hyperparameters (Burn's defaults).

    Defaults that differ from torch: `epsilon` 1e-5 (torch's `eps` 1e-8).

    Args:
        weight_decay: L2 penalty (see `OptimizerConfig`).
        beta_1: decay of the first-moment (mean) estimate.
        beta_2: decay of the second-moment estimate.
        epsilon: added to the denominator.
        amsgrad: divide by the running maximum of the second-moment estimate (torch's
            `amsgrad`).
        maximize: ascend the objective: the gradient negated before anything else (torch's
            `maximize`).
    """

    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-5
    amsgrad: bool = False
    maximize: bool = False

    def init(self, device: Device | str | None = None) -> Adam:
        """The optimizer (`device` is unused: state lives on each param's device)."""
        return Adam(self)


class Adam(Optimizer):
    """Adam, updating as `torch.optim.Adam`. Build with `AdamConfig(...).init()`."""

    config: AdamConfig
    #: Whether `weight_decay` shrinks the params (AdamW) instead of adding to the gradient.
    _decoupled = False

    def _init_state(self, param: Tensor) -> State:
        state: State = {"step": 0, "moment_1": zeros_like(param), "moment_2": zeros_like(param)}
        if self.config.amsgrad:
            state["max_moment_2"] = zeros_like(param)
        return state

    def _fused_steps(self, lr: float, members: list[tuple[Tensor, Tensor, State]],
                     owners: list[Param] | None = None) -> list[Tensor | None]:
        from burn.backends.cube.optim_kernels import adam_steps

        c = self.config
        return adam_steps(members, lr, c.beta_1, c.beta_2, c.epsilon, c.weight_decay,
                          self._decoupled, c.amsgrad, c.maximize, owners)

    def _fused(self, lr: float, param: Tensor, grad: Tensor, state: State) -> Tensor | None:
        return self._fused_steps(lr, [(param, grad, state)])[0]

    def _decay(self, lr: float, param: Buf, grad: Buf, ops: type[TensorOps]) -> tuple[Buf, Buf]:
        """The gradient negated when maximizing, then the weight decay (L2 here, decoupled
        in AdamW's `_weight_decay`)."""
        return self._weight_decay(lr, param, ops.mul(grad, -1.0) if self.config.maximize
                                  else grad, ops)

    def _weight_decay(self, lr: float, param: Buf, grad: Buf, ops: type[TensorOps]
                      ) -> tuple[Buf, Buf]:
        return super()._decay(lr, param, grad, ops)

    def _update(self, lr: float, param: Buf, grad: Buf, state: State, ops: type[TensorOps]
                ) -> Buf:
        c = self.config
        step = state["step"] = state["step"] + 1
        m1 = state["moment_1"] = ops.add_(ops.mul_(state["moment_1"], c.beta_1),
                                          ops.mul(grad, 1 - c.beta_1))
        m2 = state["moment_2"] = ops.add_(ops.mul_(state["moment_2"], c.beta_2),
                                          ops.mul_(ops.square(grad), 1 - c.beta_2))
        if c.amsgrad:
            m2 = state["max_moment_2"] = ops.max_(state["max_moment_2"], m2)
        denom = ops.add_scalar_(ops.div_scalar_(ops.sqrt(m2), math.sqrt(1 - c.beta_2**step)),
                                c.epsilon)
        return ops.sub_into(param, ops.mul_(ops.div_into(m1, denom),
                                            lr / (1 - c.beta_1**step)))
