"""Point sampling of [B, C, H, W] images at per-batch points (zeros outside), with its adjoint.

Shared by grid_sample_2d and deform_conv2d. Points are given in pixel coordinates (py, px).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import numpy as np

SampleMode = Literal["bilinear", "nearest"]
Tap = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _taps(py: np.ndarray, px: np.ndarray, h: int, w: int, mode: SampleMode) -> Iterator[Tap]:
    """Yields (flat index, weight, d weight/d py, d weight/d px) per tap; weights are 0 outside."""
    if mode == "nearest":
        yi, xi = np.rint(py).astype(np.int64), np.rint(px).astype(np.int64)
        inside = (yi >= 0) & (yi < h) & (xi >= 0) & (xi < w)
        zero = np.zeros_like(py)
        yield np.where(inside, yi * w + xi, 0), inside.astype(py.dtype), zero, zero
        return
    y0, x0 = np.floor(py), np.floor(px)
    ly, lx = py - y0, px - x0
    hy, hx = 1 - ly, 1 - lx
    y0i, x0i = y0.astype(np.int64), x0.astype(np.int64)
    for dy, dx, weight, wy, wx in (
        (0, 0, hy * hx, -hx, -hy),
        (0, 1, hy * lx, -lx, hy),
        (1, 0, ly * hx, hx, -ly),
        (1, 1, ly * lx, lx, ly),
    ):
        yi, xi = y0i + dy, x0i + dx
        inside = (yi >= 0) & (yi < h) & (xi >= 0) & (xi < w)
        yield np.where(inside, yi * w + xi, 0), weight * inside, wy * inside, wx * inside


def sample(x: np.ndarray, py: np.ndarray, px: np.ndarray, mode: SampleMode) -> np.ndarray:
    """Samples x at points, reading zeros outside the image.

    Args:
        x: images [B, C, H, W].
        py: row coordinates [B, P].
        px: column coordinates [B, P].
        mode: "bilinear" or "nearest" (round half to even).

    Returns:
        Values [B, C, P].
    """
    b, c, h, w = x.shape
    flat = x.reshape(b, c, h * w)
    out = np.zeros((b, c, py.shape[1]), x.dtype)
    for index, weight, _, _ in _taps(py, px, h, w, mode):
        out += np.take_along_axis(flat, index[:, None, :], axis=2) * weight[:, None, :]
    return out


def sample_backward(
    x: np.ndarray, py: np.ndarray, px: np.ndarray, grad: np.ndarray, mode: SampleMode,
    need_x: bool = True, need_points: bool = True,
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """Gradients of `sample` with respect to the image and the point coordinates.

    Args:
        x: images [B, C, H, W].
        py: row coordinates [B, P].
        px: column coordinates [B, P].
        grad: gradient of the sampled values [B, C, P].
        mode: "bilinear" or "nearest" (point gradients are zero for nearest).
        need_x: compute the image gradient (the scatter-add of every tap), else None.
        need_points: compute the point gradients, else None.

    Returns:
        (grad_x [B, C, H, W], grad_py [B, P], grad_px [B, P]), None where not needed.
    """
    b, c, h, w = x.shape
    flat = x.reshape(b, c, h * w)
    gx = np.zeros(b * c * h * w, x.dtype) if need_x else None
    gpy, gpx = (np.zeros_like(py), np.zeros_like(px)) if need_points else (None, None)
    plane = (np.arange(b * c) * (h * w)).reshape(b, c, 1)
    for index, weight, wy, wx in _taps(py, px, h, w, mode):
        if gx is not None:
            np.add.at(gx, (plane + index[:, None, :]).ravel(),
                      (grad * weight[:, None, :]).ravel())
        if gpy is not None and gpx is not None and mode == "bilinear":
            dot = np.einsum("bcp,bcp->bp", grad, np.take_along_axis(flat, index[:, None, :], 2))
            gpy += dot * wy
            gpx += dot * wx
    return None if gx is None else gx.reshape(x.shape), gpy, gpx
