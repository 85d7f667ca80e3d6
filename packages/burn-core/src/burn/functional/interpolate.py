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
            renormalised; a composite of two matmuls, so every backend runs it).
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
        rows, cols = (_lanczos3_matrix(x, n_in, n_out, align_corners,
                                       None if scales is None else scales[i])
                      for i, (n_in, n_out) in enumerate(zip(x.shape[2:], out, strict=True)))
        return rows @ x @ cols.transpose(0, 1)
    prim = x._bk.interpolate(x._prim, out, InterpolateOptions(mode, align_corners, scales))
    return x._wrap(prim)


def _lanczos3_weight(t: np.ndarray) -> np.ndarray:
    """sinc(t) sinc(t / 3) for |t| < 3, else 0."""
    return np.where(np.abs(t) < 3, np.sinc(t) * np.sinc(t / 3), 0.0)


def _lanczos3_matrix(x: Tensor, n_in: int, n_out: int, align_corners: bool,
                     scale: float | None) -> Tensor:
    """[n_out, n_in] weights of one axis: the 6 taps around each source coordinate, those
    outside [0, n_in) dropped, each row divided by its sum (when non-zero)."""
    if align_corners:
        ratio = (n_in - 1) / max(n_out - 1, 1)
        coord = np.arange(n_out) * ratio
    else:
        ratio = 1.0 / scale if scale is not None else n_in / n_out
        coord = (np.arange(n_out) + 0.5) * ratio - 0.5
    taps = np.floor(coord)[:, None] + np.arange(-2, 4)[None, :]  # [n_out, 6]
    weights = np.where((taps >= 0) & (taps < n_in), _lanczos3_weight(coord[:, None] - taps), 0.0)
    matrix = np.zeros((n_out, n_in))
    np.add.at(matrix, (np.repeat(np.arange(n_out), 6), np.clip(taps, 0, n_in - 1).astype(int)
                       .ravel()), weights.ravel())
    total = matrix.sum(1, keepdims=True)
    matrix = matrix / np.where(total != 0, total, 1.0)
    return tensor(matrix, dtype=x.dtype, device=x.device)


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
