"""Resizing of [N, C, H, W] images."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np

from burn.backend.options import InterpolateMode, InterpolateOptions
from burn.errors import ShapeError, ValueRangeError
from burn.frontend.creation import tensor
from burn.functional._common import check_out_size, float_input, ntuple

if TYPE_CHECKING:
    from burn.frontend.tensor import Tensor

_MODES = ("nearest", "bilinear", "bicubic", "lanczos3")


def interpolate(x: Tensor, size: int | Sequence[int] | None = None,
                mode: InterpolateMode | Literal["lanczos3"] = "nearest",
                align_corners: bool = False, *,
                scale_factor: float | Sequence[float] | None = None,
                recompute_scale_factor: bool | None = None) -> Tensor:
    """Resize [N, C, H, W] to `size` (or by `scale_factor`), as torch's F.interpolate.

    Args:
        x: the images.
        size: output (H, W) or one int for both.
        mode: "nearest" (torch's legacy nearest), "bilinear", "bicubic" or "lanczos3" (Burn's:
            a 6x6 sinc-windowed sinc kernel, taps outside the image skipped and the weights
            renormalised; a composite, so every backend runs it: two matmuls for a finite
            image, else sums of each axis's taps, a NaN or infinity reaching only the outputs
            whose window holds it; one read of the finiteness on the host decides).
        align_corners: as torch (ignored by "nearest").
        scale_factor: alternative to `size`: output = floor(input * factor); source
            coordinates step by 1 / factor (as torch's default).
        recompute_scale_factor: True: source coordinates step by input / output size instead
            (as torch).
    Returns:
        [N, C, H_out, W_out].
    Raises:
        ShapeError: for non-4-d input. ValueRangeError: for an unknown mode or neither / both
            of size and scale_factor.
    """
    op = "interpolate"
    x = float_input(op, "x", x)
    if x.ndim != 4:
        raise ShapeError(op, "x must be 4-d [N, C, H, W]", x=x.shape)
    if mode not in _MODES:
        raise ValueRangeError(op, "unknown mode", mode=mode, modes=_MODES)
    if (size is None) == (scale_factor is None):
        raise ValueRangeError(op, "give exactly one of size and scale_factor", size=size,
                              scale_factor=scale_factor)
    scales = None
    if size is not None:
        h, w = ntuple(op, "size", size, 2, 1)
    else:
        factors = _factors(op, scale_factor)  # type: ignore[arg-type]
        h, w = (math.floor(n * f) for n, f in zip(x.shape[2:], factors, strict=True))
        scales = None if recompute_scale_factor else factors
    out = (h, w)
    check_out_size(op, out, x=x.shape)
    if mode == "lanczos3":
        if min(x.shape[2:]) == 0:
            raise ShapeError(op, "input spatial dims must be non-empty", x=x.shape)
        axes = [_lanczos3_taps(n_in, n_out, align_corners, None if scales is None else scales[i])
                for i, (n_in, n_out) in enumerate(zip(x.shape[2:], out, strict=True))]
        if bool(x.is_finite().all().item()):  # dense matrices: two matmuls, fastest
            rows, cols = (_lanczos3_matrix(x, n_in, *axis)
                          for n_in, axis in zip(x.shape[2:], axes, strict=True))
            return rows @ x @ cols.transpose(0, 1)
        for dim, (taps, weights) in ((2, axes[0]), (3, axes[1])):
            x = _lanczos3_along(x, dim, taps, weights)
        return x
    prim = x._bk.interpolate(x._prim, out, InterpolateOptions(mode, align_corners, scales))
    return x._wrap(prim)


def _lanczos3_weight(t: np.ndarray) -> np.ndarray:
    """sinc(t) sinc(t / 3) for |t| < 3, else 0."""
    return np.where(np.abs(t) < 3, np.sinc(t) * np.sinc(t / 3), 0.0)


def _lanczos3_taps(n_in: int, n_out: int, align_corners: bool, scale: float | None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """One axis's ([n_out, 6] input indices, [n_out, 6] weights): the 6 taps around each
    source coordinate, those outside [0, n_in) given weight 0 and the window's edge index (a
    tap of it too), each row's weights divided by their sum (when non-zero)."""
    if align_corners:
        coord = np.arange(n_out) * ((n_in - 1) / max(n_out - 1, 1))
    else:
        ratio = 1.0 / scale if scale is not None else n_in / n_out
        coord = (np.arange(n_out) + 0.5) * ratio - 0.5
    taps = np.floor(coord)[:, None] + np.arange(-2, 4)[None, :]
    weights = np.where((taps >= 0) & (taps < n_in), _lanczos3_weight(coord[:, None] - taps), 0.0)
    total = weights.sum(1, keepdims=True)
    return (np.clip(taps, 0, n_in - 1).astype(np.int64),
            weights / np.where(total != 0, total, 1.0))


def _lanczos3_matrix(x: Tensor, n_in: int, taps: np.ndarray, weights: np.ndarray) -> Tensor:
    """The [n_out, n_in] matrix of one axis's taps (for finite inputs: 0 * inf is NaN)."""
    matrix = np.zeros((taps.shape[0], n_in))
    np.add.at(matrix, (np.repeat(np.arange(taps.shape[0]), 6), taps.ravel()), weights.ravel())
    return tensor(matrix, dtype=x.dtype, device=x.device)


def _lanczos3_along(x: Tensor, dim: int, taps: np.ndarray, weights: np.ndarray) -> Tensor:
    """`x` resized along `dim` (2 or 3 of [N, C, H, W]) by summing its taps: a NaN or infinity
    reaches only the outputs whose window holds it."""
    n_out, shape = taps.shape[0], x.shape
    picked = x.select(dim, taps.ravel().tolist()).reshape(
        (*shape[:dim], n_out, 6, *shape[dim + 1:]))
    w = tensor(weights.reshape((n_out, 6) + (1,) * (3 - dim)), dtype=x.dtype, device=x.device)
    return (picked * w).sum(dim + 1)


def _factors(op: str, scale_factor: float | Sequence[float]) -> tuple[float, float]:
    """One positive finite scale factor per spatial dim.

    Raises:
        ValueRangeError: for a wrong count or a factor that is not a positive finite number.
    """
    factors = ((scale_factor,) * 2 if isinstance(scale_factor, int | float)
               else tuple(scale_factor))
    if len(factors) != 2 or not all(isinstance(f, int | float) and not isinstance(f, bool)
                                    and math.isfinite(f) and f > 0 for f in factors):
        raise ValueRangeError(op, "scale_factor must be a positive number or 2 of them",
                              scale_factor=scale_factor)
    return float(factors[0]), float(factors[1])
