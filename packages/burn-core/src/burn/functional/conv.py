"""Convolutions (1d / 2d / 3d, transposed) and unfold4d."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from burn.backend.options import ConvOptions, ConvTransposeOptions, window_out
from burn.errors import ShapeError, ValueRangeError
from burn.frontend.creation import tensor, zeros
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


def _weights(op: str, nd: int, x: Tensor, weight: Tensor, bias: Tensor | None
             ) -> tuple[Tensor, Tensor, Tensor | None]:
    x = float_input(op, "x", x)
    weight = float_input(op, "weight", weight, x)
    if bias is not None:
        bias = float_input(op, "bias", bias, x)
    if weight.ndim != nd + 2:
        raise ShapeError(op, f"weight must be {nd + 2}-d", weight=weight.shape)
    return x, weight, bias


def _check_bias(op: str, bias: Tensor | None, c_out: int) -> None:
    if bias is not None and bias.shape != (c_out,):
        raise ShapeError(op, "bias must be [C_out]", bias=bias.shape, c_out=c_out)


def _conv(op: str, nd: int, x: Tensor, weight: Tensor, bias: Tensor | None,
          stride: IntOrTuple, padding: IntOrTuple | str, dilation: IntOrTuple,
          groups: int) -> Tensor:
    x, weight, bias = _weights(op, nd, x, weight, bias)
    xb, was = batched(op, x, nd)
    c_in, c_out, kernel = xb.shape[1], weight.shape[0], weight.shape[2:]
    if groups < 1 or c_in % groups or c_out % groups or weight.shape[1] * groups != c_in:
        raise ShapeError(op, "need C_in = weight.shape[1] * groups, both divisible by groups",
                         x=x.shape, weight=weight.shape, groups=groups)
    _check_bias(op, bias, c_out)
    st = ntuple(op, "stride", stride, nd, 1)
    dil = ntuple(op, "dilation", dilation, nd, 1)
    if isinstance(padding, str):
        if padding not in ("valid", "same") or (padding == "same" and any(s != 1 for s in st)):
            raise ValueRangeError(op, "padding must be 'valid', or 'same' with stride 1",
                                  padding=padding, stride=st)
        total = [d * (k - 1) if padding == "same" else 0 for d, k in zip(dil, kernel, strict=True)]
        extra = [t % 2 for t in total]
        if any(extra):  # asymmetric 'same' padding: the odd element goes right, as torch
            xb = xb.pad([p for e in reversed(extra) for p in (0, e)])
        pad = tuple(t // 2 for t in total)
    else:
        pad = ntuple(op, "padding", padding, nd)
    check_out_size(op, window_out(xb.shape[2:], kernel, st, pad, dil), x=x.shape,
                   weight=weight.shape)
    prim = xb._bk.conv(xb._prim, weight._prim, None if bias is None else bias._prim,
                       ConvOptions(st, pad, dil, groups))
    return unbatched(xb._wrap(prim), was)


def conv1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntOrTuple = 1,
           padding: IntOrTuple | str = 0, dilation: IntOrTuple = 1, groups: int = 1) -> Tensor:
    """1-d convolution (torch.nn.functional.conv1d).

    Args:
        x: [N, C_in, L] (or [C_in, L]).
        weight: [C_out, C_in / groups, k].
        bias: [C_out] or None.
        stride, padding, dilation: ints or 1-tuples; padding may be "valid" or "same".
        groups: channel groups.
    Returns:
        [N, C_out, L_out].
    Raises:
        ShapeError: for inconsistent shapes. DTypeError: for non-float inputs.
    """
    return _conv("conv1d", 1, x, weight, bias, stride, padding, dilation, groups)


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntOrTuple = 1,
           padding: IntOrTuple | str = 0, dilation: IntOrTuple = 1, groups: int = 1) -> Tensor:
    """2-d convolution (torch.nn.functional.conv2d): x [N, C_in, H, W], weight
    [C_out, C_in / groups, kh, kw] -> [N, C_out, H_out, W_out]. See `conv1d`."""
    return _conv("conv2d", 2, x, weight, bias, stride, padding, dilation, groups)


def conv3d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntOrTuple = 1,
           padding: IntOrTuple | str = 0, dilation: IntOrTuple = 1, groups: int = 1) -> Tensor:
    """3-d convolution (torch.nn.functional.conv3d): x [N, C_in, D, H, W]. See `conv1d`."""
    return _conv("conv3d", 3, x, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(op: str, nd: int, x: Tensor, weight: Tensor, bias: Tensor | None,
                    stride: IntOrTuple, padding: IntOrTuple, output_padding: IntOrTuple,
                    groups: int, dilation: IntOrTuple) -> Tensor:
    x, weight, bias = _weights(op, nd, x, weight, bias)
    xb, was = batched(op, x, nd)
    c_in = xb.shape[1]
    if groups < 1 or c_in % groups or weight.shape[0] != c_in:
        raise ShapeError(op, "need weight.shape[0] = C_in, divisible by groups", x=x.shape,
                         weight=weight.shape, groups=groups)
    c_out = weight.shape[1] * groups
    _check_bias(op, bias, c_out)
    st = ntuple(op, "stride", stride, nd, 1)
    pad = ntuple(op, "padding", padding, nd)
    dil = ntuple(op, "dilation", dilation, nd, 1)
    out_pad = ntuple(op, "output_padding", output_padding, nd)
    check_out_size(op, [(n - 1) * s - 2 * p + d * (k - 1) + o + 1 for n, s, p, d, k, o in
                        zip(xb.shape[2:], st, pad, dil, weight.shape[2:], out_pad, strict=True)],
                   x=x.shape, weight=weight.shape)
    prim = xb._bk.conv_transpose(xb._prim, weight._prim, None if bias is None else bias._prim,
                                 ConvTransposeOptions(st, pad, out_pad, dil, groups))
    return unbatched(xb._wrap(prim), was)


def conv_transpose1d(x: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: IntOrTuple = 1, padding: IntOrTuple = 0,
                     output_padding: IntOrTuple = 0, groups: int = 1,
                     dilation: IntOrTuple = 1) -> Tensor:
    """Transposed 1-d convolution (torch.nn.functional.conv_transpose1d).

    Args:
        x: [N, C_in, L] (or [C_in, L]).
        weight: [C_in, C_out / groups, k].
        bias: [C_out] or None.
        stride, padding, output_padding, dilation: ints or 1-tuples.
        groups: channel groups.
    Returns:
        [N, C_out, L_out].
    """
    return _conv_transpose("conv_transpose1d", 1, x, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(x: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: IntOrTuple = 1, padding: IntOrTuple = 0,
                     output_padding: IntOrTuple = 0, groups: int = 1,
                     dilation: IntOrTuple = 1) -> Tensor:
    """Transposed 2-d convolution; weight [C_in, C_out / groups, kh, kw]. See
    `conv_transpose1d`."""
    return _conv_transpose("conv_transpose2d", 2, x, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose3d(x: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: IntOrTuple = 1, padding: IntOrTuple = 0,
                     output_padding: IntOrTuple = 0, groups: int = 1,
                     dilation: IntOrTuple = 1) -> Tensor:
    """Transposed 3-d convolution. See `conv_transpose1d`."""
    return _conv_transpose("conv_transpose3d", 3, x, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def unfold4d(x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple = 1,
             padding: IntOrTuple = 0, dilation: IntOrTuple = 1) -> Tensor:
    """Sliding blocks (torch.nn.functional.unfold): [N, C, H, W] -> [N, C * kh * kw, L].

    Raises:
        ShapeError: for a non-4-d input or no block fitting.
    """
    op = "unfold4d"
    x = float_input(op, "x", x)
    if x.ndim != 4:
        raise ShapeError(op, "x must be 4-d [N, C, H, W]", x=x.shape)
    k = ntuple(op, "kernel_size", kernel_size, 2, 1)
    st, pad = ntuple(op, "stride", stride, 2, 1), ntuple(op, "padding", padding, 2)
    dil = ntuple(op, "dilation", dilation, 2, 1)
    check_out_size(op, window_out(x.shape[2:], k, st, pad, dil), x=x.shape, kernel=k)
    return x._wrap(x._bk.unfold4d(x._prim, k, ConvOptions(st, pad, dil, 1)))  # type: ignore


def fold4d(x: Tensor, output_size: IntOrTuple, kernel_size: IntOrTuple, stride: IntOrTuple = 1,
           padding: IntOrTuple = 0, dilation: IntOrTuple = 1) -> Tensor:
    """The inverse of `unfold4d` (torch.nn.functional.fold): blocks [N, C * kh * kw, L] summed
    into [N, C, H, W] (overlaps add), as a scatter-add of every block element to its position.

    Raises:
        ShapeError: for a non-3-d input, a channel count not divisible by kh * kw, or a block
            count L that is not the number of blocks of `output_size`.
    """
    op = "fold4d"
    x = float_input(op, "x", x)
    size = ntuple(op, "output_size", output_size, 2, 1)
    k = ntuple(op, "kernel_size", kernel_size, 2, 1)
    st, pad = ntuple(op, "stride", stride, 2, 1), ntuple(op, "padding", padding, 2)
    dil = ntuple(op, "dilation", dilation, 2, 1)
    blocks = window_out(size, k, st, pad, dil)
    if (x.ndim != 3 or x.shape[1] % (k[0] * k[1])
            or x.shape[2] != blocks[0] * blocks[1] or min(blocks) <= 0):
        raise ShapeError(op, "x must be [N, C * kh * kw, L] with L the blocks of output_size",
                         x=x.shape, output_size=size, kernel=k, blocks=blocks)
    n, c = x.shape[0], x.shape[1] // (k[0] * k[1])
    hp, wp = size[0] + 2 * pad[0], size[1] + 2 * pad[1]
    ki, kj, bi, bj = np.meshgrid(np.arange(k[0]), np.arange(k[1]), np.arange(blocks[0]),
                                 np.arange(blocks[1]), indexing="ij")
    flat = (bi * st[0] + ki * dil[0]) * wp + bj * st[1] + kj * dil[1]  # [kh, kw, bh, bw]
    where = tensor(flat.reshape(1, 1, -1), dtype="int64", device=x.device)
    values = x.reshape(n, c, -1)
    canvas = zeros(n, c, hp * wp, dtype=x.dtype, device=x.device)
    out = canvas.scatter(2, where.expand(values.shape), values, "add").reshape(n, c, hp, wp)
    return out[:, :, pad[0]:pad[0] + size[0], pad[1]:pad[1] + size[1]]
