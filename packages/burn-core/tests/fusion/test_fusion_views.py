"""Views in the fusion stream: a reshape, expand, swap_dims or permute of a pending result is
recorded (a block of its own, run by the inner backend's method in the flush), so it runs no
pending op; one of a computed tensor runs at once. Values, shapes and dtypes against torch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from fusion_testing import DEVICES, LaunchCounter, check, pending

import burn
import burn.functional as F
from burn.fusion import reset_stats, stats

pytestmark = [pytest.mark.parametrize("base", DEVICES), pytest.mark.usefixtures("empty_stream")]

Fn = Callable[..., Any]


def data(*shapes: tuple[int, ...], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


#: (name, burn fn, torch fn, operand shapes): a view between recorded ops
CASES: list[tuple[str, Fn, Fn, tuple[tuple[int, ...], ...]]] = [
    ("reshape after a row sum", lambda x: ((x * 2.0).sum_dim(1).reshape(-1) + 1.0).exp(),
     lambda x: ((x * 2.0).sum(1) + 1.0).exp(), ((6, 5),)),
    ("expand of a reduced column", lambda x: (x - (x * x).mean_dim(1).expand([6, 5])).abs(),
     lambda x: (x - (x * x).mean(1, keepdim=True).expand(6, 5)).abs(), ((6, 5),)),
    ("transpose of a chain", lambda x, y: (x.tanh() * 3.0).transpose(0, 1) + y,
     lambda x, y: (x.tanh() * 3.0).T + y, ((6, 5), (5, 6))),
    ("permute of a chain", lambda x: (x + 1.0).relu().permute(2, 0, 1) * 0.5,
     lambda x: (x + 1.0).relu().permute(2, 0, 1) * 0.5, ((2, 3, 4),)),
    ("views of views", lambda x: ((x * 2.0).reshape([3, 4]).transpose(0, 1).reshape(-1) - 1.0),
     lambda x: ((x * 2.0).reshape(3, 4).T.reshape(-1) - 1.0), ((12,),)),
    ("int and bool views", lambda x: ((x > 0.0).reshape([2, 6]).int() * 3).reshape(-1),
     lambda x: ((x > 0.0).reshape(2, 6).long() * 3).reshape(-1), ((12,),)),
    ("empty", lambda x: (x * 2.0).reshape([0, 3]).transpose(0, 1) + 1.0,
     lambda x: (x * 2.0).reshape(0, 3).T + 1.0, ((0, 3),)),
    ("0-d to 1-d", lambda x: ((x * 2.0).sum().reshape([1]).expand([4]) + 1.0),
     lambda x: ((x * 2.0).sum().reshape(1).expand(4) + 1.0), ((3, 3),)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_view_of_a_pending_result_runs_nothing_until_read(base: str, case: Any) -> None:
    """The view's result is pending too, no flush until it is read; then values as torch's,
    in one flush."""
    _, fn, tfn, shapes = case
    arrays = data(*shapes, seed=len(shapes))
    for _ in range(4):  # (later steps: structures seen, plans cached)
        tensors = [burn.tensor(a, device=f"{base}+fusion") for a in arrays]
        reset_stats()
        out = fn(*tensors)
        assert pending(out) and stats().flushes == 0
        check(out, tfn(*[torch.from_numpy(a) for a in arrays]), rtol=1e-5, atol=1e-5)
        assert stats().flushes == 1


def test_a_view_of_a_computed_tensor_runs_at_once(base: str) -> None:
    (xd,) = data((6, 5))
    x = burn.tensor(xd, device=f"{base}+fusion")
    reset_stats()
    y = x.transpose(0, 1).reshape([30])
    assert not pending(y) and stats().ops_recorded == 0
    check(y, torch.from_numpy(xd).T.reshape(30))


def test_a_view_nothing_reads_is_not_computed(base: str) -> None:
    """A reshape whose result is dropped is dead, and so is the pending op only it read."""
    (xd,) = data((6, 5))
    x = burn.tensor(xd, device=f"{base}+fusion")
    reset_stats()
    kept = x * 3.0
    dropped = (x + 1.0).reshape([30])
    del dropped
    check(kept, torch.from_numpy(xd) * 3.0)
    assert stats().ops_dead == 2 and stats().ops_recorded == 3


def test_a_huge_expand_is_a_view_not_an_allocation(base: str) -> None:
    """Expanding a pending result far past this machine's memory is a view, as unfused."""
    x = burn.tensor(np.float32([[1.5], [2.5]]), device=f"{base}+fusion")
    big = (x * 2.0).expand([2, 1 << 40])
    assert big.shape == (2, 1 << 40) and big.dtype == burn.float32
    check((x * 2.0).expand([2, 3]) + 0.0, torch.tensor([[3.0] * 3, [5.0] * 3]))


def test_a_transposed_pending_operand_launches_as_unfused(
        base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The view between a chain and a product is no prologue (GPU runtimes) and costs no
    kernel of its own: at most the launches of the unfused device."""
    xd, wd = data((33, 47), (33, 29), seed=3)
    xs, ws = burn.tensor(xd, device=f"{base}+fusion"), burn.tensor(wd, device=f"{base}+fusion")

    def fn(x: burn.Tensor, w: burn.Tensor) -> burn.Tensor:
        return F.relu(F.relu(x * 0.5 + 1.0).transpose(0, 1) @ w)

    fn(xs, ws).to_numpy()
    counter = LaunchCounter(monkeypatch, base)
    fused = fn(xs, ws)
    check(fused, torch.relu(torch.relu(torch.from_numpy(xd) * 0.5 + 1.0).T
                            @ torch.from_numpy(wd)), rtol=1e-4, atol=1e-4)
    launched = counter.take()
    unfused = fn(burn.tensor(xd, device=base), burn.tensor(wd, device=base))
    unfused.to_numpy()
    assert launched <= counter.take()
