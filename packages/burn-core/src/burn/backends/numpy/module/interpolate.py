"""2d interpolation (nearest, bilinear, bicubic) as separable per-axis taps, with backward.

The forward gathers each axis's taps as PyTorch's CPU kernels do (columns, then rows), so
NaN, infinities and -0.0 come out as there; y = Wh @ x @ Ww^T with the taps summed into
matrices, so the backward is gx = Wh^T @ g @ Ww, exact for every mode. Upsampling finite
values without -0.0 (where the matrices give the same results) runs through them too.
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


def _taps(size: int, out: int, options: InterpolateOptions, scale: float | None,
          dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Source indices and weights [out, taps] of one axis, as PyTorch's CPU kernels read them.

    Zero weights and repeated (edge-clamped) indices are kept, so a NaN or infinity under a tap
    spreads as in PyTorch (0 * inf is NaN); an output of the input's size copies it (nearest,
    bilinear), whatever the scale factor, and nearest's doubling takes index // 2, as PyTorch.

    Args:
        size: input size of the axis.
        out: output size.
        options: mode and align_corners.
        scale: the user's scale factor of this axis, or None.
        dtype: the weights' dtype.

    Returns:
        (int64 indices, weights), both [out, 1 | 2 | 4] for nearest / bilinear / bicubic.
    """
    rows = np.arange(out)
    if options.mode == "nearest":
        if out in (size, 2 * size):
            src = rows if out == size else rows // 2
        else:
            step = np.float32(_step(size, out, scale))
            src = np.minimum(np.floor(rows.astype(np.float32) * step).astype(np.int64), size - 1)
        return src[:, None], np.ones((out, 1), dtype)
    if options.mode == "bilinear" and out == size:
        return np.stack([rows, rows], axis=1), np.array([[1, 0]], dtype).repeat(out, axis=0)
    src = _source(size, out, options.align_corners, scale, np.dtype(dtype))
    if options.mode == "bilinear":
        src = np.maximum(src, 0)
    i0 = np.minimum(np.floor(src).astype(np.int64), size - 1)
    lam = np.clip(src - i0, 0, 1)
    if options.mode == "bilinear":
        return (np.stack([i0, np.minimum(i0 + 1, size - 1)], axis=1),
                np.stack([1 - lam, lam], axis=1).astype(dtype))
    if options.mode == "bicubic":
        taps = np.clip(i0[:, None] + np.arange(-1, 3), 0, size - 1)
        return taps, _cubic_weights(lam).astype(dtype)
    raise ValueRangeError("interpolate", "unknown mode", mode=options.mode)


def _matrix(size: int, out: int, options: InterpolateOptions, scale: float | None,
            dtype: np.dtype) -> np.ndarray:
    """[out, size] interpolation matrix of one axis (the taps of `_taps` summed)."""
    index, weight = _taps(size, out, options, scale, dtype)
    mat = np.zeros((out, size), dtype)
    np.add.at(mat, (np.arange(out)[:, None], index), weight)
    return mat


def _apply_taps(x: np.ndarray, axis: int, index: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """sum_k weight[:, k] * x[..., index[:, k], ...] along `axis`, in tap order from the
    first product (no 0.0 start: -0.0 stays -0.0)."""
    shape = [1] * x.ndim
    shape[axis] = index.shape[0]
    out = np.take(x, index[:, 0], axis=axis) * weight[:, 0].reshape(shape)
    for k in range(1, index.shape[1]):
        out += np.take(x, index[:, k], axis=axis) * weight[:, k].reshape(shape)
    return out


def _check(op: str, x: np.ndarray, output_size: tuple[int, int]) -> None:
    if x.ndim != 4 or len(output_size) != 2 or min(output_size) < 1:
        raise ShapeError(
            op,
            "x must be [N, C, H, W] and output_size (Ho, Wo) positive",
            x=x.shape,
            output_size=output_size,
        )


def _matrices(
    op: str, x: np.ndarray, output_size: tuple[int, int], options: InterpolateOptions
) -> list[np.ndarray]:
    """Row and column interpolation matrices for an NCHW input."""
    _check(op, x, output_size)
    wt = work_dtype(x.dtype)
    scales = options.scales or (None, None)
    return [_matrix(n, o, options, s, wt)
            for n, o, s in zip(x.shape[2:], output_size, scales, strict=True)]


def _matrices_are_exact(x: np.ndarray, output_size: tuple[int, int],
                        options: InterpolateOptions) -> bool:
    """Whether the dense matrices give the taps' results (up to rounding), and faster: when
    upsampling (bilinear, bicubic) finite values without -0.0. A dense row also adds the
    zero-weight products of every other input, which only a NaN, an infinity or a -0.0 sum
    would show."""
    if options.mode == "nearest" or output_size[0] < x.shape[2] or output_size[1] < x.shape[3]:
        return False
    with np.errstate(over="ignore", invalid="ignore"):
        finite = bool(np.isfinite(np.add.reduce(x, axis=None)))
    return finite and not (np.signbit(x) & (x == 0)).any()


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
    _check("interpolate", x, output_size)
    wt = work_dtype(x.dtype)
    y = x.astype(wt, copy=False)
    if _matrices_are_exact(y, output_size, options):
        mats = _matrices("interpolate", x, output_size, options)
        return apply_axis_matrices(y, mats).astype(x.dtype)
    scales = options.scales or (None, None)
    for axis in (3, 2):  # columns first, as PyTorch's kernels
        with np.errstate(invalid="ignore", over="ignore"):  # 0 * inf is NaN, quietly
            y = _apply_taps(y, axis, *_taps(x.shape[axis], output_size[axis - 2], options,
                                            scales[axis - 2], wt))
    return y.astype(x.dtype)


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
