"""Option records of the module ops (convolution, pooling, interpolation, grid sampling).

Every tuple has one entry per spatial dim (1 for 1d, 2 for 2d, 3 for 3d).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal


def window_out(size: Sequence[int], kernel: Sequence[int], stride: Sequence[int],
               padding: Sequence[int], dilation: Sequence[int], ceil_mode: bool = False
               ) -> list[int]:
    """Window positions per spatial dim of a sliding window (convolution, pooling, unfold),
    as torch: floor((n + 2p - d(k - 1) - 1) / s) + 1, rounded up instead with `ceil_mode`, where
    the last window must still start inside the input or its left padding. Not checked: a size
    below 1 means the window does not fit."""
    out = []
    for n, k, s, p, d in zip(size, kernel, stride, padding, dilation, strict=True):
        span = n + 2 * p - d * (k - 1) - 1
        o = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (o - 1) * s >= n + p:
            o -= 1
        out.append(o)
    return out


@dataclass(frozen=True)
class ConvOptions:
    """Options of conv1d/2d/3d (PyTorch's semantics; padding is symmetric per dim)."""

    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int = 1


@dataclass(frozen=True)
class ConvTransposeOptions:
    """Options of conv_transpose1d/2d/3d (PyTorch's semantics)."""

    stride: tuple[int, ...]
    padding: tuple[int, ...]
    padding_out: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int = 1


@dataclass(frozen=True)
class DeformConvOptions:
    """Options of deform_conv2d (torchvision.ops.deform_conv2d semantics)."""

    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]
    weight_groups: int = 1
    offset_groups: int = 1


@dataclass(frozen=True)
class PoolOptions:
    """Options of avg/max pooling 1d/2d."""

    kernel_size: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    ceil_mode: bool = False
    count_include_pad: bool = True


InterpolateMode = Literal["nearest", "bilinear", "bicubic"]
GridSampleMode = Literal["bilinear", "nearest"]
GridSamplePadding = Literal["zeros", "border", "reflection"]


@dataclass(frozen=True)
class InterpolateOptions:
    """Options of interpolate (2d, NCHW); `nearest` is PyTorch's legacy nearest.

    `scales` (per spatial dim), when set, is the user's scale factor: source coordinates step by
    1 / scale (PyTorch's default, recompute_scale_factor=None) instead of input / output size.
    align_corners ignores it, as PyTorch does.
    """

    mode: InterpolateMode = "nearest"
    align_corners: bool = False
    scales: tuple[float, float] | None = None


@dataclass(frozen=True)
class GridSampleOptions:
    """Options of grid_sample_2d (PyTorch's F.grid_sample semantics)."""

    mode: GridSampleMode = "bilinear"
    padding_mode: GridSamplePadding = "zeros"
    align_corners: bool = False
