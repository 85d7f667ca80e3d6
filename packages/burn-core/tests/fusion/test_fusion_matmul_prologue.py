"""The matmul fuser's prologue: on GPU runtimes the elementwise ops computing an operand of a
product run inside the tiled matmul kernel as it stages that operand (with the epilogue
after it: one kernel), against PyTorch and the unfused backend; where a prologue result is
needed elsewhere, or the product is not a tiled one, the ops run as their own elementwise
kernel first. On the cpu runtime the product is BLAS's, and the ops before it stay an
elementwise kernel of their own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from fusion_testing import DEVICES, LaunchCounter, check, gradients_agree

import burn
import burn.functional as F
from burn.fusion import reset_stats, stats

pytestmark = [pytest.mark.parametrize("base", DEVICES), pytest.mark.usefixtures("empty_stream")]
torch.set_num_threads(1)

Fn = Callable[..., Any]


def data(*shapes: tuple[int, ...], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def run_counted(base: str, fn: Fn, arrays: list[np.ndarray],
                monkeypatch: pytest.MonkeyPatch) -> tuple[burn.Tensor, int, list[str]]:
    """`fn` on the fusion device's tensors of `arrays` (a first call tunes the product), then
    again with its launches counted: (result, launches, kernel names)."""
    dev = f"{base}+fusion"
    tensors = [burn.tensor(a, device=dev) for a in arrays]
    fn(*tensors).to_numpy()
    burn.Device(dev).backend.stream.forget()  # the first run counts as recorded again
    counter = LaunchCounter(monkeypatch, base)
    reset_stats()
    out = fn(*tensors)
    out.to_numpy()
    return out, counter.take(), counter.names


#: (name, burn fn, torch fn, operand shapes): elementwise ops before a product, read by it
CASES: list[tuple[str, Fn, Fn, tuple[tuple[int, ...], ...]]] = [
    ("scaled relu of lhs, bias after", lambda x, w, b: F.relu(x * 2.0 + 1.0) @ w + b,
     lambda x, w, b: torch.relu(x * 2.0 + 1.0) @ w + b, ((33, 47), (47, 29), (29,))),
    ("scaled rhs", lambda x, w: x @ (w * 0.5 - 0.25), lambda x, w: x @ (w * 0.5 - 0.25),
     ((33, 47), (47, 29))),
    ("one prologue result as both operands", lambda x: (lambda r: r @ r)(F.relu(x) * 3.0),
     lambda x: (lambda r: r @ r)(torch.relu(x) * 3.0), ((16, 16),)),
    ("lhs from two inputs, one broadcast", lambda x, y, w: (x - y).tanh() @ w,
     lambda x, y, w: (x - y).tanh() @ w, ((33, 47), (47,), (47, 29))),
    ("transposed input view", lambda x, w: (x.T * 0.5).exp() @ w,
     lambda x, w: (x.T * 0.5).exp() @ w, ((47, 33), (47, 29))),
    ("batched lhs", lambda a, b: F.sigmoid(a * 0.5) @ b,
     lambda a, b: torch.sigmoid(a * 0.5) @ b, ((3, 17, 19), (3, 19, 5))),
    ("broadcast rhs of a batch", lambda a, w: a @ (w * w), lambda a, w: a @ (w * w),
     ((3, 17, 19), (19, 5))),
    ("a bool mask cast and applied", lambda x, w: ((x > 0).float() * x) @ w,
     lambda x, w: ((x > 0).float() * x) @ w, ((20, 12), (12, 7))),
    ("a strided slice", lambda x, w: F.relu(x[:, ::2] * 2.0) @ w,
     lambda x, w: torch.relu(x[:, ::2] * 2.0) @ w, ((20, 24), (12, 7))),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_prologue_runs_in_the_matmul_kernel(base: str, case: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """One kernel on GPU runtimes (its name says prologue); values as torch's and as the
    unfused backend's."""
    _, fn, tfn, shapes = case
    arrays = data(*shapes, seed=len(shapes))
    out, launches, names = run_counted(base, fn, arrays, monkeypatch)
    check(out, tfn(*[torch.from_numpy(a) for a in arrays]), rtol=1e-4, atol=1e-4)
    unfused = fn(*[burn.tensor(a, device=base) for a in arrays])
    np.testing.assert_allclose(out.to_numpy(), unfused.to_numpy(), rtol=1e-4, atol=1e-4)
    if base == "cpu":  # the BLAS product is no launch: the ops before it, then the epilogue
        assert launches == (2 if "bias" in case[0] else 1), names
    else:
        assert launches == 1, names
        assert "prologue" in names[0], names
        assert stats().ops_fused == stats().ops_recorded


def test_a_held_prologue_result_is_written_first(base: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A prologue result something else holds is written by its own elementwise kernel, then
    the product reads it (with its epilogue): values as torch's."""
    xd, wd = data((33, 47), (47, 29), seed=11)
    held: list[burn.Tensor] = []

    def fn(x: burn.Tensor, w: burn.Tensor) -> burn.Tensor:
        r = F.relu(x * 2.0)
        held.append(r)
        return F.relu(r @ w) * 0.5

    out, launches, _ = run_counted(base, fn, [xd, wd], monkeypatch)
    tx, tw = torch.from_numpy(xd), torch.from_numpy(wd)
    check(out, torch.relu(torch.relu(tx * 2.0) @ tw) * 0.5)
    check(held[-1], torch.relu(tx * 2.0))
    assert launches == 2


@pytest.mark.usefixtures("fuse_small_blocks")
@pytest.mark.parametrize("shape", [(16, 16), (3, 1, 1)])
def test_a_result_before_the_product_read_after_it_is_written(base: str,
                                                              shape: tuple[int, ...]) -> None:
    """Elementwise results recorded before a product, of its shape (in its block), that no
    handle holds and only ops after the product read (its epilogue, and an op beside it, as
    a backward pass records them): they are written before the product runs (on GPU
    runtimes those ops raised KeyError: the block's ops before the product wrote only its
    operands); values as torch's, twice (planned, then from the plan)."""
    dev = f"{base}+fusion"
    xd, wd, vd = data(shape, shape, shape, seed=23)
    x, w, v = (burn.tensor(a, device=dev) for a in (xd, wd, vd))
    tx, tw, tv = (torch.from_numpy(a) for a in (xd, wd, vd))
    tq, tproduct = tv * 3.0, (tx * 2.0).exp() @ tw
    for _ in range(2):
        q = v * 3.0  # (not an operand)
        product = (x * 2.0).exp() @ w
        summed, beside = product + q, q.sigmoid() * v
        del q
        check(beside, tq.sigmoid() * tv, rtol=1e-4)
        check(summed, tproduct + tq, rtol=1e-4)
        check(product, tproduct, rtol=1e-4)


def test_a_product_of_rank_four_reads_its_prologue_from_memory(
        base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Batch dims the kernel merges (rank 4) take no prologue: the ops run first."""
    ad, bd = data((2, 3, 7, 5), (2, 3, 5, 4), seed=12)
    out, launches, names = run_counted(base, lambda a, b: (a + 1.0).abs() @ b, [ad, bd],
                                       monkeypatch)
    check(out, (torch.from_numpy(ad) + 1.0).abs() @ torch.from_numpy(bd))
    assert not any("prologue" in n for n in names)
    assert launches == (1 if base == "cpu" else 2)


def test_special_values_in_a_prologue(base: str) -> None:
    """NaN and infinities through the prologue's ops as torch has them (WGSL kernels hide the
    operands from the driver's algebra: x - x at inf is NaN, not 0)."""
    dev = f"{base}+fusion"
    xd, wd = data((8, 6), (6, 5), seed=13)
    xd[0, 0], xd[1, 2], xd[2, 3] = np.inf, -np.inf, np.nan
    x, w = burn.tensor(xd, device=dev), burn.tensor(wd, device=dev)
    tx, tw = torch.from_numpy(xd), torch.from_numpy(wd)
    check((x - x) @ w, (tx - tx) @ tw)
    check((x * 0.0 + 1.0) @ w, (tx * 0.0 + 1.0) @ tw)
    check(x.exp().log() @ w, tx.exp().log() @ tw)


def test_gradients_through_a_prologue(base: str) -> None:
    """Under autodiff, a loss through a prologue and an epilogue: the loss and gradients as
    torch's (the backward's elementwise ops before its products are prologues too)."""
    xd, wd, bd = data((12, 10), (10, 7), (7,), seed=14)

    def loss(x: Any, w: Any, b: Any) -> Any:
        h = (x * 0.5 - 0.1).tanh() @ w + b
        return (h * h).sum()

    gradients_agree(loss, base, xd, wd, bd)


def test_a_repeated_prologue_reuses_its_plan(base: str) -> None:
    """A training-loop repeat of a prologue block runs from its kept plan (a cache hit, no
    new plan) with new numbers as runtime scalars (on the cpu: its elementwise blocks')."""
    dev = f"{base}+fusion"
    xd, wd = data((20, 30), (30, 10), seed=15)
    x, w = burn.tensor(xd, device=dev), burn.tensor(wd, device=dev)
    tx, tw = torch.from_numpy(xd), torch.from_numpy(wd)
    for step, scale in enumerate((1.5, -2.0, 0.25)):
        reset_stats()
        check(F.relu(x * scale + 1.0) @ w * 2.0, torch.relu(tx * scale + 1.0) @ tw * 2.0,
              atol=1e-5)
        s = stats()
        if base != "cpu":  # (the cpu's ops before and after the BLAS product may run at once)
            assert s.kernels_launched == 1
        if step:
            assert s.plans == 0 and s.cache_hits >= 1


@pytest.mark.parametrize("source", ["int32", "float16"])
def test_a_prologue_casting_from_another_dtype(base: str, source: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """An operand cast from int32 or float16 in the prologue (the kernel is the product's
    float32 one; its inputs keep their dtypes); both operands cast from one int32 input
    (no input of the product's dtype to stand in for them) run the cast first."""
    rng = np.random.default_rng(16)
    xd = rng.integers(-5, 5, (20, 12)).astype(source) if source == "int32" else \
        rng.standard_normal((20, 12)).astype(source)
    (wd,) = data((12, 7), seed=16)
    out, launches, names = run_counted(base, lambda x, w: x.float() @ w, [xd, wd],
                                       monkeypatch)
    check(out, torch.from_numpy(xd).float() @ torch.from_numpy(wd))
    if base != "cpu":
        assert launches == 1 and "prologue" in names[0], names
    sq = rng.integers(-5, 5, (12, 12)).astype(np.int32)
    out, launches, names = run_counted(base, lambda a: a.float() @ a.float(), [sq],
                                       monkeypatch)
    check(out, torch.from_numpy(sq).float() @ torch.from_numpy(sq).float())
    assert not any("prologue" in n for n in names)


def test_a_dead_product_beside_a_live_op(base: str) -> None:
    """A product nobody holds, in a block with a live op of its shape that does not read it
    (the planner puts it there): the live op's value is right, and a product after it reads
    its operands (they are computed for it), through the runs that make ops run at once."""
    from burn.fusion.stream import LONE

    dev = f"{base}+fusion"
    xd, wd, qd = data((16, 32), (32, 8), (16, 8), seed=17)
    x, w, q = (burn.tensor(a, device=dev) for a in (xd, wd, qd))
    tx, tw, tq = (torch.from_numpy(a) for a in (xd, wd, qd))
    for _ in range(LONE + 2):
        F.relu(x * 2.0) @ w  # dropped at once
        check(q + 1.0, tq + 1.0)
        check((x * 3.0) @ w, (tx * 3.0) @ tw)


def test_a_dead_block_is_not_run(base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ops whose results nobody holds, a product and the ops before and after it, launch
    nothing at the next sync; the held result beside them is computed."""
    dev = f"{base}+fusion"
    xd, wd, qd = data((16, 32), (32, 8), (5, 3), seed=18)
    x, w, q = (burn.tensor(a, device=dev) for a in (xd, wd, qd))
    F.relu(x * 2.0 + 1.0).to_numpy()  # (the elementwise and product kernels are built)
    (x @ w).to_numpy()
    burn.Device(dev).backend.stream.forget()
    counter = LaunchCounter(monkeypatch, base)
    reset_stats()
    (F.relu(x * 2.0 + 1.0) @ w) * 0.5
    z = q * 2.0 + 1.0
    check(z, torch.from_numpy(qd) * 2.0 + 1.0)
    assert counter.take() == 1, counter.names
    assert stats().ops_dead == 5


def test_a_written_prologue_is_a_block_of_its_own(base: str) -> None:
    """A prologue whose result something holds is planned as its own elementwise block, and
    pays for its recording by itself: two small ops that save one launch run at once from
    their `LONE`th flushes on (on every runtime), while the product and its epilogue after
    them stay one fused kernel on GPU runtimes; values as torch's at every step."""
    from burn.fusion.handle import FusionTensor
    from burn.fusion.stream import LONE

    dev = f"{base}+fusion"
    xd, wd = data((33, 47), (47, 29), seed=19)
    x, w = (burn.tensor(a, device=dev) for a in (xd, wd))
    tx, tw = torch.from_numpy(xd), torch.from_numpy(wd)
    for _ in range(2 * LONE + 1):
        reset_stats()
        r = F.relu(x * 2.0)
        pending = type(r._prim) is FusionTensor and r._prim.value is None
        out = F.relu(r @ w) * 0.5
        check(out, torch.relu(torch.relu(tx * 2.0) @ tw) * 0.5)
        check(r, torch.relu(tx * 2.0))
    assert not pending  # (the last step's prologue ran at once)
    if base != "cpu":
        assert stats().ops_fused == 3  # the product, its relu and its scale: one kernel
