"""Masks, cartesian grids and window functions against torch's equivalents."""

from __future__ import annotations

import pytest
import torch

import burn
from burn.errors import DTypeError, ShapeError, ValueRangeError

from .reference import BURN_TO_TORCH, FLOATS, check_forward, dtype_of, op_param

SIZES = (0, 1, 2, 7, 8)
#: Burn's hamming coefficients (PyTorch's defaults are 0.54 / 0.46).
HAMMING = {"alpha": 25 / 46, "beta": 21 / 46}
WINDOWS = {
    "hann_window": (burn.hann_window, torch.hann_window, {}),
    "hamming_window": (burn.hamming_window, torch.hamming_window, HAMMING),
    "blackman_window": (burn.blackman_window, torch.blackman_window, {}),
}


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in WINDOWS for d in FLOATS])
def test_window(name: str, dtype: str, device: burn.Device) -> None:
    fb, ft, extra = WINDOWS[name]
    tdt = BURN_TO_TORCH[dtype_of(dtype)]
    for size in SIZES:
        for periodic in (True, False):
            check_forward(
                lambda s=size, p=periodic: fb(s, p, dtype=dtype, device=device),
                lambda s=size, p=periodic: ft(s, p, dtype=torch.float64, **extra).to(tdt),
                [], device)
    check_forward(lambda: fb(5, device=device), lambda: ft(5, True, **extra), [], device)
    with pytest.raises(ValueRangeError, match=name):
        fb(-1, device=device)
    with pytest.raises(DTypeError, match=name):
        fb(3, dtype="int64", device=device)


@pytest.mark.op("hamming_window")
def test_hamming_coefficients(device: burn.Device) -> None:
    check_forward(lambda: burn.hamming_window(6, alpha=0.54, beta=0.46, device=device),
                  lambda: torch.hamming_window(6), [], device)


def _kept(shape: tuple[int, ...], offset: int, part: str) -> torch.Tensor:
    ones = torch.ones(shape, dtype=torch.bool)
    if part == "u":
        return ones.triu(offset)
    if part == "l":
        return ones.tril(offset)
    return ones.triu(offset) & ones.tril(offset)


MASKS = {"triu_mask": (burn.triu_mask, "u"), "tril_mask": (burn.tril_mask, "l"),
         "diag_mask": (burn.diag_mask, "d")}


@pytest.mark.parametrize("name", [op_param(n) for n in MASKS])
def test_masks(name: str, device: burn.Device) -> None:
    fb, part = MASKS[name]
    for shape in ((3, 3), (2, 4), (4, 2), (2, 3, 3), (0, 3)):
        for offset in (0, 1, -1, 5):
            check_forward(lambda s=shape, o=offset: fb(s, o, device=device),
                          lambda s=shape, o=offset: ~_kept(s, o, part), [], device)
    with pytest.raises(ShapeError, match=name):
        fb((3,), device=device)


@pytest.mark.op("cartesian_grid")
def test_cartesian_grid(device: burn.Device) -> None:
    for shape in ((2, 3), (4,), (2, 0, 3), (2, 1, 3)):
        check_forward(lambda s=shape: burn.cartesian_grid(s, device=device),
                      lambda s=shape: torch.stack(torch.meshgrid(
                          *[torch.arange(n) for n in s], indexing="ij"), -1), [], device)
    with pytest.raises(ShapeError, match="cartesian_grid"):
        burn.cartesian_grid((), device=device)
