"""Convolution kernels: N-d conv and conv transpose, unfold4d, deform_conv2d, with backward.

Everything goes through batch-major im2col columns [N, G, C/G*prod(kernel), prod(out)] (a
strided window view, copied once) and batched BLAS products; input gradients scatter the columns
back (col2im), one strided add per kernel offset over arrays laid out alike.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import fields, replace
from types import EllipsisType

import numpy as np
from numpy.lib.stride_tricks import as_strided

from burn.backend.options import ConvOptions, ConvTransposeOptions, DeformConvOptions, window_out
from burn.errors import ShapeError

from .common import work_dtype
from .sampling import sample, sample_backward
from .windows import pad_spatial, scatter_windows, windows


def _conv_out(op: str, x: np.ndarray, kernel: Sequence[int], options: ConvOptions) -> list[int]:
    """Output spatial shape of a convolution; raises when the kernel overhangs the padded input."""
    out = window_out(x.shape[2:], kernel, options.stride, options.padding, options.dilation)
    if min(out) < 1:
        raise ShapeError(op, "kernel larger than the padded input", x=x.shape, kernel=tuple(kernel))
    return out


def _check(
    op: str,
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    options: ConvOptions | ConvTransposeOptions,
) -> int:
    """Validates shapes of a (transposed) convolution and returns its output channel count."""
    nd, groups = x.ndim - 2, options.groups
    transposed = isinstance(options, ConvTransposeOptions)
    params = {f.name: getattr(options, f.name) for f in fields(options) if f.name != "groups"}
    if nd < 1 or weight.ndim != x.ndim:
        raise ShapeError(
            op, "x must be [N, C, *spatial] and weight of the same rank", x=x.shape, w=weight.shape
        )
    for name, value in params.items():
        if len(value) != nd:
            raise ShapeError(op, f"{name} needs one entry per spatial dim", x=x.shape)
    c = x.shape[1]
    if groups < 1 or c % groups:
        raise ShapeError(op, "input channels not divisible by groups", x=x.shape, groups=groups)
    if transposed:
        fits, c_out = weight.shape[0] == c, weight.shape[1] * groups
    else:
        fits = weight.shape[1] * groups == c and weight.shape[0] % groups == 0
        c_out = weight.shape[0]
    if not fits:
        raise ShapeError(
            op,
            "weight channels do not fit input channels and groups",
            x=x.shape,
            weight=weight.shape,
            groups=groups,
        )
    if bias is not None and bias.shape != (c_out,):
        raise ShapeError(op, "bias must be [C_out]", bias=bias.shape, c_out=c_out)
    return c_out


def _check_grad(op: str, grad_out: np.ndarray, expected: Sequence[int]) -> None:
    """Raises when grad_out does not have the forward output's shape."""
    if grad_out.shape != tuple(expected):
        raise ShapeError(
            op,
            "grad_out must have the output's shape",
            grad_out=grad_out.shape,
            expected=tuple(expected),
        )


def _batched(t: np.ndarray, groups: int) -> np.ndarray:
    """[N, C, *S] -> [N, G, C/G, prod(S)] (a view of contiguous t)."""
    return t.reshape(t.shape[0], groups, t.shape[1] // groups, math.prod(t.shape[2:]))


def _grouped_weight(weight: np.ndarray, dtype: np.dtype, groups: int) -> np.ndarray:
    """A conv's weight [O, I, *kernel] as [G, O/G, I*prod(kernel)] in `dtype` (sizes given, so
    that empty weights reshape too)."""
    return weight.astype(dtype, copy=False).reshape(groups, weight.shape[0] // groups,
                                                    math.prod(weight.shape[1:]))


#: Largest temporary (elements) the batched weight-gradient products may allocate at once.
_WEIGHT_GRAD_CHUNK = 1 << 21


def _weight_grad(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sum over the batch of a[n] @ b[n]^T: a [N, G, A, L], b [N, G, B, L] -> [G, A, B].

    Runs as batched BLAS products over chunks of the batch (bounded temporaries)."""
    n, g, rows, _ = a.shape
    chunk = max(1, _WEIGHT_GRAD_CHUNK // max(1, g * rows * b.shape[2]))
    total = (a[:chunk] @ b[:chunk].swapaxes(-1, -2)).sum(axis=0)
    for start in range(chunk, n, chunk):
        total += (a[start : start + chunk] @ b[start : start + chunk].swapaxes(-1, -2)).sum(axis=0)
    return total


def _im2col(
    x: np.ndarray,
    kernel: Sequence[int],
    options: ConvOptions | ConvTransposeOptions,
    out: Sequence[int] | None = None,
) -> tuple[np.ndarray, tuple[int, ...]]:
    """Columns [N, G, C/G*prod(kernel), prod(out)] of x's padded windows (batch-major, each row
    copying runs along the output's last dim), and the output shape."""
    nd, groups = len(kernel), options.groups
    n, c = x.shape[:2]
    xp = pad_spatial(x, [(p, p) for p in options.padding])
    win = windows(xp, kernel, options.stride, options.dilation, out)
    out = win.shape[2 : 2 + nd]
    win = win.reshape(n, groups, c // groups, *win.shape[2:])
    perm = (0, 1, 2, *range(3 + nd, 3 + 2 * nd), *range(3, 3 + nd))
    rows = c // groups * math.prod(kernel)
    return win.transpose(perm).reshape(n, groups, rows, math.prod(out)), out


def _crop(full: np.ndarray, shape: Sequence[int], padding: Sequence[int]) -> np.ndarray:
    """The unpadded region [N, C, *shape[2:]] of a padded [N, C, *padded] array (contiguous)."""
    if not any(padding):
        return full
    crop: tuple[EllipsisType | slice, ...] = (
        ..., *(slice(p, p + s) for s, p in zip(shape[2:], padding, strict=True)))
    return np.ascontiguousarray(full[crop])


def _col2im(
    cols: np.ndarray,
    shape: Sequence[int],
    out: Sequence[int],
    kernel: Sequence[int],
    options: ConvOptions | ConvTransposeOptions,
) -> np.ndarray:
    """Adjoint of `_im2col`: sums columns [N, G, C/G*prod(kernel), prod(out)] into [N, C, *S]."""
    nd, padding = len(kernel), options.padding
    n, c = shape[:2]
    per_window = cols.reshape(n, c, *kernel, *out)
    perm = (0, 1, *range(2 + nd, 2 + 2 * nd), *range(2, 2 + nd))
    padded = [s + 2 * p for s, p in zip(shape[2:], padding, strict=True)]
    full = scatter_windows(per_window.transpose(perm), padded, options.stride, options.dilation)
    return _crop(full, shape, padding)


#: The flat input gradient runs while it has at most this many times the output's positions.
_FLAT_MAX_EXTRA = 1.5


def _input_grad(w: np.ndarray, go: np.ndarray, shape: Sequence[int], out: Sequence[int],
                kernel: Sequence[int], options: ConvOptions) -> np.ndarray:
    """Input gradient of a conv: w [G, O/G, C/G*prod(kernel)], go [N, G, O/G, prod(out)] (the
    output gradient, contiguous) -> [N, C, *S].

    With stride 1, output position o is placed at sum(o_i * P_i) of the padded input's
    flattened plane (P its strides), zeros between rows: each kernel offset's column row then
    adds onto the plane as one contiguous run (starting at sum(k_i * d_i * P_i)), instead of
    one short run per output row. Other strides go through `_col2im`."""
    n, c = shape[:2]
    padded = [s + 2 * p for s, p in zip(shape[2:], options.padding, strict=True)]
    plane = [math.prod(padded[i + 1:]) for i in range(len(padded))]
    span = sum((o - 1) * st for o, st in zip(out, plane, strict=True)) + 1
    if any(st != 1 for st in options.stride) or span > _FLAT_MAX_EXTRA * math.prod(out):
        return _col2im(w.swapaxes(1, 2) @ go, shape, out, kernel, options)
    spread = np.zeros((n, go.shape[1] * go.shape[2], span), go.dtype)
    item = spread.itemsize
    as_strided(spread, (*spread.shape[:2], *out),
               (*spread.strides[:2], *(st * item for st in plane)))[...] = go.reshape(
        *spread.shape[:2], *out)
    rows = (w.swapaxes(1, 2) @ spread.reshape(go.shape[:3] + (span,))).reshape(
        n, c, math.prod(kernel), span)
    full = np.zeros((n, c, math.prod(padded)), go.dtype)
    for t, offset in enumerate(np.ndindex(*kernel)):
        start = sum(k * d * st for k, d, st in zip(offset, options.dilation, plane, strict=True))
        full[:, :, start:start + span] += rows[:, :, t]
    return _crop(full.reshape(n, c, *padded), shape, options.padding)


def _bias_grad(grad_out: np.ndarray, bias: np.ndarray | None) -> np.ndarray | None:
    """Sum of grad_out over batch and spatial dims, or None without bias."""
    if bias is None:
        return None
    return grad_out.sum(axis=(0, *range(2, grad_out.ndim))).astype(bias.dtype, copy=False)


def _add_bias(y: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """Adds a per-channel bias to [N, C, *S] in place."""
    if bias is not None:
        y += bias.astype(y.dtype, copy=False).reshape(-1, *(1,) * (y.ndim - 2))
    return y


#: Largest im2col columns (elements) a convolution keeps from forward for its backward.
SAVED_COLUMNS_MAX = 1 << 24


def conv(
    x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None, options: ConvOptions
) -> np.ndarray:
    """N-d convolution (1d, 2d, 3d), PyTorch's conv semantics.

    Args:
        x: input [N, C_in, *spatial].
        weight: kernel [C_out, C_in/groups, *kernel].
        bias: [C_out] or None.
        options: stride, padding, dilation, groups.

    Returns:
        Output [N, C_out, *out_spatial] of x's dtype.
    """
    return conv_saving_columns(x, weight, bias, options)[0]


def conv_saving_columns(
    x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None, options: ConvOptions
) -> tuple[np.ndarray, np.ndarray | None]:
    """`conv`, and its im2col columns for `conv_backward_from_columns` while they have at most
    `SAVED_COLUMNS_MAX` elements (else None).

    Args:
        x, weight, bias, options: as `conv`.

    Returns:
        (output [N, C_out, *out_spatial] of x's dtype, columns or None).
    """
    g = options.groups
    c_out = _check("conv", x, weight, bias, options)
    _conv_out("conv", x, weight.shape[2:], options)
    wt = work_dtype(x.dtype)
    cols, out = _im2col(x.astype(wt, copy=False), weight.shape[2:], options)
    w = _grouped_weight(weight, wt, g)
    y = _add_bias((w @ cols).reshape(x.shape[0], c_out, *out), bias)
    return y.astype(x.dtype, copy=False), (cols if cols.size <= SAVED_COLUMNS_MAX else None)


def conv_backward(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    grad_out: np.ndarray,
    options: ConvOptions,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Gradients of `conv`.

    Args:
        x: input [N, C_in, *spatial].
        weight: kernel [C_out, C_in/groups, *kernel].
        bias: [C_out] or None.
        grad_out: gradient of the output [N, C_out, *out_spatial].
        options: the forward's options.

    Returns:
        (grad_x, grad_weight, grad_bias or None), each of its input's shape and dtype.
    """
    c_out = _check("conv_backward", x, weight, bias, options)
    out = _conv_out("conv_backward", x, weight.shape[2:], options)
    _check_grad("conv_backward", grad_out, (x.shape[0], c_out, *out))
    cols, _ = _im2col(x.astype(work_dtype(x.dtype), copy=False), weight.shape[2:], options)
    gx, gw, gb = conv_backward_from_columns(cols, x.shape, x.dtype, weight, bias, grad_out,
                                            options, True)
    assert gx is not None
    return gx, gw, gb


def conv_backward_from_columns(
    cols: np.ndarray,
    x_shape: Sequence[int],
    x_dtype: np.dtype,
    weight: np.ndarray,
    bias: np.ndarray | None,
    grad_out: np.ndarray,
    options: ConvOptions,
    need_x: bool,
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None]:
    """Gradients of `conv` from the forward's columns (`conv_saving_columns`), the input's
    only when `need_x`.

    Args:
        cols: the forward's columns.
        x_shape, x_dtype: the forward input's shape and dtype.
        weight, bias, options: the forward's.
        grad_out: gradient of the output [N, C_out, *out_spatial].
        need_x: whether to compute the input's gradient.

    Returns:
        (grad_x or None, grad_weight, grad_bias or None), each of its input's shape and dtype.
    """
    g, kernel = options.groups, weight.shape[2:]
    wt = work_dtype(x_dtype)
    n, c_out = grad_out.shape[:2]
    expected = (n, g, (x_shape[1] // g) * math.prod(kernel), math.prod(grad_out.shape[2:]))
    if cols.shape != expected or c_out != weight.shape[0] or n != x_shape[0]:
        raise ShapeError("conv_backward", "columns, grad_out and weight do not fit x",
                         cols=cols.shape, expected=expected, grad_out=grad_out.shape,
                         weight=weight.shape)
    go = _batched(np.ascontiguousarray(grad_out, wt), g)
    gw = _weight_grad(go, cols).reshape(weight.shape).astype(weight.dtype, copy=False)
    gb = _bias_grad(grad_out.astype(wt, copy=False), bias)
    if not need_x:
        return None, gw, gb
    w = _grouped_weight(weight, wt, g)
    gx = _input_grad(w, go, x_shape, grad_out.shape[2:], kernel, options)
    return gx.astype(x_dtype, copy=False), gw, gb


def _transpose_out(
    op: str, x: np.ndarray, kernel: Sequence[int], options: ConvTransposeOptions
) -> list[int]:
    """Output spatial shape of a transposed convolution; raises when it is empty."""
    out = [
        (n - 1) * s - 2 * p + d * (k - 1) + pad_out + 1
        for n, k, s, p, d, pad_out in zip(
            x.shape[2:],
            kernel,
            options.stride,
            options.padding,
            options.dilation,
            options.padding_out,
            strict=True,
        )
    ]
    if min(out) < 1:
        raise ShapeError(op, "empty output", x=x.shape, kernel=tuple(kernel))
    return out


def conv_transpose(
    x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None, options: ConvTransposeOptions
) -> np.ndarray:
    """N-d transposed convolution (1d, 2d, 3d), PyTorch's conv_transpose semantics.

    Args:
        x: input [N, C_in, *spatial].
        weight: kernel [C_in, C_out/groups, *kernel].
        bias: [C_out] or None.
        options: stride, padding, padding_out (output_padding), dilation, groups.

    Returns:
        Output [N, C_out, *out_spatial] of x's dtype, out = (n-1)*s - 2p + d*(k-1) + op + 1.
    """
    g = options.groups
    c_out = _check("conv_transpose", x, weight, bias, options)
    kernel = weight.shape[2:]
    out = _transpose_out("conv_transpose", x, kernel, options)
    wt = work_dtype(x.dtype)
    w = _grouped_weight(weight, wt, g)
    cols = w.swapaxes(1, 2) @ _batched(np.ascontiguousarray(x, wt), g)
    y = _col2im(cols, (x.shape[0], c_out, *out), x.shape[2:], kernel, options)
    return _add_bias(y, bias).astype(x.dtype, copy=False)


def conv_transpose_backward(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    grad_out: np.ndarray,
    options: ConvTransposeOptions,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Gradients of `conv_transpose` (its input gradient is a plain convolution of grad_out).

    Args:
        x: input [N, C_in, *spatial].
        weight: kernel [C_in, C_out/groups, *kernel].
        bias: [C_out] or None.
        grad_out: gradient of the output [N, C_out, *out_spatial].
        options: the forward's options.

    Returns:
        (grad_x, grad_weight, grad_bias or None), each of its input's shape and dtype.
    """
    g = options.groups
    c_out = _check("conv_transpose_backward", x, weight, bias, options)
    kernel = weight.shape[2:]
    op = "conv_transpose_backward"
    _check_grad(op, grad_out, (x.shape[0], c_out, *_transpose_out(op, x, kernel, options)))
    wt = work_dtype(x.dtype)
    go = grad_out.astype(wt, copy=False)
    cols, _ = _im2col(go, kernel, options, out=x.shape[2:])
    w = _grouped_weight(weight, wt, g)
    gw = _weight_grad(_batched(np.ascontiguousarray(x, wt), g), cols).reshape(weight.shape)
    gx = (w @ cols).reshape(x.shape)
    return gx.astype(x.dtype, copy=False), gw.astype(weight.dtype, copy=False), _bias_grad(go, bias)


def unfold4d(x: np.ndarray, kernel_size: tuple[int, int], options: ConvOptions) -> np.ndarray:
    """Sliding-window patches of a 4-d input (torch.nn.functional.unfold); groups is ignored.

    Args:
        x: input [N, C, H, W].
        kernel_size: (kh, kw).
        options: stride, padding, dilation.

    Returns:
        Patches [N, C*kh*kw, L] of x's dtype, L the number of window positions.
    """
    if x.ndim != 4:
        raise ShapeError("unfold4d", "x must be [N, C, H, W]", x=x.shape)
    _conv_out("unfold4d", x, kernel_size, options)
    cols, _ = _im2col(x, kernel_size, replace(options, groups=1))
    return cols.reshape(x.shape[0], x.shape[1] * math.prod(kernel_size), cols.shape[-1])


def _check_deform(
    op: str,
    x: np.ndarray,
    offset: np.ndarray,
    weight: np.ndarray,
    mask: np.ndarray | None,
    bias: np.ndarray | None,
    options: DeformConvOptions,
) -> list[int]:
    """Validates deform_conv2d shapes and returns the output spatial shape (Ho, Wo)."""
    if x.ndim != 4:
        raise ShapeError(op, "x must be [N, C, H, W]", x=x.shape)
    conv_options = ConvOptions(
        options.stride, options.padding, options.dilation, options.weight_groups
    )
    _check(op, x, weight, bias, conv_options)
    og = options.offset_groups
    if og < 1 or x.shape[1] % og:
        raise ShapeError(op, "channels not divisible by offset_groups", x=x.shape, offset_groups=og)
    out = _conv_out(op, x, weight.shape[2:], conv_options)
    taps = og * weight.shape[2] * weight.shape[3]
    if offset.shape != (x.shape[0], 2 * taps, *out):
        raise ShapeError(
            op,
            "offset must be [N, 2*offset_groups*kh*kw, Ho, Wo]",
            offset=offset.shape,
            x=x.shape,
            weight=weight.shape,
        )
    if mask is not None and mask.shape != (x.shape[0], taps, *out):
        raise ShapeError(
            op,
            "mask must be [N, offset_groups*kh*kw, Ho, Wo]",
            mask=mask.shape,
            x=x.shape,
            weight=weight.shape,
        )
    return out


def _deform_samples(
    x: np.ndarray,
    offset: np.ndarray,
    kernel: Sequence[int],
    out: Sequence[int],
    options: DeformConvOptions,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sampling points and unmasked samples of deform_conv2d.

    Returns:
        (py, px [N*og, K*Ho*Wo], samples [N, og, C/og, K, Ho*Wo]) with K = kh*kw.
    """
    n, c = x.shape[:2]
    og, (kh, kw), (ho, wo) = options.offset_groups, kernel, out
    (sh, sw), (ph, pw), (dh, dw) = options.stride, options.padding, options.dilation
    ky, kx = np.meshgrid(np.arange(kh) * dh, np.arange(kw) * dw, indexing="ij")
    base_y = ky.reshape(-1, 1, 1) + (np.arange(ho) * sh - ph).reshape(1, -1, 1)
    base_x = kx.reshape(-1, 1, 1) + (np.arange(wo) * sw - pw).reshape(1, 1, -1)
    off = offset.reshape(n, og, kh * kw, 2, ho, wo)
    py = (off[:, :, :, 0] + base_y).reshape(n * og, kh * kw * ho * wo)
    px = (off[:, :, :, 1] + base_x).reshape(n * og, kh * kw * ho * wo)
    vals = sample(x.reshape(n * og, c // og, *x.shape[2:]), py, px, "bilinear")
    return py, px, vals.reshape(n, og, c // og, kh * kw, ho * wo)


def deform_conv2d(
    x: np.ndarray,
    offset: np.ndarray,
    weight: np.ndarray,
    mask: np.ndarray | None,
    bias: np.ndarray | None,
    options: DeformConvOptions,
) -> np.ndarray:
    """Deformable 2d convolution (torchvision.ops.deform_conv2d semantics, zeros outside).

    Args:
        x: input [N, C_in, H, W].
        offset: [N, 2*offset_groups*kh*kw, Ho, Wo], (dy, dx) pairs per kernel position.
        weight: kernel [C_out, C_in/weight_groups, kh, kw].
        mask: modulation [N, offset_groups*kh*kw, Ho, Wo] or None (all ones).
        bias: [C_out] or None.
        options: stride, padding, dilation, weight_groups, offset_groups.

    Returns:
        Output [N, C_out, Ho, Wo] of x's dtype.
    """
    out = _check_deform("deform_conv2d", x, offset, weight, mask, bias, options)
    wt = work_dtype(x.dtype)
    n, g = x.shape[0], options.weight_groups
    _, _, vals = _deform_samples(
        x.astype(wt, copy=False), offset.astype(wt, copy=False), weight.shape[2:], out, options
    )
    if mask is not None:
        vals = vals * mask.astype(wt, copy=False).reshape(*vals.shape[:2], 1, *vals.shape[3:])
    # sizes written out: a -1 cannot be inferred from an empty batch
    rows = math.prod(weight.shape[1:])  # C_in/g * kh * kw
    cols = vals.reshape(n, g, rows, vals.shape[-1])
    y = weight.astype(wt, copy=False).reshape(g, weight.shape[0] // g, rows) @ cols
    return _add_bias(y.reshape(n, weight.shape[0], *out), bias).astype(x.dtype, copy=False)


def deform_conv2d_backward(
    x: np.ndarray,
    offset: np.ndarray,
    weight: np.ndarray,
    mask: np.ndarray | None,
    bias: np.ndarray | None,
    grad_out: np.ndarray,
    options: DeformConvOptions,
    needs: tuple[bool, bool, bool, bool, bool] = (True,) * 5,
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None, np.ndarray | None,
           np.ndarray | None]:
    """Gradients of `deform_conv2d` (offset gradients vanish outside (-1, H) x (-1, W)).

    Args:
        x, offset, weight, mask, bias, options: the forward's arguments.
        grad_out: gradient of the output [N, C_out, Ho, Wo].
        needs: which of (x, offset, weight, mask, bias) to compute gradients for (the others
            are None; the image and point gradients of the sampling are skipped when neither
            x nor the offsets need theirs).

    Returns:
        (grad_x, grad_offset, grad_weight, grad_mask or None, grad_bias or None).
    """
    op = "deform_conv2d_backward"
    out = _check_deform(op, x, offset, weight, mask, bias, options)
    _check_grad(op, grad_out, (x.shape[0], weight.shape[0], *out))
    need_x, need_offset, need_weight, need_mask, need_bias = needs
    wt = work_dtype(x.dtype)
    (n, c, h, w), g = x.shape, options.weight_groups
    xw = x.astype(wt, copy=False)
    py, px, vals = _deform_samples(
        xw, offset.astype(wt, copy=False), weight.shape[2:], out, options
    )
    m = (
        None
        if mask is None
        else mask.astype(wt, copy=False).reshape(*vals.shape[:2], 1, *vals.shape[3:])
    )
    rows, points = math.prod(weight.shape[1:]), vals.shape[-1]  # (no -1: empty batches)
    go = grad_out.astype(wt, copy=False).reshape(n, g, weight.shape[0] // g, points)
    gw = None
    if need_weight:
        cols = (vals if m is None else vals * m).reshape(n, g, rows, points)
        gw = (go @ cols.transpose(0, 1, 3, 2)).sum(axis=0).reshape(weight.shape).astype(
            weight.dtype, copy=False)
    gx = goffset = gmask = None
    if need_x or need_offset or (need_mask and mask is not None):
        wmat = weight.astype(wt, copy=False).reshape(g, weight.shape[0] // g, rows)
        gcols = (wmat.transpose(0, 2, 1) @ go).reshape(vals.shape)
        if need_mask and mask is not None:
            gmask = (gcols * vals).sum(axis=2).reshape(mask.shape).astype(mask.dtype, copy=False)
        if need_x or need_offset:
            per_group = c // options.offset_groups
            gvals = (gcols if m is None else gcols * m).reshape(
                py.shape[0], per_group, py.shape[1])
            gxs, gpy, gpx = sample_backward(xw.reshape(py.shape[0], per_group, h, w), py, px,
                                            gvals, "bilinear", need_x, need_offset)
            if gxs is not None:
                gx = gxs.reshape(x.shape).astype(x.dtype, copy=False)
            if gpy is not None and gpx is not None:
                inside = (py > -1) & (py < h) & (px > -1) & (px < w)
                goffset = np.stack([gpy * inside, gpx * inside], axis=1)  # [N*og, 2, K*Ho*Wo]
                goffset = goffset.reshape(*vals.shape[:2], 2, *vals.shape[3:]).transpose(
                    0, 1, 3, 2, 4).reshape(offset.shape).astype(offset.dtype, copy=False)
    gbias = _bias_grad(grad_out.astype(wt, copy=False), bias) if need_bias else None
    return gx, goffset, gw, gmask, gbias
