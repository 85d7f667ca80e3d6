"""Sliding-window kernels of the cube backends: filter2d (a weighted sum) and erosion /
dilation (min / max, and / or for bool) over the taps of a mask, built by one kernel generator.

An image [P, H, W] is covered by launches for the interior, whose windows lie inside the image
(indexes affine in the unit: burn-cube's C target checks bounds once per cube and vectorizes
the row), and four for the border strips, which read through per-axis index maps (-1: the
constant border value). Nothing is padded or copied. On the cpu a window of many rows runs as
passes of a few rows each, strip by strip (gcc does not vectorize a unit loop reading many
rows); GPUs take the whole window in one kernel."""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

import burn
from burn import Tensor
from burn.dtype import DType
from burn_vision.border import BorderMode, border_index
from burn_vision.cube.primitives import backend, cube_count, empty, launch

#: units per cube (one cube: a run of one output row)
CUBE_DIM = 256
#: most mask rows of one interior kernel on the cpu: gcc vectorizes the unit loop of a kernel
#: reading that many rows (one alias check per row), not of one reading many more
PASS_ROWS = 5
#: output rows per strip of the cpu's row passes (the strip and the rows it reads stay in cache)
STRIP_ROWS = 64
#: float dtypes filter2d runs on (accumulating in the dtype)
FILTER_DTYPES = (burn.float32, burn.float64)
#: dtypes erosion / dilation run on
MORPH_DTYPES = (burn.float32, burn.float64, burn.int32, burn.int64, burn.bool_)
#: the window reductions: "filter" sums the taps times their weights (scalar arguments);
#: "erode" and "dilate" take their min / max (and / or for bool)
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
def _kernel(reduction: str, dtype: DType, taps: tuple[tuple[int, int], ...], mapped: bool,
            accumulate: bool = False) -> Any:
    """The window kernel for `taps` (row, column offsets from the window's top-left corner).

    Args:
        reduction: one of REDUCTIONS.
        dtype: the image dtype.
        taps: the mask's (i, j) positions, in raster order.
        mapped: read through row and column maps (border strips); else the interior, read at
            flat indexes whose taps are a constant apart along a row (the C target's
            vectorizer then needs one alias check per row of taps).
        accumulate: fold the taps into the output's current value (row passes).
    Returns:
        A kernel over cubes (columns / CUBE_DIM, rows, planes) of the region (y0, x0, rows,
        cols) of the output; filter's weights are the scalars w0, w1, ... (one per tap).
    """
    from burn.ir.cube import cube_dtype
    from burn_cube import KernelBuilder, i32

    cd = cube_dtype("vision_window", dtype)
    b = KernelBuilder(f"vision_{reduction}{'_border' if mapped else ''}", cube_dim=CUBE_DIM)
    src = b.tensor("src", cd, rank=3, write=False)
    out = b.tensor("out", cd, rank=3, write=True)
    rmap = b.tensor("rmap", i32, rank=1, write=False) if mapped else None
    cmap = b.tensor("cmap", i32, rank=1, write=False) if mapped else None
    y0, x0, cols = b.scalar("y0", i32), b.scalar("x0", i32), b.scalar("cols", i32)
    value = b.scalar("value", cd)
    ay, ax = b.scalar("ay", i32), b.scalar("ax", i32)
    weights = [b.scalar(f"w{t}", cd) if reduction == "filter" else None
               for t in range(len(taps))]
    plane = b.cast(b.CUBE_POS_Z, i32)
    y = y0 + b.cast(b.CUBE_POS_Y, i32)
    u = b.cast(b.CUBE_POS_X, i32) * CUBE_DIM + b.cast(b.UNIT_POS_X, i32)
    x = x0 + u
    with b.if_(u < cols):
        target = out.offset + plane * out.stride[0] + y * out.stride[1] + x
        acc = b.local(cd, out[target]) if accumulate else None
        for (i, j), w in zip(taps, weights, strict=True):
            if rmap is not None and cmap is not None:
                r, c = rmap[y + i], cmap[x + j]
                v = b.local(cd, value)
                with b.if_(b.and_(r >= 0, c >= 0)):
                    b.set(v, src[plane, r, c])
            else:
                row = src.offset + plane * src.stride[0] + (y + (i - ay)) * src.stride[1]
                v = src[(row + (x - ax)) + j]
            if acc is None:
                acc = b.local(cd, v * w if w is not None else v)
            else:
                b.set(acc, _fold(b, reduction, cd, acc, v, w))
        out[target] = acc
    return b.kernel()


def window(x: Tensor, reduction: str, mask: np.ndarray, weights: np.ndarray | None,
           anchor: tuple[int, int], border: BorderMode, value: float | bool) -> Tensor:
    """The window reduction of `x` [..., H, W] over the true taps of `mask` [kh, kw].

    On the cpu, an interior of more than PASS_ROWS mask rows runs as passes of at most that many
    rows each, folded into the output strip by strip of STRIP_ROWS rows (so the strip stays in
    cache between passes); on GPUs, as one kernel.

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
    fill = bool(value) if x.dtype == burn.bool_ else value

    def run(kernel: Any, region: tuple[int, int, int, int], group: tuple[tuple[int, int], ...],
            maps: tuple[Tensor, ...] = ()) -> None:
        sy, sx, rows, cols = region
        scalars = [] if weights is None else [float(weights[i, j]) for i, j in group]
        launch(x, kernel, (cube_count(cols, CUBE_DIM), rows, planes), CUBE_DIM,
               src, out, *maps, sy, sx, cols, fill, ay, ax, *scalars)

    # interior: rows [ay, h - (kh - 1 - ay)), columns [ax, w - (kw - 1 - ax))
    iy0, iy1 = ay, h - (kh - 1 - ay)
    ix0, ix1 = ax, w - (kw - 1 - ax)
    if iy1 > iy0 and ix1 > ix0:
        groups = [taps]
        if kh > PASS_ROWS and backend(x).runtime_name == "cpu":
            groups = [g for r in range(0, kh, PASS_ROWS)
                      if (g := tuple(t for t in taps if r <= t[0] < r + PASS_ROWS))]
        step = STRIP_ROWS if len(groups) > 1 else iy1 - iy0
        for r0 in range(iy0, iy1, step):
            region = (r0, ix0, min(step, iy1 - r0), ix1 - ix0)
            for n, group in enumerate(groups):
                run(_kernel(reduction, x.dtype, group, False, n > 0), region, group)
        strips = [(0, 0, iy0, w), (iy1, 0, h - iy1, w), (iy0, 0, iy1 - iy0, ix0),
                  (iy0, ix1, iy1 - iy0, w - ix1)]
    else:
        strips = [(0, 0, h, w)]
    maps = tuple(_border_map(x, n, before, k - 1 - before, border)
                 for n, before, k in ((h, ay, kh), (w, ax, kw)))
    for strip in strips:
        if strip[2] > 0 and strip[3] > 0:
            run(_kernel(reduction, x.dtype, taps, True), strip, taps, maps)
    return out.reshape(shape)


def _border_map(like: Tensor, n: int, before: int, after: int, mode: BorderMode) -> Tensor:
    """int32 source index of each padded position of an axis (-1: the constant value)."""
    if mode == "constant":
        pos = np.arange(-before, n + after)
        index = np.where((pos >= 0) & (pos < n), pos, -1)
    else:
        index = border_index(n, before, after, mode)
    return burn.tensor(index.astype(np.int32), dtype=burn.int32, device=like.device)
