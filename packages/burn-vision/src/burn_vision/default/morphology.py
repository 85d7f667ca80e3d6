"""Erosion and dilation with burn ops: pad by the border mode, then a window reduction."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import burn
from burn import Tensor
from burn.dtype import Kind
from burn_vision.border import BorderMode, pad2d
from burn_vision.default.window import window_reduce


def _minimum(a: Tensor, b: Tensor) -> Tensor:
    return burn.where(b < a, b, a)


def _maximum(a: Tensor, b: Tensor) -> Tensor:
    return burn.where(b > a, b, a)


def _and(a: Tensor, b: Tensor) -> Tensor:
    return a.logical_and(b)


def _or(a: Tensor, b: Tensor) -> Tensor:
    return a.logical_or(b)


def morph(x: Tensor, erode: bool, mask: np.ndarray, anchor: tuple[int, int],
          border: BorderMode, value: float | bool) -> Tensor:
    """One erosion (min) or dilation (max) of the last two dims of `x` over the true positions
    of `mask`, as OpenCV's erode/dilate (the element is not reflected for dilation).

    Args:
        x: bool, int or float [..., H, W].
        erode: True for erosion, False for dilation.
        mask: bool [kh, kw], at least one true value.
        anchor: (x, y) of the element's reference point.
        border: how pixels outside are read.
        value: the constant border value.
    Returns:
        same shape and dtype as x.
    """
    kh, kw = mask.shape
    ax, ay = anchor
    padded = pad2d(x, ay, kh - 1 - ay, ax, kw - 1 - ax, border, value)
    combine: Callable[[Tensor, Tensor], Tensor]
    if x.kind == Kind.BOOL:
        combine = _and if erode else _or
    else:
        combine = _minimum if erode else _maximum
    return window_reduce(padded, mask, (x.shape[-2], x.shape[-1]), combine)
