"""Selects in the C target's fast paths: where every load of both branches is proven in bounds
(and nothing can trap) both branches are read before the choice, so the loop vectorizes; bool
tensors proven in bounds are read as their bytes. Results against numpy on every runtime,
NaN/inf values included; a select guarding an integer division keeps its branches lazy."""

from __future__ import annotations

import numpy as np
import pytest

import burn_cube as bc
from burn_cube import bool_, f32, i32
from burn_cube.ir import KernelBuilder

N = 1000  # several cubes, the last one partial


def _mask_fill() -> bc.IRKernel:
    b = KernelBuilder("select_mask_fill")
    x = b.tensor("x", f32, write=False)
    mask = b.tensor("mask", bool_, write=False)
    value = b.scalar("value", f32)
    out = b.tensor("out", f32, write=True)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < out.len):
        out[pos] = b.select(mask[pos], value, x[pos])
    return b.kernel()


def _guarded_division() -> bc.IRKernel:
    b = KernelBuilder("select_guarded_division")
    a = b.tensor("a", i32, write=False)
    d = b.tensor("d", i32, write=False)
    out = b.tensor("out", i32, write=True)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < out.len):
        out[pos] = b.select(d[pos] != 0, a[pos] // d[pos], -1)
    return b.kernel()


def test_select_of_proven_loads_matches_numpy(rt: bc.Runtime) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(N).astype(np.float32)
    x[:4] = [np.nan, np.inf, -np.inf, 0.0]
    mask = rng.random(N) < 0.5
    kern = _mask_fill()
    out = np.zeros(N, np.float32)
    kern.launch(rt, (-(-N // 256), 1, 1), 256, x, mask, np.float32(np.nan), out)
    expected = np.where(mask, np.float32(np.nan), x)
    assert out.shape == expected.shape and out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)
    if rt.name == "cpu":
        src = kern.source("c", 256, x, mask, np.float32(0), out)
        assert "bc_sa" in src and "(const uint8_t *)&t_mask[" in src


def test_select_guarding_a_division_stays_lazy(rt: bc.Runtime) -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(-1000, 1000, N).astype(np.int32)
    d = rng.integers(-3, 4, N).astype(np.int32)
    d[:3] = 0
    kern = _guarded_division()
    out = np.zeros(N, np.int32)
    kern.launch(rt, (-(-N // 256), 1, 1), 256, a, d, out)
    safe = np.where(d == 0, 1, d)
    expected = np.where(d != 0, np.trunc(a / safe).astype(np.int32), -1)
    assert out.shape == expected.shape and out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)
    if rt.name == "cpu":
        assert "bc_sa" not in kern.source("c", 256, a, d, out)


@pytest.mark.parametrize("n", [0, 1, 255, 257])
def test_select_short_and_empty_launches(rt: bc.Runtime, n: int) -> None:
    x = np.arange(n, dtype=np.float32)
    mask = x % 3 == 0
    out = np.full(n, -7, np.float32)
    _mask_fill().launch(rt, (max(1, -(-n // 256)), 1, 1), 256, x, mask, np.float32(5), out)
    np.testing.assert_array_equal(out, np.where(mask, np.float32(5), x))


def _negated_flag(tail: str) -> bc.IRKernel:
    b = KernelBuilder(f"negated_flag_{tail}", cube_dim=64)
    x = b.tensor("x", f32, write=False)
    out = b.tensor("out", f32, write=True)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < out.len):
        flag = b.local(f32, init=b.select(x[pos] > 0.0, b.const(1.0, f32), b.const(0.0, f32)))
        out[pos] = -flag if tail == "neg" else flag * b.const(-2.0, f32)
    return b.kernel()


@pytest.mark.parametrize("tail", ["neg", "mul"])
def test_negated_select_of_constants_keeps_negative_zero(rt: bc.Runtime, tail: str) -> None:
    """``-(x > 0 ? 1 : 0)`` and ``(x > 0 ? 1 : 0) * -2`` give -0.0 where the comparison is
    false: on CUDA, NVVM folded the negation into a select of two immediates and ptxas (CUDA 13,
    sm_90) turned its -0.0 into +0.0, so the CUDA target's float zero literals read a constant
    it cannot see (`table_cuda.literal`). The values are checked on every runtime; the signs of
    zeros on cpu and cuda: WGSL lets an implementation ignore the sign of a zero (NVIDIA's
    Vulkan driver does here; burn-core's fusion hides values from it: `burn.fusion.emit`)."""
    values = np.resize(np.array([0.0, -0.0, -1.0, 0.5, -3.0, 2.0, np.nan], np.float32), N)
    x, out = rt.upload(values), rt.allocate((N,), f32)
    _negated_flag(tail).launch(rt, -(-N // 64), 64, x, out)
    got = out.numpy()
    flag = (values > 0).astype(np.float32)
    want = -flag if tail == "neg" else flag * np.float32(-2.0)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    if rt.name != "wgpu":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
