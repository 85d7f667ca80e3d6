"""Results larger than memory, or than a GPU device holds in one buffer, under fusion against
the unfused device (found by edge sweeps): refused at the call, as unfused (also a reshape
copying a pending view); a block that fails at a flush leaves the unrelated blocks of the
flush their values."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fusion_testing import DEVICES

import burn
from burn.fusion.stream import LONE

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


@pytest.mark.parametrize("base", DEVICES)
def test_a_reshape_copying_a_pending_view_larger_than_memory_raises_at_the_call(
        base: str) -> None:
    """A reshape of a pending expand copies it (the cube backends reshape a tensor that is not
    contiguous by a dense copy): a copy larger than memory is refused at the reshape, as
    unfused (whose error names the copy's allocation), at every repetition (the stream's
    decisions change after `LONE` of them)."""
    for device, named in ((base, None), (f"{base}+fusion", "reshape")):
        for _ in range(LONE + 2):
            x = burn.tensor(np.ones((1, 1, 4), np.float32), device=device)
            view = (x * 2).expand(SIDE, SIDE, 4)  # a view: nothing allocated
            with pytest.raises(burn.errors.AllocationError, match=named):
                view.reshape(-1)
        burn.sync(device)


def _rows_past_one_buffer(runtime: Any, columns: int) -> int:
    """The fewest rows of a float32 [rows, columns] tensor the runtime cannot hold in one
    buffer (`Runtime.fits`: wgpu's binding limit, a GPU's memory): just past the limit, so
    within host memory where the device's limit is (the device's check refuses it, not
    the host's)."""
    from burn_cube import f32

    low, high = 0, 1
    while runtime.fits((high, columns), f32):
        low, high = high, 2 * high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if runtime.fits((middle, columns), f32) else (low, middle)
    return high


@pytest.mark.parametrize("base", [d for d in DEVICES if d != "cpu"])
def test_a_result_past_the_devices_largest_buffer_raises_at_the_call(base: str) -> None:
    """A result within host memory but past what the GPU device holds in one buffer is
    refused at the op's call under fusion, as unfused (it failed at the next sync point, then
    as a DeviceError on a second read); the stream's later ops are unaffected."""
    columns = 4096
    rows = _rows_past_one_buffer(burn.Device(base).backend.runtime, columns)
    for device in (base, f"{base}+fusion"):
        for _ in range(LONE + 2):
            column = burn.ones((rows, 1), device=device)
            row = burn.ones((1, columns), device=device)
            with pytest.raises(burn.errors.AllocationError):
                column * 2 + row
        small = burn.tensor(np.arange(3.0, dtype=np.float32), device=device)
        for _ in range(200):  # past the stream's length bound: nothing failed is pending
            small = (small + 1) * 0.5
        np.testing.assert_allclose(small.to_numpy(), np.full(3, 1.0) + (np.arange(3.0) - 1)
                                   * 0.5 ** 200, rtol=1e-6)
