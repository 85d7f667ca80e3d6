"""Optimizer updates on the plain NumPy backend reuse their state's buffers in place and give
bit-for-bit the trajectory of the tensor-op path (the one every other backend runs, checked here
on a profiled NumPy device), without writing to params or gradients."""

from __future__ import annotations

import numpy as np
import pytest

import burn
from burn.nn import Param
from burn.optim import AdaGradConfig, AdamConfig, AdamWConfig, RmsPropConfig, SgdConfig
from burn.optim.base import OptimizerConfig
from burn.optim.grads import GradientsParams

CONFIGS: dict[str, OptimizerConfig] = {
    "sgd": SgdConfig(),
    "sgd-momentum-decay": SgdConfig(momentum=0.9, dampening=0.1, weight_decay=0.01),
    "sgd-nesterov": SgdConfig(momentum=0.9, nesterov=True),
    "adam": AdamConfig(),
    "adam-amsgrad-decay": AdamConfig(amsgrad=True, weight_decay=0.1),
    "adamw": AdamWConfig(weight_decay=0.05),
    "adamw-amsgrad": AdamWConfig(amsgrad=True),
    "rmsprop": RmsPropConfig(),
    "rmsprop-centered-momentum": RmsPropConfig(centered=True, momentum=0.5, weight_decay=0.1),
    "adagrad": AdaGradConfig(lr_decay=0.1, initial_accumulator_value=0.2, weight_decay=0.01),
}


def _trajectory(config: OptimizerConfig, device: burn.Device, dtype: type
                ) -> tuple[list[np.ndarray], list[dict[str, int]]]:
    """Param values after each of 6 steps, and the ids of the state's arrays after each."""
    rng = np.random.default_rng(0)
    param = Param(burn.tensor(rng.standard_normal((7, 5)).astype(dtype), device=device))
    optim = config.init()
    values, buffers = [], []
    for _ in range(6):
        grad = burn.tensor(rng.standard_normal((7, 5)).astype(dtype), device=device)
        grad_before = grad.to_numpy().copy()
        old = param.value()
        old_before = old.to_numpy().copy()
        optim.step(0.1, [param], GradientsParams({param.id: grad}))
        np.testing.assert_array_equal(grad.to_numpy(), grad_before)  # gradients read only
        np.testing.assert_array_equal(old.to_numpy(), old_before)  # the old value kept
        value = param.value().to_numpy()
        assert value.shape == (7, 5) and value.dtype == np.dtype(dtype)
        values.append(value.copy())
        state = optim._state[param.id]
        buffers.append({k: id(v._prim) for k, v in state.items() if isinstance(v, burn.Tensor)})
    return values, buffers


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_numpy_updates_in_place_with_the_tensor_path_trajectory(name: str, dtype: type) -> None:
    fast, buffers = _trajectory(CONFIGS[name], burn.Device("numpy"), dtype)
    reference, ref_buffers = _trajectory(CONFIGS[name], burn.Device("numpy").profile(), dtype)
    for ours, theirs in zip(fast, reference, strict=True):
        np.testing.assert_array_equal(ours, theirs)
    # the NumPy path keeps each state array across steps; the tensor path makes new ones
    assert all(b == buffers[0] for b in buffers[1:])
    if buffers[0]:
        assert any(b != ref_buffers[0] for b in ref_buffers[1:])


def test_loaded_state_is_copied_before_updates_in_place() -> None:
    param = Param(burn.tensor(np.ones((3,), np.float32)))
    optim = AdamConfig().init()
    grads = GradientsParams({param.id: burn.tensor(np.full((3,), 0.5, np.float32))})
    optim.step(0.1, [param], grads)
    saved = optim.state_dict()
    moment = saved["params"]["0"]["moment_1"].copy()
    resumed = AdamConfig().init()
    resumed.load_state_dict(saved)
    resumed.step(0.1, [param], grads)
    np.testing.assert_array_equal(saved["params"]["0"]["moment_1"], moment)


def _group_trajectory(config: OptimizerConfig, device: burn.Device
                      ) -> tuple[list[list[np.ndarray]], dict[str, dict[str, object]]]:
    """Values of five params after each of 8 steps: small float32 and float64 params (updated
    in groups on NumPy) and a large one, with the membership changing: param 1 has no gradient
    at step 3, param 2 is frozen from step 5, and the state is saved and loaded at step 6."""
    from burn.optim.multi import SMALL_PARAM

    rng = np.random.default_rng(0)
    shapes: list[tuple[tuple[int, ...], type]] = [
        ((7, 5), np.float32), ((3,), np.float32), ((4, 2), np.float32), ((6,), np.float64),
        ((SMALL_PARAM + 1,), np.float32)]
    params = [Param(burn.tensor(rng.standard_normal(s).astype(t), device=device))
              for s, t in shapes]
    optim = config.init()
    values = []
    for step in range(8):
        grads = GradientsParams({p.id: burn.tensor(rng.standard_normal(p.shape).astype(t),
                                                   device=device)
                                 for p, (_, t) in zip(params, shapes, strict=True)})
        if step == 3:
            del grads[params[1].id]
        if step == 5:
            params[2].trainable = False
        if step == 6:
            saved = optim.state_dict()
            optim = config.init()
            optim.load_state_dict(saved)
        optim.step(0.1, params, grads)
        values.append([p.to_numpy().copy() for p in params])
    return values, optim.state_dict()["params"]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_grouped_small_params_match_the_tensor_path(name: str) -> None:
    """NumPy's multi-tensor updates (`burn.optim.multi`) give the per-param tensor path's
    trajectory and state bit for bit, across membership changes and a state reload."""
    fast, fast_state = _group_trajectory(CONFIGS[name], burn.Device("numpy"))
    reference, ref_state = _group_trajectory(CONFIGS[name], burn.Device("numpy").profile())
    for step, (ours, theirs) in enumerate(zip(fast, reference, strict=True)):
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            assert a.shape == b.shape and a.dtype == b.dtype, (step, i)
            np.testing.assert_array_equal(a, b, err_msg=f"step {step} param {i}")
    assert fast_state.keys() == ref_state.keys()
    for path, saved in ref_state.items():
        assert fast_state[path].keys() == saved.keys()
        for key, value in saved.items():
            np.testing.assert_array_equal(fast_state[path][key], value, err_msg=f"{path} {key}")


def test_small_params_share_flat_state_buffers() -> None:
    """Small params of one dtype are updated as one group: their state entries are views of
    one flat buffer per key, kept from step to step."""
    rng = np.random.default_rng(0)
    params = [Param(burn.tensor(rng.standard_normal(s).astype(np.float32)))
              for s in [(4, 3), (3,), (2, 2)]]
    optim = AdamConfig().init()
    bases = []
    for _ in range(3):
        grads = GradientsParams({p.id: burn.tensor(rng.standard_normal(p.shape)
                                                   .astype(np.float32)) for p in params})
        optim.step(0.1, params, grads)
        moments = [optim._state[p.id]["moment_1"]._prim for p in params]
        assert all(m.base is not None and m.base is moments[0].base for m in moments)
        assert [m.shape for m in moments] == [p.shape for p in params]
        bases.append(id(moments[0].base))
    assert bases[1] == bases[2]
