"""NumPy module kernels (conv, pool, interpolate, grid_sample) vs torch: forward and backward."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from burn.backend.options import (
    ConvOptions,
    ConvTransposeOptions,
    DeformConvOptions,
    GridSampleOptions,
    InterpolateOptions,
    PoolOptions,
)
from burn.backends.numpy import module as K
from burn.errors import ShapeError

DTYPES = [np.float32, np.float64]
TOL = {np.dtype(np.float16): 2e-2, np.dtype(np.float32): 2e-4, np.dtype(np.float64): 1e-10}


def rand(rng: np.random.Generator, shape, dtype, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(dtype)


def t(a: np.ndarray, grad: bool = True) -> torch.Tensor:
    """float64 torch leaf of a numpy array (the reference always runs in float64)."""
    return torch.tensor(a.astype(np.float64), requires_grad=grad)


def check(actual, expected, dtype) -> None:
    """Shape, then dtype, then values (tolerance by dtype, scaled by the reference's magnitude)."""
    exp = expected.detach().numpy() if isinstance(expected, torch.Tensor) else np.asarray(expected)
    assert isinstance(actual, np.ndarray)
    assert actual.shape == exp.shape, (actual.shape, exp.shape)
    assert actual.dtype == np.dtype(dtype), (actual.dtype, dtype)
    tol = TOL[np.dtype(dtype)]
    scale = max(1.0, float(np.abs(exp).max(initial=0.0)))
    np.testing.assert_allclose(actual, exp, rtol=tol, atol=tol * scale)


TORCH_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
TORCH_CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}

# (n, c_in, c_out, spatial, kernel, stride, padding, dilation, groups, bias)
CONV_CASES = [
    (2, 3, 4, (11,), (3,), (1,), (0,), (1,), 1, True),
    (1, 4, 6, (9,), (2,), (2,), (1,), (2,), 2, False),
    (2, 3, 5, (7, 9), (3, 3), (1, 1), (1, 1), (1, 1), 1, True),
    (1, 4, 4, (8, 7), (3, 2), (2, 3), (2, 0), (1, 2), 4, True),
    (2, 6, 4, (10, 11), (1, 3), (3, 1), (0, 2), (2, 1), 2, False),
    (1, 2, 4, (5, 6, 7), (3, 2, 3), (1, 2, 2), (1, 0, 1), (1, 1, 2), 2, True),
    (2, 3, 2, (4, 5, 5), (2, 3, 1), (2, 1, 1), (0, 1, 0), (2, 1, 1), 1, False),
    (2, 4, 6, (9, 10), (3, 2), (1, 1), (2, 1), (2, 3), 2, True),  # flat columns (stride 1)
    (1, 2, 3, (4, 5, 6), (2, 2, 2), (1, 1, 1), (1, 1, 1), (1, 1, 1), 1, True),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_forward_backward(case, dtype):
    n, ci, co, spatial, k, s, p, d, g, has_bias = case
    rng = np.random.default_rng(0)
    x, w = rand(rng, (n, ci, *spatial), dtype), rand(rng, (co, ci // g, *k), dtype)
    b = rand(rng, (co,), dtype) if has_bias else None
    opts = ConvOptions(stride=s, padding=p, dilation=d, groups=g)
    tx, tw, tb = t(x), t(w), (t(b) if has_bias else None)
    ty = TORCH_CONV[len(spatial)](tx, tw, tb, stride=s, padding=p, dilation=d, groups=g)
    check(K.conv(x, w, b, opts), ty, dtype)
    go = rand(rng, tuple(ty.shape), dtype)
    ty.backward(torch.tensor(go.astype(np.float64)))
    gx, gw, gb = K.conv_backward(x, w, b, go, opts)
    check(gx, tx.grad, dtype)
    check(gw, tw.grad, dtype)
    if has_bias:
        check(gb, tb.grad, dtype)
    else:
        assert gb is None


# (n, c_in, c_out, spatial, kernel, stride, padding, padding_out, dilation, groups, bias)
CONV_T_CASES = [
    (2, 3, 4, (7,), (3,), (2,), (1,), (1,), (1,), 1, True),
    (1, 4, 2, (6,), (2,), (1,), (0,), (0,), (3,), 2, False),
    (1, 2, 2, (5,), (3,), (1,), (0,), (1,), (2,), 1, False),
    (2, 3, 4, (5, 6), (3, 3), (2, 1), (1, 0), (1, 0), (1, 1), 1, True),
    (1, 4, 6, (4, 5), (2, 3), (3, 2), (0, 2), (2, 1), (2, 2), 2, True),
    (1, 2, 4, (3, 4, 3), (2, 3, 2), (2, 1, 2), (0, 1, 1), (1, 0, 0), (1, 2, 1), 2, True),
    (2, 4, 2, (6, 5), (3, 3), (1, 1), (1, 0), (0, 0), (2, 1), 2, True),  # flat columns
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CONV_T_CASES)
def test_conv_transpose_forward_backward(case, dtype):
    n, ci, co, spatial, k, s, p, op, d, g, has_bias = case
    rng = np.random.default_rng(1)
    x, w = rand(rng, (n, ci, *spatial), dtype), rand(rng, (ci, co // g, *k), dtype)
    b = rand(rng, (co,), dtype) if has_bias else None
    opts = ConvTransposeOptions(stride=s, padding=p, padding_out=op, dilation=d, groups=g)
    tx, tw, tb = t(x), t(w), (t(b) if has_bias else None)
    ty = TORCH_CONV_T[len(spatial)](
        tx, tw, tb, stride=s, padding=p, output_padding=op, groups=g, dilation=d
    )
    check(K.conv_transpose(x, w, b, opts), ty, dtype)
    go = rand(rng, tuple(ty.shape), dtype)
    ty.backward(torch.tensor(go.astype(np.float64)))
    gx, gw, gb = K.conv_transpose_backward(x, w, b, go, opts)
    check(gx, tx.grad, dtype)
    check(gw, tw.grad, dtype)
    if has_bias:
        check(gb, tb.grad, dtype)
    else:
        assert gb is None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape,k,s,p,d",
    [
        ((2, 3, 7, 8), (3, 2), (1, 2), (1, 0), (1, 2)),
        ((1, 2, 5, 5), (5, 5), (1, 1), (0, 0), (1, 1)),
        ((1, 1, 9, 6), (2, 3), (3, 1), (2, 1), (2, 1)),
    ],
)
def test_unfold4d(shape, k, s, p, d, dtype):
    x = rand(np.random.default_rng(2), shape, dtype)
    opts = ConvOptions(stride=s, padding=p, dilation=d, groups=3)
    expected = F.unfold(t(x, False), k, dilation=d, padding=p, stride=s)
    check(K.unfold4d(x, k, opts), expected, dtype)


def deform_reference(x, offset, weight, mask, bias, opts: DeformConvOptions):
    """torchvision's deform_conv2d from its definition: explicit bilinear gathers, autograd."""
    n, c, h, w = x.shape
    co, _, kh, kw = weight.shape
    ho, wo = offset.shape[2:]
    og, wg = opts.offset_groups, opts.weight_groups
    (sh, sw), (ph, pw), (dh, dw) = opts.stride, opts.padding, opts.dilation
    off = offset.reshape(n, og, kh * kw, 2, ho, wo)
    ky = (torch.arange(kh).repeat_interleave(kw) * dh).reshape(-1, 1, 1)
    kx = (torch.arange(kw).repeat(kh) * dw).reshape(-1, 1, 1)
    py = off[:, :, :, 0] + ky + (torch.arange(ho) * sh - ph).reshape(1, -1, 1)
    px = off[:, :, :, 1] + kx + (torch.arange(wo) * sw - pw).reshape(1, 1, -1)
    flat = x.reshape(n, og, c // og, h * w)
    y0, x0 = torch.floor(py).detach().long(), torch.floor(px).detach().long()
    ly, lx = py - y0, px - x0

    def corner(yy, xx):
        valid = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
        idx = (yy.clamp(0, h - 1) * w + xx.clamp(0, w - 1)).reshape(n, og, 1, -1)
        got = torch.gather(flat, 3, idx.expand(-1, -1, c // og, -1))
        return got.reshape(n, og, c // og, kh * kw, ho, wo) * valid[:, :, None]

    val = (
        ((1 - ly) * (1 - lx))[:, :, None] * corner(y0, x0)
        + ((1 - ly) * lx)[:, :, None] * corner(y0, x0 + 1)
        + (ly * (1 - lx))[:, :, None] * corner(y0 + 1, x0)
        + (ly * lx)[:, :, None] * corner(y0 + 1, x0 + 1)
    )
    inside = (py > -1) & (py < h) & (px > -1) & (px < w)
    val = val * inside[:, :, None]
    if mask is not None:
        val = val * mask.reshape(n, og, 1, kh * kw, ho, wo)
    cols = val.reshape(n, wg, -1, ho * wo)
    y = torch.einsum("gok,ngkp->ngop", weight.reshape(wg, co // wg, -1), cols)
    y = y.reshape(n, co, ho, wo)
    return y if bias is None else y + bias.reshape(1, -1, 1, 1)


# (n, c_in, c_out, hw, kernel, stride, padding, dilation, weight_groups, offset_groups, mask, bias)
DEFORM_CASES = [
    (2, 3, 4, (6, 7), (3, 3), (1, 1), (1, 1), (1, 1), 1, 1, True, True),
    (1, 4, 6, (7, 5), (2, 3), (2, 1), (0, 1), (1, 2), 2, 2, False, True),
    (2, 4, 2, (5, 6), (3, 2), (1, 2), (2, 0), (2, 1), 1, 4, True, False),
    (1, 6, 3, (8, 8), (1, 3), (3, 2), (0, 2), (1, 1), 3, 2, False, False),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", DEFORM_CASES)
def test_deform_conv2d_forward_backward(case, dtype):
    n, ci, co, (h, w), (kh, kw), s, p, d, wg, og, has_mask, has_bias = case
    rng = np.random.default_rng(3)
    ho = (h + 2 * p[0] - d[0] * (kh - 1) - 1) // s[0] + 1
    wo = (w + 2 * p[1] - d[1] * (kw - 1) - 1) // s[1] + 1
    x = rand(rng, (n, ci, h, w), dtype)
    offset = rand(rng, (n, 2 * og * kh * kw, ho, wo), dtype, scale=1.5)
    offset[:, :, 0] = 0  # integer points, some exactly on the -1 border (no offset gradient)
    weight = rand(rng, (co, ci // wg, kh, kw), dtype)
    mask = rng.uniform(0, 1, (n, og * kh * kw, ho, wo)).astype(dtype) if has_mask else None
    bias = rand(rng, (co,), dtype) if has_bias else None
    opts = DeformConvOptions(stride=s, padding=p, dilation=d, weight_groups=wg, offset_groups=og)
    tx, toff, tw = t(x), t(offset), t(weight)
    tm, tb = (t(mask) if has_mask else None), (t(bias) if has_bias else None)
    ty = deform_reference(tx, toff, tw, tm, tb, opts)
    check(K.deform_conv2d(x, offset, weight, mask, bias, opts), ty, dtype)
    go = rand(rng, tuple(ty.shape), dtype)
    ty.backward(torch.tensor(go.astype(np.float64)))
    gx, goff, gw, gm, gb = K.deform_conv2d_backward(x, offset, weight, mask, bias, go, opts)
    check(gx, tx.grad, dtype)
    check(goff, toff.grad, dtype)
    check(gw, tw.grad, dtype)
    if has_mask:
        check(gm, tm.grad, dtype)
    else:
        assert gm is None
    if has_bias:
        check(gb, tb.grad, dtype)
    else:
        assert gb is None


def test_deform_conv2d_zero_offset_is_conv():
    rng = np.random.default_rng(4)
    x, w = rand(rng, (2, 4, 7, 6), np.float64), rand(rng, (6, 2, 3, 2), np.float64)
    opts = DeformConvOptions(
        stride=(2, 1), padding=(1, 1), dilation=(1, 2), weight_groups=2, offset_groups=2
    )
    offset = np.zeros((2, 2 * 2 * 6, 4, 6))
    expected = F.conv2d(
        t(x, False), t(w, False), stride=(2, 1), padding=(1, 1), dilation=(1, 2), groups=2
    )
    check(K.deform_conv2d(x, offset, w, None, None, opts), expected, np.float64)


def test_deform_conv2d_offset_grad_finite_differences():
    rng = np.random.default_rng(5)
    x, w = rand(rng, (1, 2, 4, 5), np.float64), rand(rng, (2, 2, 2, 2), np.float64)
    offset = rand(rng, (1, 8, 3, 4), np.float64, scale=0.8)
    mask = rng.uniform(0, 1, (1, 4, 3, 4))
    opts = DeformConvOptions(stride=(1, 1), padding=(0, 0), dilation=(1, 1))
    go = rand(rng, (1, 2, 3, 4), np.float64)
    _, goff, _, gm, _ = K.deform_conv2d_backward(x, offset, w, mask, None, go, opts)
    eps = 1e-6
    for arr, grad in ((offset, goff), (mask, gm)):
        numeric = np.zeros_like(arr)
        for i in np.ndindex(arr.shape):
            plus, minus = arr.copy(), arr.copy()
            plus[i] += eps
            minus[i] -= eps
            args = (plus, mask) if arr is offset else (offset, plus)
            margs = (minus, mask) if arr is offset else (offset, minus)
            numeric[i] = (
                (K.deform_conv2d(x, args[0], w, args[1], None, opts) * go).sum()
                - (K.deform_conv2d(x, margs[0], w, margs[1], None, opts) * go).sum()
            ) / (2 * eps)
        np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)


TORCH_AVG = {1: F.avg_pool1d, 2: F.avg_pool2d}
TORCH_MAX = {1: F.max_pool1d, 2: F.max_pool2d}

# (shape, kernel, stride, padding, ceil_mode, count_include_pad)
AVG_CASES = [
    ((2, 3, 11), (3,), (2,), (1,), False, True),
    ((1, 2, 10), (4,), (3,), (2,), True, False),
    ((2, 2, 7, 9), (3, 3), (2, 2), (1, 1), True, True),
    ((1, 3, 8, 7), (2, 3), (1, 2), (0, 1), False, False),
    ((1, 1, 6, 6), (3, 3), (3, 3), (1, 1), True, False),
    ((1, 2, 5, 8), (2, 2), (2, 3), (1, 1), True, True),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", AVG_CASES)
def test_avg_pool_forward_backward(case, dtype):
    shape, k, s, p, ceil, include = case
    rng = np.random.default_rng(6)
    x = rand(rng, shape, dtype)
    opts = PoolOptions(
        kernel_size=k,
        stride=s,
        padding=p,
        dilation=(1,) * len(k),
        ceil_mode=ceil,
        count_include_pad=include,
    )
    tx = t(x)
    ty = TORCH_AVG[len(k)](tx, k, s, p, ceil_mode=ceil, count_include_pad=include)
    check(K.avg_pool(x, opts), ty, dtype)
    go = rand(rng, tuple(ty.shape), dtype)
    ty.backward(torch.tensor(go.astype(np.float64)))
    check(K.avg_pool_backward(x, go, opts), tx.grad, dtype)


# (shape, kernel, stride, padding, dilation, ceil_mode)
MAX_CASES = [
    ((2, 3, 11), (3,), (2,), (1,), (1,), False),
    ((1, 2, 12), (2,), (3,), (1,), (2,), True),
    ((2, 2, 7, 9), (3, 3), (2, 2), (1, 1), (1, 1), True),
    ((1, 3, 9, 8), (2, 3), (1, 2), (1, 1), (2, 1), False),
    ((1, 1, 8, 10), (3, 2), (3, 2), (1, 0), (2, 3), True),
    ((2, 2, 6, 6), (3, 3), (1, 1), (1, 1), (1, 1), False),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", MAX_CASES)
def test_max_pool_forward_backward(case, dtype):
    shape, k, s, p, d, ceil = case
    rng = np.random.default_rng(7)
    x = rand(rng, shape, dtype)
    opts = PoolOptions(kernel_size=k, stride=s, padding=p, dilation=d, ceil_mode=ceil)
    tx = t(x)
    ty, tidx = TORCH_MAX[len(k)](tx, k, s, p, d, ceil_mode=ceil, return_indices=True)
    y, idx = K.max_pool_with_indices(x, opts)
    check(y, ty, dtype)
    assert idx.shape == tuple(tidx.shape) and idx.dtype == np.int64
    np.testing.assert_array_equal(idx, tidx.numpy())
    go = rand(rng, tuple(ty.shape), dtype)
    ty.backward(torch.tensor(go.astype(np.float64)))
    check(K.max_pool_backward(x, idx, go, opts), tx.grad, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape,out",
    [
        ((2, 3, 10), (4,)),
        ((1, 2, 5), (8,)),
        ((2, 2, 7, 9), (3, 4)),
        ((1, 1, 6, 5), (6, 7)),
        ((1, 2, 11, 13), (1, 1)),
    ],
)
def test_adaptive_avg_pool_forward_backward(shape, out, dtype):
    rng = np.random.default_rng(8)
    x = rand(rng, shape, dtype)
    tx = t(x)
    ty = (F.adaptive_avg_pool1d if len(out) == 1 else F.adaptive_avg_pool2d)(tx, out)
    check(K.adaptive_avg_pool(x, out), ty, dtype)
    go = rand(rng, tuple(ty.shape), dtype)
    ty.backward(torch.tensor(go.astype(np.float64)))
    check(K.adaptive_avg_pool_backward(x, go), tx.grad, dtype)


INTERP_MODES = [
    ("nearest", False),
    ("bilinear", False),
    ("bilinear", True),
    ("bicubic", False),
    ("bicubic", True),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode,align", INTERP_MODES)
@pytest.mark.parametrize(
    "shape,size",
    [
        ((2, 3, 5, 7), (9, 4)),
        ((1, 2, 6, 6), (3, 11)),
        ((1, 1, 4, 5), (4, 5)),
        ((1, 2, 1, 3), (4, 1)),
        ((1, 1, 7, 3), (13, 17)),
    ],
)
def test_interpolate_forward_backward(shape, size, mode, align, dtype):
    rng = np.random.default_rng(9)
    x = rand(rng, shape, dtype)
    opts = InterpolateOptions(mode=mode, align_corners=align)
    tx = t(x)
    ty = F.interpolate(tx, size=size, mode=mode, align_corners=None if mode == "nearest" else align)
    check(K.interpolate(x, size, opts), ty, dtype)
    go = rand(rng, tuple(ty.shape), dtype)
    ty.backward(torch.tensor(go.astype(np.float64)))
    check(K.interpolate_backward(x, go, size, opts), tx.grad, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("hw", [(5, 7), (1, 4)])
def test_grid_sample_forward_backward(hw, mode, padding, align, dtype):
    rng = np.random.default_rng(10)
    x = rand(rng, (2, 3, *hw), dtype)
    grid = rng.uniform(-1.4, 1.4, (2, 4, 6, 2)).astype(dtype)
    grid[:, 0, :3] = [[-1, 1], [1, 0], [0, -1]]  # exact borders (clip derivative is 0 there)
    opts = GridSampleOptions(mode=mode, padding_mode=padding, align_corners=align)
    tx, tg = t(x), t(grid)
    ty = F.grid_sample(tx, tg, mode=mode, padding_mode=padding, align_corners=align)
    check(K.grid_sample_2d(x, grid, opts), ty, dtype)
    go = rand(rng, tuple(ty.shape), dtype)
    ty.backward(torch.tensor(go.astype(np.float64)))
    gx, gg = K.grid_sample_2d_backward(x, grid, go, opts)
    check(gx, tx.grad, dtype)
    check(gg, tg.grad, dtype)


def test_float16_keeps_dtype():
    rng = np.random.default_rng(11)
    x = rand(rng, (1, 2, 6, 7), np.float16)
    w = rand(rng, (3, 2, 3, 3), np.float16)
    x32, w32 = x.astype(np.float32), w.astype(np.float32)
    conv_opts = ConvOptions(stride=(1, 2), padding=(1, 1), dilation=(1, 1))
    check(K.conv(x, w, None, conv_opts), K.conv(x32, w32, None, conv_opts), np.float16)
    pool_opts = PoolOptions(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0), dilation=(1, 1))
    check(K.avg_pool(x, pool_opts), K.avg_pool(x32, pool_opts), np.float16)
    interp_opts = InterpolateOptions(mode="bicubic")
    check(
        K.interpolate(x, (9, 5), interp_opts), K.interpolate(x32, (9, 5), interp_opts), np.float16
    )
    grid = rng.uniform(-1, 1, (1, 3, 4, 2)).astype(np.float16)
    gs_opts = GridSampleOptions()
    check(
        K.grid_sample_2d(x, grid, gs_opts),
        K.grid_sample_2d(x32, grid.astype(np.float32), gs_opts),
        np.float16,
    )


def test_shape_errors():
    x = np.zeros((1, 4, 5, 5), np.float32)
    with pytest.raises(ShapeError, match="groups"):
        K.conv(
            x,
            np.zeros((6, 4, 3, 3), np.float32),
            None,
            ConvOptions((1, 1), (0, 0), (1, 1), groups=3),
        )
    with pytest.raises(ShapeError, match="weight"):
        K.conv(x, np.zeros((6, 3, 3, 3), np.float32), None, ConvOptions((1, 1), (0, 0), (1, 1)))
    with pytest.raises(ShapeError, match="bias"):
        K.conv(
            x,
            np.zeros((6, 4, 3, 3), np.float32),
            np.zeros(5, np.float32),
            ConvOptions((1, 1), (0, 0), (1, 1)),
        )
    with pytest.raises(ShapeError, match="kernel larger"):
        K.conv(x, np.zeros((6, 4, 7, 3), np.float32), None, ConvOptions((1, 1), (0, 0), (1, 1)))
    with pytest.raises(ShapeError, match="grad_out"):
        K.conv_backward(
            x,
            np.zeros((6, 4, 3, 3), np.float32),
            None,
            np.zeros((1, 6, 2, 2), np.float32),
            ConvOptions((1, 1), (0, 0), (1, 1)),
        )
    with pytest.raises(ShapeError, match="weight"):
        K.conv_transpose(
            x,
            np.zeros((3, 2, 3, 3), np.float32),
            None,
            ConvTransposeOptions((1, 1), (0, 0), (0, 0), (1, 1)),
        )
    with pytest.raises(ShapeError, match="offset"):
        K.deform_conv2d(
            x,
            np.zeros((1, 17, 3, 3), np.float32),
            np.zeros((2, 4, 3, 3), np.float32),
            None,
            None,
            DeformConvOptions((1, 1), (0, 0), (1, 1)),
        )
    with pytest.raises(ShapeError):
        K.avg_pool(x, PoolOptions((3,), (1,), (0,), (1,)))


@pytest.mark.parametrize("case", [CONV_CASES[2], CONV_CASES[3], CONV_T_CASES[3]])
def test_conv_weight_grad_in_batch_chunks(case, monkeypatch):
    """Weight gradients summed over the batch in chunks (bounded temporaries) equal torch's."""
    import importlib

    monkeypatch.setattr(importlib.import_module("burn.backends.numpy.module.conv"),
                        "_WEIGHT_GRAD_CHUNK", 1)
    rng = np.random.default_rng(3)
    if len(case) == 10:
        _, ci, co, spatial, k, s, p, d, g, _ = case
        x, w = rand(rng, (5, ci, *spatial), np.float64), rand(rng, (co, ci // g, *k), np.float64)
        tx, tw = t(x), t(w)
        ty = F.conv2d(tx, tw, stride=s, padding=p, dilation=d, groups=g)
        go = rand(rng, tuple(ty.shape), np.float64)
        ty.backward(torch.tensor(go))
        _, gw, _ = K.conv_backward(x, w, None, go, ConvOptions(s, p, d, g))
    else:
        _, ci, co, spatial, k, s, p, op, d, g, _ = case
        x, w = rand(rng, (5, ci, *spatial), np.float64), rand(rng, (ci, co // g, *k), np.float64)
        tx, tw = t(x), t(w)
        ty = F.conv_transpose2d(tx, tw, stride=s, padding=p, output_padding=op, groups=g,
                                dilation=d)
        go = rand(rng, tuple(ty.shape), np.float64)
        ty.backward(torch.tensor(go))
        _, gw, _ = K.conv_transpose_backward(x, w, None, go,
                                             ConvTransposeOptions(s, p, op, d, g))
    check(gw, tw.grad, np.float64)
