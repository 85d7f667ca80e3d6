"""Optimizer kernels writing a param's update over its old values (`optim_kernels.overwritable`):
only where nothing but the param holds them, with the same trajectory as new buffers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import burn
import burn.functional as F
from burn import nn
from burn.backends.cube import optim_kernels
from burn.frontend.base import make
from burn.optim import AdamConfig, AdamWConfig

DEVICES = ["cpu", "cpu+fusion"]


def _storage(param: nn.Param) -> int:
    """The address of the param's values on the cpu runtime."""
    array = param._prim.primitive.array
    return int(array.handle.__array_interface__["data"][0])


def _trainer(spec: str, amsgrad: bool = False) -> tuple[nn.Module, Callable[[], None]]:
    """A small model and its training step, on a fusion device whose stream starts afresh
    (what it learned of earlier steps, which blocks pay, changes which kernels sum, so the
    last bits of a trajectory)."""
    stream = getattr(burn.Device(spec).backend, "stream", None)
    if stream is not None:
        stream.forget()
    device = burn.Device(spec).autodiff()
    burn.seed(0, device)
    model = nn.Sequential(nn.Linear(8, 6, device=device), nn.Relu(),
                          nn.Linear(6, 3, device=device))
    rng = np.random.default_rng(0)
    x = burn.tensor(rng.standard_normal((5, 8)).astype(np.float32), device=device)
    y = burn.tensor(rng.integers(0, 3, 5), device=device)
    optim = (AdamWConfig(weight_decay=0.1, amsgrad=True) if amsgrad else AdamConfig()).init()

    def step() -> None:
        loss = F.cross_entropy(model(x), y)
        optim.step(0.05, model, loss.backward())

    return model, step


@pytest.mark.parametrize("spec", DEVICES)
@pytest.mark.parametrize("amsgrad", [False, True])
def test_updates_in_place_match_new_buffers(spec: str, amsgrad: bool,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A param nothing else holds keeps its storage, and every value equals the run whose
    updates go to new buffers."""
    model, step = _trainer(spec, amsgrad)
    for _ in range(2):
        step()
    weights = [p for _, p in model.named_parameters()]
    before = [_storage(p) for p in weights]
    for _ in range(3):
        step()
    assert [_storage(p) for p in weights] == before
    got = [p.to_numpy().copy() for p in weights]

    monkeypatch.setattr(optim_kernels, "overwritable", lambda param, value: False)
    ref_model, ref_step = _trainer(spec, amsgrad)
    for _ in range(5):
        ref_step()
    for (_, ref), values in zip(ref_model.named_parameters(), got, strict=True):
        expected = ref.to_numpy()
        assert values.shape == expected.shape and values.dtype == expected.dtype
        np.testing.assert_array_equal(values, expected)


HOLDERS: dict[str, Callable[[nn.Param], Any]] = {
    "value": lambda p: p.value(),
    "inner": lambda p: p.inner(),
    "detach": lambda p: p.detach(),
    "swap_dims view": lambda p: p.swap_dims(0, 1),
    "reshape view": lambda p: p.reshape(-1),
    "numpy view": lambda p: np.asarray(p),
    "dlpack export": lambda p: np.from_dlpack(p),
    "saved by a graph": lambda p: (p * p).sum(),
}


@pytest.mark.parametrize("spec", DEVICES)
@pytest.mark.parametrize("holder", list(HOLDERS))
def test_held_values_are_never_overwritten(spec: str, holder: str) -> None:
    """Whatever else holds a param's values (a tensor sharing them, a view, an export, a graph
    that saved them) keeps them: the update goes to a new buffer; once released, updates are
    in place again."""
    model, step = _trainer(spec)
    step()
    weight = model.named_parameters().__next__()[1]
    values = weight.to_numpy().copy()
    held = HOLDERS[holder](weight)
    step()
    assert not np.array_equal(weight.to_numpy(), values)  # the param moved on
    if holder == "saved by a graph":  # its backward reads the values it saved: 2 * values
        (grad,) = held.backward()._grads.values()  # the old leaf's, an inner primitive
        seen = make(grad, weight.device.inner(), weight.dtype).to_numpy() / 2
    else:
        seen = held if isinstance(held, np.ndarray) else held.to_numpy()
        seen = seen.T if holder == "swap_dims view" else seen.reshape(values.shape)
    np.testing.assert_array_equal(seen, values)
    del held, seen
    step()
    address = _storage(weight)
    step()
    assert _storage(weight) == address


def test_wgpu_updates_go_to_new_buffers() -> None:
    """WGSL binds no buffer twice where one binding is written: the wgpu runtime never
    overwrites (`OVERWRITING`)."""
    assert "wgpu" not in optim_kernels.OVERWRITING
    if not any(b.name == "wgpu" and b.available for b in burn.available_backends()):
        pytest.skip("no wgpu adapter")
    model, step = _trainer("wgpu")
    step()
    weight = model.named_parameters().__next__()[1]
    assert not optim_kernels.overwritable(weight, weight.inner())
