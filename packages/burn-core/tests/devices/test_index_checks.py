"""Index range checks go through the backend (`Backend.check_indices`): the NumPy backend checks
at once on the host; a device backend may check on the device and report at the next sync."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import burn
import burn.functional as F
from burn.backend import registry
from burn.backends.numpy import NumpyBackend
from burn.errors import BurnIndexError, DivisionByZeroError


class Deferring(NumpyBackend):
    """Checks indices without reading them back now: the error waits for `sync` (as a device
    backend checking on the device would), and host reads of int data are counted."""

    def __init__(self) -> None:
        super().__init__()
        self.pending: list[BurnIndexError] = []
        self.host_reads = 0

    def device_of(self, x: Any) -> burn.Device:
        return burn.Device("deferring")

    def int_into_data(self, x: np.ndarray) -> np.ndarray:
        self.host_reads += 1
        return super().int_into_data(x)

    def check_indices(self, op: str, indices: np.ndarray, size: int,
                      wrap_negative: bool = True) -> np.ndarray:
        low = -size if wrap_negative else 0
        bad = indices[(indices < low) | (indices >= size)]  # computed "on the device"
        if bad.size:
            self.pending.append(BurnIndexError(op, f"index {bad[0]} out of range [{low}, {size})"))
        return np.clip(np.where(indices < 0, indices + size, indices), 0, size - 1)

    def sync(self) -> None:
        if self.pending:
            error, self.pending = self.pending[0], []
            raise error


@pytest.fixture
def deferring() -> Any:
    burn.register_backend("deferring", Deferring)
    yield burn.Device("deferring").backend
    registry._targets[registry.BACKEND_GROUP].pop("deferring", None)
    registry._loaded.clear()


@pytest.mark.parametrize("op, run", [
    ("select", lambda x, i: x.select(0, i)),
    ("gather", lambda x, i: x.gather(0, i.reshape(3, 1).expand(3, 2))),
    ("embedding", lambda x, i: F.embedding(x, i)),
    ("getitem", lambda x, i: x[i]),
])
def test_device_backend_reports_bad_indices_at_sync(deferring, op, run):
    x = burn.tensor(np.arange(8.0, dtype=np.float32).reshape(4, 2), device="deferring")
    bad = burn.tensor([0, 9, 1], device="deferring")
    out = run(x, bad)  # no error yet, no host read of the indices
    assert out.shape[0] == 3 and deferring.host_reads == 0
    with pytest.raises(BurnIndexError, match=f"{op}: index 9 out of range"):
        burn.sync("deferring")
    burn.sync("deferring")  # reported once


def test_numpy_backend_checks_at_once_like_torch():
    x = burn.tensor(np.arange(8.0, dtype=np.float32).reshape(4, 2), device="numpy")
    with pytest.raises(BurnIndexError, match=r"select: index 9 out of range \[-4, 4\)"):
        x.select(0, burn.tensor([0, 9], device="numpy"))
    with pytest.raises(IndexError):
        torch.arange(8.0).reshape(4, 2).index_select(0, torch.tensor([0, 9]))
    got = x.select(0, burn.tensor([-1, 0], device="numpy")).to_numpy()
    assert got.shape == (2, 2)
    np.testing.assert_array_equal(got, np.arange(8.0).reshape(4, 2)[[-1, 0]])


def test_integer_division_by_a_zero_tensor_goes_through_the_backend(deferring):
    calls: list[str] = []
    original = Deferring.check_nonzero

    def spy(self: Deferring, op: str, divisor: Any) -> None:
        calls.append(op)
        original(self, op, divisor)

    Deferring.check_nonzero = spy  # type: ignore[method-assign]
    try:
        a = burn.tensor([4, 5], device="deferring")
        with pytest.raises(DivisionByZeroError, match="floor_div: integer division by zero"):
            _ = a // burn.tensor([2, 0], device="deferring")
        assert (a // burn.tensor([2, 5], device="deferring")).to_numpy().tolist() == [2, 1]
    finally:
        Deferring.check_nonzero = original  # type: ignore[method-assign]
    assert calls == ["floor_div", "floor_div"]
