"""Option records of the module ops (convolution, pooling, interpolation, grid sampling).

Every tuple has one entry per spatial dim (1 for 1d, 2 for 2d, 3 for 3d).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


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
    """Options of interpolate (2d, NCHW); `nearest` is PyTorch's legacy nearest."""

    mode: InterpolateMode = "nearest"
    align_corners: bool = False


@dataclass(frozen=True)
class GridSampleOptions:
    """Options of grid_sample_2d (PyTorch's F.grid_sample semantics)."""

    mode: GridSampleMode = "bilinear"
    padding_mode: GridSamplePadding = "zeros"
    align_corners: bool = False
