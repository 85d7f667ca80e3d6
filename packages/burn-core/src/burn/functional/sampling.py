"""Sampling ops: grid_sample_2d and deformable convolution."""

from __future__ import annotations

from typing import TYPE_CHECKING

from burn.backend.options import (
    DeformConvOptions,
    GridSampleMode,
    GridSampleOptions,
    GridSamplePadding,
    window_out,
)
from burn.errors import ShapeError, ValueRangeError
from burn.functional._common import IntOrTuple, check_out_size, float_input, ntuple

if TYPE_CHECKING:
    from burn.frontend.tensor import Tensor


def grid_sample_2d(x: Tensor, grid: Tensor, mode: GridSampleMode = "bilinear",
                   padding_mode: GridSamplePadding = "zeros",
                   align_corners: bool = False) -> Tensor:
    """Sample [N, C, H, W] at the normalised (x, y) points of grid [N, H_out, W_out, 2]
    (torch's F.grid_sample).

    Raises:
        ShapeError: for inconsistent shapes. ValueRangeError: for an unknown mode.
    """
    op = "grid_sample_2d"
    x = float_input(op, "x", x)
    grid = float_input(op, "grid", grid, x)
    if x.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != x.shape[0]:
        raise ShapeError(op, "need x [N, C, H, W] and grid [N, H_out, W_out, 2]", x=x.shape,
                         grid=grid.shape)
    if mode not in ("bilinear", "nearest") or padding_mode not in ("zeros", "border",
                                                                    "reflection"):
        raise ValueRangeError(op, "unknown mode or padding_mode", mode=mode,
                              padding_mode=padding_mode)
    options = GridSampleOptions(mode, padding_mode, align_corners)
    return x._wrap(x._bk.grid_sample_2d(x._prim, grid._prim, options))


def deform_conv2d(x: Tensor, offset: Tensor, weight: Tensor, mask: Tensor | None = None,
                  bias: Tensor | None = None, stride: IntOrTuple = 1, padding: IntOrTuple = 0,
                  dilation: IntOrTuple = 1) -> Tensor:
    """Deformable 2-d convolution (torchvision.ops.deform_conv2d).

    Args:
        x: [N, C_in, H, W].
        offset: [N, 2 * offset_groups * kh * kw, H_out, W_out].
        weight: [C_out, C_in / weight_groups, kh, kw].
        mask: [N, offset_groups * kh * kw, H_out, W_out] or None.
        bias: [C_out] or None.
        stride, padding, dilation: ints or pairs.
    Returns:
        [N, C_out, H_out, W_out].
    Raises:
        ShapeError: for inconsistent shapes.
    """
    op = "deform_conv2d"
    x = float_input(op, "x", x)
    offset = float_input(op, "offset", offset, x)
    weight = float_input(op, "weight", weight, x)
    mask = None if mask is None else float_input(op, "mask", mask, x)
    bias = None if bias is None else float_input(op, "bias", bias, x)
    if x.ndim != 4 or weight.ndim != 4 or offset.ndim != 4:
        raise ShapeError(op, "x, offset and weight must be 4-d", x=x.shape,
                         offset=offset.shape, weight=weight.shape)
    st, pad = ntuple(op, "stride", stride, 2, 1), ntuple(op, "padding", padding, 2)
    dil = ntuple(op, "dilation", dilation, 2, 1)
    n, c_in, h, w = x.shape
    c_out, c_per, kh, kw = weight.shape
    out = tuple(window_out((h, w), (kh, kw), st, pad, dil))
    check_out_size(op, out, x=x.shape, weight=weight.shape)
    taps = kh * kw
    if (c_per == 0 or c_in % c_per or c_out % (c_in // c_per) or offset.shape[1] % (2 * taps)
            or offset.shape[1] == 0 or offset.shape != (n, offset.shape[1], *out)):
        raise ShapeError(op, "inconsistent x, offset and weight shapes", x=x.shape,
                         offset=offset.shape, weight=weight.shape, expected_out=out)
    offset_groups = offset.shape[1] // (2 * taps)
    if c_in % offset_groups:
        raise ShapeError(op, "C_in must be divisible by the offset groups", x=x.shape,
                         offset=offset.shape)
    if mask is not None and mask.shape != (n, offset_groups * taps, *out):
        raise ShapeError(op, "mask must be [N, offset_groups * kh * kw, H_out, W_out]",
                         mask=mask.shape, offset=offset.shape)
    if bias is not None and bias.shape != (c_out,):
        raise ShapeError(op, "bias must be [C_out]", bias=bias.shape, c_out=c_out)
    options = DeformConvOptions(st, pad, dil, c_in // c_per, offset_groups)  # type: ignore
    prim = x._bk.deform_conv2d(x._prim, offset._prim, weight._prim,
                               None if mask is None else mask._prim,
                               None if bias is None else bias._prim, options)
    return x._wrap(prim)
