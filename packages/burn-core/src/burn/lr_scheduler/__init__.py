"""Learning-rate schedulers (Burn's API): `lr = scheduler.step()` before each optimizer step.

    from burn.lr_scheduler import CosineAnnealingLrScheduler, LinearLrScheduler, \
        SequentialLrScheduler
    sched = SequentialLrScheduler([LinearLrScheduler(1e-4, 1e-3, 100),
                                   CosineAnnealingLrScheduler(1e-3, 900)], milestones=[100])
    for batch in batches:
        optim.step(sched.step(), model, grads)
"""

from burn.lr_scheduler.base import LrScheduler
from burn.lr_scheduler.constant import ConstantLr
from burn.lr_scheduler.cosine import CosineAnnealingLrScheduler
from burn.lr_scheduler.exponential import ExponentialLrScheduler
from burn.lr_scheduler.linear import LinearLrScheduler
from burn.lr_scheduler.noam import NoamLrScheduler
from burn.lr_scheduler.sequential import SequentialLrScheduler
from burn.lr_scheduler.step import StepLrScheduler

__all__ = [
    "ConstantLr", "CosineAnnealingLrScheduler", "ExponentialLrScheduler", "LinearLrScheduler",
    "LrScheduler", "NoamLrScheduler", "SequentialLrScheduler", "StepLrScheduler",
]
