"""Sliding-window reductions over the last two dims, written once for anything sliceable as
``x[..., i:i + h, j:j + w]`` (burn tensors for the default path, numpy arrays for the NumPy
fast path)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def window_reduce(padded: T, mask: np.ndarray, out_hw: tuple[int, int],
                  combine: Callable[[T, T], T]) -> T:
    """Combine, over every true position (i, j) of `mask`, the window of `padded` starting at
    (i, j) of size `out_hw`. A full rectangular mask is reduced separably (rows, then columns).

    Args:
        padded: [..., H + kh - 1, W + kw - 1].
        mask: bool [kh, kw] with at least one true value.
        out_hw: (H, W).
        combine: an associative, commutative binary op (minimum, maximum, and, or).
    Returns:
        [..., H, W].
    """
    h, w = out_hw
    kh, kw = mask.shape
    if mask.all() and kh > 1 and kw > 1:
        rows = _reduce(padded, [(i, 0) for i in range(kh)], (h, w + kw - 1), combine)
        return _reduce(rows, [(0, j) for j in range(kw)], (h, w), combine)
    offsets = [(int(i), int(j)) for i, j in np.argwhere(mask)]
    return _reduce(padded, offsets, (h, w), combine)


def _reduce(x: T, offsets: list[tuple[int, int]], out_hw: tuple[int, int],
            combine: Callable[[T, T], T]) -> T:
    """A numpy ufunc `combine` updates its own result in place after the first step."""
    h, w = out_hw
    acc = None
    owned = False  # acc is a result of combine (not a view of x)
    for i, j in offsets:
        window = x[..., i:i + h, j:j + w]  # type: ignore[index]
        if acc is None:
            acc = window
        elif owned and isinstance(combine, np.ufunc):
            combine(acc, window, out=acc)
        else:
            acc, owned = combine(acc, window), True
    assert acc is not None
    return acc
