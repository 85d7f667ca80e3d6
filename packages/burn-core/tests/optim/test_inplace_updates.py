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
