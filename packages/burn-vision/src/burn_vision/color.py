"""Colour conversions on float images [..., 3, H, W] with values in [0, 1] (channel dim -3),
and per-channel normalisation."""

from __future__ import annotations

import math
from collections.abc import Sequence

import burn
from burn import Tensor
from burn.dtype import Kind
from burn.errors import ShapeError, ValueRangeError
from burn_vision._checks import image_arg

_FLOAT = (Kind.FLOAT,)
_GRAY = (0.299, 0.587, 0.114)  # ITU-R BT.601 luma, as OpenCV and torchvision


def _rgb(op: str, x: object, channels: int = 3) -> Tensor:
    t = image_arg(op, "x", x, _FLOAT, 3, None, f"float [..., {channels}, H, W]")
    if t.shape[-3] != channels:
        raise ShapeError(op, f"x must be float [..., {channels}, H, W]", x=t.shape)
    return t


def _planes(x: Tensor) -> list[Tensor]:
    return [x.narrow(-3, i, 1) for i in range(x.shape[-3])]


def rgb_to_grayscale(x: Tensor) -> Tensor:
    """Luma 0.299 R + 0.587 G + 0.114 B (OpenCV's COLOR_RGB2GRAY).

    Args:
        x: float [..., 3, H, W].
    Returns:
        float [..., 1, H, W].
    Raises:
        DTypeError / ShapeError: for anything but float [..., 3, H, W].
    """
    r, g, b = _planes(_rgb("rgb_to_grayscale", x))
    return r * _GRAY[0] + g * _GRAY[1] + b * _GRAY[2]


def grayscale_to_rgb(x: Tensor) -> Tensor:
    """Repeat the one channel of float [..., 1, H, W] three times: [..., 3, H, W]."""
    gray = _rgb("grayscale_to_rgb", x, 1)
    return burn.cat([gray, gray, gray], -3)


def rgb_to_hsv(x: Tensor, eps: float = 1e-12) -> Tensor:
    """RGB in [0, 1] to HSV with hue in degrees [0, 360) and saturation, value in [0, 1]
    (OpenCV's float COLOR_RGB2HSV; kornia gives hue in radians).

    Args:
        x: float [..., 3, H, W].
        eps: guards the divisions of grey pixels (hue and saturation 0 there).
    Returns:
        float [..., 3, H, W] as (H, S, V).
    """
    r, g, b = _planes(_rgb("rgb_to_hsv", x))
    v = burn.where(r > g, r, g)
    v = burn.where(b > v, b, v)
    lo = burn.where(r < g, r, g)
    lo = burn.where(b < lo, b, lo)
    delta = v - lo
    s = burn.where(v > 0, delta / (v + eps), 0.0)
    safe = burn.where(delta > 0, delta, 1.0)
    h = burn.where(v == r, (g - b) / safe * 60.0,
                   burn.where(v == g, (b - r) / safe * 60.0 + 120.0,
                              (r - g) / safe * 60.0 + 240.0))
    h = burn.where(delta > 0, h, 0.0)
    h = burn.where(h < 0, h + 360.0, h)
    return burn.cat([h, s, v], -3)


def hsv_to_rgb(x: Tensor) -> Tensor:
    """HSV (hue in degrees, S and V in [0, 1]) to RGB in [0, 1] (OpenCV's COLOR_HSV2RGB).

    Args:
        x: float [..., 3, H, W] as (H, S, V).
    Returns:
        float [..., 3, H, W] as (R, G, B).
    """
    h, s, v = _planes(_rgb("hsv_to_rgb", x))
    h6 = (h / 60.0).remainder(6.0)

    def channel(n: float) -> Tensor:
        # f(n) = v - v s max(0, min(k, 4 - k, 1)), k = (n + h / 60) mod 6.
        k = (h6 + n).remainder(6.0)
        m = burn.where(k < 4.0 - k, k, 4.0 - k).clamp(0.0, 1.0)
        return v - v * s * m

    return burn.cat([channel(5.0), channel(3.0), channel(1.0)], -3)


def rgb_to_ycbcr(x: Tensor) -> Tensor:
    """RGB in [0, 1] to YCbCr (BT.601, chroma offset 0.5; OpenCV's COLOR_RGB2YCrCb has the
    same values in the order Y, Cr, Cb).

    Args:
        x: float [..., 3, H, W].
    Returns:
        float [..., 3, H, W] as (Y, Cb, Cr).
    """
    r, g, b = _planes(_rgb("rgb_to_ycbcr", x))
    y = r * _GRAY[0] + g * _GRAY[1] + b * _GRAY[2]
    cb = (b - y) * 0.564 + 0.5
    cr = (r - y) * 0.713 + 0.5
    return burn.cat([y, cb, cr], -3)


def ycbcr_to_rgb(x: Tensor) -> Tensor:
    """YCbCr (Y, Cb, Cr) to RGB, the inverse of `rgb_to_ycbcr` (OpenCV's COLOR_YCrCb2RGB
    coefficients).

    Args:
        x: float [..., 3, H, W] as (Y, Cb, Cr).
    Returns:
        float [..., 3, H, W] as (R, G, B).
    """
    y, cb, cr = _planes(_rgb("ycbcr_to_rgb", x))
    cb, cr = cb - 0.5, cr - 0.5
    return burn.cat([y + cr * 1.403, y - cr * 0.714 - cb * 0.344, y + cb * 1.773], -3)


def normalize(x: Tensor, mean: Sequence[float], std: Sequence[float]) -> Tensor:
    """(x - mean) / std per channel (torchvision's Normalize).

    Args:
        x: float [..., C, H, W].
        mean, std: C values each; std nonzero.
    Returns:
        same shape.
    Raises:
        ShapeError: when C differs from len(mean) or len(std). ValueRangeError: for a zero std.
    """
    m, s = _stats("normalize", x, mean, std)
    return (x - m) / s


def denormalize(x: Tensor, mean: Sequence[float], std: Sequence[float]) -> Tensor:
    """x * std + mean per channel, the inverse of `normalize`."""
    m, s = _stats("denormalize", x, mean, std)
    return x * s + m


def _stats(op: str, x: object, mean: Sequence[float], std: Sequence[float]
           ) -> tuple[Tensor, Tensor]:
    t = image_arg(op, "x", x, _FLOAT, 3, None, "float [..., C, H, W]")
    c = t.shape[-3]
    if len(mean) != c or len(std) != c:
        raise ShapeError(op, "mean and std need one value per channel of x [..., C, H, W]",
                         x=t.shape, mean=len(mean), std=len(std))
    if any(v == 0 or math.isnan(v) for v in std):
        raise ValueRangeError(op, "std must be nonzero", std=list(std))
    shape = (c, 1, 1)
    return (burn.tensor(list(mean), dtype=t.dtype, device=t.device).reshape(shape),
            burn.tensor(list(std), dtype=t.dtype, device=t.device).reshape(shape))
