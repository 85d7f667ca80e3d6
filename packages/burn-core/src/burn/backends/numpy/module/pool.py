"""Pooling kernels (avg, max with indices, adaptive avg; 1d and 2d) with backward."""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import EllipsisType

import numpy as np

from burn.backend.options import PoolOptions, window_out
from burn.errors import ShapeError

from .common import apply_axis_matrices, work_dtype
from .windows import pad_spatial, scatter_windows, windows


def _geometry(
    op: str, x: np.ndarray, options: PoolOptions
) -> tuple[list[int], list[tuple[int, int]]]:
    """Output spatial shape and (before, after) padding (after grows for ceil_mode overhang)."""
    nd = len(options.kernel_size)
    params = (options.stride, options.padding, options.dilation)
    if nd not in (1, 2) or x.ndim != nd + 2 or any(len(p) != nd for p in params):
        raise ShapeError(
            op,
            "x must be [N, C, *spatial] with 1 or 2 spatial dims matching the options",
            x=x.shape,
            kernel_size=options.kernel_size,
        )
    out = window_out(x.shape[2:], options.kernel_size, *params, options.ceil_mode)
    if min(out) < 1:
        raise ShapeError(
            op,
            "kernel larger than the padded input",
            x=x.shape,
            kernel_size=options.kernel_size,
        )
    pads = [
        (p, p + max((o - 1) * s + d * (k - 1) + 1 - (n + 2 * p), 0))  # ceil_mode overhang
        for n, o, k, s, p, d in zip(x.shape[2:], out, options.kernel_size, *params, strict=True)
    ]
    return out, pads


def _avg_divisor(
    x: np.ndarray, options: PoolOptions, out: list[int], pads: list[tuple[int, int]]
) -> np.ndarray:
    """Per-window element count [*out]: padded positions count only with count_include_pad."""
    nd = len(out)
    counted = np.zeros([n + lo + hi for n, (lo, hi) in zip(x.shape[2:], pads, strict=True)])
    inner = options.padding if options.count_include_pad else (0,) * nd
    region = tuple(
        slice(lo - q, lo + n + q) for n, (lo, _), q in zip(x.shape[2:], pads, inner, strict=True)
    )
    counted[region] = 1
    win = windows(counted, options.kernel_size, options.stride, options.dilation, out)
    return win.sum(axis=tuple(range(nd, 2 * nd)))


def avg_pool(x: np.ndarray, options: PoolOptions) -> np.ndarray:
    """Average pooling 1d/2d (PyTorch's count_include_pad and ceil_mode).

    Args:
        x: input [N, C, *spatial].
        options: kernel_size, stride, padding, dilation, ceil_mode, count_include_pad.

    Returns:
        Output [N, C, *out] of x's dtype.
    """
    out, pads = _geometry("avg_pool", x, options)
    nd = len(out)
    xp = pad_spatial(x.astype(work_dtype(x.dtype), copy=False), pads)
    win = windows(xp, options.kernel_size, options.stride, options.dilation, out)
    y = win.sum(axis=tuple(range(-nd, 0))) / _avg_divisor(x, options, out, pads)
    return y.astype(x.dtype, copy=False)


def avg_pool_backward(x: np.ndarray, grad_out: np.ndarray, options: PoolOptions) -> np.ndarray:
    """Gradient of `avg_pool` with respect to its input.

    Args:
        x: input [N, C, *spatial].
        grad_out: gradient of the output [N, C, *out].
        options: the forward's options.

    Returns:
        grad_x of x's shape and dtype.
    """
    out, pads = _geometry("avg_pool_backward", x, options)
    if grad_out.shape != (*x.shape[:2], *out):
        raise ShapeError(
            "avg_pool_backward",
            "grad_out must have the output's shape",
            grad_out=grad_out.shape,
            x=x.shape,
        )
    nd = len(out)
    g = grad_out.astype(work_dtype(x.dtype), copy=False) / _avg_divisor(x, options, out, pads)
    cols = np.broadcast_to(g[(Ellipsis, *(None,) * nd)], (*g.shape, *options.kernel_size))
    padded = [n + lo + hi for n, (lo, hi) in zip(x.shape[2:], pads, strict=True)]
    full = scatter_windows(cols, padded, options.stride, options.dilation)
    crop: tuple[EllipsisType | slice, ...] = (
        ..., *(slice(lo, lo + n) for n, (lo, _) in zip(x.shape[2:], pads, strict=True)))
    return np.ascontiguousarray(full[crop]).astype(x.dtype, copy=False)


def max_pool_with_indices(x: np.ndarray, options: PoolOptions) -> tuple[np.ndarray, np.ndarray]:
    """Max pooling 1d/2d with -inf padding; the last NaN wins, ties go to the first window
    element (a window of -inf only names its first tap inside x), as torch.

    Args:
        x: input [N, C, *spatial].
        options: kernel_size, stride, padding, dilation, ceil_mode.

    Returns:
        (output [N, C, *out] of x's dtype, int64 indices [N, C, *out] flat within each input plane).
    """
    out, pads = _geometry("max_pool", x, options)
    nd = len(out)
    xp = pad_spatial(x.astype(work_dtype(x.dtype), copy=False), pads, -np.inf)
    win = windows(xp, options.kernel_size, options.stride, options.dilation, out)
    y, arg = _window_argmax(win, options.kernel_size, bool(np.isnan(x).any()))
    # flat index in the plane = window start (per output position) + offset (per argmax)
    plane = [math.prod(x.shape[3 + i:]) for i in range(nd)]
    start = np.zeros(out, np.int64)
    for i, (o, s, p, step) in enumerate(
        zip(out, options.stride, options.padding, plane, strict=True)
    ):
        start += ((np.arange(o) * s - p) * step).reshape(-1, *(1,) * (nd - 1 - i))
    kernel = options.kernel_size
    offset = np.zeros(kernel, np.int64)
    for i, (k, d, step) in enumerate(zip(kernel, options.dilation, plane, strict=True)):
        offset += (np.arange(k) * d * step).reshape(-1, *(1,) * (nd - 1 - i))
    index = offset.reshape(-1).take(arg)
    index += start
    if any(options.padding):
        index = np.where(y == -np.inf, _first_inside(out, options, plane), index)
    return y.astype(x.dtype, copy=False), index


def _first_inside(out: Sequence[int], options: PoolOptions, plane: list[int]) -> np.ndarray:
    """Flat index in the plane of each window's first tap inside x: a window of -inf only
    names it (as torch), not a padding tap that lies in the plane's previous row.

    Args:
        out: the output's spatial shape.
        options: the pooling options (stride, padding, dilation).
        plane: each spatial dim's step in the flattened plane.

    Returns:
        int64 indices broadcastable to [N, C, *out].
    """
    nd = len(out)
    first = np.zeros(out, np.int64)
    for i, (o, s, p, d, step) in enumerate(
        zip(out, options.stride, options.padding, options.dilation, plane, strict=True)
    ):
        begin = np.arange(o) * s - p
        skip = np.maximum(0, -(begin // d))  # taps before x: ceil(-begin / d) where begin < 0
        first += ((begin + skip * d) * step).reshape(-1, *(1,) * (nd - 1 - i))
    return first


def _window_argmax(
    win: np.ndarray, kernel: tuple[int, ...], has_nan: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Max and flat argmax over the trailing kernel dims of a window view, one branch-free pass
    per kernel offset (no copy of the windows); the first maximum wins, and the last NaN over
    any number (as torch's max pooling)."""
    offsets = list(np.ndindex(*kernel))
    best = np.array(win[(..., *offsets[0])])
    arg = np.zeros(best.shape, np.min_scalar_type(len(offsets)))
    for t, offset in enumerate(offsets[1:], start=1):
        value = win[(..., *offset)]
        better = value > best
        if has_nan:
            better |= np.isnan(value)
        np.copyto(best, value, where=better)  # the winner's own value: -0.0 before 0.0 stays
        arg *= ~better
        arg += better * arg.dtype.type(t)
    return best, arg


def max_pool_backward(
    x: np.ndarray, indices: np.ndarray, grad_out: np.ndarray, options: PoolOptions
) -> np.ndarray:
    """Gradient of max pooling: grad_out scattered (summed) onto the argmax positions.

    Args:
        x: input [N, C, *spatial].
        indices: int64 indices from `max_pool_with_indices`.
        grad_out: gradient of the output, indices' shape.
        options: the forward's options (used to validate shapes).

    Returns:
        grad_x of x's shape and dtype.
    """
    out, _ = _geometry("max_pool_backward", x, options)
    if grad_out.shape != (*x.shape[:2], *out) or indices.shape != grad_out.shape:
        raise ShapeError(
            "max_pool_backward",
            "indices and grad_out must have the output's shape",
            indices=indices.shape,
            grad_out=grad_out.shape,
            x=x.shape,
        )
    n, c = x.shape[:2]
    plane = math.prod(x.shape[2:])
    flat = indices.reshape(n * c, math.prod(out)) + (np.arange(n * c) * plane)[:, None]
    gx = np.zeros(n * c * plane, work_dtype(x.dtype))
    values = grad_out.reshape(-1).astype(gx.dtype, copy=False)
    spans = (d * (k - 1) + 1 for k, d in zip(options.kernel_size, options.dilation, strict=True))
    if all(s >= span for s, span in zip(options.stride, spans, strict=True)):
        gx[flat.ravel()] = values  # windows do not overlap: each position is hit at most once
    else:
        np.add.at(gx, flat.ravel(), values)
    return gx.reshape(x.shape).astype(x.dtype, copy=False)


def _adaptive_matrix(size: int, out: int) -> np.ndarray:
    """[out, size] averaging matrix over [floor(i*size/out), ceil((i+1)*size/out))."""
    i = np.arange(out)
    start, end = (i * size) // out, -((-(i + 1) * size) // out)
    j = np.arange(size)
    return ((j >= start[:, None]) & (j < end[:, None])) / (end - start)[:, None]


def _check_adaptive(op: str, x: np.ndarray, output_size: tuple[int, ...]) -> None:
    nd = len(output_size)
    if nd not in (1, 2) or x.ndim != nd + 2 or min(output_size) < 1:
        raise ShapeError(
            op,
            "x must be [N, C, *spatial] with 1 or 2 spatial dims, output sizes >= 1",
            x=x.shape,
            output_size=output_size,
        )


def _adaptive_matrices(op: str, x: np.ndarray, output_size: tuple[int, ...]) -> list[np.ndarray]:
    """Per-axis averaging matrices of an adaptive average pooling (separable)."""
    _check_adaptive(op, x, output_size)
    wt = work_dtype(x.dtype)
    sizes = zip(x.shape[2:], output_size, strict=True)
    return [_adaptive_matrix(n, o).astype(wt) for n, o in sizes]


def _window_means(x: np.ndarray, axis: int, out: int) -> np.ndarray:
    """Means of `x` along `axis` over PyTorch's adaptive windows, one pass per tap from 0.0
    (taps past a window read an appended zero), so a NaN or infinity reaches only the windows
    holding it."""
    size = x.shape[axis]
    i = np.arange(out)
    start, end = (i * size) // out, -((-(i + 1) * size) // out)
    pads = [(0, 0)] * x.ndim
    pads[axis] = (0, 1)
    padded = np.pad(x, pads)
    total = np.zeros(x.shape[:axis] + (out,) + x.shape[axis + 1:], x.dtype)
    for k in range(int((end - start).max())):
        total += np.take(padded, np.where(start + k < end, start + k, size), axis=axis)
    shape = [1] * x.ndim
    shape[axis] = out
    return total / (end - start).astype(x.dtype).reshape(shape)


def adaptive_avg_pool(x: np.ndarray, output_size: tuple[int, ...]) -> np.ndarray:
    """Adaptive average pooling 1d/2d (PyTorch's window bounds).

    The separable averaging matrices run first; where their output is not finite (every input
    element has a non-zero weight in some output, so a NaN or infinity of the input always
    shows there) the pooling runs again window by window, so that a NaN or infinity stays in
    its windows as in PyTorch.

    Args:
        x: input [N, C, *spatial].
        output_size: output spatial shape, one entry per spatial dim.

    Returns:
        Output [N, C, *output_size] of x's dtype.
    """
    _check_adaptive("adaptive_avg_pool", x, output_size)
    y = x.astype(work_dtype(x.dtype), copy=False)
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf windows are NaN, quietly
        mats = _adaptive_matrices("adaptive_avg_pool", x, output_size)
        out = apply_axis_matrices(y, mats)
        if np.isfinite(np.add.reduce(out, axis=None)):
            return out.astype(x.dtype, copy=False)
        for i, o in reversed(list(enumerate(output_size))):
            y = _window_means(y, 2 + i, o)
    return y.astype(x.dtype)


def adaptive_avg_pool_backward(x: np.ndarray, grad_out: np.ndarray) -> np.ndarray:
    """Gradient of `adaptive_avg_pool` with respect to its input.

    Args:
        x: input [N, C, *spatial].
        grad_out: gradient of the output [N, C, *output_size].

    Returns:
        grad_x of x's shape and dtype.
    """
    if grad_out.ndim != x.ndim or grad_out.shape[:2] != x.shape[:2]:
        raise ShapeError(
            "adaptive_avg_pool_backward",
            "grad_out must be [N, C, *output_size]",
            grad_out=grad_out.shape,
            x=x.shape,
        )
    mats = _adaptive_matrices("adaptive_avg_pool_backward", x, grad_out.shape[2:])
    g = grad_out.astype(mats[0].dtype, copy=False)
    return apply_axis_matrices(g, [m.T for m in mats]).astype(x.dtype)
