"""Sliding windows over the trailing spatial dims (im2col view) and their adjoint (col2im)."""

from __future__ import annotations

from collections.abc import Sequence
from types import EllipsisType

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def pad_spatial(x: np.ndarray, pads: Sequence[tuple[int, int]], value: float = 0.0) -> np.ndarray:
    """Pads the trailing len(pads) dims of x with a constant.

    Args:
        x: array [..., *spatial].
        pads: (before, after) per spatial dim.
        value: fill value.

    Returns:
        The padded array (x itself when nothing is padded).
    """
    if not any(lo or hi for lo, hi in pads):
        return x
    lead = [(0, 0)] * (x.ndim - len(pads))
    return np.pad(x, [*lead, *pads], constant_values=value)


def windows(
    xp: np.ndarray,
    kernel: Sequence[int],
    stride: Sequence[int],
    dilation: Sequence[int],
    out: Sequence[int] | None = None,
) -> np.ndarray:
    """Strided view of the windows over the trailing len(kernel) dims of an (already padded) array.

    Args:
        xp: array [..., *spatial].
        kernel: kernel size per spatial dim.
        stride: stride per spatial dim.
        dilation: dilation per spatial dim.
        out: optional number of window positions to keep per dim (a prefix).

    Returns:
        Read-only view [..., *out, *kernel] (no copy).
    """
    nd = len(kernel)
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation, strict=True))
    view = sliding_window_view(xp, span, axis=tuple(range(xp.ndim - nd, xp.ndim)))
    if out is None:
        ends: list[int | None] = [None] * nd
    else:
        ends = [(o - 1) * s + 1 for o, s in zip(out, stride, strict=True)]
    index = (
        (Ellipsis,)
        + tuple(slice(None, e, s) for e, s in zip(ends, stride, strict=True))
        + tuple(slice(None, None, d) for d in dilation)
    )
    return view[index]


def scatter_windows(
    cols: np.ndarray, spatial: Sequence[int], stride: Sequence[int], dilation: Sequence[int]
) -> np.ndarray:
    """Adjoint of `windows` (col2im): sums window values back onto the positions they read.

    Args:
        cols: array [..., *out, *kernel].
        spatial: spatial shape of the (padded) array the windows were taken from.
        stride: stride per spatial dim.
        dilation: dilation per spatial dim.

    Returns:
        Array [..., *spatial] of cols.dtype.
    """
    nd = len(spatial)
    out = cols.shape[cols.ndim - 2 * nd : cols.ndim - nd]
    kernel = cols.shape[cols.ndim - nd :]
    res = np.zeros((*cols.shape[: cols.ndim - 2 * nd], *spatial), cols.dtype)
    for offset in np.ndindex(*kernel):
        target: tuple[EllipsisType | slice, ...] = (..., *(
            slice(k * d, k * d + s * (o - 1) + 1, s)
            for k, d, s, o in zip(offset, dilation, stride, out, strict=True)
        ))
        res[target] += cols[(..., *(slice(None),) * nd, *offset)]
    return res
