"""Cache-sized row stripes for the NumPy fast paths: sliding-window ops over [..., H, W] run one
stripe of output rows at a time on a small padded copy, so every pass of a window reduction or
a correlation stays in cache instead of streaming the whole image per tap."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from burn_vision.border import BorderMode, border_index

#: elements per padded stripe (all leading dims together): a few hundred KiB of float32
STRIPE_ELEMENTS = 1 << 15


def padded_stripes(a: np.ndarray, top: int, bottom: int, left: int, right: int,
                   mode: BorderMode, value: float | bool
                   ) -> Iterator[tuple[int, int, np.ndarray]]:
    """Padded stripes of `a`'s last two dims, top to bottom.

    Args:
        a: [..., H, W].
        top, bottom, left, right: pixels added on each side (as `border.pad2d`).
        mode: the border mode.
        value: the "constant" fill.
    Returns:
        An iterator of (r0, r1, stripe): output rows r0:r1 and the padded rows they read,
        stripe [..., r1 - r0 + top + bottom, W + left + right] (a buffer reused between steps).
    """
    if a.size == 0:
        return
    h, w = a.shape[-2:]
    lead = a.shape[:-2]
    planes = int(np.prod(lead, dtype=np.int64))
    rows = max(1, STRIPE_ELEMENTS // max(1, planes * (w + left + right)))
    rmap = _index_map(h, top, bottom, mode)
    cmap = _index_map(w, left, right, mode)
    halo = top + bottom
    buf = np.empty(lead + (min(rows, h) + halo, w + left + right), dtype=a.dtype)
    for r0 in range(0, h, rows):
        r1 = min(h, r0 + rows)
        stripe = buf[..., :r1 - r0 + halo, :]
        src = rmap[r0:r1 + halo]
        inner = stripe[..., left:left + w]
        if src[0] >= 0 and src[-1] - src[0] == len(src) - 1 and np.all(np.diff(src) == 1):
            inner[...] = a[..., src[0]:src[-1] + 1, :]
        else:
            inside = src >= 0
            inner[..., inside, :] = a[..., src[inside], :]
            inner[..., ~inside, :] = value
        for cols in (slice(0, left), slice(left + w, w + left + right)):
            edge = cmap[cols]
            if mode == "constant":
                stripe[..., cols] = value
            elif edge.size:
                stripe[..., cols] = stripe[..., left + edge]
        yield r0, r1, stripe


def _index_map(n: int, before: int, after: int, mode: BorderMode) -> np.ndarray:
    """Source index of each padded position of an axis; -1 outside for "constant"."""
    if mode != "constant":
        return border_index(n, before, after, mode)
    pos = np.arange(-before, n + after, dtype=np.int64)
    return np.where((pos >= 0) & (pos < n), pos, -1)
