"""Optimizers under fusion: the cube backends' one-kernel updates run on the flushed values of
fusion params (one launch per param, nothing recorded), with the values of the unfused backend
and of PyTorch, and their state stays on the fusion device."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from fusion_testing import DEVICES, LaunchCounter, pending

import burn
import burn.functional as F
from burn.fusion import reset_stats, stats
from burn.optim import AdamConfig, AdamWConfig, SgdConfig

pytestmark = pytest.mark.parametrize("base", DEVICES)
torch.set_num_threads(1)

#: (burn optimizer config, torch optimizer and its keyword arguments).
OPTIMIZERS: dict[str, tuple[Any, Any, dict[str, Any]]] = {
    "adam": (AdamConfig(epsilon=1e-8), torch.optim.Adam, {"eps": 1e-8}),
    "adam_l2_amsgrad": (AdamConfig(epsilon=1e-8, weight_decay=0.1, amsgrad=True),
                        torch.optim.Adam, {"eps": 1e-8, "weight_decay": 0.1, "amsgrad": True}),
    "adamw": (AdamWConfig(epsilon=1e-8, weight_decay=0.1), torch.optim.AdamW,
              {"eps": 1e-8, "weight_decay": 0.1}),
    "sgd_momentum": (SgdConfig(momentum=0.9), torch.optim.SGD, {"momentum": 0.9}),
}
LR, STEPS = 1e-2, 4


def train(spec: str, config: Any, w0: np.ndarray, x: np.ndarray, y: np.ndarray,
          counter: LaunchCounter | None = None) -> tuple[list[float], np.ndarray, list[int]]:
    """`STEPS` steps of a linear softmax classifier on `spec`+autodiff: the losses, the final
    weight and the kernels each `optim.step` launched (after the gradients were computed)."""
    dev = burn.Device(spec).autodiff()
    w = burn.nn.Param(burn.tensor(w0, device=dev))
    optim = config.init()
    xt, yt = burn.tensor(x, device=dev), burn.tensor(y, device=dev)
    losses, launches = [], []
    for _ in range(STEPS):
        loss = F.cross_entropy(xt.matmul(w), yt)
        grads = loss.backward()
        losses.append(loss.item())
        burn.sync(spec)
        if counter is not None:
            counter.take()
        optim.step(LR, [w], grads)
        if counter is not None:
            launches.append(counter.take())
    return losses, w.to_numpy(), launches


def train_torch(make: Any, kwargs: dict[str, Any], w0: np.ndarray, x: np.ndarray,
                y: np.ndarray) -> tuple[list[float], np.ndarray]:
    """The same steps in PyTorch."""
    w = torch.tensor(w0, requires_grad=True)
    optim = make([w], lr=LR, **kwargs)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    losses = []
    for _ in range(STEPS):
        optim.zero_grad()
        loss = torch.nn.functional.cross_entropy(xt @ w, yt)
        loss.backward()
        optim.step()
        losses.append(loss.item())
    return losses, w.detach().numpy()


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_fused_update_runs_under_fusion(base: str, name: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    config, make, kwargs = OPTIMIZERS[name]
    rng = np.random.default_rng(7)
    w0 = rng.standard_normal((12, 5)).astype(np.float32)
    x = rng.standard_normal((9, 12)).astype(np.float32)
    y = rng.integers(0, 5, 9)
    want_losses, want_w = train_torch(make, kwargs, w0, x, y)
    plain_losses, plain_w, _ = train(base, config, w0, x, y)
    counter = LaunchCounter(monkeypatch, base)
    reset_stats()
    losses, got_w, launches = train(f"{base}+fusion", config, w0, x, y, counter)
    assert got_w.shape == want_w.shape and got_w.dtype == want_w.dtype
    np.testing.assert_allclose(got_w, plain_w, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got_w, want_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(losses, plain_losses, rtol=1e-6)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    # the first step makes the state buffers (SGD's from the gradient, by tensor ops, then
    # a copy the kernel owns on its second step); every later one is the update's one kernel
    made = 2 if name.startswith("sgd") else 1
    assert launches[made:] == [1] * (STEPS - made)


def test_state_stays_on_the_fusion_device(base: str) -> None:
    spec = f"{base}+fusion"
    dev = burn.Device(spec).autodiff()
    w = burn.nn.Param(burn.tensor(np.linspace(-1, 1, 6, dtype=np.float32), device=dev))
    optim = AdamConfig().init()
    for _ in range(2):
        loss = (w * w).sum()
        optim.step(0.1, [w], loss.backward())
    state = optim._state[w.id]
    for key in ("moment_1", "moment_2"):
        m = state[key]
        assert m.device == burn.Device(spec) and not pending(m)
    assert state["step"] == 2
    # the state is readable and matches PyTorch's Adam
    tw = torch.linspace(-1, 1, 6, requires_grad=True)
    topt = torch.optim.Adam([tw], lr=0.1, eps=1e-5)
    for _ in range(2):
        topt.zero_grad()
        (tw * tw).sum().backward()
        topt.step()
    saved = optim.state_dict()["params"]["0"]
    np.testing.assert_allclose(saved["moment_1"], topt.state[tw]["exp_avg"].numpy(), rtol=1e-6)
    np.testing.assert_allclose(saved["moment_2"], topt.state[tw]["exp_avg_sq"].numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(w.to_numpy(), tw.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_pending_reads_of_the_state_see_its_old_values(base: str) -> None:
    """An op recorded on a moment buffer before a step reads the values before the step (the
    in-place update runs after the stream)."""
    spec = f"{base}+fusion"
    dev = burn.Device(spec).autodiff()
    w = burn.nn.Param(burn.tensor(np.arange(4, dtype=np.float32), device=dev))
    optim = AdamConfig().init()
    loss = (w * 3.0).sum()
    optim.step(0.1, [w], loss.backward())
    moment = optim._state[w.id]["moment_1"]
    before = moment.to_numpy().copy()
    reset_stats()
    doubled = moment * 2.0  # recorded, pending
    assert pending(doubled)
    loss = (w * 3.0).sum()
    optim.step(0.1, [w], loss.backward())
    assert stats().ops_recorded >= 1
    np.testing.assert_array_equal(doubled.to_numpy(), before * 2.0)
    # the buffer was updated in place by Adam's rule: m = 0.9 m + 0.1 * grad (grad 3)
    assert burn.Device(spec).backend.value(optim._state[w.id]["moment_1"]._prim) is \
        burn.Device(spec).backend.value(moment._prim)
    np.testing.assert_allclose(moment.to_numpy(), before * 0.9 + 0.3, rtol=1e-6)


def test_multi_tensor_update_runs_once_on_computed_values(base: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Adam's multi-tensor kernel takes fusion tensors: the pending ops run once (one flush),
    all params are updated by one launch on the cpu and cuda runtimes (one a param on wgpu),
    nothing is recorded, and the results and the state are tensors of the fusion device
    holding the values of the unfused update."""
    from burn.backends.cube.optim_kernels import adam_steps

    spec = f"{base}+fusion"
    data = [np.linspace(-1, 1, 6, dtype=np.float32), np.arange(6, dtype=np.float32).reshape(2, 3)]

    def members(device: str) -> list[Any]:
        params = [burn.tensor(d, device=device) for d in data]
        grads = [p * 2.0 - 1.0 for p in params]  # pending until the update under fusion
        return [(p, g, {"step": 0, "moment_1": p * 0.0, "moment_2": p * 0.0})
                for p, g in zip(params, grads, strict=True)]

    plain = members(base)
    want = adam_steps(plain, 0.25, 0.9, 0.999, 1e-8, 0.0, False, False)
    fused = members(spec)
    assert pending(fused[0][1])
    counter = LaunchCounter(monkeypatch, base)
    reset_stats()
    news = adam_steps(fused, 0.25, 0.9, 0.999, 1e-8, 0.0, False, False)
    assert stats().flushes == 1 and stats().ops_recorded == 0
    assert counter.names.count("adam_step") == (len(data) if base == "wgpu" else 1)
    for new, ref, (_, _, state), (_, _, ref_state) in zip(news, want, fused, plain,
                                                          strict=True):
        assert new is not None and ref is not None
        assert new.device == burn.Device(spec) and new.shape == ref.shape
        assert new.dtype == ref.dtype
        np.testing.assert_array_equal(new.to_numpy(), ref.to_numpy())
        assert state["step"] == 1
        for key in ("moment_1", "moment_2"):
            assert state[key].device == burn.Device(spec)
            np.testing.assert_array_equal(state[key].to_numpy(), ref_state[key].to_numpy())
