"""Optimizer updates of the cube backends as one kernel per param (`optim_kernels`): Adam,
AdamW (decay, AMSGrad), SGD with momentum, RMSProp (centered, momentum, decay) and AdaGrad (lr
decay, decay) against torch.optim over 20 steps on cpu and wgpu,
against the tensor-op path (a profiled device) step by step, one launch per param and step, the
moment buffers reused in place while params, gradients and state the kernels did not make stay
untouched, and the fallbacks (float16, strided gradients, empty params, NaN and inf)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import torch

import burn
from burn.backends.cube import optim_kernels
from burn.backends.cube.backend import CudaBackend
from burn.nn import Param
from burn.optim import AdaGradConfig, AdamConfig, AdamWConfig, RmsPropConfig, SgdConfig
from burn.optim.base import OptimizerConfig
from burn.optim.grads import GradientsParams

DEVICES = ["cpu", "wgpu", *(["cuda"] if CudaBackend.unavailable_reason() is None else [])]
#: name -> (burn config, torch optimizer factory)
CASES: dict[str, tuple[OptimizerConfig, Callable[[list[torch.Tensor]], torch.optim.Optimizer]]] = {
    "adam": (AdamConfig(), lambda p: torch.optim.Adam(p, lr=0.05, eps=1e-5)),
    "adam-amsgrad-decay": (AdamConfig(amsgrad=True, weight_decay=0.1),
                           lambda p: torch.optim.Adam(p, lr=0.05, eps=1e-5, amsgrad=True,
                                                      weight_decay=0.1)),
    "adamw": (AdamWConfig(weight_decay=0.05, beta_1=0.8),
              lambda p: torch.optim.AdamW(p, lr=0.05, eps=1e-5, weight_decay=0.05,
                                          betas=(0.8, 0.999))),
    "adam-maximize-decay": (AdamConfig(maximize=True, weight_decay=0.1),
                            lambda p: torch.optim.Adam(p, lr=0.05, eps=1e-5, maximize=True,
                                                       weight_decay=0.1)),
    "adamw-maximize": (AdamWConfig(maximize=True, weight_decay=0.05),
                       lambda p: torch.optim.AdamW(p, lr=0.05, eps=1e-5, maximize=True,
                                                   weight_decay=0.05)),
    "adamw-amsgrad": (AdamWConfig(amsgrad=True),
                      lambda p: torch.optim.AdamW(p, lr=0.05, eps=1e-5, amsgrad=True,
                                                  weight_decay=1e-4)),
    "sgd-momentum-decay": (SgdConfig(momentum=0.9, dampening=0.1, weight_decay=0.01),
                           lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.1,
                                                     weight_decay=0.01)),
    "sgd-nesterov": (SgdConfig(momentum=0.9, nesterov=True),
                     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True)),
    "rmsprop": (RmsPropConfig(), lambda p: torch.optim.RMSprop(p, lr=0.05, eps=1e-5)),
    "rmsprop-momentum": (RmsPropConfig(alpha=0.9, momentum=0.9),
                         lambda p: torch.optim.RMSprop(p, lr=0.05, alpha=0.9, eps=1e-5,
                                                       momentum=0.9)),
    "rmsprop-centered-momentum-decay": (
        RmsPropConfig(centered=True, momentum=0.5, weight_decay=0.1),
        lambda p: torch.optim.RMSprop(p, lr=0.05, eps=1e-5, centered=True, momentum=0.5,
                                      weight_decay=0.1)),
    "adagrad": (AdaGradConfig(), lambda p: torch.optim.Adagrad(p, lr=0.05, eps=1e-5)),
    "adagrad-decay": (AdaGradConfig(lr_decay=0.1, initial_accumulator_value=0.2,
                                    weight_decay=0.01),
                      lambda p: torch.optim.Adagrad(p, lr=0.05, eps=1e-5, lr_decay=0.1,
                                                    initial_accumulator_value=0.2,
                                                    weight_decay=0.01)),
}
KERNELS = {"adam": "adam_step", "sgd": "sgd_step", "rmsprop": "rmsprop_step",
           "adagrad": "adagrad_step"}
ULP: dict[Any, float] = {np.float32: 4e-7, np.float64: 1e-15}


def _device(name: str) -> burn.Device:
    device = burn.Device(name)
    reason = type(device.backend).unavailable_reason()
    if reason is not None:
        pytest.fail(f"{name} is unavailable: {reason}")
    return device


def _grads(shape: tuple[int, ...], dtype: type, steps: int) -> Iterator[np.ndarray]:
    rng = np.random.default_rng(1)
    for _ in range(steps):
        yield rng.standard_normal(shape).astype(dtype)


def _steps(config: OptimizerConfig, device: burn.Device, init: np.ndarray,
           grads: Iterator[np.ndarray], layout: Callable[[burn.Tensor], burn.Tensor] = lambda g: g
           ) -> Iterator[tuple[Any, burn.Tensor, np.ndarray]]:
    """(optimizer, param value, host values) after each step with the given gradients."""
    param = Param(burn.tensor(init, device=device))
    optim = config.init()
    for grad in grads:
        g = layout(burn.tensor(grad, device=device))
        before_grad, old = g.to_numpy().copy(), param.value()
        before_old = old.to_numpy().copy()
        optim.step(0.05, [param], GradientsParams({param.id: g}))
        np.testing.assert_array_equal(g.to_numpy(), before_grad)  # gradients read only
        np.testing.assert_array_equal(old.to_numpy(), before_old)  # the old value kept
        value = param.value()
        host = value.to_numpy()
        assert host.shape == init.shape and host.dtype == init.dtype
        yield optim, value, host


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("device", DEVICES)
def test_twenty_steps_match_torch(device: str, name: str) -> None:
    config, make = CASES[name]
    init = np.random.default_rng(0).standard_normal((6, 5)).astype(np.float32)
    grads = list(_grads(init.shape, np.float32, 20))
    ref = torch.tensor(init, requires_grad=True)
    torch_optim = make([ref])
    for (_, _, ours), grad in zip(_steps(config, _device(device), init, iter(grads)), grads,
                                  strict=True):
        ref.grad = torch.tensor(grad)
        torch_optim.step()
        np.testing.assert_allclose(ours, ref.detach().numpy(), rtol=1e-5, atol=1e-6)


def _dtypes(device: str) -> list[type]:
    return [np.float32, np.float64] if device == "cpu" else [np.float32]


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("device,dtype", [(d, t) for d in DEVICES for t in _dtypes(d)])
def test_matches_the_tensor_op_path_and_reuses_its_buffers(device: str, dtype: type,
                                                           name: str) -> None:
    config = CASES[name][0]
    init: np.ndarray = np.random.default_rng(0).standard_normal((7, 5)).astype(dtype)
    fused = _steps(config, _device(device), init, _grads(init.shape, dtype, 8))
    tensor_ops = _steps(config, _device(device).profile(), init, _grads(init.shape, dtype, 8))
    buffers: list[dict[str, int]] = []
    for (optim, _, ours), (_, _, theirs) in zip(fused, tensor_ops, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=ULP[dtype], atol=ULP[dtype])
        state = next(iter(optim._state.values()))
        buffers.append({k: id(v._prim) for k, v in state.items() if isinstance(v, burn.Tensor)})
    # from the second step (the first copies fresh state once), the same buffers every step
    assert buffers[1] and all(b == buffers[1] for b in buffers[2:])


def _count_launches(monkeypatch: pytest.MonkeyPatch, backend: Any) -> list[str]:
    """Names of the kernels `backend`'s runtime launches from now on, planned ones included
    (the backend's plans are dropped so that they are planned again through the recorder)."""
    names: list[str] = []
    runtime = type(backend.runtime)
    launch, plan = runtime.launch, runtime.plan

    def record_launch(self: Any, compiled: Any, kernel: Any, *args: Any) -> None:
        names.append(kernel.name)
        launch(self, compiled, kernel, *args)

    def record_plan(self: Any, compiled: Any, kernel: Any, *args: Any) -> Any:
        inner = plan(self, compiled, kernel, *args)

        def run(values: Any) -> None:
            names.append(kernel.name)
            inner(values)
        return run

    monkeypatch.setattr(runtime, "launch", record_launch)
    monkeypatch.setattr(runtime, "plan", record_plan)
    monkeypatch.setattr(backend, "plans", {})
    return names


@pytest.mark.parametrize("name", ["adam", "adamw-amsgrad", "sgd-nesterov",
                                  "rmsprop-centered-momentum-decay", "adagrad-decay"])
def test_a_cpu_step_launches_one_kernel_per_param_or_one_for_all(
        monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Adam and AdamW update every param of a step in one launch (params of several ranks and
    sizes, one of them over several units), the others one launch per param."""
    device = _device("cpu")
    rng = np.random.default_rng(0)
    params = [Param(burn.tensor(rng.standard_normal(s).astype(np.float32), device=device))
              for s in [(16, 8), (16,), (4, 16), (4,), (3, optim_kernels.CPU_CHUNK + 5)]]
    grads = GradientsParams({p.id: burn.tensor(rng.standard_normal(p.shape).astype(np.float32),
                                               device=device) for p in params})
    optim = CASES[name][0].init()
    for _ in range(2):  # makes the state, then the kernels' own buffers (SGD's first step
        optim.step(0.05, params, grads)  # takes the gradient as its momentum buffer)
    names = _count_launches(monkeypatch, device.backend)
    optim.step(0.05, params, grads)
    kernel = KERNELS[name.split("-")[0].rstrip("w")]
    assert names == [kernel] * (1 if kernel == "adam_step" else len(params))


@pytest.mark.parametrize("name", ["adam-amsgrad-decay", "sgd-momentum-decay",
                                  "rmsprop-centered-momentum-decay", "adagrad-decay"])
def test_fallbacks_match_the_tensor_op_path(monkeypatch: pytest.MonkeyPatch,
                                            name: str) -> None:
    """float16, transposed gradients and empty params run the tensor ops (no optimizer kernel)
    with the tensor-op path's values; NaN and inf propagate as there."""
    config, device = CASES[name][0], _device("cpu")
    names = _count_launches(monkeypatch, device.backend)
    half = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float16)
    #: (initial param, gradient shape, gradient layout)
    cases: list[tuple[np.ndarray, tuple[int, ...], Callable[[burn.Tensor], burn.Tensor]]] = [
        (half, half.shape, lambda g: g),
        (half.T.astype(np.float32), half.shape, lambda g: g.swap_dims(0, 1)),
        (np.zeros((0, 3), np.float32), (0, 3), lambda g: g)]
    for init, shape, layout in cases:
        grads = list(_grads(shape, init.dtype.type, 3))
        fused = _steps(config, device, init, iter(grads), layout)
        tensor_ops = _steps(config, device.profile(), init, iter(grads), layout)
        for (_, _, ours), (_, _, theirs) in zip(fused, tensor_ops, strict=True):
            np.testing.assert_array_equal(ours, theirs)
    assert not set(names) & set(KERNELS.values())
    init = np.array([1.0, -2.0, 3.0, 0.5], np.float32)
    grads = [np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)] * 2
    fused_values = [h for _, _, h in _steps(config, device, init, iter(grads))]
    reference = [h for _, _, h in _steps(config, device.profile(), init, iter(grads))]
    assert set(names) & set(KERNELS.values())
    for ours, theirs in zip(fused_values, reference, strict=True):
        np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
        # an ulp of the params' scale: a step can cancel most of a param (RMSProp's 0.5 ->
        # -0.0025), leaving a contracted multiply-add's ulp large beside the result
        np.testing.assert_allclose(ours, theirs, rtol=ULP[np.float32],
                                   atol=ULP[np.float32] * np.abs(init).max(), equal_nan=True)


def test_state_the_kernels_did_not_make_is_copied_not_overwritten() -> None:
    """State from a tensor-op step (a strided gradient) is copied once before the kernel
    updates it in place; a loaded state dict resumes with the tensor-op path's values."""
    device = _device("cpu")
    init = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    grad = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    param = Param(burn.tensor(init, device=device))
    optim = AdamConfig(amsgrad=True).init()
    strided = burn.tensor(grad, device=device).swap_dims(0, 1)
    optim.step(0.05, [param], GradientsParams({param.id: strided}))
    state = dict(optim._state[param.id])
    saved = {k: v.to_numpy().copy() for k, v in state.items() if isinstance(v, burn.Tensor)}
    optim.step(0.05, [param], GradientsParams({param.id: burn.tensor(grad.T.copy(),
                                                                     device=device)}))
    for key, values in saved.items():
        np.testing.assert_array_equal(state[key].to_numpy(), values)
        assert optim._state[param.id][key]._prim is not state[key]._prim
    assert optim._state[param.id]["step"] == 2

    resumed = []
    for dev in (device, device.profile()):
        p = Param(burn.tensor(param.value().to_numpy(), device=dev))
        again = AdamConfig(amsgrad=True).init()
        again.load_state_dict(optim.state_dict())
        for _ in range(2):
            again.step(0.05, [p], GradientsParams({p.id: burn.tensor(grad.T.copy(), device=dev)}))
        resumed.append(p.value().to_numpy())
    ours, theirs = resumed
    assert ours.shape == theirs.shape == init.shape and ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=ULP[np.float32], atol=ULP[np.float32])


def test_the_kernels_are_cached_per_dtype_and_variant() -> None:
    assert optim_kernels.adam_kernel(burn.float32, "l2", True, False, (2, 1), True) is \
        optim_kernels.adam_kernel(burn.float32, "l2", True, False, (2, 1), True)
    assert optim_kernels.rmsprop_kernel(burn.float32, True, True, False, (1,), True) is not \
        optim_kernels.rmsprop_kernel(burn.float32, True, True, True, (1,), True)
    assert optim_kernels.adam_kernel(burn.float32, "", False, False, (1,), True) is not \
        optim_kernels.adam_kernel(burn.float64, "", False, False, (1,), True)
    assert optim_kernels.adam_kernel(burn.float32, "", False, False, (1,), True) is not \
        optim_kernels.adam_kernel(burn.float32, "", False, False, (1, 1), True)
    assert optim_kernels.adam_kernel(burn.float32, "", False, False, (1,), True) is not \
        optim_kernels.adam_kernel(burn.float32, "", False, True, (1,), True)


@pytest.mark.parametrize("name", ["adam", "adam-amsgrad-decay", "adamw", "adamw-amsgrad",
                                  "adamw-maximize"])
@pytest.mark.parametrize("device", DEVICES)
def test_params_updated_together_match_torch(monkeypatch: pytest.MonkeyPatch, device: str,
                                             name: str) -> None:
    """Adam's multi-param launches: float32 and float64 params (two groups), more than
    `MAX_GROUP` of one dtype (two launches on the cpu), an empty param, params over several
    units, and params whose step counts differ (one has no gradient every other step, as torch
    skips a param whose grad is None), one of them a view at an offset, follow torch.optim
    over 8 steps."""
    config, make = CASES[name]
    dev = _device(device)
    rng = np.random.default_rng(3)
    shapes = [(3, optim_kernels.CPU_CHUNK + 7), (5,), (0, 2), *[(2, k + 1) for k in range(19)]]
    dtypes = [np.float64 if i % 7 == 3 and device == "cpu" else np.float32
              for i in range(len(shapes))]
    inits = [rng.standard_normal(s).astype(t) for s, t in zip(shapes, dtypes, strict=True)]
    params = [Param(burn.tensor(a, device=dev)) for a in inits]
    # a contiguous view at an offset into a larger buffer
    params[1] = Param(burn.tensor(np.concatenate([np.ones(3, dtypes[1]), inits[1]]),
                                  device=dev)[3:])
    refs = [torch.tensor(a, requires_grad=True) for a in inits]
    optim, torch_optim = config.init(), make(refs)
    names = _count_launches(monkeypatch, dev.backend)
    for step in range(8):
        tracked = [i for i in range(len(params)) if i != 1 or step % 2 == 0]
        grads = {i: rng.standard_normal(shapes[i]).astype(dtypes[i]) for i in tracked}
        for i, ref in enumerate(refs):
            ref.grad = torch.tensor(grads[i]) if i in tracked else None
        torch_optim.step()
        optim.step(0.05, params, GradientsParams(
            {params[i].id: burn.tensor(g, device=dev) for i, g in grads.items()}))
        for param, ref in zip(params, refs, strict=True):
            ours, theirs = param.value().to_numpy(), ref.detach().numpy()
            assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
            np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    assert optim._state[params[1].id]["step"] == 4
    if device == "cpu":  # each step: float32 (18 non-empty params: 2 launches), float64
        assert names.count("adam_step") == 3 * 8
    if device == "cuda":  # each step: 20 or 21 non-empty float32 params, 2 launches
        assert names.count("adam_step") == 2 * 8


def test_launch_batches_per_runtime() -> None:
    """Params one update launch takes: `MAX_GROUP` on the cpu runtime, on cuda also within the
    kernel-argument budget (higher ranks: more metadata, fewer params), one on wgpu."""
    from types import SimpleNamespace

    def members(rank: int, count: int) -> list[Any]:
        return [(SimpleNamespace(shape=(2,) * rank), None, {}) for _ in range(count)]

    group = optim_kernels.MAX_GROUP
    flat = members(2, 20)
    assert optim_kernels._batches("cpu", list(range(20)), flat, 2, 4) == [
        list(range(group)), list(range(group, 20))]
    assert optim_kernels._batches("wgpu", [3, 5], flat, 2, 4) == [[3], [5]]
    assert optim_kernels._batches("cuda", list(range(20)), flat, 2, 4) == [
        list(range(group)), list(range(group, 20))]
    deep = members(8, 20)
    batches = optim_kernels._batches("cuda", list(range(20)), deep, 3, 4)
    assert [i for b in batches for i in b] == list(range(20)) and len(batches) > 2
    per_param = 6 * (8 + 4 * (2 + 2 * 8)) + 4 + 8 * 4  # storages, metadata, scalars
    assert all(len(b) * per_param + 8 * 6 <= optim_kernels.CUDA_ARG_BYTES for b in batches)
