"""`burn.flush`: queued work starts without a wait. A fusion device runs its recorded ops
(their kernels launched, their handles computed), wgpu submits the launches it encoded; the
device is not waited for, and errors it defers still raise at `sync`."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import burn
from burn.errors import BurnIndexError, DeviceError
from burn.fusion import reset_stats, stats

CUBE = [name for name in ("cpu", "wgpu", "cuda")
        if any(b.name == name and b.available for b in burn.available_backends())]
DATA = np.linspace(-3, 3, 24, dtype=np.float32).reshape(4, 6)


def _chain(x: Any) -> Any:
    return ((x * 2.0 + 1.0).tanh() - x).exp()


def _reference() -> np.ndarray:
    t = torch.from_numpy(DATA)
    return ((t * 2.0 + 1.0).tanh() - t).exp().numpy()


def _runtime(device: str) -> Any:
    return burn.Device(device).base.backend.runtime  # type: ignore[attr-defined]


def _no_waits(monkeypatch: pytest.MonkeyPatch, device: str) -> list[str]:
    """Record every wait of `device`'s runtime (there should be none)."""
    waits: list[str] = []
    monkeypatch.setattr(_runtime(device), "sync", lambda: waits.append("sync"))
    return waits


def test_cube_devices_are_tested() -> None:
    assert CUBE, "no cube backend (cpu, wgpu) is available: flush is untested"


@pytest.mark.parametrize("base", CUBE)
@pytest.mark.parametrize("decorators", ["+fusion", "+fusion+autodiff", "+fusion+profile"])
def test_flush_runs_the_recorded_ops_without_waiting(monkeypatch: pytest.MonkeyPatch,
                                                     base: str, decorators: str) -> None:
    device = base + decorators
    burn.sync(device)  # what other tests left pending
    x = burn.tensor(DATA, device=device)
    y = _chain(x)
    fusion: Any = burn.Device(f"{base}+fusion").backend
    assert fusion.stream.pending, "the chain was not recorded"
    waits = _no_waits(monkeypatch, device)
    reset_stats()
    burn.flush(device)
    s = stats()
    assert s.flushes == 1 and s.kernels_launched >= 1
    assert not fusion.stream.pending and waits == []
    burn.flush(device)  # nothing pending: nothing runs
    assert stats().flushes == 1
    monkeypatch.undo()
    got = y.to_numpy()
    want = _reference()
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("base", CUBE)
def test_flushed_handles_hold_their_values(base: str) -> None:
    device = f"{base}+fusion"
    x = burn.tensor(DATA, device=device)
    y = _chain(x)
    assert y._prim.value is None  # pending
    burn.flush(device)
    assert y._prim.value is not None  # computed by the launched kernel


@pytest.mark.parametrize("device", ["numpy", "numpy+autodiff", "numpy+fusion", *CUBE,
                                    *(f"{b}+autodiff" for b in CUBE)])
def test_flush_on_devices_without_recorded_ops(device: str) -> None:
    x = burn.tensor(DATA, device=device)
    y = _chain(x)
    burn.flush(device)
    got = y.to_numpy()
    want = _reference()
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


@pytest.mark.skipif("wgpu" not in CUBE, reason="wgpu is not available here")
def test_wgpu_flush_submits_the_encoded_launches(monkeypatch: pytest.MonkeyPatch) -> None:
    burn.sync("wgpu")
    runtime = _runtime("wgpu")
    x = burn.tensor(DATA, device="wgpu")
    y = _chain(x)
    waits = _no_waits(monkeypatch, "wgpu")
    submits = runtime.memory_stats()["submits"]
    assert runtime._encoder is not None  # the launches are encoded, not submitted
    burn.flush("wgpu")
    assert runtime._encoder is None and runtime.memory_stats()["submits"] == submits + 1
    assert waits == []
    monkeypatch.undo()
    np.testing.assert_allclose(y.to_numpy(), _reference(), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("device", [*CUBE, *(f"{b}+fusion" for b in CUBE)])
def test_a_deferred_index_error_raises_at_sync_not_at_flush(device: str) -> None:
    burn.sync(device)
    x = burn.tensor(DATA, device=device)
    out = x.select(0, burn.tensor([0, 9], device=device))
    assert out.shape == (2, 6)
    burn.flush(device)  # the check ran on the device: not read here
    with pytest.raises(BurnIndexError, match="select: index 9 out of range"):
        burn.sync(device)


def test_flush_of_a_bad_device_raises() -> None:
    with pytest.raises(DeviceError):
        burn.flush("no-such-backend")
