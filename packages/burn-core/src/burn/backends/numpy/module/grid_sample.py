"""2d grid sampling (PyTorch's F.grid_sample: bilinear/nearest, zeros/border/reflection)."""

from __future__ import annotations

import numpy as np

from burn.backend.options import GridSampleOptions
from burn.errors import ShapeError, ValueRangeError

from .._common import quiet
from .common import work_dtype
from .sampling import sample, sample_backward


def _clip(coord: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Clamps to [0, size-1], a NaN to 0 (fmax / fmin, as torch and the cube kernels; np.clip
    kept it); the derivative is 1 strictly inside, else 0."""
    inside = (coord > 0) & (coord < size - 1)
    return np.fmin(np.fmax(coord, 0), size - 1), inside.astype(coord.dtype)


def _reflect(coord: np.ndarray, twice_low: int, twice_high: int) -> tuple[np.ndarray, np.ndarray]:
    """Reflects into [twice_low/2, twice_high/2]; returns (coordinate, derivative in {-1, 1}).

    As PyTorch's CPU kernel, whole double spans come off by the truncated quotient in the
    coordinate's dtype (not an exact fmod), so a huge coordinate lands where torch's does:
    the rounded product leaves 0 or a value past the image, clipped to its border."""
    if twice_low == twice_high:
        return np.zeros_like(coord), np.zeros_like(coord)
    low, twice_span = twice_low / 2, twice_high - twice_low
    rel = coord - low
    folded = np.abs(rel)
    extra = folded - np.trunc(folded / twice_span) * twice_span
    reflected = twice_span - extra
    flip = extra > reflected
    sign = np.where(flip ^ (rel < 0), -1, 1).astype(coord.dtype)
    return np.where(flip, reflected, extra) + low, sign


def _source(
    coord: np.ndarray, size: int, options: GridSampleOptions
) -> tuple[np.ndarray, np.ndarray]:
    """Pixel coordinate of normalized grid values, and its derivative wrt the grid value."""
    if options.align_corners:
        src, scale = (coord + 1) / 2 * (size - 1), (size - 1) / 2
    else:
        src, scale = ((coord + 1) * size - 1) / 2, size / 2
    grad = np.full_like(coord, scale)
    if options.padding_mode == "border":
        src, d_clip = _clip(src, size)
        grad *= d_clip
    elif options.padding_mode == "reflection":
        twice = (0, 2 * (size - 1)) if options.align_corners else (-1, 2 * size - 1)
        src, d_reflect = _reflect(src, *twice)
        src, d_clip = _clip(src, size)
        grad *= d_reflect * d_clip
    elif options.padding_mode != "zeros":
        raise ValueRangeError("grid_sample_2d", "unknown padding mode", mode=options.padding_mode)
    return src, grad


def _points(
    op: str, x: np.ndarray, grid: np.ndarray, options: GridSampleOptions
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Validates shapes; returns (py, px [N, Ho*Wo], dpy/dgrid_y, dpx/dgrid_x)."""
    if x.ndim != 4 or grid.ndim != 4 or grid.shape[0] != x.shape[0] or grid.shape[3] != 2:
        raise ShapeError(
            op, "x must be [N, C, H, W] and grid [N, Ho, Wo, 2]", x=x.shape, grid=grid.shape
        )
    if options.mode not in ("bilinear", "nearest"):
        raise ValueRangeError(op, "unknown mode", mode=options.mode)
    g = grid.astype(work_dtype(x.dtype), copy=False).reshape(
        x.shape[0], grid.shape[1] * grid.shape[2], 2)
    px, dpx = _source(g[..., 0], x.shape[3], options)
    py, dpy = _source(g[..., 1], x.shape[2], options)
    return py, px, dpy, dpx


@quiet  # NaN / inf grid points give NaN or clamp, as torch, without numpy warnings
def grid_sample_2d(x: np.ndarray, grid: np.ndarray, options: GridSampleOptions) -> np.ndarray:
    """Samples x at normalized grid points (x, y) in [-1, 1].

    Args:
        x: input [N, C, H, W].
        grid: sampling points [N, Ho, Wo, 2], last dim (x, y).
        options: mode, padding_mode, align_corners.

    Returns:
        Output [N, C, Ho, Wo] of x's dtype.
    """
    py, px, _, _ = _points("grid_sample_2d", x, grid, options)
    y = sample(x.astype(py.dtype, copy=False), py, px, options.mode)
    return y.reshape(*x.shape[:2], *grid.shape[1:3]).astype(x.dtype, copy=False)


@quiet
def grid_sample_2d_backward(
    x: np.ndarray, grid: np.ndarray, grad_out: np.ndarray, options: GridSampleOptions,
    need_x: bool = True, need_grid: bool = True,
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Gradients of `grid_sample_2d` (the grid gradient is zero for nearest, as in PyTorch).

    Args:
        x: input [N, C, H, W].
        grid: sampling points [N, Ho, Wo, 2].
        grad_out: gradient of the output [N, C, Ho, Wo].
        options: the forward's options.
        need_x, need_grid: which gradients to compute (the other is None).

    Returns:
        (grad_x of x's shape, grad_grid of grid's shape), in their input dtypes.
    """
    op = "grid_sample_2d_backward"
    py, px, dpy, dpx = _points(op, x, grid, options)
    if grad_out.shape != (*x.shape[:2], *grid.shape[1:3]):
        raise ShapeError(
            op,
            "grad_out must be [N, C, Ho, Wo]",
            grad_out=grad_out.shape,
            x=x.shape,
            grid=grid.shape,
        )
    g = grad_out.astype(py.dtype, copy=False).reshape(*x.shape[:2], py.shape[1])
    gx, gpy, gpx = sample_backward(x.astype(py.dtype, copy=False), py, px, g, options.mode,
                                   need_x, need_grid)
    ggrid = None if gpy is None or gpx is None else np.stack(
        [gpx * dpx, gpy * dpy], axis=-1).reshape(grid.shape).astype(grid.dtype, copy=False)
    return None if gx is None else gx.astype(x.dtype, copy=False), ggrid
