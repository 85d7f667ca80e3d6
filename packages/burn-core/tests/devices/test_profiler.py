"""burn.profile() and the Profile decorator; the Decorator base as a user writes one."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import burn
import burn.functional as F
from burn.backend.decorator import Decorator
from burn.backends.numpy import NumpyBackend
from burn.errors import ShapeError
from burn.ir import OpDef


def test_profile_records_ops_with_shapes_dtypes_and_times():
    device = burn.Device("numpy").profile()
    a = burn.tensor(np.ones((4, 3), np.float32), device=device)
    b = burn.tensor(np.ones((3, 2), np.float32), device=device)
    with burn.profile() as prof:
        c = (a @ b).exp()
        d = c.sum()
    assert [r.record.name for r in prof.records] == ["float_matmul", "float_exp", "float_sum"]
    matmul = prof.records[0].record
    assert matmul.inputs["lhs"].shape == (4, 3)  # type: ignore[union-attr]
    out = (matmul.outputs or ())[0]
    assert out is not None and out.shape == tuple(c.shape) and out.dtype is burn.float32
    assert all(r.seconds > 0 for r in prof.records)
    assert d.item() == pytest.approx(float(np.exp(3.0) * 8))


def test_nothing_is_recorded_outside_a_block_or_on_plain_devices():
    plain = burn.ones(3)
    profiled = burn.ones(3, device=burn.Device("numpy").profile())
    _ = profiled + profiled
    with burn.profile() as prof:
        _ = plain + plain
    assert len(prof) == 0


def test_key_averages_group_by_op_like_torch_profiler():
    device = burn.Device("numpy").profile()
    x = burn.ones(8, 8, device=device)
    with burn.profile() as prof:
        for _ in range(5):
            x = x * 0.5
        x.sum()
    stats = {s.name: s for s in prof.key_averages()}
    assert stats["float_mul_scalar"].calls == 5 and stats["float_sum"].calls == 1
    s = stats["float_mul_scalar"]
    assert s.min <= s.mean <= s.max and s.total == pytest.approx(s.mean * 5)
    assert s.shapes.most_common(1)[0] == ("[8, 8]:float32", 5)
    table = prof.table()
    assert table.splitlines()[0].split()[:3] == ["op", "calls", "total"]
    assert "float_mul_scalar" in table and "6 ops" in table


def test_profile_under_autodiff_sees_the_backward_ops():
    device = burn.Device("numpy").profile().autodiff()
    w = burn.randn(4, 3, device=device).require_grad()
    x = burn.randn(2, 4, device=device)
    with burn.profile(verify=True) as prof:
        loss = F.relu(x @ w).sum()
        grads = loss.backward()
    names = [r.record.name for r in prof.records]
    assert names.count("float_matmul") >= 2  # forward and the weight gradient
    gw = w.grad(grads)
    assert gw is not None and gw.shape == (4, 3)
    xt = torch.tensor(x.to_numpy())
    wt = torch.tensor(w.to_numpy(), requires_grad=True)
    torch.relu(xt @ wt).sum().backward()
    assert wt.grad is not None
    np.testing.assert_allclose(gw.to_numpy(), wt.grad.numpy(), rtol=1e-6)


class Lying(NumpyBackend):
    """A backend whose exp returns the wrong shape."""

    def float_exp(self, x: np.ndarray) -> np.ndarray:
        return np.exp(x).reshape(-1)


def test_verify_catches_a_backend_that_disagrees_with_the_op_table():
    from burn.profiler import Profile, profile

    backend = Profile(Lying())
    with profile(verify=True), pytest.raises(ShapeError, match="float_exp: record's outputs"):
        backend.float_exp(np.ones((2, 2), np.float32))


class Tally(Decorator):
    """A decorator in a few lines: counts ops by family and forwards them."""

    decorator_name = "tally"

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.families: dict[str, int] = {}

    def handle(self, op: OpDef, args: tuple[Any, ...]) -> Any:
        self.families[op.family] = self.families.get(op.family, 0) + 1
        return self.forward(op, args)


def test_a_user_decorator_is_a_few_lines(monkeypatch):
    from burn.backend import registry

    monkeypatch.setitem(registry._group(registry.DECORATOR_GROUP), "tally", Tally)
    device = burn.Device("numpy+tally+autodiff")
    x = burn.tensor([[1.0, -2.0], [3.0, 4.0]], device=device).require_grad()
    y = F.relu(x).sum()
    y.backward()
    tally = device.backend.inner  # type: ignore[attr-defined]
    assert isinstance(tally, Tally)
    assert tally.families["creation"] >= 1 and tally.families["reduction"] >= 1
    assert x.device == device and str(y.device) == "numpy+tally+autodiff"
