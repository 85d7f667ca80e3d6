"""LR schedulers against torch.optim.lr_scheduler (Noam against its formula)."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import pytest
import torch
from torch.optim import lr_scheduler as tl

from burn.lr_scheduler import (
    ConstantLr,
    CosineAnnealingLrScheduler,
    ExponentialLrScheduler,
    LinearLrScheduler,
    LrScheduler,
    NoamLrScheduler,
    SequentialLrScheduler,
    StepLrScheduler,
)

STEPS = 20
TorchFactory = Callable[[torch.optim.Optimizer], tl.LRScheduler]


def torch_lrs(base_lr: float, make: TorchFactory) -> list[float]:
    """The lr torch's optimizer uses at each of STEPS iterations."""
    optim = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=base_lr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SequentialLR's deprecated step(epoch) inside
        scheduler = make(optim)
        lrs = []
        for _ in range(STEPS):
            lrs.append(optim.param_groups[0]["lr"])
            optim.step()
            scheduler.step()
    return lrs


# name -> (build ours, torch's base lr, torch scheduler factory)
CASES: dict[str, tuple[Callable[[], LrScheduler], float, TorchFactory]] = {
    "constant": (lambda: ConstantLr(0.1), 0.1, lambda o: tl.LambdaLR(o, lambda _: 1.0)),
    "step": (lambda: StepLrScheduler(0.1, step_size=3, gamma=0.5), 0.1,
             lambda o: tl.StepLR(o, step_size=3, gamma=0.5)),
    "exponential": (lambda: ExponentialLrScheduler(0.1, gamma=0.9), 0.1,
                    lambda o: tl.ExponentialLR(o, gamma=0.9)),
    "linear_decay": (lambda: LinearLrScheduler(0.5, 0.05, num_iters=8), 0.5,
                     lambda o: tl.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=8)),
    "linear_warmup": (lambda: LinearLrScheduler(0.01, 0.1, num_iters=5), 0.1,
                      lambda o: tl.LinearLR(o, start_factor=0.1, end_factor=1.0,
                                            total_iters=5)),
    "cosine": (lambda: CosineAnnealingLrScheduler(0.1, num_iters=20, min_lr=0.01), 0.1,
               lambda o: tl.CosineAnnealingLR(o, T_max=20, eta_min=0.01)),
    "cosine_past_t_max": (lambda: CosineAnnealingLrScheduler(0.1, num_iters=7), 0.1,
                          lambda o: tl.CosineAnnealingLR(o, T_max=7)),
    "sequential": (
        lambda: SequentialLrScheduler([LinearLrScheduler(0.01, 0.1, 5),
                                       CosineAnnealingLrScheduler(0.1, 15, 0.001)],
                                      milestones=[5]),
        0.1, lambda o: tl.SequentialLR(o, [
            tl.LinearLR(o, start_factor=0.1, end_factor=1.0, total_iters=5),
            tl.CosineAnnealingLR(o, T_max=15, eta_min=0.001)], milestones=[5])),
    "sequential_three": (
        lambda: SequentialLrScheduler([ConstantLr(0.2), StepLrScheduler(0.2, 2, 0.5),
                                       ExponentialLrScheduler(0.2, 0.8)], milestones=[4, 11]),
        0.2, lambda o: tl.SequentialLR(o, [
            tl.LambdaLR(o, lambda _: 1.0), tl.StepLR(o, 2, 0.5), tl.ExponentialLR(o, 0.8)],
            milestones=[4, 11])),
}


@pytest.mark.parametrize("name", CASES)
def test_lr_sequence_matches_torch(name: str) -> None:
    make, base_lr, make_torch = CASES[name]
    scheduler = make()
    got = [scheduler.step() for _ in range(STEPS)]
    assert got == pytest.approx(torch_lrs(base_lr, make_torch), rel=1e-9, abs=1e-15)


def test_noam_matches_formula() -> None:
    scheduler = NoamLrScheduler(2.0, warmup_steps=5, model_size=64)
    got = [scheduler.step() for _ in range(STEPS)]
    want = [2.0 * 64**-0.5 * min(s**-0.5, s * 5**-1.5) for s in range(1, STEPS + 1)]
    assert got == pytest.approx(want, rel=1e-12)
    assert max(got) == got[4]  # the peak ends the warmup


@pytest.mark.parametrize("name", [*CASES, "noam"])
def test_state_dict_resumes_identically(name: str) -> None:
    make = CASES[name][0] if name in CASES else lambda: NoamLrScheduler(1.0, 4, 16)
    scheduler = make()
    for _ in range(7):
        scheduler.step()
    state = scheduler.state_dict()
    rest = [scheduler.step() for _ in range(STEPS - 7)]
    resumed = make()
    resumed.load_state_dict(state)
    assert [resumed.step() for _ in range(STEPS - 7)] == rest


@pytest.mark.parametrize("build", [
    lambda: StepLrScheduler(0.1, step_size=0),
    lambda: LinearLrScheduler(0.1, 0.01, num_iters=0),
    lambda: CosineAnnealingLrScheduler(0.1, num_iters=0),
    lambda: NoamLrScheduler(1.0, warmup_steps=0),
    lambda: SequentialLrScheduler([ConstantLr(0.1), ConstantLr(0.2)], milestones=[]),
    lambda: SequentialLrScheduler([ConstantLr(0.1)] * 3, milestones=[5, 5]),
])
def test_invalid_settings_raise(build: Callable[[], LrScheduler]) -> None:
    with pytest.raises(ValueError):
        build()
