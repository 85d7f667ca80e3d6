"""Results larger than memory under fusion, against the unfused device (found by edge sweep 2):
refused at the call, as unfused; a block that fails at a flush leaves the unrelated blocks of
the flush their values."""

from __future__ import annotations

import numpy as np
import pytest

import burn

#: A [2**20, 1] + [1, 2**20] float32 result: 4 TiB, refused at once (nothing is touched).
SIDE = 1 << 20


def _huge(device: str) -> burn.Tensor:
    return burn.ones((SIDE, 1), device=device) + burn.ones((1, SIDE), device=device)


def test_unfused_devices_refuse_at_the_call() -> None:
    """The reference: unfused, the op itself raises AllocationError."""
    with pytest.raises(burn.errors.AllocationError, match=r"\(shape=\(1048576, 1048576\)"):
        _huge("cpu")


def test_a_result_larger_than_memory_raises_at_the_call() -> None:
    with pytest.raises(burn.errors.AllocationError, match=r"\(shape=\(1048576, 1048576\)"):
        _huge("cpu+fusion")
    burn.sync("cpu+fusion")


def test_an_allocation_failure_spares_unrelated_pending_tensors() -> None:
    x = burn.tensor(np.arange(4.0, dtype=np.float32), device="cpu+fusion")
    a = x.exp() * 2
    try:
        huge = _huge("cpu+fusion")
    except burn.errors.AllocationError:
        huge = None
    c = a + 1
    try:
        got = c.to_numpy()
    except burn.errors.AllocationError:  # the huge block's own error, reported at this sync
        got = c.to_numpy()
    np.testing.assert_allclose(got, np.exp(np.arange(4.0)) * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(a.to_numpy(), np.exp(np.arange(4.0)) * 2, rtol=1e-6)
    del huge
