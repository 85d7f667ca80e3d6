"""Connected-component labelling with burn ops: minimum-label propagation with pointer jumping
(each pixel starts with its raster index + 1 and takes the least label of its neighbourhood
until nothing changes), then optional compaction; statistics by segmented sorts."""

from __future__ import annotations

import numpy as np

import burn
from burn import Tensor
from burn_vision.default.window import window_reduce
from burn_vision.stats import ConnectedStats, Connectivity

_CROSS = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], dtype=bool)
_SQUARE = np.ones((3, 3), dtype=bool)


def _minimum(a: Tensor, b: Tensor) -> Tensor:
    return burn.where(b < a, b, a)


def connected_components(img: Tensor, connectivity: Connectivity, compact: bool) -> Tensor:
    """Labels of the true pixels of `img` [B, H, W] (0: background), int64 [B, H, W].

    Without compaction each component is labelled by its first raster index + 1.
    """
    b, h, w = img.shape
    n = h * w
    if b == 0 or n == 0:
        return burn.zeros(img.shape, dtype=burn.int64, device=img.device)
    big = n + 1
    index = burn.arange(1, n + 1, dtype=burn.int64, device=img.device).reshape(1, h, w)
    labels = burn.where(img, index.expand(img.shape), big)
    mask = _SQUARE if connectivity == 8 else _CROSS
    flat_fg = img.reshape(b, n)
    while True:
        padded = labels.pad((1, 1, 1, 1), big)
        spread = burn.where(img, window_reduce(padded, mask, (h, w), _minimum), big)
        flat = spread.reshape(b, n)
        # pointer jumping: a label names a pixel of the same component holding a label <= it.
        jumped = flat.gather(1, burn.where(flat_fg, flat - 1, 0))
        flat = burn.where(flat_fg, _minimum(flat, jumped), big)
        new = flat.reshape(b, h, w)
        if bool(new.equal(labels).all().item()):
            break
        labels = new
    return finish_labels(labels, img, compact)


def finish_labels(labels: Tensor, img: Tensor, compact: bool) -> Tensor:
    """Labels naming each component by its first raster index + 1 (any value on the
    background), made 0 on the background and, with `compact`, numbered 1..n in raster order.

    Args:
        labels: int64 [B, H, W].
        img: the bool image [B, H, W] they label.
        compact: renumber 1..n per image.
    Returns:
        int64 [B, H, W].
    """
    b, h, w = img.shape
    n = h * w
    flat = labels.reshape(b, n)
    flat_fg = img.reshape(b, n)
    if compact:
        index = burn.arange(1, n + 1, dtype=burn.int64, device=img.device).reshape(1, n)
        roots = flat_fg.logical_and(flat.equal(index))
        ids = roots.int().cumsum(1)
        flat = ids.gather(1, burn.where(flat_fg, flat - 1, 0))
    return burn.where(flat_fg, flat, 0).reshape(b, h, w)


def connected_stats(labels: Tensor) -> ConnectedStats:
    """Statistics of labelled images [B, H, W] (int64, 0: background)."""
    b, h, w = labels.shape
    n = h * w
    device = labels.device
    top_label = int(labels.max().item()) if labels.numel() else 0
    slots = top_label + 2  # the last slot receives the writes that are thrown away
    flat = labels.reshape(b, n)
    area = burn.zeros((b, slots), dtype=burn.int64, device=device).scatter(
        1, flat, burn.ones((b, n), dtype=burn.int64, device=device), reduce="add")
    pos = burn.arange(n, dtype=burn.int64, device=device).reshape(1, n).expand((b, n))
    top, bottom = _segment_min_max(flat, pos // max(w, 1), h, slots)
    left, right = _segment_min_max(flat, pos % max(w, 1), w, slots)
    max_label = flat.max_dim(1).reshape(b) if n else burn.zeros(
        (b,), dtype=burn.int64, device=device)
    keep = slice(0, slots - 1)
    return ConnectedStats(area[:, keep], left[:, keep], top[:, keep], right[:, keep],
                          bottom[:, keep], max_label)


def _segment_min_max(labels: Tensor, values: Tensor, span: int, slots: int
                     ) -> tuple[Tensor, Tensor]:
    """Per-label min and max of `values` in [0, span): sort label * span + value, then the
    first and last entry of each label's run hold them."""
    b, n = labels.shape
    device = labels.device
    zeros = burn.zeros((b, slots), dtype=burn.int64, device=device)
    if n == 0:
        return zeros, zeros
    keys = labels * span + values
    ordered, _ = keys.sort_with_indices(dim=1)
    seg = ordered // span
    value = ordered - seg * span
    dump = burn.full((b, 1), slots - 1, dtype=burn.int64, device=device)
    first = burn.cat([burn.ones((b, 1), dtype=burn.bool_, device=device),
                      seg[:, 1:].not_equal(seg[:, :-1])], 1)
    last = burn.cat([seg[:, 1:].not_equal(seg[:, :-1]),
                     burn.ones((b, 1), dtype=burn.bool_, device=device)], 1)
    lo = zeros.scatter(1, burn.where(first, seg, dump.expand((b, n))), value)
    hi = zeros.scatter(1, burn.where(last, seg, dump.expand((b, n))), value)
    return lo, hi
