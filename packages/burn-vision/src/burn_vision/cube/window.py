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
CUBE_DIM = 64
#: adjacent output pixels per unit of the interior kernel with more than VECTOR_TAPS taps
#: (scalar code that reuses each row's loads across the lanes)
LANES = 16
#: windows of at most this many taps run one pixel per unit (gcc vectorizes that unit loop;
#: it does not with more taps, having too many possibly aliasing reads)
VECTOR_TAPS = 7
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
def _kernel(reduction: str, dtype: DType, taps: tuple[tuple[int, int], ...], lanes: int
            ) -> Any:
    """The window kernel for `taps` (row, column offsets from the window's top-left corner).

    Args:
        reduction: one of REDUCTIONS.
        dtype: the image dtype.
        taps: the mask's (i, j) positions, in raster order.
        lanes: output pixels per unit. 0: border strips, one pixel per unit, read through row
            and column maps. Otherwise the interior, `lanes` adjacent pixels per unit read at
            flat indexes a constant apart.
    Returns:
        A kernel over cubes (units / CUBE_DIM, rows, planes) of the region (y0, x0, rows,
        cols) of the output; filter's weights are the scalars w0, w1, ... (one per tap).
    """
    from burn.ir.cube import cube_dtype
    from burn_cube import KernelBuilder, i32

    cd = cube_dtype("vision_window", dtype)
    b = KernelBuilder(f"vision_{reduction}{lanes or '_border'}", cube_dim=CUBE_DIM)
    src = b.tensor("src", cd, rank=3, write=False)
    out = b.tensor("out", cd, rank=3, write=True)
    rmap = b.tensor("rmap", i32, rank=1, write=False) if not lanes else None
    cmap = b.tensor("cmap", i32, rank=1, write=False) if not lanes else None
    y0, x0, units = b.scalar("y0", i32), b.scalar("x0", i32), b.scalar("units", i32)
    value = b.scalar("value", cd)
    ay, ax = b.scalar("ay", i32), b.scalar("ax", i32)
    weights = [b.scalar(f"w{t}", cd) if reduction == "filter" else None
               for t in range(len(taps))]
    plane = b.cast(b.CUBE_POS_Z, i32)
    y = y0 + b.cast(b.CUBE_POS_Y, i32)
    u = b.cast(b.CUBE_POS_X, i32) * CUBE_DIM + b.cast(b.UNIT_POS_X, i32)
    with b.if_(u < units):
        accs: list[Any] = [None] * max(lanes, 1)
        for (i, j), w in zip(taps, weights, strict=True):
            if rmap is not None and cmap is not None:
                r, c = rmap[y + i], cmap[x0 + u + j]
                v = b.local(cd, value)
                with b.if_(b.and_(r >= 0, c >= 0)):
                    b.set(v, src[plane, r, c])
                values = [v]
            else:
                row = src.offset + plane * src.stride[0] + (y + (i - ay)) * src.stride[1]
                first = row + (x0 - ax) + u * lanes
                values = [src[first + (j + k)] for k in range(lanes)]
            for k, v in enumerate(values):
                if accs[k] is None:
                    accs[k] = b.local(cd, v * w if w is not None else v)
                else:
                    b.set(accs[k], _fold(b, reduction, cd, accs[k], v, w))
        if lanes:
            start = out.offset + plane * out.stride[0] + y * out.stride[1] + x0 + u * lanes
            for k, acc in enumerate(accs):
                out[start + k] = acc
        else:
            out[plane, y, x0 + u] = accs[0]
    return b.kernel()


def window(x: Tensor, reduction: str, mask: np.ndarray, weights: np.ndarray | None,
           anchor: tuple[int, int], border: BorderMode, value: float | bool) -> Tensor:
    """The window reduction of `x` [..., H, W] over the true taps of `mask` [kh, kw].

    Args:
        x: [..., H, W] of one of the reduction's dtypes, H and W >= 1.
        reduction: "filter", "erode" or "dilate".
        mask: bool [kh, kw] (for filter: the nonzero weights).
        weights: filter's [kh, kw] weights for every plane.
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
    scalars = [] if weights is None else [float(weights[i, j]) for i, j in taps]
    fill = bool(value) if x.dtype == burn.bool_ else value
    common = (fill, ay, ax, *scalars)
    # interior: rows [ay, h - (kh - 1 - ay)), whole lanes of columns from ax on
    lanes = 1 if len(taps) <= VECTOR_TAPS else LANES
    iy0, iy1 = ay, h - (kh - 1 - ay)
    ix0 = ax
    units = max(0, w - (kw - 1 - ax) - ix0) // lanes
    ix1 = ix0 + units * lanes
    if iy1 > iy0 and units:
        launch(x, _kernel(reduction, x.dtype, taps, lanes),
               (cube_count(units, CUBE_DIM), iy1 - iy0, planes), CUBE_DIM,
               src, out, iy0, ix0, units, *common)
        strips = [(0, 0, iy0, w), (iy1, 0, h - iy1, w), (iy0, 0, iy1 - iy0, ix0),
                  (iy0, ix1, iy1 - iy0, w - ix1)]
    else:
        strips = [(0, 0, h, w)]
    maps = [_border_map(x, n, before, k - 1 - before, border)
            for n, before, k in ((h, ay, kh), (w, ax, kw))]
    border_kernel = _kernel(reduction, x.dtype, taps, 0)
    for sy, sx, rows, cols in strips:
        if rows > 0 and cols > 0:
            launch(x, border_kernel, (cube_count(cols, CUBE_DIM), rows, planes), CUBE_DIM,
                   src, out, *maps, sy, sx, cols, *common)
    return out.reshape(shape)


def _border_map(like: Tensor, n: int, before: int, after: int, mode: BorderMode) -> Tensor:
    """int32 source index of each padded position of an axis (-1: the constant value)."""
    if mode == "constant":
        pos = np.arange(-before, n + after)
        index = np.where((pos >= 0) & (pos < n), pos, -1)
    else:
        index = border_index(n, before, after, mode)
    return burn.tensor(index.astype(np.int32), dtype=burn.int32, device=like.device)
