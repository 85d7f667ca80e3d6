"""Optimizers (Burn's API): build one from its config, then `optim.step(lr, model, grads)`.

    import burn.optim as optim
    opt = optim.AdamConfig(epsilon=1e-8).init()
    grads = optim.GradientsParams.from_grads(loss.backward(), model)
    optim.clip_grad_norm_(grads, 1.0)
    opt.step(lr, model, grads)  # updates model's Params in place
"""

from burn.optim.accumulate import GradientsAccumulator
from burn.optim.adagrad import AdaGrad, AdaGradConfig
from burn.optim.adam import Adam, AdamConfig
from burn.optim.adamw import AdamW, AdamWConfig
from burn.optim.base import Optimizer, OptimizerConfig
from burn.optim.clip import clip_grad_norm_, clip_grad_value_
from burn.optim.grads import GradientsParams
from burn.optim.rmsprop import RmsProp, RmsPropConfig
from burn.optim.sgd import Sgd, SgdConfig

__all__ = [
    "AdaGrad", "AdaGradConfig", "Adam", "AdamConfig", "AdamW", "AdamWConfig",
    "GradientsAccumulator", "GradientsParams", "Optimizer", "OptimizerConfig", "RmsProp",
    "RmsPropConfig", "Sgd", "SgdConfig", "clip_grad_norm_", "clip_grad_value_",
]
