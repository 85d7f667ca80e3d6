"""Sliding-window kernels of the cube backends: filter2d (a weighted sum) and erosion /
dilation (min / max, and / or for bool) over the taps of a mask, generated from one table.

An image [P, H, W] is covered by one launch for the interior, whose windows lie inside the
image (indexes affine in the unit: burn-cube's C target checks bounds once per cube and
vectorizes the row), and four for the border strips, which read through per-axis index maps
(-1: the constant border value). Nothing is padded or copied."""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

import burn
from burn import Tensor
from burn.dtype import DType
from burn_vision.border import BorderMode, border_index
from burn_vision.cube.primitives import cube_count, empty, launch

#: units per cube (one cube: a run of one output row)
CUBE_DIM = 256
#: float dtypes filter2d runs on (accumulating in the dtype)
FILTER_DTYPES = (burn.float32, burn.float64)
#: dtypes erosion / dilation run on
MORPH_DTYPES = (burn.float32, burn.float64, burn.int32, burn.int64, burn.bool_)


#: the window reductions: "filter" sums the taps times per-plane weights [C, T]; "erode" and
#: "dilate" take their min / max (and / or for bool)
REDUCTIONS = ("filter", "erode", "dilate")


def _fold(b: Any, reduction: str, dtype: Any, acc: Any, value: Any, weight: Any) -> Any:
    """`acc` combined with one tap's `value` (`weight` for filter)."""
    from burn_cube import bool_

    if reduction == "filter":
        return acc + value * weight
    if dtype is bool_:
        return acc & value if reduction == "erode" else acc | value
    return b.min(value, acc) if reduction == "erode" else b.max(value, acc)


@cache
def _kernel(reduction: str, dtype: DType, taps: tuple[tuple[int, int], ...], mapped: bool
            ) -> Any:
    """The window kernel for `taps` (row, column offsets from the window's top-left corner).

    Args:
        reduction: a key of REDUCTIONS.
        dtype: the image dtype.
        taps: the mask's (i, j) positions, in raster order.
        mapped: border strips (reads through row / column maps) rather than the interior.
    Returns:
        A kernel over cubes (columns / CUBE_DIM, rows, planes) of the region (y0, x0, rows,
        cols) of the output.
    """
    from burn.ir.cube import cube_dtype
    from burn_cube import KernelBuilder, i32

    cd = cube_dtype("vision_window", dtype)
    b = KernelBuilder(f"vision_{reduction}{'_border' if mapped else ''}", cube_dim=CUBE_DIM)
    src = b.tensor("src", cd, rank=3, write=False)
    out = b.tensor("out", cd, rank=3, write=True)
    weights = b.tensor("weights", cd, rank=2, write=False) if reduction == "filter" else None
    rmap = b.tensor("rmap", i32, rank=1, write=False) if mapped else None
    cmap = b.tensor("cmap", i32, rank=1, write=False) if mapped else None
    y0, x0, cols = b.scalar("y0", i32), b.scalar("x0", i32), b.scalar("cols", i32)
    value = b.scalar("value", cd)
    ay, ax = b.scalar("ay", i32), b.scalar("ax", i32)
    plane = b.cast(b.CUBE_POS_Z, i32)
    y = y0 + b.cast(b.CUBE_POS_Y, i32)
    u = b.cast(b.CUBE_POS_X, i32) * CUBE_DIM + b.cast(b.UNIT_POS_X, i32)
    x = x0 + u
    with b.if_(u < cols):
        acc = None
        for t, (i, j) in enumerate(taps):
            if rmap is not None and cmap is not None:
                r, c = rmap[y + i], cmap[x + j]
                v = b.local(cd, value)
                with b.if_(b.and_(r >= 0, c >= 0)):
                    b.set(v, src[plane, r, c])
            else:
                v = src[plane, y + (i - ay), x + (j - ax)]
            w = weights[plane % weights.shape[0], t] if weights is not None else None
            if acc is None:
                acc = b.local(cd, v * w if w is not None else v)
            else:
                b.set(acc, _fold(b, reduction, cd, acc, v, w))
        out[plane, y, x] = acc
    return b.kernel()


def window(x: Tensor, reduction: str, mask: np.ndarray, weights: Tensor | None,
           anchor: tuple[int, int], border: BorderMode, value: float | bool) -> Tensor:
    """The window reduction of `x` [..., H, W] over the true taps of `mask` [kh, kw].

    Args:
        x: [..., H, W] of one of the reduction's dtypes, H and W >= 1.
        reduction: "filter", "erode" or "dilate".
        mask: bool [kh, kw] (for filter: the nonzero weights).
        weights: filter's [C, kh, kw] (C = 1: every plane; else per channel, dim -3 of x).
        anchor: (x, y) of the reference point in the mask.
        border: how pixels outside are read.
        value: the "constant" fill.
    Returns:
        same shape and dtype as x.
    """
    shape = x.shape
    h, w = shape[-2:]
    planes = int(np.prod(shape[:-2], dtype=np.int64))
    src = x.reshape(planes, h, w)
    out = empty(x, (planes, h, w), x.dtype)
    kh, kw = mask.shape
    ax, ay = anchor
    taps = tuple((int(i), int(j)) for i, j in np.argwhere(mask))
    wt = []
    if weights is not None:
        flat = weights.reshape(weights.shape[0] if weights.ndim == 3 else 1, kh * kw)
        index = burn.tensor([i * kw + j for i, j in taps], dtype=burn.int64, device=x.device)
        wt = [flat.index_select(1, index).cast(x.dtype)]
    fill = bool(value) if x.dtype == burn.bool_ else value
    common = (fill, ay, ax)
    # interior: rows [ay, h - (kh - 1 - ay)), columns [ax, w - (kw - 1 - ax))
    iy0, iy1 = ay, h - (kh - 1 - ay)
    ix0, ix1 = ax, w - (kw - 1 - ax)
    if iy1 > iy0 and ix1 > ix0:
        launch(x, _kernel(reduction, x.dtype, taps, False),
               (cube_count(ix1 - ix0, CUBE_DIM), iy1 - iy0, planes), CUBE_DIM,
               src, out, *wt, iy0, ix0, ix1 - ix0, *common)
    else:
        iy0 = iy1 = ix0 = ix1 = 0
    maps = [_border_map(x, n, before, k - 1 - before, border)
            for n, before, k in ((h, ay, kh), (w, ax, kw))]
    strips = [(0, 0, iy0, w), (iy1, 0, h - iy1, w), (iy0, 0, iy1 - iy0, ix0),
              (iy0, ix1, iy1 - iy0, w - ix1)] if iy1 > iy0 else [(0, 0, h, w)]
    border_kernel = _kernel(reduction, x.dtype, taps, True)
    for sy, sx, rows, cols in strips:
        if rows > 0 and cols > 0:
            launch(x, border_kernel, (cube_count(cols, CUBE_DIM), rows, planes), CUBE_DIM,
                   src, out, *wt, *maps, sy, sx, cols, *common)
    return out.reshape(shape)


def _border_map(like: Tensor, n: int, before: int, after: int, mode: BorderMode) -> Tensor:
    """int32 source index of each padded position of an axis (-1: the constant value)."""
    if mode == "constant":
        pos = np.arange(-before, n + after)
        index = np.where((pos >= 0) & (pos < n), pos, -1)
    else:
        index = border_index(n, before, after, mode)
    return burn.tensor(index.astype(np.int32), dtype=burn.int32, device=like.device)
