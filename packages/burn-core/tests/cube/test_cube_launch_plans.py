"""Planned elementwise launches of the cube backends (`CubeBackend.plans`) and the cpu buffer
pool: a launch is planned once per op, dtypes and layout and reused; another layout, dtype,
compile-time argument or None number gets its own plan and the right values; results reuse the
buffers of dead tensors on the cpu, never one still read elsewhere. Against torch."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import pytest
import torch

import burn
from burn.backends.cube import CudaBackend
from burn.backends.cube.tensor import CubeTensor

DEVICES = ["cpu", "wgpu"]


def prim(t: burn.Tensor) -> CubeTensor:
    return t._prim  # type: ignore[attr-defined,no-any-return]


def check(got: burn.Tensor, ref: torch.Tensor) -> None:
    expected = ref.numpy()
    data = got.to_numpy()
    assert data.shape == expected.shape and data.dtype == expected.dtype
    np.testing.assert_allclose(data, expected, rtol=2e-6, atol=1e-6, equal_nan=True)


def plans_of(be: Any, op: str) -> dict[tuple[Any, ...], Any]:
    """The plans kept for `op`: keyed by its name, or (`launch_planned`) by its kernel."""
    return {key: plan for key, plan in be.plans.items()
            if key[0] == op or getattr(getattr(key[0], "kernel", None), "name", None) == op}


@pytest.mark.parametrize("name", DEVICES)
def test_a_plan_is_made_once_and_reused(name: str) -> None:
    rng = np.random.default_rng(0)
    be: Any = burn.Device(name).backend
    be.plans.clear()
    for _ in range(3):  # fresh tensors of one layout each time
        x = rng.standard_normal((5, 7)).astype(np.float32)
        y = rng.standard_normal((5, 7)).astype(np.float32)
        a, b = burn.tensor(x, device=name), burn.tensor(y, device=name)
        check(a + b, torch.from_numpy(x) + torch.from_numpy(y))
        check(a * 2.5, torch.from_numpy(x) * 2.5)
        check(a.exp(), torch.from_numpy(x).exp())
    for op in ("float_add", "float_mul_scalar", "float_exp"):
        assert len(plans_of(be, op)) == 1, op
    assert be.fallbacks["float_add"] == 0


@pytest.mark.parametrize("name", DEVICES)
def test_other_layouts_dtypes_and_arguments_miss_the_cache(name: str) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 8)).astype(np.float32)
    be: Any = burn.Device(name).backend
    be.plans.clear()
    t, tx = burn.tensor(x, device=name), torch.from_numpy(x)
    check(t + t, tx + tx)
    check(t.transpose(0, 1) + t.transpose(0, 1), tx.T + tx.T)  # strided views
    check(t[1:] + t[1:], tx[1:] + tx[1:])  # a dense view at an offset
    check(t[2:] + t[2:], tx[2:] + tx[2:])  # another offset and shape
    check(t + t[0], tx + tx[0])  # a broadcast
    check(t.reshape([48]) + t.reshape([48]), tx.reshape(48) + tx.reshape(48))
    k = rng.integers(-9, 9, (6, 8)).astype(np.int32)
    tk = burn.tensor(k, device=name)
    check(tk + tk, torch.from_numpy(k) + torch.from_numpy(k))
    assert len(plans_of(be, "float_add")) == 6 and len(plans_of(be, "int_add")) == 1
    check(t.clamp(min=-0.5), tx.clamp(min=-0.5))
    check(t.clamp(max=0.25), tx.clamp(max=0.25))  # the None bound moved: another kernel
    check(t.clamp(min=-0.1), tx.clamp(min=-0.1))  # the first plan, another number
    check(t.int(), tx.to(torch.int64))
    check(t.cast("float16").float(), tx.half().float())
    # repeated layouts give the same values through their plans
    check(t.transpose(0, 1) + t.transpose(0, 1), tx.T + tx.T)
    check(t[1:] + t[1:], tx[1:] + tx[1:])


def test_edge_values_through_a_plan() -> None:
    edges = np.array([-np.inf, -1.0, -0.0, 0.0, np.nan, np.inf, 3e38, -3e38], np.float32)
    ref = torch.from_numpy(edges)
    for _ in range(2):  # planned, then through the plan
        t = burn.tensor(edges, device="cpu")
        check(t + t, ref + ref)
        check(t * 1e30, ref * 1e30)  # saturates to inf as float32
        check(t.exp(), ref.exp())


#: Runtimes whose `empty` hands out the buffers of dead arrays.
POOLING = ["cpu", *(["cuda"] if CudaBackend.unavailable_reason() is None else [])]


@pytest.mark.parametrize("name", POOLING)
def test_results_reuse_buffers_of_dead_tensors(name: str) -> None:
    be: Any = burn.Device(name).backend
    x = np.arange(32, dtype=np.float32)
    t = burn.tensor(x, device=name)
    t * t  # planned (the plan's first launch allocates once more)
    first = t + t
    handle = weakref.ref(prim(first).array.handle)
    before = be.runtime.memory_stats()["buffers_reused"]
    del first
    second = t * t
    assert prim(second).array.handle is handle()
    assert be.runtime.memory_stats()["buffers_reused"] == before + 1
    check(second, torch.from_numpy(x) * torch.from_numpy(x))


#: (device, zero-copy importer) pairs: numpy imports host memory only.
EXPORTS = [(name, export) for name in POOLING for export in ("torch", "numpy")
           if name == "cpu" or export == "torch"]


@pytest.mark.parametrize(("name", "importer"), EXPORTS)
def test_exported_results_keep_their_buffer(name: str, importer: str) -> None:
    """A result exported zero-copy and then dropped on burn's side keeps its memory: later
    results of its shape never get its buffer (DLPack holds it without a counted reference)."""
    export = torch.from_dlpack if importer == "torch" else np.from_dlpack
    x = np.arange(16, dtype=np.float32)
    t = burn.tensor(x, device=name)
    shared = export(t + 1.0)  # zero-copy
    expected = x + 1.0
    for _ in range(3):
        check(t * -2.0, torch.from_numpy(x) * -2.0)
    host = shared.cpu().numpy() if isinstance(shared, torch.Tensor) else shared
    assert host.shape == (16,) and host.dtype == np.float32
    np.testing.assert_array_equal(host, expected)


def close(got: burn.Tensor, ref: torch.Tensor) -> None:
    """`check` for float sums (another summation order): float64 reference, rtol 1e-5."""
    expected = ref.double().numpy()
    data = got.to_numpy()
    assert data.shape == expected.shape and data.dtype == np.float32
    np.testing.assert_allclose(data, expected, rtol=1e-5, atol=1e-4, equal_nan=True)


@pytest.mark.parametrize("name", DEVICES)
def test_reductions_softmax_and_copies_are_planned_per_layout(name: str) -> None:
    """sum / max-with-indices along a dim, full sums (one and two launches), softmax and
    strided copies are planned once per input layout; views of one storage at other offsets or
    strides get their own plans and the right values."""
    rng = np.random.default_rng(3)
    be: Any = burn.Device(name).backend
    be.plans.clear()
    device = burn.Device(name)
    big = rng.standard_normal((40, 3000)).astype(np.float32)
    for step in range(3):
        data = rng.standard_normal((6, 40, 33)).astype(np.float32)
        data[0, 0, :2] = [np.nan, np.inf]
        x, ref = burn.tensor(data, device=device), torch.from_numpy(data)
        views = [(x, ref), (x[:, 3:, 1:], ref[:, 3:, 1:]), (x.swap_dims(1, 2),
                                                          ref.transpose(1, 2))]
        for view, r in views:
            close(view.sum(dim=1), r.sum(dim=1))
            values, indices = view.max_dim_with_indices(2)
            want = r.max(dim=2, keepdim=True)
            check(values, want.values)
            check(indices, want.indices)
            close(view.sum(), r.sum())
            check(burn.functional.softmax(view, dim=2), torch.softmax(r, 2))
            check(view.swap_dims(0, 2).reshape([-1]), r.transpose(0, 2).reshape(-1))
        close(burn.tensor(big * (step + 1), device=device).sum(),
              torch.from_numpy(big * (step + 1)).sum())
        if step == 0:
            counts = {op: len(plans_of(be, op)) for op in
                      ("reduce_dim", "reduce_all", "softmax", "softmax_rows_cpu", "copy")}
    assert {op: len(plans_of(be, op)) for op in counts} == counts
    assert counts["reduce_dim"] >= 6 and counts["reduce_all"] == 4 and counts["copy"] >= 1
    # on the cpu the dense view's rows run the rows kernel, the two strided views the
    # three-pass kernel
    assert counts["softmax"] == (2 if name == "cpu" else 0)
    assert counts["softmax_rows_cpu"] == (1 if name == "cpu" else 0)


#: GPU runtimes (the cpu fills host memory without a kernel).
FILLING = ["wgpu", *(["cuda"] if CudaBackend.unavailable_reason() is None else [])]


@pytest.mark.parametrize("name", FILLING)
def test_fills_run_one_plan_per_size_with_each_value(name: str) -> None:
    """`full` (a backward's seed of ones, every zeros) launches its kernel through a plan per
    dtype and size: each call passes its own value (edges included) and gets it."""
    be: Any = burn.Device(name).backend
    be.plans.clear()
    cases = [("float32", [1.5, -0.0, float("nan"), float("inf"), -3e38]),
             ("int32", [7, -(2**31), 2**31 - 1, 0]), ("bool", [True, False])]
    for dtype, values in cases:
        for value in values:
            got = burn.full([3, 5], value, dtype=dtype, device=name)
            want = torch.full((3, 5), value, dtype=getattr(torch, dtype))
            data = got.to_numpy()
            assert data.shape == (3, 5) and data.dtype == want.numpy().dtype
            np.testing.assert_array_equal(data, want.numpy())
            if dtype == "float32":  # the sign of zero too
                np.testing.assert_array_equal(np.signbit(data), np.signbit(want.numpy()))
    assert len(plans_of(be, "fill")) == len(cases)
