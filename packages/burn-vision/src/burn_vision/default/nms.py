"""Greedy non-maximum suppression with burn ops, as a fixed point (Cluster-NMS): a box is kept
when no kept box of higher rank overlaps it; iterating `keep = not any(keep_i and overlap_ij)`
from all-kept reaches exactly the greedy result."""

from __future__ import annotations

import numpy as np

import burn
from burn import Tensor
from burn.dtype import DType


def iou_matrix(a: Tensor, b: Tensor) -> Tensor:
    """Intersection over union of boxes a [N, 4] and b [M, 4] (x1, y1, x2, y2): [N, M]
    (0 where the union is empty)."""
    ax1, ay1, ax2, ay2 = (a[:, k:k + 1] for k in range(4))
    bx1, by1, bx2, by2 = (b[:, k].reshape(1, -1) for k in range(4))
    iw = (burn.where(ax2 < bx2, ax2, bx2) - burn.where(ax1 > bx1, ax1, bx1)).clamp_min(0.0)
    ih = (burn.where(ay2 < by2, ay2, by2) - burn.where(ay1 > by1, ay1, by1)).clamp_min(0.0)
    inter = iw * ih
    union = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter
    return burn.where(union > 0, inter / burn.where(union > 0, union, 1.0), 0.0)


def iou_cut(iou_threshold: float, dtype: DType) -> float:
    """The threshold to compare IoUs computed in `dtype` with, so that `iou > cut` in `dtype`
    holds exactly when the IoU, widened to float64, exceeds `iou_threshold` (torchvision's
    kernels compare the IoU of the boxes' dtype with the threshold as a double).

    The cut is `iou_threshold` rounded down to `dtype`: rounding to nearest can round up (0.3
    becomes 0.30000001 in float32), and an IoU of exactly 0.30000001 would then survive.

    Args:
        iou_threshold: the threshold, a Python float.
        dtype: the float dtype the IoUs are computed in.
    Returns:
        A float exactly representable in `dtype`.
    """
    kind = np.dtype(dtype.numpy)
    cut = kind.type(iou_threshold)
    if float(cut) > iou_threshold:
        cut = np.nextafter(cut, kind.type(-np.inf))
    return float(cut)


def nms(boxes: Tensor, scores: Tensor, iou_threshold: float, score_threshold: float | None,
        max_output: int | None) -> Tensor:
    """Indices (int64 [K]) of the boxes kept, by decreasing score (ties: lower index first)."""
    device = boxes.device
    index = burn.arange(boxes.shape[0], dtype=burn.int64, device=device)
    if score_threshold is not None:
        index = index.mask_select(scores > score_threshold)
    if index.shape[0] == 0:
        return index
    _, order = scores.index_select(0, index).sort_with_indices(descending=True)
    index = index.index_select(0, order)
    ranked = boxes.index_select(0, index)
    m = index.shape[0]
    cut = iou_cut(iou_threshold, ranked.dtype)
    overlap = (iou_matrix(ranked, ranked) > cut).float().triu(1)
    keep = burn.ones((1, m), device=device)
    for _ in range(m):
        new = (keep.matmul(overlap) == 0).float()
        if bool(new.equal(keep).all().item()):
            break
        keep = new
    kept = index.mask_select(keep.reshape(m) > 0)
    return kept if max_output is None else kept[:max_output]
