"""2-D filters: OpenCV's filter2D (depthwise), box and Gaussian blur, Sobel."""

from __future__ import annotations

import numpy as np

from burn import Tensor
from burn.dtype import Kind
from burn.errors import ShapeError, ValueRangeError
from burn_vision._checks import as_tensor, choice, image_arg, pair
from burn_vision.border import BorderMode, check_border
from burn_vision.extension import vision_ops

_FLOAT = (Kind.FLOAT,)


def filter2d(x: Tensor, kernel: Tensor | np.ndarray, anchor: tuple[int, int] | None = None,
             border: BorderMode = "reflect101", border_value: float = 0.0) -> Tensor:
    """Correlate the last two dims of `x` with `kernel` (OpenCV's filter2D: no kernel flip).

    Args:
        x: float [..., H, W]; with a per-channel kernel, [..., C, H, W].
        kernel: [kh, kw] applied to every plane, or [C, kh, kw] per channel (depthwise).
        anchor: (x, y) reference point in the kernel; default the centre (kw // 2, kh // 2).
        border: how pixels outside are read; default "reflect101" (OpenCV's BORDER_DEFAULT,
            where torch's conv2d pads with zeros).
        border_value: the "constant" fill.
    Returns:
        same shape and dtype as x.
    Raises:
        DTypeError: for a non-float x. ShapeError: for a kernel not [kh, kw] / [C, kh, kw],
            empty, or with C not matching dim -3 of x. ValueRangeError: for an unknown border
            or an anchor outside the kernel.
    """
    op = "filter2d"
    x = image_arg(op, "x", x, _FLOAT)
    check_border(op, border)
    k = as_tensor(kernel, x, x.dtype)
    if k.ndim not in (2, 3) or k.numel() == 0:
        raise ShapeError(op, "kernel must be non-empty [kh, kw] or [C, kh, kw]", kernel=k.shape)
    if k.ndim == 3 and (x.ndim < 3 or x.shape[-3] != k.shape[0]):
        raise ShapeError(op, "a per-channel kernel [C, kh, kw] needs x [..., C, H, W]",
                         kernel=k.shape, x=x.shape)
    kh, kw = k.shape[-2:]
    ax, ay = (kw // 2, kh // 2) if anchor is None else pair(op, "anchor", anchor, minimum=0)
    if ax >= kw or ay >= kh:
        raise ValueRangeError(op, "anchor (x, y) must lie inside the kernel", anchor=anchor,
                              kernel=k.shape)
    if x.numel() == 0:
        return x
    return vision_ops(x.device).filter2d(x, k, (ax, ay), border, border_value)


def box_blur(x: Tensor, size: int | tuple[int, int], border: BorderMode = "reflect101"
             ) -> Tensor:
    """Normalised box filter (OpenCV's blur).

    Args:
        x: float [..., H, W].
        size: (height, width) of the box or one int, each >= 1.
        border: border mode (default "reflect101").
    Returns:
        same shape and dtype as x.
    """
    h, w = pair("box_blur", "size", size)
    kernel = np.full((h, w), 1.0 / (h * w))
    return filter2d(x, kernel, border=border)


def gaussian_kernel1d(size: int, sigma: float) -> np.ndarray:
    """Normalised 1-d Gaussian of `size` taps (OpenCV's getGaussianKernel for sigma > 0).

    Raises:
        ValueRangeError: for an even or non-positive size or a sigma <= 0.
    """
    op = "gaussian_kernel1d"
    if size < 1 or size % 2 == 0:
        raise ValueRangeError(op, "size must be odd and >= 1", size=size)
    if not sigma > 0:
        raise ValueRangeError(op, "sigma must be > 0", sigma=sigma)
    t = np.arange(size) - (size - 1) / 2
    g = np.exp(-(t * t) / (2 * sigma * sigma))
    return g / g.sum()


def gaussian_blur(x: Tensor, size: int | tuple[int, int], sigma: float | tuple[float, float],
                  border: BorderMode = "reflect101") -> Tensor:
    """Gaussian blur (OpenCV's GaussianBlur with explicit sigmas).

    Args:
        x: float [..., H, W].
        size: odd (height, width) or one int.
        sigma: (sigma_y, sigma_x) or one float, each > 0 (OpenCV derives sigma from the size
            when it is 0; here it must be given).
        border: border mode (default "reflect101").
    Returns:
        same shape and dtype as x.
    Raises:
        ValueRangeError: for an even size or a sigma <= 0.
    """
    h, w = pair("gaussian_blur", "size", size)
    sy, sx = (sigma, sigma) if isinstance(sigma, (int, float)) else sigma
    kernel = np.outer(gaussian_kernel1d(h, sy), gaussian_kernel1d(w, sx))
    return filter2d(x, kernel, border=border)


def sobel(x: Tensor, dx: int, dy: int, size: int = 3, border: BorderMode = "reflect101"
          ) -> Tensor:
    """Sobel derivative (OpenCV's Sobel with scale 1): order `dx` along x and `dy` along y.

    Args:
        x: float [..., H, W].
        dx, dy: derivative orders, 0..2 each, dx + dy >= 1 (and < size).
        size: aperture 3, 5 or 7.
        border: border mode (default "reflect101").
    Returns:
        same shape and dtype as x.
    Raises:
        ValueRangeError: for orders or sizes outside those.
    """
    op = "sobel"
    choice(op, "size", size, (3, 5, 7))
    if not (0 <= dx <= 2 and 0 <= dy <= 2 and 1 <= dx + dy and max(dx, dy) < size):
        raise ValueRangeError(op, "need 0 <= dx, dy <= 2, dx + dy >= 1, orders < size",
                              dx=dx, dy=dy, size=size)
    kernel = np.outer(_sobel_taps(size, dy), _sobel_taps(size, dx))
    return filter2d(x, kernel, border=border)


def _sobel_taps(size: int, order: int) -> np.ndarray:
    """1-d Sobel taps: a binomial smoothing convolved `order` times with [-1, 0, 1]'s
    difference [-1, 1]."""
    taps = np.array([1.0])
    for _ in range(size - 1 - order):
        taps = np.convolve(taps, [1.0, 1.0])
    for _ in range(order):
        taps = np.convolve(taps, [-1.0, 1.0])
    return taps

