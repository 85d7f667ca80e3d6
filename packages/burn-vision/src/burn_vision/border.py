"""Border modes (OpenCV's `BORDER_*`) and padding of the last two dims with burn ops."""

from __future__ import annotations

from typing import Literal

import numpy as np

import burn
from burn import Tensor
from burn_vision._checks import choice

#: How pixels outside the image are read: "constant" (a given value), "replicate"
#: (aaa|abc|ccc), "reflect" (cba|abc|cba), "reflect101" (cb|abc|ba, OpenCV's BORDER_DEFAULT),
#: "wrap" (bc|abc|ab).
BorderMode = Literal["constant", "replicate", "reflect", "reflect101", "wrap"]
BORDER_MODES: tuple[BorderMode, ...] = ("constant", "replicate", "reflect", "reflect101", "wrap")


def check_border(op: str, border: str) -> None:
    """Raises ValueRangeError for an unknown border mode."""
    choice(op, "border", border, BORDER_MODES)


def border_index(n: int, before: int, after: int, mode: BorderMode) -> np.ndarray:
    """Source index of each of the `before + n + after` padded positions of an axis of length
    `n` under `mode` (any mode but "constant"), as int64."""
    pos = np.arange(-before, n + after, dtype=np.int64)
    if mode == "replicate":
        return np.clip(pos, 0, n - 1)
    if mode == "wrap":
        return np.mod(pos, n)
    if n == 1:
        return np.zeros_like(pos)
    # reflect repeats the edge pixel (period 2n); reflect101 does not (period 2n - 2).
    period = 2 * n if mode == "reflect" else 2 * n - 2
    pos = np.mod(pos, period)
    mirrored = period - 1 - pos if mode == "reflect" else period - pos
    return np.where(pos < n, pos, mirrored)


def pad2d(x: Tensor, top: int, bottom: int, left: int, right: int, mode: BorderMode,
          value: float | bool = 0) -> Tensor:
    """Pad the last two dims of `x` (any kind) under a border mode.

    Args:
        x: [..., H, W] with H, W >= 1.
        top, bottom, left, right: pixels added on each side.
        mode: one of BORDER_MODES.
        value: the fill of "constant".
    Returns:
        [..., H + top + bottom, W + left + right].
    """
    if top == bottom == left == right == 0:
        return x
    if mode == "constant":
        return x.pad((left, right, top, bottom), value)
    h, w = x.shape[-2:]
    rows = burn.tensor(border_index(h, top, bottom, mode), device=x.device)
    cols = burn.tensor(border_index(w, left, right, mode), device=x.device)
    return x.index_select(x.ndim - 2, rows).index_select(x.ndim - 1, cols)
