"""The NumPy backend's fast paths: the same ops computed on the host arrays (numpy and
scipy.ndimage), reached through the public Tensor API. Integer and bool results (labels,
NMS indices, bool / int morphology) take this path under any decorator; float ops only on a
plain "numpy" device, so that Autodiff differentiates the default path."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import ndimage

import burn
from burn import Tensor
from burn.dtype import Kind
from burn_vision.border import BorderMode
from burn_vision.default.nms import iou_cut
from burn_vision.default.window import window_reduce
from burn_vision.extension import VisionOps, register_vision_ops
from burn_vision.numpy_stripes import padded_stripes
from burn_vision.stats import ConnectedStats, Connectivity

_SCIPY_MODES = {"constant": "constant", "replicate": "nearest", "reflect": "reflect",
                "reflect101": "mirror", "wrap": "grid-wrap"}
_STRUCTURE = {4: ndimage.generate_binary_structure(2, 1),
              8: ndimage.generate_binary_structure(2, 2)}


def _plain(x: Tensor) -> bool:
    """True when `x` is on an undecorated device (no gradients to keep)."""
    return not x.device.decorators


class NumpyVisionOps(VisionOps):
    """Host kernels for the NumPy backend."""

    def connected_components(self, img: Tensor, connectivity: Connectivity,
                             compact: bool) -> Tensor:
        labels, _ = _label(img.to_numpy(), connectivity)
        return burn.tensor(labels, device=img.device)

    def connected_components_with_stats(self, img: Tensor, connectivity: Connectivity,
                                        compact: bool) -> tuple[Tensor, ConnectedStats]:
        labels, counts = _label(img.to_numpy(), connectivity)
        area, left, top, right, bottom = (burn.tensor(s, device=img.device)
                                          for s in _stats(labels, max(counts, default=0)))
        max_label = burn.tensor(np.asarray(counts, dtype=np.int64), device=img.device)
        return burn.tensor(labels, device=img.device), ConnectedStats(
            area, left, top, right, bottom, max_label)

    def morph(self, x: Tensor, erode: bool, mask: np.ndarray, anchor: tuple[int, int],
              border: BorderMode, value: float | bool) -> Tensor:
        if x.kind == Kind.FLOAT and not _plain(x):
            return super().morph(x, erode, mask, anchor, border, value)
        a = x.to_numpy()
        kh, kw = mask.shape
        ax, ay = anchor
        combine: Callable[[np.ndarray, np.ndarray], np.ndarray] = (
            np.minimum if erode else np.maximum)
        out = np.empty_like(a)
        for r0, r1, stripe in padded_stripes(a, ay, kh - 1 - ay, ax, kw - 1 - ax, border, value):
            out[..., r0:r1, :] = window_reduce(stripe, mask, (r1 - r0, a.shape[-1]), combine)
        return burn.tensor(out, dtype=x.dtype, device=x.device)

    def filter2d(self, x: Tensor, kernel: Tensor, anchor: tuple[int, int], border: BorderMode,
                 value: float) -> Tensor:
        if not _plain(x):
            return super().filter2d(x, kernel, anchor, border, value)
        a = x.to_numpy()
        if a.dtype in (np.float32, np.float64):
            out = _correlate_stripes(a, kernel.to_numpy().astype(a.dtype), anchor, border, value)
            return burn.tensor(out, device=x.device)
        k = kernel.to_numpy().astype(np.float64)
        kh, kw = k.shape[-2:]
        origin = (anchor[1] - kh // 2, anchor[0] - kw // 2)
        mode = _SCIPY_MODES[border]
        if k.ndim == 2:
            planes = a.reshape((-1,) + a.shape[-2:])
            out = np.stack([_correlate(p, k, origin, mode, value) for p in planes])
        else:
            c = k.shape[0]
            planes = a.reshape((-1, c) + a.shape[-2:])
            out = np.stack([np.stack([_correlate(p[i], k[i], origin, mode, value)
                                      for i in range(c)]) for p in planes])
        return burn.tensor(out.reshape(a.shape).astype(a.dtype, copy=False), device=x.device)

    def nms(self, boxes: Tensor, scores: Tensor, iou_threshold: float,
            score_threshold: float | None, max_output: int | None) -> Tensor:
        kept = _nms(boxes.to_numpy(), scores.to_numpy(), iou_cut(iou_threshold, boxes.dtype),
                    score_threshold)
        return burn.tensor(kept[:max_output], dtype=burn.int64, device=boxes.device)


def _label(img: np.ndarray, connectivity: Connectivity) -> tuple[np.ndarray, list[int]]:
    """scipy's labelling per image (compact, in raster order of the first pixel)."""
    labels = np.zeros(img.shape, dtype=np.int64)
    counts = []
    for k in range(img.shape[0]):
        if img[k].size:
            counts.append(int(ndimage.label(img[k], _STRUCTURE[connectivity],
                                            output=labels[k])))
        else:
            counts.append(0)
    return labels, counts


def _stats(labels: np.ndarray, top_label: int) -> list[np.ndarray]:
    """area, left, top, right, bottom [B, top_label + 1]: one bincount and one scatter
    min / max (ufunc.at) over the label image each.

    Args:
        labels: int64 [B, H, W].
        top_label: the largest label of the batch.
    Returns:
        Five int64 [B, top_label + 1] arrays; 0 for labels absent from an image.
    """
    b, h, w = labels.shape
    out = [np.zeros((b, top_label + 1), dtype=np.int64) for _ in range(5)]
    area, left, top, right, bottom = out
    if labels.size == 0:
        return out
    rows = np.repeat(np.arange(h, dtype=np.int64), w)
    cols = np.tile(np.arange(w, dtype=np.int64), h)
    for k in range(b):
        flat = labels[k].ravel()
        area[k] = np.bincount(flat, minlength=top_label + 1)
        present = area[k] > 0
        for target, values, ufunc in ((left, cols, np.minimum), (top, rows, np.minimum),
                                      (right, cols, np.maximum), (bottom, rows, np.maximum)):
            acc = np.full(top_label + 1, flat.size if ufunc is np.minimum else -1, np.int64)
            ufunc.at(acc, flat, values)
            target[k] = np.where(present, acc, 0)
    return out


def _correlate_stripes(a: np.ndarray, k: np.ndarray, anchor: tuple[int, int],
                       border: BorderMode, value: float) -> np.ndarray:
    """OpenCV's filter2D on float stripes, accumulated in a's dtype (one multiply-add pass per
    nonzero tap, in cache).

    Args:
        a: float [..., H, W] (with a per-channel kernel, [..., C, H, W]).
        k: [kh, kw] or [C, kh, kw] of a's dtype.
        anchor: (x, y) inside the kernel.
        border: the border mode.
        value: the "constant" fill.
    Returns:
        [..., H, W] of a's dtype.
    """
    kh, kw = k.shape[-2:]
    ax, ay = anchor
    h, w = a.shape[-2:]
    # a 2-d kernel's taps stay numpy scalars (the fast scalar loops); per channel, [C, 1, 1]
    taps = [(i, j, k[i, j] if k.ndim == 2 else k[:, i, j, None, None])
            for i in range(kh) for j in range(kw) if np.any(k[..., i, j])]
    out = np.zeros_like(a)
    for r0, r1, stripe in padded_stripes(a, ay, kh - 1 - ay, ax, kw - 1 - ax, border, value):
        acc = out[..., r0:r1, :]
        tmp = np.empty_like(acc)
        for i, j, tap in taps:
            np.multiply(stripe[..., i:i + r1 - r0, j:j + w], tap, out=tmp)
            acc += tmp
    return out


def _correlate(plane: np.ndarray, kernel: np.ndarray, origin: tuple[int, int], mode: str,
               value: float) -> np.ndarray:
    """scipy's correlation, split into a column and a row pass when the kernel has rank 1."""
    u, s, vt = np.linalg.svd(kernel)
    if s.size > 1 and s[1] <= 1e-9 * s[0] or s.size == 1:
        col, row = u[:, 0] * s[0], vt[0]
        tmp = ndimage.correlate1d(plane, col, axis=0, mode=mode, cval=value, origin=origin[0])
        return ndimage.correlate1d(tmp, row, axis=1, mode=mode, cval=value, origin=origin[1])
    return ndimage.correlate(plane, kernel, mode=mode, cval=value, origin=origin)


def _nms(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float,
         score_threshold: float | None) -> np.ndarray:
    """Greedy NMS on the host: overlapping pairs come from a sweep along x (only boxes whose
    x ranges meet are compared), then one pass in score order."""
    index = np.arange(len(boxes))
    if score_threshold is not None:
        index = index[scores > score_threshold]
    order = index[np.argsort(-scores[index], kind="stable")]
    b = boxes[order]
    n = len(b)
    if n == 0:
        return order.astype(np.int64)
    by_x = np.argsort(b[:, 0], kind="stable")
    bx = b[by_x]
    y1, y2 = np.ascontiguousarray(bx[:, 1]), np.ascontiguousarray(bx[:, 3])
    end = np.searchsorted(bx[:, 0], bx[:, 2], side="left")  # boxes starting before one ends
    suppressed = [np.empty(0, dtype=np.int64)]
    chunk = max(1, 4_000_000 // max(1, int(np.mean(end - np.arange(n)))))
    for lo in range(0, n, chunk):
        p = np.arange(lo, min(lo + chunk, n))
        count = np.maximum(end[p] - p - 1, 0)
        i = np.repeat(p, count)
        j = i + 1 + np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
        if iou_threshold >= 0:  # disjoint y ranges give IoU 0, which never suppresses
            meet = (y1[j] < y2[i]) & (y1[i] < y2[j])
            i, j = i[meet], j[meet]
        hit = _iou_pairs(bx[i], bx[j]) > iou_threshold
        ri, rj = by_x[i[hit]], by_x[j[hit]]  # ranks in score order
        lo_rank, hi_rank = np.minimum(ri, rj), np.maximum(ri, rj)
        suppressed.append(lo_rank * n + hi_rank)
    pairs = np.sort(np.concatenate(suppressed))
    src, dst = pairs // n, pairs % n
    bounds = np.searchsorted(src, np.arange(n + 1))
    removed = np.zeros(n, dtype=bool)
    keep = []
    for r in range(n):
        if not removed[r]:
            keep.append(r)
            removed[dst[bounds[r]:bounds[r + 1]]] = True
    return order[np.asarray(keep, dtype=np.int64)].astype(np.int64)


def _iou_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise IoU of boxes a [P, 4] and b [P, 4] (0 where the union is empty)."""
    iw = np.clip(np.minimum(a[:, 2], b[:, 2]) - np.maximum(a[:, 0], b[:, 0]), 0, None)
    ih = np.clip(np.minimum(a[:, 3], b[:, 3]) - np.maximum(a[:, 1], b[:, 1]), 0, None)
    inter = iw * ih
    union = ((a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1]) + (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
             - inter)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)


register_vision_ops("numpy", NumpyVisionOps())
