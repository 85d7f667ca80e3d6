"""Atomic min / max / add on every runtime under test, against numpy's unbuffered
``np.minimum.at`` / ``np.maximum.at`` / ``np.add.at``."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import burn_cube as bc
from burn_cube import KernelBuilder, i32

RNG = np.random.default_rng(7)
N = 20_000


def _scatter(op: str, dtype: bc.DType = i32) -> bc.IRKernel:
    """``out[slot[i]] = op(out[slot[i]], x[i])`` atomically, one unit per element (the
    builder's ``atomic_min`` / ``atomic_max``; the decorator spells them ``bc.atomic_min``)."""
    b = KernelBuilder(f"scatter_{op}_{dtype.name}", cube_dim=64)
    x, slot, out = b.tensor("x", dtype), b.tensor("slot", i32), b.tensor("out", dtype)
    i = b.ABSOLUTE_POS
    with b.if_(i < x.len):
        getattr(b, f"atomic_{op}")(out, slot[i], x[i])
    return b.kernel()


def _launch(kernel: bc.IRKernel, rt: bc.Runtime, *args: np.ndarray) -> None:
    kernel.launch(rt, -(-len(args[0]) // 64), 64, *args)


@pytest.mark.parametrize(("op", "reference", "start"), [
    ("min", np.minimum, np.iinfo(np.int32).max),
    ("max", np.maximum, np.iinfo(np.int32).min),
])
def test_scatter_min_max_i32(rt: bc.Runtime, op: str, reference: np.ufunc, start: int) -> None:
    """Signed values (negatives and both saturated ends), many units per slot (contention),
    and slots no unit touches (keep their start value)."""
    x = RNG.integers(-(2**31), 2**31, N, dtype=np.int64).astype(np.int32)
    x[:4] = [np.iinfo(np.int32).min, np.iinfo(np.int32).max, 0, -1]
    slot = RNG.integers(0, 40, N).astype(np.int32)  # slots 40..47 stay untouched
    out = np.full(48, start, np.int32)
    expected = out.copy()
    reference.at(expected, slot, x)
    _launch(_scatter(op), rt, x, slot, out)
    assert out.shape == expected.shape and out.dtype == np.int32
    np.testing.assert_array_equal(out, expected)


def test_one_hot_slot_returns_old_values(rt: bc.Runtime) -> None:
    """Every unit lowers one slot and keeps the value it found: each old value lies between
    the final minimum and the start, and the first update saw the start."""
    b = KernelBuilder("min_old", cube_dim=64)
    x, out, old = b.tensor("x", i32), b.tensor("out", i32), b.tensor("old", i32)
    i = b.ABSOLUTE_POS
    with b.if_(i < x.len):
        old[i] = b.atomic_min(out, 0, x[i])
    kern = b.kernel()
    assert "atomic:i32" in kern.kernel.features
    x_np = RNG.permutation(4096).astype(np.int32) - 2000
    out_np = np.full(1, 10_000, np.int32)
    old_np = np.zeros_like(x_np)
    kern.launch(rt, 4096 // 64, 64, x_np, out_np, old_np)
    assert out_np[0] == x_np.min()
    assert old_np.max() == 10_000 and old_np.min() >= x_np.min()
    # a unit's old value is never above the value an earlier update stored past it
    assert (old_np[x_np == x_np.min()] > x_np.min()).all()


def test_u32_and_i64(rt: bc.Runtime) -> None:
    """Unsigned compare (values past 2**31), and 64-bit where the target has it (WGSL has
    no 64-bit atomics: a CompileError naming the op and dtype)."""
    x = RNG.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
    slot = RNG.integers(0, 8, N).astype(np.int32)
    for dtype, values in ((bc.u32, x), (bc.i64, x.astype(np.int64) - 2**31)):
        kern = _scatter("max", dtype)
        out_np = np.full(8, np.iinfo(values.dtype).min, values.dtype)
        if rt.properties.target == "wgsl" and dtype == bc.i64:
            with pytest.raises(bc.errors.CompileError, match="atomic_max.* on i64"):
                _launch(kern, rt, values, slot, out_np)
            continue
        expected = out_np.copy()
        np.maximum.at(expected, slot, values)
        _launch(kern, rt, values, slot, out_np)
        assert out_np.dtype == values.dtype
        np.testing.assert_array_equal(out_np, expected)


def test_min_max_reject_floats() -> None:
    """atomic_min / atomic_max take integer tensors only, on every target."""
    b = KernelBuilder("fmin", cube_dim=64)
    out = b.tensor("out", bc.f32)
    with pytest.raises(bc.errors.CompileError, match=r"atomic_min on f32 \(`out`\)"):
        b.atomic_min(out, 0, 1.0)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_cuda_and_c_spellings(tmp_path: Path) -> None:
    """The emitted calls per target (CUDA's own atomicMin / atomicMax for int, unsigned and
    long long, compiled by nvcc; C through the compare-exchange helpers)."""
    b = KernelBuilder("spell", cube_dim=64)
    out, wide = b.tensor("out", i32), b.tensor("wide", bc.i64)
    b.atomic_min(out, 0, 3)
    b.atomic_max(wide, 1, 4)
    u = b.tensor("u", bc.u32)
    b.atomic_min(u, 0, 5)
    kern = b.kernel()
    one, two, three = np.zeros(1, np.int32), np.zeros(2, np.int64), np.zeros(1, np.uint32)
    cuda = kern.source("cuda", 64, one, two, three)
    assert "atomicMin(&" in cuda and "atomicMax(&" in cuda
    assert "long long *__restrict__ t_wide" in cuda
    (tmp_path / "spell.cu").write_text(cuda)
    proc = subprocess.run(["nvcc", "-c", "-arch=sm_90", "-std=c++17", "-o",
                           str(tmp_path / "spell.o"), str(tmp_path / "spell.cu")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[:2000]
    c = kern.source("c", 64, one, two, three)
    assert "bc_atomic_min_i32(&" in c and "bc_atomic_max_i64(&" in c
    assert "static inline int64_t bc_atomic_max_i64" in c


@bc.kernel
def column_bounds(x: bc.Tensor[i32], lo: bc.Tensor[i32], hi: bc.Tensor[i32]):  # type: ignore
    i = bc.ABSOLUTE_POS
    if i < len(x):  # type: ignore
        bc.atomic_min(lo, i % len(lo), x[i])  # type: ignore
        bc.atomic_max(hi, i % len(hi), x[i])  # type: ignore


def test_language_frontend(rt: bc.Runtime) -> None:
    """``bc.atomic_min`` / ``bc.atomic_max`` as statements of a decorated kernel."""
    x = RNG.integers(-1000, 1000, 4096).astype(np.int32)
    lo, hi = np.full(7, 5000, np.int32), np.full(7, -5000, np.int32)
    column_bounds.launch(rt, 4096 // 64, 64, x, lo, hi)
    slot = np.arange(x.size) % 7
    expected_lo, expected_hi = np.full(7, 5000, np.int32), np.full(7, -5000, np.int32)
    np.minimum.at(expected_lo, slot, x)
    np.maximum.at(expected_hi, slot, x)
    np.testing.assert_array_equal(lo, expected_lo)
    np.testing.assert_array_equal(hi, expected_hi)
