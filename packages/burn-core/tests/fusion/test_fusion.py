"""The fusion decorator: lazy streams, one kernel per elementwise block, call-site errors, the
plan cache, and Autodiff over fusion, against the unfused backend and PyTorch."""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from fusion_testing import DEVICES, LaunchCounter, check, pending

import burn
import burn.functional as F
from burn.errors import DTypeError, ShapeError
from burn.fusion import FusionTensor, reset_stats, stats
from burn.fusion.stream import CPU_FUSE_WORK, GPU_FUSE_WORK, LONE, LONE_SHARED

pytestmark = [pytest.mark.parametrize("base", DEVICES), pytest.mark.usefixtures("empty_stream")]
torch.set_num_threads(1)



def gelu_chain(x: Any) -> Any:
    """tanh-GELU written as a chain of elementwise ops (9 ops; works on burn and torch)."""
    return x * 0.5 * (1.0 + (math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)).tanh())



def test_gelu_chain_is_one_kernel(base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    data = rng.standard_normal((64, 33)).astype(np.float32)
    data[0, :4] = [np.nan, np.inf, -np.inf, 1e30]
    fused = burn.tensor(data, device=f"{base}+fusion")
    counter = LaunchCounter(monkeypatch, base)
    reset_stats()
    y = gelu_chain(fused)
    assert isinstance(y._prim, FusionTensor) and y._prim.value is None
    assert counter.take() == 0  # nothing ran yet
    assert y.shape == (64, 33) and y.dtype == burn.float32
    burn.sync(f"{base}+fusion")
    assert counter.take() == 1
    # named after its ops in order, each once, so a GPU profile tells fused kernels apart
    assert counter.names == ["fused_mul_scalar_mul_add_tanh_add_scalar"]
    s = stats()
    assert (s.kernels_launched, s.ops_recorded, s.ops_fused) == (1, 9, 9)
    plain = burn.tensor(data, device=base)
    counter.take()
    unfused = gelu_chain(plain)
    burn.sync(base)
    assert counter.take() == 9
    # equal but for the C compiler's contraction of a * b + c into one FMA inside the kernel:
    # tanh's argument an ulp apart, and the cpu's f32 tanh (a rational function, 5.6 ulp) is
    # not smooth to the ulp: 1 + tanh near 0 in GELU's negative tail (x * 0.5 of up to ~11
    # ulp of 1.0 apart, |x| < 5 there) is large relative to its tiny values
    np.testing.assert_allclose(y.to_numpy(), unfused.to_numpy(), rtol=1e-6, atol=2e-6)
    check(y, gelu_chain(torch.from_numpy(data)), rtol=1e-5, atol=1e-6)


def test_erf_gelu_chain_is_one_kernel(base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Burn's custom-gelu, `x * 0.5 * (erf(x / sqrt 2) + 1)`: one kernel on every runtime (the
    C target's float32 erf is the inline rational form the unfused cpu erf computes, not a
    library call), equal to unfused bit for bit on the cpu; torch's values, NaN and
    infinities included."""
    data = (np.random.default_rng(4).standard_normal((96, 65)) * 3).astype(np.float32)
    data[0, :6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30]
    root = math.sqrt(2.0)

    def chain(x: Any) -> Any:
        return x * 0.5 * ((x / root).erf() + 1.0)

    counter = LaunchCounter(monkeypatch, base)
    y = chain(burn.tensor(data, device=f"{base}+fusion"))
    burn.sync(f"{base}+fusion")
    assert counter.take() == 1
    assert y.shape == (96, 65) and y.dtype == burn.float32
    unfused = chain(burn.tensor(data, device=base)).to_numpy()
    if base == "cpu":
        np.testing.assert_array_equal(y.to_numpy(), unfused)
    t = torch.from_numpy(data).double()
    # 1 + erf cancels for negative x: a few ulp of 1 times x / 2 (|x| < 15 here)
    check(y, (t * 0.5 * (torch.erf(t / root) + 1.0)).float(), rtol=1e-5, atol=2e-6)


def test_library_calls_run_alone_on_the_cpu(base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """On the cpu runtime an op the C target leaves as a library call (log here; f32 tanh is
    an inline polynomial) is not fused: it would keep gcc from vectorizing the other ops of the
    kernel. The ops before it fuse into one kernel, it runs alone, the ops after it fuse again;
    GPU runtimes fuse the whole chain. Values as torch's, NaN and infinities included."""
    data = np.random.default_rng(3).standard_normal((256, 512)).astype(np.float32)
    data[0, :4] = [np.nan, np.inf, -np.inf, -3.0]
    x = burn.tensor(data, device=f"{base}+fusion")
    counter = LaunchCounter(monkeypatch, base)
    y = (((x * 0.5).tanh() + 1.0).log() - x) * 2.0
    burn.sync(f"{base}+fusion")
    assert counter.take() == (3 if base == "cpu" else 1)
    t = torch.from_numpy(data)
    check(y, (((t * 0.5).tanh() + 1.0).log() - t) * 2.0, rtol=1e-5, atol=1e-5)


def test_nothing_runs_until_a_sync_point(base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    x = burn.tensor(np.linspace(-2, 2, 40, dtype=np.float32), device=f"{base}+fusion")
    counter = LaunchCounter(monkeypatch, base)
    y = (x.exp() + 1.0).sqrt()
    assert counter.take() == 0
    burn.sync(f"{base}+fusion")
    assert counter.take() == 1
    assert not pending(y)
    z = y * 2.0
    assert counter.take() == 0
    third = float(np.linspace(-2, 2, 40, dtype=np.float32)[3])
    assert z[3].item() == pytest.approx(2 * math.sqrt(math.exp(third) + 1), rel=1e-6)
    assert not pending(z)  # indexing is a sync point for what it reads
    check(z, (torch.linspace(-2, 2, 40).exp() + 1.0).sqrt() * 2.0, rtol=1e-5)


def test_backend_calls_record_alike_by_position_and_keyword(base: str) -> None:
    """A recorded op's backend method (the inlined recording path) and its keyword form (the
    generic path) record the same op, with one result cache; both compute torch's values."""
    data = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    x = burn.tensor(data, device=f"{base}+fusion")
    bk: Any = x._bk
    handles = (bk.float_add(x._prim, x._prim), bk.float_add(lhs=x._prim, rhs=x._prim),
               bk.float_mul_scalar(x._prim, 3.0))
    for h in handles:
        assert isinstance(h, FusionTensor) and h.value is None
        assert h.ir == (h.id, (3, 4), burn.float32)
    assert len({h.id for h in handles}) == 3
    burn.sync(f"{base}+fusion")
    t = torch.from_numpy(data)
    for h, want in zip(handles, (t + t, t + t, t * 3.0), strict=True):
        check(x._wrap(h, x.dtype), want)


def test_dropped_intermediates_are_never_computed(base: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    data = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    x = burn.tensor(data, device=f"{base}+fusion")
    kept = x.tanh()
    dropped = kept * 3.0
    handle = weakref.ref(dropped._prim)
    out = (dropped + kept).exp()
    del dropped
    assert handle() is None  # the stream holds no strong reference to a pending result
    counter = LaunchCounter(monkeypatch, base)
    reset_stats()
    burn.sync(f"{base}+fusion")
    assert counter.take() == 1  # one kernel writing `kept` and `out`, not the product
    assert stats().kernels_launched == 1
    check(kept, torch.from_numpy(data).tanh())
    check(out, (torch.from_numpy(data).tanh() * 4.0).exp(), rtol=1e-5)
    unheld = x.exp() * 2.0
    del unheld
    reset_stats()
    burn.sync(f"{base}+fusion")
    assert (counter.take(), stats().ops_dead) == (0, 2)


def test_broadcast_views_casts_comparisons_and_select(base: str) -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 1)).astype(np.float32)
    b = rng.standard_normal((6, 5)).astype(np.float32).T  # non-contiguous (5, 6)
    c = rng.standard_normal((6,)).astype(np.float32)
    a[2, 0] = np.nan
    dev = f"{base}+fusion"
    ba, bc = burn.tensor(a, device=dev), burn.tensor(c, device=dev)
    bb = burn.tensor(b.T, device=dev).swap_dims(0, 1)  # a strided view, read in place
    ta, tb, tc = (torch.from_numpy(np.ascontiguousarray(v)) for v in (a, b, c))
    s = ba * bb - bc
    mask = s > 0.25
    picked = s.mask_where(mask, bc.exp())
    as_int = (picked * 10.0).int()
    back = as_int.float() / 10.0 + mask.float()
    ts = ta * tb - tc
    tmask = ts > 0.25
    tpicked = torch.where(tmask, tc.exp().expand(5, 6), ts)
    tint = (tpicked * 10.0).to(torch.int64)
    check(back, tint.float() / 10.0 + tmask.float())
    check(mask, tmask)
    check(as_int, tint)
    check(picked, tpicked)


def test_bool_casts_in_fused_kernels(base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A mask cast to float and int inside a kernel (emitted as a select of 1 or 0): NaN,
    infinities and -0.0 against torch, dense, broadcast and in a row reduction."""
    rng = np.random.default_rng(6)
    xd = rng.standard_normal((16, 64)).astype(np.float32)
    xd[0, :5] = [np.nan, np.inf, -np.inf, -0.0, 0.0]
    gd = rng.standard_normal((16, 64)).astype(np.float32)
    dev = f"{base}+fusion"
    x, g = burn.tensor(xd, device=dev), burn.tensor(gd, device=dev)
    tx, tg = torch.from_numpy(xd), torch.from_numpy(gd)
    counter = LaunchCounter(monkeypatch, base)
    relu_grad = (x > 0).float() * g
    counts = (x <= 0.5).int() + 1
    burn.sync(dev)
    assert counter.take() == 1
    check(relu_grad, (tx > 0).float() * tg)
    check(counts, (tx <= 0.5).to(torch.int64) + 1)
    column = burn.tensor(xd[:, :1], device=dev)  # broadcast along rows
    check((column > 0).float() + g, (tx[:, :1] > 0).float() + tg)
    check(((x > 0).float() * g).sum(dim=1), ((tx > 0).float() * tg).sum(dim=1), rtol=1e-5,
          atol=1e-5)


@pytest.mark.parametrize("rows,cols", [(40, 64), (37, 67), (3, 5)])
def test_broadcast_rows(base: str, rows: int, cols: int,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A bias add with activation over a transposed input: on the cpu by rows (the row
    schedule, rows of 64 and 67), on GPUs by element, 4 positions a unit from 1024 elements
    (the last span partial where 4 does not divide the size)."""
    rng = np.random.default_rng(5)
    xd = rng.standard_normal((cols, rows)).astype(np.float32)
    bd = rng.standard_normal((cols,)).astype(np.float32)
    dev = f"{base}+fusion"
    x = burn.tensor(xd, device=dev).swap_dims(0, 1)  # (rows, cols), strided
    b = burn.tensor(bd, device=dev)
    counter = LaunchCounter(monkeypatch, base)
    y = F.silu(x + b) * 0.5 - x
    burn.sync(dev)
    assert counter.take() == 1
    tx, tb = torch.from_numpy(xd).T, torch.from_numpy(bd)
    check(y, torch.nn.functional.silu(tx + tb) * 0.5 - tx, rtol=1e-5, atol=1e-6)


def test_gpu_blocks_past_the_grid_go_by_rows(base: str, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    """On a GPU runtime whose x grid a broadcast block would exceed by element (a limit of 64
    cubes here: 70 rows of 4096 need 280 at 4 positions a unit), the block goes by rows (on
    `base`, or for `cpu`, which has no grid, on a GPU runtime of this machine)."""
    import dataclasses

    gpu = base if base != "cpu" else next((d for d in DEVICES if d != "cpu"), None)
    if gpu is None:
        pytest.fail("no GPU runtime (wgpu adapter or CUDA device): the GPU schedule is not "
                    "tested")
    rt: Any = burn.Device(gpu).backend.runtime
    small = dataclasses.replace(rt.properties, max_cube_count=(64, 65535, 65535))
    monkeypatch.setitem(rt.__dict__, "properties", small)  # the cached property's value
    rng = np.random.default_rng(6)
    xd = rng.standard_normal((70, 4096)).astype(np.float32)
    bd = rng.standard_normal((4096,)).astype(np.float32)
    x = burn.tensor(xd, device=f"{gpu}+fusion")
    b = burn.tensor(bd, device=f"{gpu}+fusion")
    y = F.relu(x + b) * 2.0
    tx, tb = torch.from_numpy(xd), torch.from_numpy(bd)
    check(y, torch.relu(tx + tb) * 2.0)


def test_zero_dim_and_empty(base: str) -> None:
    dev = f"{base}+fusion"
    s = burn.tensor(np.float32(1.5), device=dev)
    r = (s * s + 1.0).sqrt()
    check(r, (torch.tensor(1.5) ** 2 + 1.0).sqrt())
    e = burn.tensor(np.zeros((0, 3), np.float32), device=dev)
    check((e + 1.0).exp() * 2.0, (torch.zeros(0, 3) + 1.0).exp() * 2.0)


def test_int_and_bool_chains(base: str) -> None:
    dev = f"{base}+fusion"
    data = np.array([[-7, -1, 0, 3, 9, 2**30]], dtype=np.int32)
    x = burn.tensor(data, device=dev)
    t = torch.from_numpy(data)
    y = (x * 3 + 2).abs() - 5
    check(y, (t * 3 + 2).abs() - 5)
    m = (x > 0).logical_and(x < 5).logical_or(x == -7).bool_not()
    check(m, ~(((t > 0) & (t < 5)) | (t == -7)))
    check(x.clamp(-2, 4) * 2, t.clamp(-2, 4) * 2)


def test_errors_are_raised_at_the_call_site(base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    dev = f"{base}+fusion"
    x = burn.tensor(np.ones((2, 3), np.float32), device=dev)
    y = burn.tensor(np.ones((4, 5), np.float32), device=dev)
    pending = x.exp()
    with pytest.raises(ShapeError, match="float_add|add"):
        _ = pending + y
    bk: Any = burn.Device(dev).backend
    with pytest.raises(ShapeError) as info:
        bk.float_add(pending._prim, y._prim)  # the op record refuses it, nothing is deferred
    assert "float_add" in str(info.value) and "(2, 3)" in str(info.value)
    i = burn.tensor(np.ones((2, 3), np.int32), device=dev)
    with pytest.raises(DTypeError) as dinfo:
        bk.float_mul(pending._prim, i._prim)
    assert "float_mul" in str(dinfo.value) and "int32" in str(dinfo.value)
    assert pending._prim.value is None  # the errors ran nothing
    check(pending, torch.ones(2, 3).exp())


def test_a_failed_kernel_leaves_typed_errors_on_its_results(
        base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The flush that runs a failing block raises its error; the results it was to compute
    raise a DeviceError naming it when read later, and the device keeps working."""
    from burn.fusion import stream

    dev = f"{base}+fusion"
    x = burn.tensor(np.ones((2, 3), np.float32), device=dev)
    pending = x.exp() * 2.0

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise burn.errors.AllocationError("fusion", "out of device memory")

    with monkeypatch.context() as patch:
        patch.setattr(stream, "run_block", fail)
        with pytest.raises(burn.errors.AllocationError):
            burn.sync(dev)
    with pytest.raises(burn.errors.DeviceError, match="fusion: .*out of device memory"):
        pending.to_numpy()
    check(x.exp() * 2.0, torch.ones(2, 3).exp() * 2.0)


def test_a_failed_block_spares_the_blocks_not_reading_it(
        base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a flush whose second block fails, the blocks before and after it that do not read
    it get their values; a block reading it carries its error, and the device keeps working."""
    from burn.fusion import stream

    dev = f"{base}+fusion"
    xd = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    yd = np.linspace(0, 1, 4, dtype=np.float32)
    x, y = burn.tensor(xd, device=dev), burn.tensor(yd, device=dev)
    tx, ty = torch.from_numpy(xd), torch.from_numpy(yd)
    first = x.exp() * 2.0  # blocks by shape: [3, 4], [4] (fails), [3, 4] reading it, [4]
    failing = y * 3.0 + 1.0
    reads = x + failing
    last = y * 5.0
    real, calls = stream.run_block, []

    def second_fails(*args: Any) -> Any:
        calls.append(args[1])
        if len(calls) == 2:
            raise burn.errors.AllocationError("fusion", "out of device memory")
        return real(*args)

    with monkeypatch.context() as patch:
        patch.setattr(stream, "run_block", second_fails)
        with pytest.raises(burn.errors.AllocationError):
            burn.sync(dev)
    assert len(calls) == 3  # the block reading the failed one did not run
    check(first, tx.exp() * 2.0)
    check(last, ty * 5.0)
    for failed in (failing, reads):
        with pytest.raises(burn.errors.DeviceError, match="out of device memory"):
            failed.to_numpy()
    check(x + (y * 3.0 + 1.0), tx + (ty * 3.0 + 1.0))


def test_plan_cache_reuses_kernels_across_steps(base: str) -> None:
    dev = f"{base}+fusion"
    rng = np.random.default_rng(2)
    # five live ops: the block pays on every runtime (`Stream._pays`), it stays fused
    data = rng.standard_normal((256, 128)).astype(np.float32)
    x = burn.tensor(data, device=dev)
    stream: Any = burn.Device(dev).backend.stream
    reset_stats()
    flush_plans = []
    for step in range(4):
        lr = 0.1 / (step + 1)  # a number that changes every step: a runtime scalar
        out = F.sigmoid(x - lr * x.tanh()) * (1.0 - lr)
        tx = torch.from_numpy(data)
        check(out, (tx - lr * tx.tanh()).sigmoid() * (1.0 - lr), rtol=1e-5)
        flush_plans.append(len(stream.plans))
    s = stats()
    assert s.kernels_launched == 4
    assert s.plans <= 1 and s.cache_hits >= 3
    assert flush_plans[1:] == flush_plans[:1] * 3  # the flush plan of step 1 serves the rest


@pytest.mark.parametrize("shape", [(), (3,), (8, 33)])
def test_a_small_chain_stays_one_kernel_over_a_loop(base: str, shape: tuple[int, ...],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A chain of `FUSE_OPS` live ops or more pays for its recording however small its
    tensors: over a loop longer than `LONE_SHARED` flushes, the tanh-GELU chain and a
    three-op chain stay one kernel each, from the plan cache (no new kernel, no op peeled off
    to run at once). Values equal torch's at every step."""
    dev = f"{base}+fusion"
    burn.Device(dev).backend.stream.forget()
    data = np.linspace(-4, 4, math.prod(shape), dtype=np.float32).reshape(shape)
    x, tx = burn.tensor(data, device=dev), torch.from_numpy(data)
    check(gelu_chain(x), gelu_chain(tx), rtol=1e-5, atol=1e-6)  # compiled before counting
    check(F.relu(x * 2.0 - 1.0), torch.relu(tx * 2.0 - 1.0))
    counter = LaunchCounter(monkeypatch, base)
    reset_stats()
    steps = LONE_SHARED + 2
    for step in range(steps):
        check(gelu_chain(x), gelu_chain(tx), rtol=1e-5, atol=1e-6)
        assert counter.take() == 1, step
        check(F.relu(x * 2.0 - 1.0), torch.relu(tx * 2.0 - 1.0))
        assert counter.take() == 1, step
    s = stats()
    assert (s.ops_recorded, s.ops_fused) == (12 * steps, 12 * steps)
    assert s.plans == 0 and s.cache_hits >= 2 * steps


def test_an_op_always_flushed_alone_runs_at_once(base: str) -> None:
    """A structure flushed alone `LONE` times, never starting a stream in which it shared a
    block with another op, runs at once where it reads no pending result, even with other ops
    pending (its values unchanged); one that shared a block stays recorded, and the first is
    recorded where it reads a pending result."""
    dev = f"{base}+fusion"
    data = np.linspace(-3, 3, 4096, dtype=np.float32).reshape(-1, 128)
    x = burn.tensor(data, device=dev)
    tx = torch.from_numpy(data)
    # x * 3.0 shares a block that pays (5 live ops, on every runtime): stays recorded
    check((x * 3.0).exp().add(1.0).sqrt().tanh(), (tx * 3.0).exp().add(1.0).sqrt().tanh())
    reset_stats()
    for step in range(LONE + 2):
        y = x - 0.5
        assert pending(y) == (step < LONE)
        check(y, tx - 0.5)
        check(x * 3.0, tx * 3.0)
    s = stats()
    assert s.ops_recorded == LONE + (LONE + 2)  # `x - 0.5` until its LONEth flush, `x * 3.0`
    w = x + 2.0  # pending
    y = x - 0.5  # at once all the same: it reads only computed values
    z = w - 0.5  # recorded: it reads a pending result (its structure is `x - 0.5`'s)
    assert pending(w) and not pending(y) and pending(z)
    check(y, tx - 0.5)
    check(z, tx + 1.5)
    check(w, tx + 2.0)


def test_a_later_block_that_does_not_pay_runs_at_once(base: str) -> None:
    """A later block of a flush whose first op reads no pending result counts as a flush
    alone for that op where the block does not pay: after `LONE` such flushes the op runs at
    once, other ops pending or not, and so in turn does the next one (a plain SGD update,
    one block of two ops per param, behind a chain that pays); values equal torch's."""
    dev = f"{base}+fusion"
    burn.Device(dev).backend.stream.forget()
    rng = np.random.default_rng(11)
    host = [rng.standard_normal(n).astype(np.float32) for n in (29, 37, 53, 37, 53)]
    h, p1, p2, g1, g2 = (burn.tensor(v, device=dev) for v in host)
    th, tp1, tp2, tg1, tg2 = (torch.from_numpy(v) for v in host)
    for step in range(2 * LONE + 1):
        reset_stats()
        head = (h * 2.0).exp().add(1.0)  # pending first: a chain of three ops pays
        new1, new2 = p1 - 0.5 * g1, p2 - 0.5 * g2  # blocks of two small ops: they do not
        check(head, (th * 2.0).exp().add(1.0))
        check(new1, tp1 - 0.5 * tg1)
        check(new2, tp2 - 0.5 * tg2)
        # the chain and both updates; the products by 0.5 at once from the LONEth flush,
        # then the subtractions (each then a block of its own) LONE flushes later
        want = 7 if step < LONE else 5 if step < 2 * LONE else 3
        assert stats().ops_recorded == want, (step, stats().ops_recorded)


def test_a_lone_op_starting_a_chain_that_pays_is_recorded_again(
        base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ops made lone by a short loop (a block of two ops that does not pay, flushed alone) are
    recorded again once what they compute at once starts a block that pays: a longer chain
    they start is one kernel again within two runs (each run takes back the lone op whose
    result the block read), and stays one kernel; the short loop, run in between, then keeps
    its ops recorded (they lead a block that pays each time). Values equal torch's."""
    dev = f"{base}+fusion"
    burn.Device(dev).backend.stream.forget()
    data = np.linspace(-3, 3, 4096, dtype=np.float32)
    x, tx = burn.tensor(data, device=dev), torch.from_numpy(data)
    counter = LaunchCounter(monkeypatch, base)

    def chain() -> int:
        check((x * 1.5 + 0.25).tanh() * 1.5 + 0.25, (tx * 1.5 + 0.25).tanh() * 1.5 + 0.25)
        return counter.take()

    def short() -> int:
        check(x * 1.5 + 0.25, tx * 1.5 + 0.25)
        return counter.take()

    assert chain() == 1
    # its product (which led the chain's block: `LONE_SHARED` flushes), then its sum become lone
    for _ in range(LONE_SHARED + LONE):
        short()
    assert not pending(x * 1.5) and not pending(x + 0.25)
    counter.take()
    assert [chain() for _ in range(5)] == [3, 2, 1, 1, 1]
    assert [(short(), chain()) for _ in range(2 * LONE_SHARED)] == [(1, 1)] * 2 * LONE_SHARED


def test_an_op_that_fused_once_then_always_runs_alone_runs_at_once(base: str) -> None:
    """A structure that led a block that pays, then is flushed alone `LONE_SHARED` times in a
    row, runs at once from then on (what it fused with runs at once by then: recorded, it
    only added its recording and a flush at every step); leading a block that pays in between
    starts the count again. Values equal torch's throughout."""
    dev = f"{base}+fusion"
    burn.Device(dev).backend.stream.forget()
    data = np.linspace(-3, 3, 4096, dtype=np.float32).reshape(-1, 128)
    x, tx = burn.tensor(data, device=dev), torch.from_numpy(data)

    def fused_chain() -> None:  # `x * 2.0` leads a block that pays (as in the test above)
        check((x * 2.0).exp().add(1.0).sqrt().tanh(), (tx * 2.0).exp().add(1.0).sqrt().tanh())

    fused_chain()
    for _ in range(LONE_SHARED - 1):
        y = x * 2.0
        assert pending(y)
        check(y, tx * 2.0)
    fused_chain()  # the count starts again
    for step in range(LONE_SHARED + 1):
        y = x * 2.0
        assert pending(y) == (step < LONE_SHARED), step
        check(y, tx * 2.0)


@pytest.mark.parametrize("small", [True, False])
def test_a_small_block_runs_unfused(base: str, small: bool) -> None:
    """A block of two ops (fewer than `FUSE_OPS`) that keeps fewer intermediate elements out
    of memory than its runtime's threshold (`CPU_FUSE_WORK` on the cpu, `GPU_FUSE_WORK` on
    GPU runtimes) does not pay for its recording: from its `LONE`th flush its first op runs
    at once (the next one is then flushed alone, and runs at once in turn); a larger block
    stays fused. Values equal torch's either way."""
    dev = f"{base}+fusion"
    burn.Device(dev).backend.stream.forget()  # what earlier tests taught it of these ops
    threshold = CPU_FUSE_WORK if base == "cpu" else GPU_FUSE_WORK
    rows = 8 if small else 2 * threshold // 256
    data = np.linspace(-3, 3, rows * 256, dtype=np.float32).reshape(rows, 256)
    bias = np.linspace(1, -1, 256, dtype=np.float32)
    x, b = burn.tensor(data, device=dev), burn.tensor(bias, device=dev)
    tx, tb = torch.from_numpy(data), torch.from_numpy(bias)
    for step in range(2 * LONE + 1):
        y = F.relu(x + b)
        assert pending(y) == (not small or step < 2 * LONE)
        reset_stats()
        check(y, torch.relu(tx + tb))
        assert stats().ops_fused == (2 if not small or step < LONE else 0)


def test_autodiff_over_fusion_matches_torch(base: str) -> None:
    dev = burn.Device(base).fusion().autodiff()
    assert dev == burn.Device(f"{base}+fusion+autodiff")
    assert burn.Device(base).autodiff().fusion() == dev
    rng = np.random.default_rng(3)
    xd = rng.standard_normal((4, 6)).astype(np.float32)
    wd = rng.standard_normal((6, 3)).astype(np.float32)
    bd = rng.standard_normal((3,)).astype(np.float32)
    x = burn.tensor(xd, device=dev).require_grad()
    w = burn.tensor(wd, device=dev).require_grad()
    b = burn.tensor(bd, device=dev).require_grad()
    h = gelu_chain(x.matmul(w) + b)
    loss = (h * F.sigmoid(h)).mean()
    grads = loss.backward()
    tx, tw, tb = (torch.from_numpy(v).requires_grad_() for v in (xd, wd, bd))
    th = gelu_chain(tx @ tw + tb)
    tloss = (th * th.sigmoid()).mean()
    tloss.backward()
    check(loss, tloss, rtol=1e-5)
    for got, want in ((x, tx), (w, tw), (b, tb)):
        grad = got.grad(grads)
        assert grad is not None and want.grad is not None
        check(grad, want.grad, rtol=1e-4, atol=1e-6)


def test_mlp_train_step_launches_fewer_kernels(base: str, monkeypatch: pytest.MonkeyPatch,
                                               record_property: Callable[[str, object], None]
                                               ) -> None:
    """Kernels of the fourth step and of a step after the stream settled (`LONE_SHARED`
    steps more): fewer fused at both. On the cpu the batch and hidden width are those where
    the first layer's epilogue pays (`CPU_EPILOGUE_WORK` elements: its vendor product keeps its
    bias + relu one kernel; at fewer the stream runs them at once once settled,
    `test_a_small_cpu_epilogue_runs_at_once_once_settled`), and the relu backward + bias sum
    block runs at once once the stream finds its recording costs more than it saves."""
    from burn import nn
    from burn.fusion.stream import CPU_EPILOGUE_WORK, LONE_SHARED
    from burn.optim import AdamConfig

    batch, hidden = (256, CPU_EPILOGUE_WORK // 256) if base == "cpu" else (16, 32)
    rng = np.random.default_rng(4)
    xd = rng.standard_normal((batch, 20)).astype(np.float32)
    yd = rng.integers(0, 5, batch)
    losses: dict[str, list[float]] = {}
    launches: dict[str, list[int]] = {}
    burn.Device(f"{base}+fusion").backend.stream.forget()  # what earlier tests taught it
    for spec in (base, f"{base}+fusion"):
        dev = burn.Device(spec).autodiff()
        burn.seed(0, dev)
        model = nn.Sequential(nn.Linear(20, hidden, device=dev), nn.Relu(),
                              nn.Linear(hidden, 5, device=dev))
        optim = AdamConfig().init()
        x, y = burn.tensor(xd, device=dev), burn.tensor(yd, device=dev)
        counter = LaunchCounter(monkeypatch, base)
        run, counts = [], []
        for _ in range(LONE_SHARED + 5):
            loss = F.cross_entropy(model(x), y)
            optim.step(1e-2, model, loss.backward())
            run.append(loss.item())
            counts.append(counter.take())
        losses[spec], launches[spec] = run, [counts[3], counts[-1]]
        monkeypatch.undo()
    (fourth, steady), (fused_fourth, fused_steady) = launches[base], launches[f"{base}+fusion"]
    record_property("figure", f"MLP 20-{hidden}-5 Adam step, batch {batch}, on {base}: "
                    f"{fourth} kernels unfused, "
                    f"{fused_fourth} fused (4th step); {steady} and {fused_steady} once settled")
    assert fused_fourth < fourth
    assert fused_steady < steady
    np.testing.assert_allclose(losses[f"{base}+fusion"], losses[base], rtol=1e-5)
