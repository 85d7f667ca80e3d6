"""Launch plans (`IRKernel.plan`, `Runtime.plan`) and the cpu runtime's buffer pool: a plan
launched with other storages of the same layout computes what a checked launch computes,
scalars are still checked, and buffers of dead arrays are reused only when nothing else holds
them."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import pytest

import burn_cube as bc
from burn_cube import KernelBuilder, f32, i32
from burn_cube.errors import LaunchError
from burn_cube.runtime import cpu as cpu_runtime


def axpy_kernel(dtype: Any) -> bc.IRKernel:
    """`out[i] = a * x[i] + y[i]` over rank-1 views."""
    b = KernelBuilder("axpy")
    x = b.tensor("x", dtype, rank=1, write=False)
    y = b.tensor("y", dtype, rank=1, write=False)
    a = b.scalar("a", dtype)
    out = b.tensor("out", dtype, rank=1, write=True)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < out.len):
        out[pos] = a * x[b.index_of(x, pos)] + y[b.index_of(y, pos)]
    return b.kernel()


def test_plan_runs_other_storages_of_the_layout(rt: bc.Runtime) -> None:
    kernel = axpy_kernel(f32)
    rng = np.random.default_rng(0)
    host = [rng.standard_normal(40).astype(np.float32) for _ in range(6)]
    x0, y0, x1, y1 = (rt.upload(h) for h in host[:4])
    # a strided view of the second storage: every other element from element 3
    xs0 = rt.upload(host[4]).view((16,), (2,), 3)
    xs1 = rt.upload(host[5]).view((16,), (2,), 3)
    out0, out1 = rt.allocate((40,), f32), rt.allocate((16,), f32)
    launch = kernel.plan(rt, 1, 256, x0, y0, 2.0, out0)
    launch([x1, y1, -0.5, out0])
    got = rt.download(out0)
    assert got.shape == (40,) and got.dtype == np.float32
    np.testing.assert_allclose(got, np.float32(-0.5) * host[2] + host[3], rtol=1e-6)
    launch([x0, y0, np.float32(3.0), out0])
    np.testing.assert_allclose(rt.download(out0), 3 * host[0] + host[1], rtol=1e-6)
    strided = kernel.plan(rt, 1, 256, xs0, y0.view((16,), (1,), 0), 1.0, out1)
    strided([xs1, y1, 2.0, out1])
    np.testing.assert_allclose(rt.download(out1), 2 * host[5][3:35:2] + host[3][:16],
                               rtol=1e-6)


def test_plan_takes_the_storage_of_a_view_where_the_example_owned_it(rt: bc.Runtime) -> None:
    # a caller plans with an owning array and launches with a view of another storage (as the
    # cube backend's reductions do: a [1, 7] view of a [7] storage, planned as its rows)
    kernel = axpy_kernel(f32)
    host = np.arange(7, dtype=np.float32) + 1
    x0, out = rt.upload(host), rt.allocate((7,), f32)
    launch = kernel.plan(rt, 1, 256, x0, x0, 2.0, out)
    x1 = rt.upload(host * 10)
    launch([x1.view((1, 7), (7, 1), 0), x1, 1.0, out])
    got = rt.download(out)
    assert got.shape == (7,) and got.dtype == np.float32
    np.testing.assert_allclose(got, 20 * host, rtol=1e-6)


def test_plan_checks_scalars_and_arguments(rt: bc.Runtime) -> None:
    kernel = axpy_kernel(i32)
    x = rt.upload(np.arange(8, dtype=np.int32))
    out = rt.allocate((8,), i32)
    launch = kernel.plan(rt, 1, 256, x, x, 3, out)
    launch([x, x, -2, out])
    np.testing.assert_array_equal(rt.download(out), np.arange(8) * -1)
    with pytest.raises(LaunchError, match="does not fit"):
        launch([x, x, 2**31, out])
    with pytest.raises(LaunchError, match="does not fit"):
        launch([x, x, 1.5, out])
    with pytest.raises(LaunchError, match="must be a i32 scalar"):
        launch([x, x, "3", out])
    with pytest.raises(LaunchError, match="numpy arrays"):
        kernel.plan(rt, 1, 256, np.arange(8, dtype=np.int32), x, 3, out)
    with pytest.raises(LaunchError, match="must be i32"):
        kernel.plan(rt, 1, 256, rt.upload(np.zeros(8, np.float32)), x, 3, out)


def test_empty_reuses_buffers_of_dead_arrays() -> None:
    rt = bc.runtime("cpu")
    first = rt.empty((3, 5), f32)
    handle = weakref.ref(first.handle)  # a reference would keep the buffer from the pool
    before = rt.memory_stats()["buffers_reused"]
    del first
    again = rt.empty((3, 5), f32)
    assert again.handle is handle() and again.shape == (3, 5) and again.dtype == f32
    assert rt.memory_stats()["buffers_reused"] == before + 1
    other = rt.empty((3, 5), i32)  # another dtype: a new buffer
    assert other.handle is not handle() and other.handle.dtype == np.int32


def test_buffers_still_read_elsewhere_are_not_reused() -> None:
    rt = bc.runtime("cpu")
    array = rt.empty((7,), f32)
    array.handle[:] = np.arange(7)
    exported = array.handle.reshape(-1)[2:]  # a numpy view of the buffer, as an export
    handle = weakref.ref(array.handle)
    del array
    fresh = rt.empty((7,), f32)
    fresh.handle[:] = -1
    assert handle() is not None and fresh.handle is not handle()
    np.testing.assert_array_equal(exported, np.arange(2, 7, dtype=np.float32))
    view = rt.empty((6,), f32)
    sub = view.view((3,), (2,), 0)  # a device view keeps its base alive
    del view
    assert rt.empty((6,), f32).handle is not sub.handle


def test_dead_buffer_nothing_else_holds_is_free_at_once() -> None:
    """Kept as free (handed out without a reference count check), not as held."""
    rt = cpu_runtime.CpuRuntime()
    array = rt.empty((13,), f32)
    handle = weakref.ref(array.handle)
    del array
    assert [entry[0] for entry in rt.buffers.free[((13,), "f32")]] == [handle()]
    assert not rt.buffers.held.get(((13,), "f32"))
    exported = rt.empty((13,), f32)
    view = exported.handle.view()  # a numpy view still reads it
    del exported
    assert [entry[0] for entry in rt.buffers.held[((13,), "f32")]] == [handle()]
    assert rt.empty((13,), f32).handle is not handle()
    del view
    assert rt.empty((13,), f32).handle is handle()


def test_pool_keeps_at_most_pool_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_runtime, "POOL_BYTES", 1000)
    rt = cpu_runtime.CpuRuntime()
    big, small = rt.empty((300,), f32), rt.empty((100,), f32)  # 1200 and 400 bytes
    big_handle, small_handle = weakref.ref(big.handle), weakref.ref(small.handle)
    del big, small
    assert rt.memory_stats()["bytes_free_in_pool"] == 400
    assert big_handle() is None  # freed, not kept
    again = rt.empty((100,), f32)
    assert again.handle is small_handle()
    assert rt.memory_stats()["bytes_free_in_pool"] == 0


def test_a_full_pool_drops_the_shapes_kept_least_recently(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where a dead buffer would pass `POOL_BYTES`, the buffers of the shapes kept least
    recently make room for it (a program whose shapes change pools its new ones instead of
    keeping the old for good); the pool never passes its limit, and a shape that fills it
    alone is not dropped for itself."""
    monkeypatch.setattr(cpu_runtime, "POOL_BYTES", 1000)
    rt = cpu_runtime.CpuRuntime()
    old = [rt.empty((50,), f32) for _ in range(3)]  # 200 bytes each
    older = rt.empty((60,), f32)  # 240 bytes, kept first
    older_handle = weakref.ref(older.handle)
    old_handles = [weakref.ref(a.handle) for a in old]
    del older, old
    assert rt.memory_stats()["bytes_free_in_pool"] == 840
    new = [rt.empty((100,), f32) for _ in range(2)]  # 400 bytes each: a new phase's shape
    new_handles = [weakref.ref(a.handle) for a in new]
    del new
    # room for both: the 240 bytes kept first went, then two of the 50s (least recent first)
    assert rt.memory_stats()["bytes_free_in_pool"] == 1000
    assert older_handle() is None and sum(h() is not None for h in old_handles) == 1
    taken = [rt.empty((100,), f32) for _ in range(2)]
    assert {id(a.handle) for a in taken} == {id(h()) for h in new_handles}
    assert rt.memory_stats()["bytes_free_in_pool"] == 200  # one 50 is left
    kept = rt.empty((50,), f32)
    assert any(kept.handle is h() for h in old_handles)
    full = [rt.empty((125,), f32) for _ in range(2)]  # 500 bytes each: fills the pool
    del kept, full
    assert rt.memory_stats()["bytes_free_in_pool"] == 1000
    third = rt.empty((125,), f32)
    spare = rt.empty((125,), f32)
    extra = rt.empty((125,), f32)  # a fresh one: the pool is empty now
    del third, spare
    del extra  # the pool holds 1000 bytes of this shape: not dropped for itself
    assert rt.memory_stats()["bytes_free_in_pool"] == 1000


def test_buffers_are_reused_once_nothing_else_holds_them() -> None:
    """A buffer still held when its array dies (by a dying view of it, which lets go of its
    base first, or by an export) is handed out again once nothing else holds it."""
    rt = bc.runtime("cpu")
    array = rt.empty((9,), f32)
    handle = weakref.ref(array.handle)
    sub = array.view((3,), (3,), 0)
    del array, sub
    again = rt.empty((9,), f32)
    assert again.handle is handle()
    array = rt.empty((11,), f32)
    exported = array.handle.reshape(-1)
    handle = weakref.ref(array.handle)
    del array
    fresh = rt.empty((11,), f32)
    assert fresh.handle is not handle()
    del exported
    again = rt.empty((11,), f32)
    assert again.handle is handle() and fresh.handle is not again.handle


def test_plan_keeps_no_example_array_alive(rt: bc.Runtime) -> None:
    kernel = axpy_kernel(f32)
    host = np.arange(32, dtype=np.float32)
    x, out = rt.upload(host), rt.allocate((16,), f32)
    view = x.view((16,), (2,), 1)
    watched = [weakref.ref(a) for a in (x, view, out)]
    launch = kernel.plan(rt, 1, 256, view, view, 2.0, out)
    del x, view, out
    assert [ref() for ref in watched] == [None, None, None]
    y, result = rt.upload(-host), rt.allocate((16,), f32)
    launch([y.view((16,), (2,), 1), y, 0.5, result])
    got = rt.download(result)
    assert got.shape == (16,) and got.dtype == np.float32
    np.testing.assert_allclose(got, 1.5 * -host[1:33:2], rtol=1e-6)


def store_kernel(dtype: Any) -> bc.IRKernel:
    """`out[0] = s` for a scalar `s` of `dtype`."""
    b = KernelBuilder("store_scalar")
    s = b.scalar("s", dtype)
    out = b.tensor("out", dtype, rank=1, write=True)
    with b.if_(b.ABSOLUTE_POS == 0):
        out[0] = s
    return b.kernel()


_F32_MAX = float(np.finfo(np.float32).max)
#: per scalar dtype, values a launch passes: Python numbers at and past the direct range's
#: edges (ints whole in their slot, floats in its first bytes) and numpy scalars.
SCALARS = {
    "u8": [255, 0, 7, np.uint8(200)], "i8": [-128, 127, -1, 5, np.int8(-3)],
    "u32": [2**32 - 1, 0, 1, np.uint32(2**31)], "i32": [-(2**31), 2**31 - 1, -1, 3],
    "i64": [-(2**63), 2**63 - 1, -1, np.int64(9)],
    "f32": [1.5, -0.0, _F32_MAX, -_F32_MAX, 1e39, -1e39, float("inf"), float("nan"), 1e-45,
            np.float32(2.5), 7],
    "f64": [1e300, -0.0, float("inf"), float("-inf"), float("nan"), 5e-324, np.float64(0.1), 3],
    "f16": [1.5, -0.0, 70000.0, float("nan"), np.float16(0.25)],
    "bf16": [1.5, -2.0, float("inf"), np.float32(3.0)], "bool": [True, False, np.bool_(True)],
}


@pytest.mark.parametrize("name", sorted(SCALARS))
def test_planned_launches_pass_scalars_of_every_dtype(name: str) -> None:
    """The cpu runtime writes a planned launch's numbers into their slots directly (ints whole,
    float32 in the slot's first 4 bytes) or packs them after the checked conversion: each
    launch stores exactly what numpy's cast of the value is, whatever the slot held before."""
    rt = bc.runtime("cpu")
    dtype = bc.types.DTYPES[name]
    kernel = store_kernel(dtype)
    out = rt.allocate((1,), dtype)
    values = SCALARS[name]
    launch = kernel.plan(rt, 1, 256, values[0], out)
    for value in [*values, *values[::-1]]:  # every value after every other kind of slot state
        launch([value, out])
        got = rt.download(out)
        with np.errstate(over="ignore"):
            want = np.array([value]).astype(dtype.numpy)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8), err_msg=repr(value))


def test_runtime_counts_its_launches(rt: bc.Runtime) -> None:
    """`Runtime.launches` counts checked and planned launches (a plan made is no launch; a
    launch refused for its arguments is none either), and the results are the kernel's."""
    kernel = axpy_kernel(f32)
    host = np.arange(6, dtype=np.float32)
    x, out = rt.upload(host), rt.allocate((6,), f32)
    start = rt.launches
    kernel.launch(rt, 1, 256, x, x, 2.0, out)
    assert rt.launches == start + 1
    launch = kernel.plan(rt, 1, 256, x, x, 1.0, out)
    assert rt.launches == start + 1
    for _ in range(3):
        launch([x, x, 1.0, out])
    assert rt.launches == start + 4
    with pytest.raises(LaunchError, match="must be a f32 scalar"):
        launch([x, x, "two", out])
    assert rt.launches == start + 4
    np.testing.assert_allclose(rt.download(out), 2 * host, rtol=1e-6)
