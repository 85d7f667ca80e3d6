"""Optimizers against torch.optim: 20-step trajectories, accumulation, clipping, save/load, on
the NumPy backend (per-param and multi-tensor in-place updates) and the cpu cube backend (its
optimizer kernels: a compiled multiply-add may be contracted, about an ulp per step, which the
tolerances cover)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest
import torch

import burn
from burn.nn import Module, Param
from burn.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    GradientsAccumulator,
    GradientsParams,
    OptimizerConfig,
    RmsPropConfig,
    SgdConfig,
    clip_grad_norm_,
    clip_grad_value_,
)

STEPS = 20
DEVICES = ["numpy", "cpu", "wgpu"]
_rng = np.random.default_rng(0)
INIT = {
    "hidden.weight": _rng.normal(0, 0.5, (5, 3)).astype(np.float32),
    "hidden.bias": _rng.normal(0, 0.1, 5).astype(np.float32),
    "out.weight": _rng.normal(0, 0.5, (2, 5)).astype(np.float32),
    "out.bias": np.zeros(2, np.float32),
}
X = _rng.normal(size=(8, 3)).astype(np.float32)
Y = _rng.normal(size=(8, 2)).astype(np.float32)


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> burn.Device:
    """The autodiff device of each backend the optimizers run on."""
    device = burn.Device(request.param)
    reason = type(device.backend).unavailable_reason()
    if reason is not None:
        pytest.fail(f"{request.param} is unavailable: {reason}")
    return device.autodiff()


class Dense(Module):
    def __init__(self, weight: np.ndarray, bias: np.ndarray, device: burn.Device) -> None:
        self.weight = Param(burn.tensor(weight, device=device))
        self.bias = Param(burn.tensor(bias, device=device))

    def forward(self, x: burn.Tensor) -> burn.Tensor:
        return x @ self.weight.transpose(0, 1) + self.bias


class Mlp(Module):
    def __init__(self, arrays: dict[str, np.ndarray], device: burn.Device) -> None:
        self.device = device
        self.hidden = Dense(arrays["hidden.weight"], arrays["hidden.bias"], device)
        self.out = Dense(arrays["out.weight"], arrays["out.bias"], device)

    def forward(self, x: burn.Tensor) -> burn.Tensor:
        return self.out(self.hidden(x).tanh())


def burn_loss(model: Mlp, rows: slice = slice(None)) -> burn.Tensor:
    x, y = (burn.tensor(a[rows], device=model.device) for a in (X, Y))
    return (model(x) - y).square().mean()


def torch_params() -> dict[str, torch.nn.Parameter]:
    return {k: torch.nn.Parameter(torch.tensor(v)) for k, v in INIT.items()}


def torch_loss(p: Mapping[str, torch.Tensor]) -> torch.Tensor:
    hidden = torch.tanh(torch.tensor(X) @ p["hidden.weight"].T + p["hidden.bias"])
    return ((hidden @ p["out.weight"].T + p["out.bias"] - torch.tensor(Y)) ** 2).mean()


def lr_at(base: float, step: int) -> float:
    """A decaying lr, so that the lr passed to each step matters."""
    return base * (1 - 0.02 * step)


# name -> (burn config, torch optimizer class, torch kwargs, base lr)
CASES: dict[str, tuple[OptimizerConfig, Callable[..., torch.optim.Optimizer], dict[str, Any],
                       float]] = {
    "sgd": (SgdConfig(), torch.optim.SGD, {}, 0.1),
    "sgd_weight_decay": (SgdConfig(weight_decay=0.05), torch.optim.SGD,
                         {"weight_decay": 0.05}, 0.1),
    "sgd_momentum": (SgdConfig(momentum=0.9), torch.optim.SGD, {"momentum": 0.9}, 0.1),
    "sgd_dampening_weight_decay": (
        SgdConfig(momentum=0.9, dampening=0.3, weight_decay=0.01), torch.optim.SGD,
        {"momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01}, 0.1),
    "sgd_nesterov": (SgdConfig(momentum=0.8, nesterov=True, weight_decay=0.01), torch.optim.SGD,
                     {"momentum": 0.8, "nesterov": True, "weight_decay": 0.01}, 0.1),
    "adam": (AdamConfig(epsilon=1e-8), torch.optim.Adam, {}, 0.01),
    "adam_weight_decay": (AdamConfig(beta_1=0.8, beta_2=0.99, epsilon=1e-6, weight_decay=0.05),
                          torch.optim.Adam,
                          {"betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.05}, 0.01),
    "adamw": (AdamWConfig(epsilon=1e-8, weight_decay=0.1), torch.optim.AdamW,
              {"weight_decay": 0.1}, 0.01),
    "adamw_no_decay": (AdamWConfig(epsilon=1e-8, weight_decay=0.0), torch.optim.AdamW,
                       {"weight_decay": 0.0}, 0.01),
    "adam_amsgrad": (AdamConfig(epsilon=1e-8, amsgrad=True, weight_decay=0.01), torch.optim.Adam,
                     {"amsgrad": True, "weight_decay": 0.01}, 0.01),
    "adamw_amsgrad": (AdamWConfig(beta_2=0.9, epsilon=1e-8, weight_decay=0.1, amsgrad=True),
                      torch.optim.AdamW,
                      {"betas": (0.9, 0.9), "weight_decay": 0.1, "amsgrad": True}, 0.01),
    "adam_maximize": (AdamConfig(epsilon=1e-8, weight_decay=0.01, maximize=True),
                      torch.optim.Adam, {"weight_decay": 0.01, "maximize": True}, 0.01),
    "adamw_maximize_amsgrad": (
        AdamWConfig(epsilon=1e-8, weight_decay=0.1, amsgrad=True, maximize=True),
        torch.optim.AdamW, {"weight_decay": 0.1, "amsgrad": True, "maximize": True}, 0.01),
    "adagrad": (AdaGradConfig(epsilon=1e-10), torch.optim.Adagrad, {}, 0.1),
    "adagrad_decay": (
        AdaGradConfig(lr_decay=0.05, initial_accumulator_value=0.1, weight_decay=0.01,
                      epsilon=1e-10), torch.optim.Adagrad,
        {"lr_decay": 0.05, "initial_accumulator_value": 0.1, "weight_decay": 0.01}, 0.1),
    "rmsprop": (RmsPropConfig(alpha=0.9, epsilon=1e-8), torch.optim.RMSprop,
                {"alpha": 0.9}, 0.01),
    "rmsprop_centered": (RmsPropConfig(epsilon=1e-8, centered=True), torch.optim.RMSprop,
                         {"centered": True}, 0.01),
    "rmsprop_momentum_weight_decay": (
        RmsPropConfig(epsilon=1e-8, momentum=0.5, weight_decay=0.01), torch.optim.RMSprop,
        {"momentum": 0.5, "weight_decay": 0.01}, 0.01),
    "rmsprop_centered_momentum": (
        RmsPropConfig(alpha=0.95, epsilon=1e-8, centered=True, momentum=0.9),
        torch.optim.RMSprop, {"alpha": 0.95, "centered": True, "momentum": 0.9}, 0.01),
}


def assert_params(model: Mlp, expected: dict[str, np.ndarray], context: str,
                  rtol: float = 2e-5, atol: float = 2e-6) -> None:
    got = {path: p.to_numpy() for path, p in model.named_parameters()}
    assert got.keys() == expected.keys()
    for path, want in expected.items():
        assert got[path].shape == want.shape, f"{context} {path}"
        assert got[path].dtype == want.dtype, f"{context} {path}"
        np.testing.assert_allclose(got[path], want, rtol=rtol, atol=atol,
                                   err_msg=f"{context} {path}")


@pytest.mark.parametrize("name", CASES)
def test_trajectory_matches_torch(device: burn.Device, name: str) -> None:
    config, torch_cls, kwargs, base_lr = CASES[name]
    model, optim = Mlp(INIT, device), config.init()
    params = torch_params()
    torch_optim = torch_cls(list(params.values()), lr=base_lr, **kwargs)
    for step in range(STEPS):
        lr = lr_at(base_lr, step)
        optim.step(lr, model, burn_loss(model).backward())
        torch_optim.param_groups[0]["lr"] = lr
        torch_optim.zero_grad()
        torch_loss(params).backward()
        torch_optim.step()
        assert_params(model, {k: v.detach().numpy() for k, v in params.items()},
                      f"{name} step {step}")
        assert all(p.is_require_grad() for p in model.parameters())


def test_params_list_and_frozen_params(device: burn.Device) -> None:
    model = Mlp(INIT, device)
    model.out.freeze()
    params = torch_params()
    params["out.weight"].requires_grad_(False)
    params["out.bias"].requires_grad_(False)
    optim, torch_optim = SgdConfig(momentum=0.9).init(), torch.optim.SGD(
        [params["hidden.weight"], params["hidden.bias"]], lr=0.1, momentum=0.9)
    for step in range(3):
        optim.step(0.1, model.parameters(), burn_loss(model).backward())
        torch_optim.zero_grad()
        torch_loss(params).backward()
        torch_optim.step()
        assert_params(model, {k: v.detach().numpy() for k, v in params.items()}, f"step {step}")
    np.testing.assert_array_equal(model.out.weight.to_numpy(), INIT["out.weight"])
    assert set(optim.state_dict()["params"]) == {"0", "1"}


def test_accumulation_equals_step_on_summed_loss(device: burn.Device) -> None:
    accumulated, summed = Mlp(INIT, device), Mlp(INIT, device)
    optim_a, optim_s = AdamConfig().init(), AdamConfig().init()
    accumulator = GradientsAccumulator()
    for _ in range(3):
        for rows in (slice(0, 4), slice(4, 8)):
            accumulator.accumulate(accumulated, burn_loss(accumulated, rows).backward())
        optim_a.step(0.01, accumulated, accumulator.grads())
        loss = burn_loss(summed, slice(0, 4)) + burn_loss(summed, slice(4, 8))
        optim_s.step(0.01, summed, loss.backward())
    assert_params(accumulated, {p: t.to_numpy() for p, t in summed.named_parameters()},
                  "accumulated", rtol=1e-6, atol=1e-7)
    assert len(accumulator.grads()) == 0


def _grads_both(device: burn.Device
                ) -> tuple[Mlp, GradientsParams, dict[str, torch.nn.Parameter]]:
    model = Mlp(INIT, device)
    grads = GradientsParams.from_grads(burn_loss(model).backward(), model)
    params = torch_params()
    torch_loss(params).backward()
    return model, grads, params


def _assert_grads(model: Mlp, grads: GradientsParams,
                  params: dict[str, torch.nn.Parameter]) -> None:
    for path, p in model.named_parameters():
        grad = params[path].grad
        assert grad is not None, path
        got, want = grads[p.id].to_numpy(), grad.numpy()
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7, err_msg=path)


@pytest.mark.parametrize("max_norm", [0.05, 100.0])
@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm_matches_torch(device: burn.Device, max_norm: float,
                                     norm_type: float) -> None:
    model, grads, params = _grads_both(device)
    total = clip_grad_norm_(grads, max_norm, norm_type)
    want = torch.nn.utils.clip_grad_norm_(list(params.values()), max_norm, norm_type)
    assert total == pytest.approx(want.item(), rel=1e-5)
    _assert_grads(model, grads, params)


def test_clip_grad_value_matches_torch(device: burn.Device) -> None:
    model, grads, params = _grads_both(device)
    clip_grad_value_(grads, 0.02)
    torch.nn.utils.clip_grad_value_(list(params.values()), 0.02)
    _assert_grads(model, grads, params)


def _run(model: Mlp, optim: Any, steps: range) -> None:
    for step in steps:
        optim.step(lr_at(0.01, step), model, burn_loss(model).backward())


@pytest.mark.parametrize("config", [
    SgdConfig(momentum=0.9, nesterov=True), AdamConfig(), AdamWConfig(weight_decay=0.1),
    AdamConfig(amsgrad=True, beta_2=0.9),
    AdaGradConfig(lr_decay=0.1), RmsPropConfig(centered=True, momentum=0.5),
], ids=type)
def test_state_dict_resumes_identically(device: burn.Device, config: OptimizerConfig) -> None:
    straight = Mlp(INIT, device)
    _run(straight, config.init(), range(STEPS))

    first = Mlp(INIT, device)
    optim = config.init()
    _run(first, optim, range(STEPS // 2))
    state = optim.state_dict()
    assert set(state["params"]) == set(INIT)
    values = {path: p.to_numpy().copy() for path, p in first.named_parameters()}
    _run(first, optim, range(STEPS // 2, STEPS))  # must leave the saved state as it was

    resumed = Mlp(values, device)  # a rebuilt module: same paths, fresh param ids
    optim2 = config.init()
    optim2.load_state_dict(state)
    reloaded = optim2.state_dict()
    assert reloaded["params"].keys() == state["params"].keys()
    for path, saved in state["params"].items():
        for key, value in saved.items():
            np.testing.assert_array_equal(reloaded["params"][path][key], value)
    _run(resumed, optim2, range(STEPS // 2, STEPS))
    expected = dict(straight.named_parameters())
    for model in (first, resumed):
        for path, p in model.named_parameters():
            np.testing.assert_array_equal(p.to_numpy(), expected[path].to_numpy(), err_msg=path)


def test_load_state_dict_rejects_other_optimizer() -> None:
    with pytest.raises(ValueError, match="Adam"):
        SgdConfig().init().load_state_dict(AdamConfig().init().state_dict())


def test_nesterov_needs_momentum() -> None:
    with pytest.raises(ValueError, match="Nesterov"):
        SgdConfig(nesterov=True)


def test_step_with_handmade_grads_off_autodiff(device: burn.Device) -> None:
    device = device.inner()
    weight = Param(burn.tensor([1.0, -2.0], device=device))
    grads = GradientsParams({weight.id: burn.tensor([0.5, 0.5], device=device)})
    SgdConfig(weight_decay=0.1).init().step(0.1, [weight], grads)
    np.testing.assert_allclose(weight.to_numpy(), [1.0 - 0.1 * 0.6, -2.0 - 0.1 * 0.3],
                               rtol=1e-6)
    assert weight.dtype == burn.float32 and weight.device == device


#: The backends of `DEVICES` and a fusion device over the cpu one (the update kernels read
#: the values its stream computed).
EDGE_DEVICES = [*DEVICES, "cpu+fusion"]


@pytest.mark.parametrize("spec", EDGE_DEVICES)
@pytest.mark.parametrize("name", CASES)
def test_zero_dim_param_matches_torch(spec: str, name: str) -> None:
    """A learnable scalar (a 0-d Param, such as a temperature) steps as torch's does (the
    update kernels index tensors of rank >= 1, and numpy makes scalars of 0-d arithmetic)."""
    config, torch_cls, kwargs, lr = CASES[name]
    device = burn.Device(spec).autodiff()
    param = Param(burn.tensor(np.float32(1.5), device=device))
    reference = torch.nn.Parameter(torch.tensor(1.5))
    optim, torch_optim = config.init(), torch_cls([reference], lr=lr, **kwargs)
    for step in range(3):
        optim.step(lr, [param], (param * param * (step + 1.0)).backward())
        torch_optim.zero_grad()
        (reference * reference * (step + 1.0)).backward()
        torch_optim.step()
        got = param.to_numpy()
        assert got.shape == () and got.dtype == np.float32, f"{name} step {step}"
        np.testing.assert_allclose(got, reference.detach().numpy(), rtol=2e-5, atol=2e-6,
                                   err_msg=f"{name} step {step}")


class Tied(Module):
    """One Dense reached by two paths (`a` and `b`): a tied weight."""

    def __init__(self, dense: Dense) -> None:
        self.a = dense
        self.b = dense


@pytest.mark.parametrize("spec", EDGE_DEVICES)
@pytest.mark.parametrize("name", ["sgd_momentum", "adam", "rmsprop_centered_momentum",
                                  "adagrad"])
def test_tied_param_is_updated_once_a_step(spec: str, name: str) -> None:
    """A Param two paths reach comes once from `named_parameters` and `parameters` (torch's
    dedup), so a stateful optimizer advances its state once a step; a list naming it twice
    too. `state_dict` keeps both paths."""
    config, torch_cls, kwargs, lr = CASES[name]
    device = burn.Device(spec).autodiff()
    weight, bias = INIT["hidden.weight"], INIT["hidden.bias"]
    model = Tied(Dense(weight, bias, device))
    listed = Dense(weight, bias, device)
    assert [path for path, _ in model.named_parameters()] == ["a.weight", "a.bias"]
    assert len(list(model.named_parameters(remove_duplicate=False))) == 4
    assert set(model.state_dict()) == {"a.weight", "a.bias", "b.weight", "b.bias"}
    assert model.num_params() == weight.size + bias.size
    w = torch.nn.Parameter(torch.tensor(weight))
    b = torch.nn.Parameter(torch.tensor(bias))
    torch_optim = torch_cls([w, b], lr=lr, **kwargs)
    optims = config.init(), config.init()
    x = burn.tensor(X, device=device)
    for step in range(3):
        loss = (model.a(x) * model.b(x)).mean()
        optims[0].step(lr, model, loss.backward())
        params = [listed.weight, listed.bias, listed.weight]
        optims[1].step(lr, params, (listed(x) * listed(x)).mean().backward())
        torch_optim.zero_grad()
        h = torch.tensor(X) @ w.T + b
        (h * h).mean().backward()
        torch_optim.step()
        for got in (model.a.weight, listed.weight):
            np.testing.assert_allclose(got.to_numpy(), w.detach().numpy(), rtol=2e-5,
                                       atol=2e-6, err_msg=f"{name} step {step}")
        np.testing.assert_allclose(model.b.bias.to_numpy(), b.detach().numpy(), rtol=2e-5,
                                   atol=2e-6, err_msg=f"{name} step {step}")


ALL_CONFIGS = [SgdConfig(momentum=0.9), AdamConfig(), AdamWConfig(), RmsPropConfig(),
               AdaGradConfig()]


@pytest.mark.parametrize("spec", EDGE_DEVICES)
@pytest.mark.parametrize("config", ALL_CONFIGS, ids=lambda c: type(c).__name__)
def test_step_refuses_a_gradient_that_does_not_fit_its_param(spec: str,
                                                              config: OptimizerConfig) -> None:
    """An edited GradientsParams whose gradient is not of its param's shape or dtype is
    refused at the call, naming the optimizer, the param left as it was (torch: "assigned
    grad has data of a different size / type"); before, the param took the broadcast or
    promoted values under its old shape and dtype."""
    device = burn.Device(spec)
    weight = Param(burn.tensor([1.0, 2.0, 3.0], device=device))
    optimizer = config.init()
    wrong_shape = burn.tensor(np.ones((2, 3), np.float32), device=device)
    other = burn.float64 if device.backend.supports(burn.float64) else burn.int32  # (wgpu)
    wrong_dtype = burn.tensor(np.ones(3), dtype=other, device=device)
    for grad, error in ((wrong_shape, burn.errors.ShapeError),
                        (wrong_dtype, burn.errors.DTypeError)):
        with pytest.raises(error, match=f"^{type(optimizer).__name__}: the gradient's"):
            optimizer.step(0.1, [weight], GradientsParams({weight.id: grad}))
        assert weight.shape == (3,) and weight.dtype == burn.float32
        np.testing.assert_array_equal(weight.to_numpy(), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("spec", ["cpu+autodiff", "cpu+fusion+autodiff"])
def test_state_saved_from_a_float64_param_takes_a_float32_params_dtype(spec: str) -> None:
    """Adam state saved for a float64 param and loaded for a float32 one is cast to float32
    on load, as torch casts loaded state to its param's dtype: the param stays float32
    through more steps, and the trajectory is torch's."""
    device = burn.Device(spec)
    start = np.array([1.0, -2.0, 3.0])
    wide = Param(burn.tensor(start, dtype=burn.float64, device=device))
    saved_by = AdamConfig().init()
    saved_by.step(0.01, [wide], (wide * wide).sum().backward())
    narrow = Param(burn.tensor(start.astype(np.float32), device=device))
    optimizer = AdamConfig().init()
    optimizer.load_state_dict(saved_by.state_dict())

    t_wide = torch.nn.Parameter(torch.tensor(start))
    t_saved_by = torch.optim.Adam([t_wide], lr=0.01)
    (t_wide * t_wide).sum().backward()
    t_saved_by.step()
    t_narrow = torch.nn.Parameter(torch.tensor(start, dtype=torch.float32))
    t_optimizer = torch.optim.Adam([t_narrow], lr=0.01)
    t_optimizer.load_state_dict(t_saved_by.state_dict())
    for _ in range(3):
        optimizer.step(0.01, [narrow], (narrow * narrow).sum().backward())
        t_optimizer.zero_grad()
        (t_narrow * t_narrow).sum().backward()
        t_optimizer.step()
        assert narrow.dtype == burn.float32 and narrow.to_numpy().dtype == np.float32
        np.testing.assert_allclose(narrow.to_numpy(), t_narrow.detach().numpy(), rtol=1e-6)


@pytest.mark.parametrize("spec", EDGE_DEVICES)
@pytest.mark.parametrize("name", ["sgd_momentum", "adam", "adamw_amsgrad", "rmsprop_centered"])
def test_a_second_step_with_the_same_gradients_updates_again(spec: str, name: str) -> None:
    """`step` twice with one `backward()` result updates twice, as torch's `step()` twice with
    the same `.grad` does (the first update makes each param's value a new leaf)."""
    config, torch_cls, kwargs, lr = CASES[name]
    model, optim = Mlp(INIT, burn.Device(spec).autodiff()), config.init()
    params = torch_params()
    torch_optim = torch_cls(list(params.values()), lr=lr, **kwargs)
    for step in range(3):
        grads = burn_loss(model).backward()
        torch_optim.zero_grad()
        torch_loss(params).backward()
        for repeat in range(2):
            optim.step(lr, model, grads)
            torch_optim.step()
            assert_params(model, {k: v.detach().numpy() for k, v in params.items()},
                          f"{name} step {step} repeat {repeat}")
    assert len(GradientsParams.from_grads(grads, model)) == len(INIT)
