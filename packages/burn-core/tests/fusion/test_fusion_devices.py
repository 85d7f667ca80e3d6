"""Fusion devices: spec composition, a backend without burn-cube kernels, the stream's length
bound and `burn.fusion.stats()`."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from fusion_testing import DEVICES

import burn
from burn.errors import DeviceError
from burn.fusion import reset_stats, stats
from burn.fusion.stream import MAX_PENDING


def test_fusion_composes_with_autodiff_and_profile() -> None:
    cpu = burn.Device("numpy")
    assert cpu.fusion() == burn.Device("numpy+fusion")
    assert cpu.fusion().fusion() == cpu.fusion()
    assert cpu.autodiff().fusion() == burn.Device("numpy+fusion+autodiff")
    assert cpu.fusion().autodiff().inner() == cpu.fusion()
    with pytest.raises(DeviceError):
        burn.Device("numpy+autodiff+fusion")  # autodiff is the outermost decorator


def test_numpy_fusion_runs_every_op_at_once() -> None:
    data = np.array([[-1.5, 0.0, 2.0], [np.nan, np.inf, -np.inf]], np.float32)
    dev = burn.Device("numpy+fusion")
    reset_stats()
    x = burn.tensor(data, device=dev)
    y = (x * 2.0 + 1.0).tanh()
    assert isinstance(y._prim, np.ndarray)  # the inner backend's own primitive
    assert stats().ops_recorded == 0
    got = y.to_numpy()
    want = (torch.from_numpy(data) * 2.0 + 1.0).tanh().numpy()
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
    assert y.device == dev


@pytest.mark.parametrize("base", DEVICES)
def test_stream_runs_at_its_length_bound(base: str) -> None:
    x = burn.tensor(np.linspace(0, 1, 16, dtype=np.float32), device=f"{base}+fusion")
    burn.sync(f"{base}+fusion")  # ops other tests left pending
    reset_stats()
    y = x
    for _ in range(MAX_PENDING + 3):
        y = y * 1.001
    s = stats()
    assert s.flushes == 1 and s.ops_recorded == MAX_PENDING + 3
    assert y._prim.value is None  # the 3 ops after the bound are pending
    want = torch.linspace(0, 1, 16)
    for _ in range(MAX_PENDING + 3):
        want = want * 1.001
    got = y.to_numpy()
    assert got.shape == (16,) and got.dtype == np.float32
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5)
    assert stats().ops_dead == 0 and stats().kernels_launched == 2


@pytest.mark.parametrize("base", DEVICES)
def test_the_bound_does_not_cut_a_growing_block(base: str) -> None:
    """At the bound the stream runs the blocks before the last one; the last, still growing,
    stays pending and becomes one kernel with the ops recorded after the bound."""
    dev = f"{base}+fusion"
    a = burn.tensor(np.linspace(0, 1, 6, dtype=np.float32), device=dev)
    b = burn.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(2, 6), device=dev)
    burn.sync(dev)
    reset_stats()
    first, second = MAX_PENDING - 28, 60
    x, y = a, b
    for _ in range(first):
        x = x * 1.001
    for k in range(second):  # crosses the bound, reading x (a block before it) now and then
        y = y + x if k % 20 == 0 else y * 0.999
    assert y._prim.value is None
    s = stats()
    assert s.flushes == 1 and s.ops_recorded == first + second
    ta, tb = torch.linspace(0, 1, 6), torch.linspace(-1, 1, 12).reshape(2, 6)
    for _ in range(first):
        ta = ta * 1.001
    for k in range(second):
        tb = tb + ta if k % 20 == 0 else tb * 0.999
    got = y.to_numpy()
    assert got.shape == (2, 6) and got.dtype == np.float32
    np.testing.assert_allclose(got, tb.numpy(), rtol=1e-5)
    np.testing.assert_allclose(x.to_numpy(), ta.numpy(), rtol=1e-5)
    s = stats()
    assert s.ops_dead == 0 and s.flushes == 2 and s.kernels_launched == 2


@pytest.mark.parametrize("base", [d for d in DEVICES if d == "cpu"])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32"])
def test_fused_numbers_wrap_into_int_dtypes(base: str, dtype: str) -> None:
    """Host numbers of int ops wrap into the tensor's dtype inside a fused kernel, as torch's
    (and the one-op kernels') do: uint8 `mask_fill(m, -1)` fills 255."""
    data = np.array([[1, 2, 3], [100, 0, 7]], dtype=dtype)
    x = burn.tensor(data, device=f"{base}+fusion")
    y = (x.mask_fill(x > 1, -1) + 300) * 3
    t = torch.from_numpy(data)
    want = (t.masked_fill(t > 1, -1) + 300) * 3
    got = y.to_numpy()
    assert got.shape == tuple(want.shape) and got.dtype == want.numpy().dtype
    np.testing.assert_array_equal(got, want.numpy())


@pytest.mark.parametrize("base", DEVICES)
def test_autodiff_conv_keeps_the_inner_columns(monkeypatch: pytest.MonkeyPatch,
                                               base: str) -> None:
    """Under fusion, Autodiff's conv keeps the inner cube backend's im2col columns for the
    backward (`conv_saving_columns`), as on the plain device, instead of unfolding x again;
    the gradients equal torch's."""
    fused: Any = burn.Device(f"{base}+fusion").backend
    calls: list[str] = []
    for name in ("conv_saving_columns", "conv_backward_from_columns", "conv_backward"):
        real = getattr(fused, name)

        def spy(*args: Any, _real: Any = real, _name: str = name) -> Any:
            calls.append(_name)
            return _real(*args)
        monkeypatch.setattr(fused, name, spy)
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 9, 9), (4, 3, 3, 3),
                                                                  (4,)))
    g = rng.standard_normal((2, 4, 7, 7)).astype(np.float32)
    device = burn.Device(f"{base}+fusion").autodiff()
    bx, bw, bb = (burn.tensor(a, device=device).require_grad() for a in (x, w, b))
    out = burn.functional.conv2d(bx, bw, bb)
    grads = (out * burn.tensor(g, device=device)).sum().backward()
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    torch.nn.functional.conv2d(tx, tw, tb).backward(torch.tensor(g))
    for ours, ref in ((bx, tx), (bw, tw), (bb, tb)):
        got = ours.grad(grads)
        assert got.shape == tuple(ref.shape) and got.dtype == burn.float32
        np.testing.assert_allclose(got.numpy(), ref.grad.numpy(), rtol=1e-4, atol=1e-4)
    assert calls == ["conv_saving_columns", "conv_backward_from_columns"]
