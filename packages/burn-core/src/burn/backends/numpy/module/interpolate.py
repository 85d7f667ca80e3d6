"""2d interpolation (nearest, bilinear, bicubic) as separable per-axis matrices, with backward.

y = Wh @ x @ Ww^T, so the backward is gx = Wh^T @ g @ Ww, exact for every mode.
"""

from __future__ import annotations

import numpy as np

from burn.backend.options import InterpolateOptions
from burn.errors import ShapeError, ValueRangeError

from .common import apply_axis_matrices, work_dtype

_CUBIC_A = -0.75


def _step(size: int, out: int, scale: float | None) -> float:
    """Source distance between output indices: 1 / scale for a user scale factor, else
    size / out (PyTorch's compute_scales_value)."""
    return 1.0 / scale if scale is not None and scale > 0 else size / out


def _source(size: int, out: int, align_corners: bool, scale: float | None,
            dtype: np.dtype) -> np.ndarray:
    """Real source coordinate of each output index (PyTorch's area_pixel_compute_source_index)."""
    dst = np.arange(out, dtype=dtype)
    if align_corners:
        return dst * dtype.type((size - 1) / (out - 1) if out > 1 else 0.0)
    return (dst + dtype.type(0.5)) * dtype.type(_step(size, out, scale)) - dtype.type(0.5)


def _cubic_weights(t: np.ndarray) -> np.ndarray:
    """Cubic convolution weights [out, 4] of taps -1..2 at fractional positions t."""
    a = _CUBIC_A

    def near(s: np.ndarray) -> np.ndarray:  # |s| <= 1
        return ((a + 2) * s - (a + 3)) * s * s + 1

    def far(s: np.ndarray) -> np.ndarray:  # 1 < |s| < 2
        return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a

    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], axis=1)


def _matrix(size: int, out: int, options: InterpolateOptions, scale: float | None,
            dtype: np.dtype) -> np.ndarray:
    """[out, size] interpolation matrix of one axis (`scale`: the user's factor or None)."""
    rows = np.arange(out)
    mat = np.zeros((out, size), dtype)
    if options.mode == "nearest":
        step = np.float32(_step(size, out, scale))
        src = np.floor(rows.astype(np.float32) * step).astype(np.int64)
        mat[rows, np.minimum(src, size - 1)] = 1
        return mat
    src = _source(size, out, options.align_corners, scale, np.dtype(dtype))
    if options.mode == "bilinear":
        src = np.maximum(src, 0)
        i0 = np.minimum(np.floor(src).astype(np.int64), size - 1)
        lam = np.clip(src - i0, 0, 1)
        np.add.at(mat, (rows, i0), 1 - lam)
        np.add.at(mat, (rows, np.minimum(i0 + 1, size - 1)), lam)
        return mat
    if options.mode == "bicubic":
        i0 = np.floor(src)
        taps = np.clip(i0.astype(np.int64)[:, None] + np.arange(-1, 3), 0, size - 1)
        np.add.at(mat, (rows[:, None], taps), _cubic_weights(src - i0))
        return mat
    raise ValueRangeError("interpolate", "unknown mode", mode=options.mode)


def _matrices(
    op: str, x: np.ndarray, output_size: tuple[int, int], options: InterpolateOptions
) -> list[np.ndarray]:
    """Row and column interpolation matrices for an NCHW input."""
    if x.ndim != 4 or len(output_size) != 2 or min(output_size) < 1:
        raise ShapeError(
            op,
            "x must be [N, C, H, W] and output_size (Ho, Wo) positive",
            x=x.shape,
            output_size=output_size,
        )
    wt = work_dtype(x.dtype)
    scales = options.scales or (None, None)
    return [_matrix(n, o, options, s, wt)
            for n, o, s in zip(x.shape[2:], output_size, scales, strict=True)]


def interpolate(
    x: np.ndarray, output_size: tuple[int, int], options: InterpolateOptions
) -> np.ndarray:
    """Resizes an NCHW input (PyTorch's F.interpolate with size=output_size).

    Args:
        x: input [N, C, H, W].
        output_size: (Ho, Wo).
        options: mode ("nearest" = legacy nearest, "bilinear", "bicubic"), align_corners
            (ignored by nearest).

    Returns:
        Output [N, C, Ho, Wo] of x's dtype.
    """
    mats = _matrices("interpolate", x, output_size, options)
    return apply_axis_matrices(x.astype(mats[0].dtype, copy=False), mats).astype(x.dtype)


def interpolate_backward(
    x: np.ndarray, grad_out: np.ndarray, output_size: tuple[int, int], options: InterpolateOptions
) -> np.ndarray:
    """Gradient of `interpolate` with respect to its input.

    Args:
        x: input [N, C, H, W].
        grad_out: gradient of the output [N, C, Ho, Wo].
        output_size: (Ho, Wo).
        options: the forward's options.

    Returns:
        grad_x of x's shape and dtype.
    """
    mats = _matrices("interpolate_backward", x, output_size, options)
    if grad_out.shape != (*x.shape[:2], *output_size):
        raise ShapeError(
            "interpolate_backward",
            "grad_out must be [N, C, Ho, Wo]",
            grad_out=grad_out.shape,
            x=x.shape,
            output_size=output_size,
        )
    g = grad_out.astype(mats[0].dtype, copy=False)
    return apply_axis_matrices(g, [m.T for m in mats]).astype(x.dtype)
