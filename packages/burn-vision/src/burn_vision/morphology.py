"""Morphology (OpenCV's erode, dilate, morphologyEx) on bool, int and float images, with
structuring elements (rect, ellipse, cross or a given mask), anchor, iterations and border
modes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

import burn
from burn import Tensor
from burn.dtype import Kind
from burn.errors import ShapeError, ValueRangeError
from burn_vision._checks import choice, image_arg, pair, positive_int
from burn_vision.border import BorderMode, check_border
from burn_vision.extension import vision_ops

Shape = Literal["rect", "ellipse", "cross"]
MorphOp = Literal["erode", "dilate", "open", "close", "gradient", "tophat", "blackhat"]
MORPH_OPS: tuple[MorphOp, ...] = ("erode", "dilate", "open", "close", "gradient", "tophat",
                                  "blackhat")
_KINDS = (Kind.BOOL, Kind.INT, Kind.FLOAT)


def structuring_element(shape: Shape, size: int | Sequence[int]) -> Tensor:
    """A structuring element as OpenCV's getStructuringElement (anchor at the centre).

    Args:
        shape: "rect", "ellipse" or "cross".
        size: (height, width) or one int for both, each >= 1.
    Returns:
        bool [height, width] on the default device.
    Raises:
        ValueRangeError: for an unknown shape or a size < 1.
    """
    op = "structuring_element"
    choice(op, "shape", shape, ("rect", "ellipse", "cross"))
    h, w = pair(op, "size", size)
    mask = np.zeros((h, w), dtype=bool)
    cy, cx = h // 2, w // 2
    if shape == "rect":
        mask[:] = True
    elif shape == "cross":
        mask[cy, :] = True
        mask[:, cx] = True
    else:
        inv_r2 = 1.0 / (cy * cy) if cy else 0.0
        for i in range(h):
            dy = i - cy
            half = int(np.rint(cx * np.sqrt(max(cy * cy - dy * dy, 0) * inv_r2)))
            mask[i, max(cx - half, 0):min(cx + half + 1, w)] = True
    return burn.tensor(mask)


def morphology(x: Tensor, op: MorphOp, kernel: Tensor | np.ndarray | None = None,
               anchor: tuple[int, int] | None = None, iterations: int = 1,
               border: BorderMode = "constant", border_value: float | None = None) -> Tensor:
    """Apply a morphological operation to the last two dims of `x`.

    "open" is dilate(erode), "close" erode(dilate), "gradient" dilate - erode, "tophat"
    x - open, "blackhat" close - x (for bool images: and-not; uint8 saturates at 0). As OpenCV,
    dilation does not reflect the element, and `iterations` repeats each erosion / dilation.

    Args:
        x: bool, int or float [..., H, W].
        op: one of MORPH_OPS.
        kernel: bool [kh, kw] structuring element (nonzero = inside), default 3x3 rect.
        anchor: (x, y) of the reference point inside the element; default the centre, which
            needs odd sizes.
        iterations: times each erosion / dilation is applied, >= 1.
        border: how pixels outside are read (default "constant").
        border_value: the "constant" fill; None (default, as OpenCV) makes the border never
            win: the dtype's maximum for erosion, its minimum for dilation.
    Returns:
        same shape and dtype as x.
    Raises:
        DTypeError: for a non-tensor x. ShapeError: for x with fewer than 2 dims or a kernel
            not 2-d / empty. ValueRangeError: for an unknown op or border, an anchor outside
            the kernel, an even kernel without anchor, or iterations < 1.
    """
    name = "morphology"
    x = image_arg(name, "x", x, _KINDS)
    choice(name, "op", op, MORPH_OPS)
    check_border(name, border)
    positive_int(name, "iterations", iterations)
    mask = _element(name, kernel)
    anchor = _anchor(name, anchor, mask.shape)
    if x.numel() == 0:
        return x
    backend = vision_ops(x.device)

    def apply(t: Tensor, erode: bool) -> Tensor:
        value = _border_value(t, erode, border_value)
        for _ in range(iterations):
            t = backend.morph(t, erode, mask, anchor, border, value)
        return t

    if op in ("erode", "dilate"):
        return apply(x, op == "erode")
    if op == "gradient":
        return _difference(apply(x, False), apply(x, True))
    if op in ("open", "tophat"):
        opened = apply(apply(x, True), False)
        return opened if op == "open" else _difference(x, opened)
    closed = apply(apply(x, False), True)
    return closed if op == "close" else _difference(closed, x)


def erode(x: Tensor, kernel: Tensor | np.ndarray | None = None,
          anchor: tuple[int, int] | None = None, iterations: int = 1,
          border: BorderMode = "constant", border_value: float | None = None) -> Tensor:
    """Minimum over the element (OpenCV's erode); see `morphology` for the arguments."""
    return morphology(x, "erode", kernel, anchor, iterations, border, border_value)


def dilate(x: Tensor, kernel: Tensor | np.ndarray | None = None,
           anchor: tuple[int, int] | None = None, iterations: int = 1,
           border: BorderMode = "constant", border_value: float | None = None) -> Tensor:
    """Maximum over the element (OpenCV's dilate); see `morphology` for the arguments."""
    return morphology(x, "dilate", kernel, anchor, iterations, border, border_value)


def _difference(a: Tensor, b: Tensor) -> Tensor:
    """a - b; and-not for bool; saturated at 0 for uint8 (as OpenCV, instead of wrapping)."""
    if a.kind == Kind.BOOL:
        return a.logical_and(b.logical_not())
    if a.dtype == burn.uint8:
        return burn.where(a < b, 0, a - b)
    return a - b


def _element(op: str, kernel: Tensor | np.ndarray | None) -> np.ndarray:
    """The element as a host bool mask (it picks which shifts to combine)."""
    if kernel is None:
        return np.ones((3, 3), dtype=bool)
    mask = np.asarray(kernel.to_numpy() if isinstance(kernel, Tensor) else kernel) != 0
    if mask.ndim != 2 or mask.size == 0 or not mask.any():
        raise ShapeError(op, "kernel must be a non-empty 2-d mask [kh, kw] with a nonzero value",
                         kernel=mask.shape)
    return mask


def _anchor(op: str, anchor: tuple[int, int] | None, shape: tuple[int, ...]
            ) -> tuple[int, int]:
    kh, kw = shape
    if anchor is None:
        if kh % 2 == 0 or kw % 2 == 0:
            raise ValueRangeError(op, "an even kernel needs an explicit anchor (x, y)",
                                  kernel=shape)
        return kw // 2, kh // 2
    ax, ay = pair(op, "anchor", anchor, minimum=0)
    if ax >= kw or ay >= kh:
        raise ValueRangeError(op, "anchor (x, y) must lie inside the kernel", anchor=anchor,
                              kernel=shape)
    return ax, ay


def _border_value(x: Tensor, erode: bool, value: float | None) -> float | bool:
    """The constant border: given, or the value that never wins the min / max."""
    if value is not None:
        return bool(value) if x.kind == Kind.BOOL else value
    if x.kind == Kind.BOOL:
        return erode
    if x.kind == Kind.INT:
        info = np.iinfo(x.dtype.value)
        return int(info.max if erode else info.min)
    return float("inf") if erode else float("-inf")
