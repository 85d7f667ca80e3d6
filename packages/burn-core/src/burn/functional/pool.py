"""Pooling: average, max (with indices), adaptive average; 1-d and 2-d."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from burn.backend.options import PoolOptions, window_out
from burn.dtype import DType
from burn.errors import ValueRangeError
from burn.functional._common import (
    IntOrTuple,
    batched,
    check_out_size,
    float_input,
    ntuple,
    unbatched,
)

if TYPE_CHECKING:
    from burn.frontend.tensor import Tensor


def _options(op: str, nd: int, x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None,
             padding: IntOrTuple, dilation: IntOrTuple, ceil_mode: bool,
             count_include_pad: bool) -> PoolOptions:
    k = ntuple(op, "kernel_size", kernel_size, nd, 1)
    st = k if stride is None else ntuple(op, "stride", stride, nd, 1)
    pad = ntuple(op, "padding", padding, nd)
    dil = ntuple(op, "dilation", dilation, nd, 1)
    if any(p > kk // 2 for p, kk in zip(pad, k, strict=True)):
        raise ValueRangeError(op, "padding must be at most half the kernel size", padding=pad,
                              kernel_size=k)
    check_out_size(op, window_out(x.shape[2:], k, st, pad, dil, ceil_mode), x=x.shape,
                   kernel_size=k)
    return PoolOptions(k, st, pad, dil, ceil_mode, count_include_pad)


def _avg_pool(op: str, nd: int, x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None,
              padding: IntOrTuple, ceil_mode: bool, count_include_pad: bool) -> Tensor:
    xb, was = batched(op, float_input(op, "x", x), nd)
    options = _options(op, nd, xb, kernel_size, stride, padding, 1, ceil_mode, count_include_pad)
    return unbatched(xb._wrap(xb._bk.avg_pool(xb._prim, options)), was)


def _max_pool(op: str, nd: int, x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None,
              padding: IntOrTuple, dilation: IntOrTuple, ceil_mode: bool
              ) -> tuple[Tensor, Tensor]:
    xb, was = batched(op, float_input(op, "x", x), nd)
    options = _options(op, nd, xb, kernel_size, stride, padding, dilation, ceil_mode, True)
    values, indices = xb._bk.max_pool_with_indices(xb._prim, options)
    return (unbatched(xb._wrap(values), was),
            unbatched(xb._wrap(indices, DType.int64), was))


def avg_pool1d(x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """Average pooling over [N, C, L] (torch.nn.functional.avg_pool1d; stride defaults to the
    kernel size).

    Raises:
        ShapeError: for a wrong rank or an empty output. ValueRangeError: for padding larger
            than half the kernel.
    """
    return _avg_pool("avg_pool1d", 1, x, kernel_size, stride, padding, ceil_mode,
                     count_include_pad)


def avg_pool2d(x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """Average pooling over [N, C, H, W]. See `avg_pool1d`."""
    return _avg_pool("avg_pool2d", 2, x, kernel_size, stride, padding, ceil_mode,
                     count_include_pad)


def max_pool1d_with_indices(x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
                            padding: IntOrTuple = 0, dilation: IntOrTuple = 1,
                            ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    """Max pooling over [N, C, L]: values and int64 indices into each input plane."""
    return _max_pool("max_pool1d", 1, x, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d_with_indices(x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
                            padding: IntOrTuple = 0, dilation: IntOrTuple = 1,
                            ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    """Max pooling over [N, C, H, W]: values and int64 flat indices into each input plane."""
    return _max_pool("max_pool2d", 2, x, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool1d(x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, dilation: IntOrTuple = 1,
               ceil_mode: bool = False) -> Tensor:
    """Max pooling over [N, C, L] (torch.nn.functional.max_pool1d)."""
    return max_pool1d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode)[0]


def max_pool2d(x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, dilation: IntOrTuple = 1,
               ceil_mode: bool = False) -> Tensor:
    """Max pooling over [N, C, H, W] (torch.nn.functional.max_pool2d)."""
    return max_pool2d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode)[0]


def _adaptive(op: str, nd: int, x: Tensor, output_size: int | tuple[int | None, ...]) -> Tensor:
    xb, was = batched(op, float_input(op, "x", x), nd)
    sizes = (output_size,) * nd if isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != nd:
        raise ValueRangeError(op, f"output_size must be an int or {nd} of them",
                              output_size=output_size)
    out = tuple(n if s is None else s for s, n in zip(sizes, xb.shape[2:], strict=True))
    check_out_size(op, out, x=x.shape)
    if math.prod(xb.shape[2:]) == 0:
        raise ValueRangeError(op, "input spatial dims must be non-empty", x=x.shape)
    return unbatched(xb._wrap(xb._bk.adaptive_avg_pool(xb._prim, out)), was)


def adaptive_avg_pool1d(x: Tensor, output_size: int | tuple[int]) -> Tensor:
    """Adaptive average pooling of [N, C, L] to `output_size`."""
    return _adaptive("adaptive_avg_pool1d", 1, x, output_size)


def adaptive_avg_pool2d(x: Tensor, output_size: int | tuple[int | None, int | None]) -> Tensor:
    """Adaptive average pooling of [N, C, H, W] to `output_size` (None keeps a size)."""
    return _adaptive("adaptive_avg_pool2d", 2, x, output_size)


def adaptive_avg_pool3d(x: Tensor,
                        output_size: int | tuple[int | None, int | None, int | None]) -> Tensor:
    """Adaptive average pooling of [N, C, D, H, W] (or [C, D, H, W]) to `output_size` (None
    keeps a size). Adaptive windows are products of per-axis windows, so this pools (H, W) in
    2-d, then D in 1-d: exact, on every backend, differentiable.

    Raises:
        ShapeError: for another rank or an empty output.
        ValueRangeError: for a malformed output_size or empty spatial dims.
    """
    op = "adaptive_avg_pool3d"
    xb, was = batched(op, float_input(op, "x", x), 3)
    sizes = (output_size,) * 3 if isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != 3:
        raise ValueRangeError(op, "output_size must be an int or 3 of them",
                              output_size=output_size)
    n, c, d, h, w = xb.shape
    od, oh, ow = (size if s is None else s for s, size in zip(sizes, (d, h, w), strict=True))
    check_out_size(op, (od, oh, ow), x=x.shape)
    if d * h * w == 0:
        raise ValueRangeError(op, "input spatial dims must be non-empty", x=x.shape)
    planes = adaptive_avg_pool2d(xb.reshape(n, c * d, h, w), (oh, ow))
    depth = planes.reshape(n, c, d, oh * ow).swap_dims(2, 3).reshape(n, c * oh * ow, d)
    out = adaptive_avg_pool1d(depth, od).reshape(n, c, oh, ow, od).permute(0, 1, 4, 2, 3)
    return unbatched(out, was)
