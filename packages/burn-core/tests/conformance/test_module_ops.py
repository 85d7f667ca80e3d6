"""Module ops of burn.functional (conv ... attention) against torch, forward and backward.

deform_conv2d has no torch op without torchvision: `deform_conv2d_ref` below is torchvision's
definition (bilinear sampling with zeros outside, offsets [N, 2*G*kh*kw, Ho, Wo] as (dy, dx) pairs
per offset group and kernel tap, mask [N, G*kh*kw, Ho, Wo]) written with differentiable torch ops.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import burn
import burn.functional

from .reference import (
    GRAD_DTYPES,
    Domain,
    Lazy,
    T,
    check_backward,
    check_forward,
    distinct,
    held,
    op_param,
    rand,
)

bF = Lazy(burn.functional)
FWD = [("float32", "contiguous"), ("float64", "transposed")]


def _w(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> T:
    return T(rand(rng, shape, dtype, Domain(-1, 1)), dtype)


# ---------------------------------------------------------------------------------- conv

CONV_CONFIGS: dict[int, list[dict[str, Any]]] = {
    1: [dict(), dict(stride=2, padding=1), dict(padding=2, dilation=2, groups=2)],
    2: [dict(), dict(stride=2, padding=1), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2),
                                                groups=2)],
    3: [dict(), dict(stride=2, padding=1, groups=2), dict(padding=(1, 0, 1), dilation=(2, 1, 1))],
}
SPATIAL = {1: (7,), 2: (5, 6), 3: (4, 4, 5)}
KERNEL = {1: (3,), 2: (3, 2), 3: (2, 3, 2)}


def _conv_args(rng: np.random.Generator, nd: int, cfg: dict[str, Any], dtype: str, layout: str,
               bias: bool, transpose: bool = False) -> list[Any]:
    groups = cfg.get("groups", 1)
    cin, cout = 4, 6
    x = T(rand(rng, (2, cin, *SPATIAL[nd]), dtype), dtype, layout)
    wshape = ((cin, cout // groups) if transpose else (cout, cin // groups)) + KERNEL[nd]
    return [x, _w(rng, wshape, dtype), _w(rng, (cout,), dtype) if bias else None]


def _conv_params(kind: str) -> list[Any]:
    out = []
    for nd, cfgs in CONV_CONFIGS.items():
        for i, _ in enumerate(cfgs):
            out.append(op_param(f"{kind}{nd}d", nd, i, id=f"{kind}{nd}d-cfg{i}"))
    return out


@pytest.mark.parametrize("name,nd,ci", _conv_params("conv"))
@pytest.mark.parametrize("dtype,layout", FWD)
def test_conv(name: str, nd: int, ci: int, dtype: str, layout: str, device: burn.Device,
              rng: np.random.Generator) -> None:
    cfg = CONV_CONFIGS[nd][ci]
    fb, ft = getattr(bF, name), getattr(tF, name)
    for bias in (True, False):
        args = _conv_args(rng, nd, cfg, dtype, layout, bias)
        check_forward(lambda x, w, b: fb(x, w, b, **cfg), lambda x, w, b: ft(x, w, b, **cfg),
                      args, device)
    check_forward(lambda x, w: fb(x, w, **cfg), lambda x, w: ft(x, w, **cfg), args[:2], device)


@pytest.mark.parametrize("name,nd,ci", _conv_params("conv"))
@pytest.mark.parametrize("dtype", GRAD_DTYPES)
def test_conv_backward(name: str, nd: int, ci: int, dtype: str, grad_device: burn.Device,
                       rng: np.random.Generator) -> None:
    cfg = CONV_CONFIGS[nd][ci]
    fb, ft = getattr(bF, name), getattr(tF, name)
    args = _conv_args(rng, nd, cfg, dtype, "transposed", True)
    check_backward(lambda x, w, b: fb(x, w, b, **cfg), lambda x, w, b: ft(x, w, b, **cfg), args,
                   grad_device, rng)


@pytest.mark.parametrize("name,nd", [op_param(f"{kind}{nd}d", nd) for kind in
                                     ("conv", "conv_transpose") for nd in (1, 2)])
def test_conv_empty_batch(name: str, nd: int, grad_device: burn.Device,
                          rng: np.random.Generator) -> None:
    # a batch of 0 samples: empty output and input gradient, zero weight gradient, as torch
    cfg = dict(stride=2, padding=1, groups=2)
    fb, ft = getattr(bF, name), getattr(tF, name)
    x, w, b = _conv_args(rng, nd, cfg, "float32", "contiguous", True,
                         transpose=name.startswith("conv_transpose"))
    x = T(x.data[:0], "float32")
    check_backward(lambda x, w, b: fb(x, w, b, **cfg), lambda x, w, b: ft(x, w, b, **cfg),
                   [x, w, b], grad_device, rng)


CONV_T_CONFIGS: dict[int, list[dict[str, Any]]] = {
    1: [dict(), dict(stride=2, padding=1, output_padding=1), dict(dilation=2, groups=2)],
    2: [dict(), dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2)),
        dict(stride=2, dilation=(1, 2), groups=2, output_padding=1)],
    3: [dict(), dict(stride=2, padding=1, output_padding=(1, 0, 1), groups=2)],
}


def _conv_t_params() -> list[Any]:
    return [op_param(f"conv_transpose{nd}d", nd, i, id=f"conv_transpose{nd}d-cfg{i}")
            for nd, cfgs in CONV_T_CONFIGS.items() for i, _ in enumerate(cfgs)]


@pytest.mark.parametrize("name,nd,ci", _conv_t_params())
@pytest.mark.parametrize("dtype,layout", FWD)
def test_conv_transpose(name: str, nd: int, ci: int, dtype: str, layout: str,
                        device: burn.Device, rng: np.random.Generator) -> None:
    cfg = CONV_T_CONFIGS[nd][ci]
    fb, ft = getattr(bF, name), getattr(tF, name)
    for bias in (True, False):
        args = _conv_args(rng, nd, cfg, dtype, layout, bias, transpose=True)
        check_forward(lambda x, w, b: fb(x, w, b, **cfg), lambda x, w, b: ft(x, w, b, **cfg),
                      args, device)


@pytest.mark.parametrize("name,nd,ci", _conv_t_params())
@pytest.mark.parametrize("dtype", GRAD_DTYPES)
def test_conv_transpose_backward(name: str, nd: int, ci: int, dtype: str,
                                 grad_device: burn.Device, rng: np.random.Generator) -> None:
    cfg = CONV_T_CONFIGS[nd][ci]
    fb, ft = getattr(bF, name), getattr(tF, name)
    args = _conv_args(rng, nd, cfg, dtype, "transposed", True, transpose=True)
    check_backward(lambda x, w, b: fb(x, w, b, **cfg), lambda x, w, b: ft(x, w, b, **cfg), args,
                   grad_device, rng)


# ------------------------------------------------------------------------- deform_conv2d


def _pair(v: int | tuple[int, int]) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else v


def _bilinear_zeros(img: torch.Tensor, py: torch.Tensor, px: torch.Tensor, h: int,
                    w: int) -> torch.Tensor:
    """torchvision's bilinear_interpolate: img [N, G, C, H*W], points [N, G, K, Ho, Wo]."""
    n, g, c, _ = img.shape
    inside = (py > -1) & (py < h) & (px > -1) & (px < w)
    y0, x0 = torch.floor(py), torch.floor(px)
    ly, lx = py - y0, px - x0
    out = torch.zeros((n, g, c, *py.shape[2:]), dtype=img.dtype)
    for dy, wy in ((0, 1 - ly), (1, ly)):
        for dx, wx in ((0, 1 - lx), (1, lx)):
            yy, xx = y0 + dy, x0 + dx
            ok = inside & (yy >= 0) & (yy <= h - 1) & (xx >= 0) & (xx <= w - 1)
            idx = (yy.clamp(0, h - 1) * w + xx.clamp(0, w - 1)).long()
            flat = idx.reshape(n, g, 1, -1).expand(-1, -1, c, -1)
            vals = torch.gather(img, 3, flat).reshape(n, g, c, *idx.shape[2:])
            out = out + vals * (wy * wx * ok).unsqueeze(2)
    return out


def deform_conv2d_ref(x: torch.Tensor, offset: torch.Tensor, weight: torch.Tensor,
                      mask: torch.Tensor | None = None, bias: torch.Tensor | None = None,
                      stride: int | tuple[int, int] = 1, padding: int | tuple[int, int] = 0,
                      dilation: int | tuple[int, int] = 1) -> torch.Tensor:
    """torchvision.ops.deform_conv2d from its definition (differentiable with autograd)."""
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    n, c, h, w = x.shape
    cout, cg, kh, kw = weight.shape
    wg, k = c // cg, kh * kw
    og = offset.shape[1] // (2 * k)
    ho, wo = offset.shape[2], offset.shape[3]
    dt = x.dtype
    base_y = ((torch.arange(ho, dtype=dt) * sh - ph).view(1, 1, 1, ho, 1)
              + (torch.arange(kh, dtype=dt) * dh).repeat_interleave(kw).view(1, 1, k, 1, 1))
    base_x = ((torch.arange(wo, dtype=dt) * sw - pw).view(1, 1, 1, 1, wo)
              + (torch.arange(kw, dtype=dt) * dw).repeat(kh).view(1, 1, k, 1, 1))
    off = offset.reshape(n, og, k, 2, ho, wo)
    cols = _bilinear_zeros(x.reshape(n, og, c // og, h * w), base_y + off[:, :, :, 0],
                           base_x + off[:, :, :, 1], h, w)  # [N, og, C/og, K, Ho, Wo]
    if mask is not None:
        cols = cols * mask.reshape(n, og, 1, k, ho, wo)
    cols = cols.reshape(n, wg, cg, k, ho, wo)
    out = torch.einsum("ngckhw,gock->ngohw", cols, weight.reshape(wg, cout // wg, cg, k))
    out = out.reshape(n, cout, ho, wo)
    return out if bias is None else out + bias.view(1, -1, 1, 1)


DEFORM_CONFIGS: list[dict[str, Any]] = [
    dict(cfg=dict(padding=1), og=1, wg=1, mask=False, bias=True),
    dict(cfg=dict(stride=2, padding=1), og=2, wg=1, mask=True, bias=False),
    dict(cfg=dict(dilation=(1, 2), padding=(1, 2)), og=2, wg=2, mask=True, bias=True),
]


def _deform_args(rng: np.random.Generator, spec: dict[str, Any], dtype: str,
                 layout: str) -> list[Any]:
    cfg = spec["cfg"]
    (sh, sw), (ph, pw), (dh, dw) = (_pair(cfg.get(k, d)) for k, d in
                                    (("stride", 1), ("padding", 0), ("dilation", 1)))
    n, c, h, w, kh, kw, cout = 2, 4, 5, 6, 3, 3, 4
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    og, k = spec["og"], kh * kw
    x = T(rand(rng, (n, c, h, w), dtype), dtype, layout)
    offset = T(rand(rng, (n, 2 * og * k, ho, wo), dtype, Domain(-1.5, 1.5)), dtype)
    weight = _w(rng, (cout, c // spec["wg"], kh, kw), dtype)
    mask = T(rand(rng, (n, og * k, ho, wo), dtype, Domain(0, 1)), dtype) if spec["mask"] else None
    bias = _w(rng, (cout,), dtype) if spec["bias"] else None
    return [x, offset, weight, mask, bias]


@pytest.mark.op("deform_conv2d")
def test_deform_conv2d_reference_is_conv2d_at_zero_offset(rng: np.random.Generator) -> None:
    """Self-check of the torch reference: zero offsets and unit mask give conv2d."""
    x = torch.from_numpy(rng.standard_normal((2, 4, 5, 6)))
    w = torch.from_numpy(rng.standard_normal((6, 2, 3, 3)))
    off = torch.zeros((2, 2 * 2 * 9, 2, 1), dtype=torch.float64)
    got = deform_conv2d_ref(x, off, w, stride=2, padding=(0, 1), dilation=(1, 3))
    want = tF.conv2d(x, w, stride=2, padding=(0, 1), dilation=(1, 3), groups=2)
    torch.testing.assert_close(got, want)
    shift = torch.zeros_like(off)
    shift[:, 0::2] = 1.0  # every tap moved one row down == conv of the input shifted up
    got = deform_conv2d_ref(x, shift, w, stride=2, padding=(0, 1), dilation=(1, 3))
    xs = torch.cat([x[:, :, 1:], torch.zeros_like(x[:, :, :1])], dim=2)
    torch.testing.assert_close(got, tF.conv2d(xs, w, stride=2, padding=(0, 1), dilation=(1, 3),
                                              groups=2))


@pytest.mark.parametrize("ci", range(len(DEFORM_CONFIGS)))
@pytest.mark.parametrize("dtype,layout", FWD)
@pytest.mark.op("deform_conv2d")
def test_deform_conv2d(ci: int, dtype: str, layout: str, device: burn.Device,
                       rng: np.random.Generator) -> None:
    spec = DEFORM_CONFIGS[ci]
    cfg = spec["cfg"]
    args = _deform_args(rng, spec, dtype, layout)
    check_forward(lambda x, o, w, m, b: bF.deform_conv2d(x, o, w, mask=m, bias=b, **cfg),
                  lambda x, o, w, m, b: deform_conv2d_ref(x, o, w, m, b, **cfg), args, device)


@pytest.mark.parametrize("ci", range(len(DEFORM_CONFIGS)))
@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.op("deform_conv2d")
def test_deform_conv2d_backward(ci: int, dtype: str, grad_device: burn.Device,
                                rng: np.random.Generator) -> None:
    spec = DEFORM_CONFIGS[ci]
    cfg = spec["cfg"]
    args = _deform_args(rng, spec, dtype, "transposed")
    check_backward(lambda x, o, w, m, b: bF.deform_conv2d(x, o, w, mask=m, bias=b, **cfg),
                   lambda x, o, w, m, b: deform_conv2d_ref(x, o, w, m, b, **cfg), args,
                   grad_device, rng)


# -------------------------------------------------------------------------------- pooling

POOL_X = {1: (2, 3, 9), 2: (2, 3, 7, 6)}
AVG_CONFIGS: dict[int, list[dict[str, Any]]] = {
    1: [dict(kernel_size=3), dict(kernel_size=3, stride=2, padding=1),
        dict(kernel_size=2, stride=2, ceil_mode=True),
        dict(kernel_size=3, stride=2, padding=1, count_include_pad=False, ceil_mode=True)],
    2: [dict(kernel_size=2), dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0)),
        dict(kernel_size=2, stride=2, ceil_mode=True),
        dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)],
}
MAX_CONFIGS: dict[int, list[dict[str, Any]]] = {
    1: [dict(kernel_size=3), dict(kernel_size=3, stride=2, padding=1),
        dict(kernel_size=2, dilation=2), dict(kernel_size=2, stride=2, ceil_mode=True)],
    2: [dict(kernel_size=2), dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0)),
        dict(kernel_size=2, dilation=(2, 1)), dict(kernel_size=3, stride=2, padding=1,
                                                   ceil_mode=True)],
}


def _max_ref(nd: int, with_indices: bool) -> Callable[..., Any]:
    f = getattr(tF, f"max_pool{nd}d")
    if with_indices:
        return lambda x, **cfg: tuple(f(x, return_indices=True, **cfg))
    return f


POOLS: dict[str, tuple[Callable[..., Any], Callable[..., Any], list[dict[str, Any]], int]] = {}
for _nd in (1, 2):
    POOLS[f"avg_pool{_nd}d"] = (getattr(bF, f"avg_pool{_nd}d"), getattr(tF, f"avg_pool{_nd}d"),
                                AVG_CONFIGS[_nd], _nd)
    POOLS[f"max_pool{_nd}d"] = (getattr(bF, f"max_pool{_nd}d"), _max_ref(_nd, False),
                                MAX_CONFIGS[_nd], _nd)
    POOLS[f"max_pool{_nd}d_with_indices"] = (getattr(bF, f"max_pool{_nd}d_with_indices"),
                                             _max_ref(_nd, True), MAX_CONFIGS[_nd], _nd)


@pytest.mark.parametrize("name,dtype,layout", [op_param(n, d, lay) for n in POOLS
                                               for d, lay in FWD])
def test_pool(name: str, dtype: str, layout: str, device: burn.Device,
              rng: np.random.Generator) -> None:
    fb, ft, cfgs, nd = POOLS[name]
    x = T(distinct(rng, POOL_X[nd], dtype, spacing=0.125), dtype, layout)
    for cfg in cfgs:
        check_forward(lambda a, cfg=cfg: fb(a, **cfg), lambda a, cfg=cfg: ft(a, **cfg), [x],
                      device)


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in POOLS for d in GRAD_DTYPES])
def test_pool_backward(name: str, dtype: str, grad_device: burn.Device,
                       rng: np.random.Generator) -> None:
    fb, ft, cfgs, nd = POOLS[name]
    x = T(distinct(rng, POOL_X[nd], dtype, spacing=0.125), dtype, "transposed")
    for cfg in cfgs:
        check_backward(lambda a, cfg=cfg: _first(fb(a, **cfg)),
                       lambda a, cfg=cfg: _first(ft(a, **cfg)), [x], grad_device, rng)


@pytest.mark.parametrize("name,dtype", [op_param(f"max_pool{nd}d_with_indices", "float32")
                                        for nd in (1, 2)])
def test_max_pool_special_values(name: str, dtype: str, grad_device: burn.Device,
                                 rng: np.random.Generator) -> None:
    # -inf, NaN and ties: which tap a window names (torch: the first maximum, the last NaN,
    # a window of -inf only its first tap inside x) decides where its gradient goes
    fb, _, cfgs, nd = POOLS[name]
    f = getattr(tF, f"max_pool{nd}d")
    shape = (2, 3, 9) if nd == 1 else (2, 3, 5, 6)
    values = np.array([-np.inf, 1.0, 2.0, np.nan], np.float32)
    for cfg in cfgs:
        x = values[rng.choice(4, size=shape, p=[0.5, 0.2, 0.2, 0.1])]
        tx = torch.tensor(x, requires_grad=True)
        ty, ti = f(tx, return_indices=True, **cfg)
        g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
        (ty * torch.tensor(g)).sum().backward()
        bx = burn.tensor(x, device=grad_device).require_grad()
        by, bi = fb(bx, **cfg)
        grads = (by * burn.tensor(g, device=grad_device)).sum().backward()
        assert by.shape == tuple(ty.shape) and by.dtype == burn.float32, cfg
        assert bi.shape == tuple(ti.shape) and bi.dtype == burn.int64, cfg
        np.testing.assert_array_equal(by.numpy(), ty.detach().numpy(), err_msg=str(cfg))
        np.testing.assert_array_equal(bi.numpy(), ti.numpy(), err_msg=str(cfg))
        np.testing.assert_allclose(bx.grad(grads).numpy(), tx.grad.numpy(), rtol=1e-6,
                                   atol=1e-6, err_msg=str(cfg))


def _first(out: Any) -> Any:
    return out[0] if isinstance(out, (tuple, list)) else out


ADAPTIVE = {1: ((2, 3, 10), [4, 3, 10, 1, 13]), 2: ((2, 3, 7, 5), [(3, 2), (7, 5), (1, 1),
                                                                   (4, 4), (9, 3)]),
            3: ((2, 2, 5, 4, 3), [(2, 3, 2), (5, 4, 3), 1, (3, None, 2), (7, 2, 5)])}


@pytest.mark.parametrize("name,dtype,layout", [op_param(f"adaptive_avg_pool{nd}d", d, lay)
                                               for nd in (1, 2, 3) for d, lay in FWD])
def test_adaptive_avg_pool(name: str, dtype: str, layout: str, device: burn.Device,
                           rng: np.random.Generator) -> None:
    nd = int(name[-2])
    shape, sizes = ADAPTIVE[nd]
    fb, ft = getattr(bF, name), getattr(tF, name)
    x = T(rand(rng, shape, dtype), dtype, layout)
    for size in sizes:
        check_forward(lambda a, s=size: fb(a, s), lambda a, s=size: ft(a, s), [x], device)


@pytest.mark.parametrize("name,dtype", [op_param(f"adaptive_avg_pool{nd}d", d)
                                        for nd in (1, 2, 3) for d in GRAD_DTYPES])
def test_adaptive_avg_pool_backward(name: str, dtype: str, grad_device: burn.Device,
                                    rng: np.random.Generator) -> None:
    nd = int(name[-2])
    shape, sizes = ADAPTIVE[nd]
    fb, ft = getattr(bF, name), getattr(tF, name)
    x = T(rand(rng, shape, dtype), dtype, "transposed")
    for size in sizes[:2] + sizes[-1:]:
        check_backward(lambda a, s=size: fb(a, s), lambda a, s=size: ft(a, s), [x], grad_device,
                       rng)


# ---------------------------------------------------------------------------- interpolate

INTERP_MODES = [("nearest", False), ("bilinear", False), ("bilinear", True), ("bicubic", False),
                ("bicubic", True)]
INTERP_SIZES = [(8, 10), (3, 3), (6, 4)]


def _interp_pair(mode: str, align: bool) -> tuple[Callable[..., Any], Callable[..., Any]]:
    def fb(x: Any, size: tuple[int, int]) -> Any:
        return bF.interpolate(x, size, mode=mode, align_corners=align)

    def ft(x: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
        if mode == "nearest":
            return tF.interpolate(x, size=size, mode="nearest")
        return tF.interpolate(x, size=size, mode=mode, align_corners=align)
    return fb, ft


@pytest.mark.parametrize("mode,align", INTERP_MODES, ids=str)
@pytest.mark.parametrize("dtype,layout", FWD)
@pytest.mark.op("interpolate")
def test_interpolate(mode: str, align: bool, dtype: str, layout: str, device: burn.Device,
                     rng: np.random.Generator) -> None:
    fb, ft = _interp_pair(mode, align)
    x = T(rand(rng, (2, 3, 4, 5), dtype), dtype, layout)
    for size in INTERP_SIZES:
        check_forward(lambda a, s=size: fb(a, s), lambda a, s=size: ft(a, s), [x], device)


@pytest.mark.parametrize("mode,align", INTERP_MODES, ids=str)
@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.op("interpolate")
def test_interpolate_backward(mode: str, align: bool, dtype: str, grad_device: burn.Device,
                              rng: np.random.Generator) -> None:
    fb, ft = _interp_pair(mode, align)
    x = T(rand(rng, (1, 2, 4, 5), dtype), dtype, "transposed")
    for size in INTERP_SIZES[:2]:
        check_backward(lambda a, s=size: fb(a, s), lambda a, s=size: ft(a, s), [x], grad_device,
                       rng)


INTERP_SCALES = [1.7, (2.3, 0.6), 0.5]


def _interp_scale_pair(mode: str, align: bool, recompute: bool | None
                       ) -> tuple[Callable[..., Any], Callable[..., Any]]:
    kw: dict[str, Any] = {} if mode == "nearest" else {"align_corners": align}

    def fb(x: Any, scale: Any) -> Any:
        return bF.interpolate(x, mode=mode, scale_factor=scale, recompute_scale_factor=recompute,
                              **kw)

    def ft(x: torch.Tensor, scale: Any) -> torch.Tensor:
        return tF.interpolate(x, scale_factor=scale, mode=mode, recompute_scale_factor=recompute,
                              **kw)
    return fb, ft


@pytest.mark.parametrize("recompute", [None, True], ids=["scale", "recompute"])
@pytest.mark.parametrize("mode,align", INTERP_MODES, ids=str)
@pytest.mark.op("interpolate")
def test_interpolate_scale_factor(mode: str, align: bool, recompute: bool | None,
                                  device: burn.Device, grad_device: burn.Device,
                                  rng: np.random.Generator) -> None:
    """With scale_factor, source coordinates step by 1 / scale (torch's default) unless
    recompute_scale_factor=True (then by input / output size)."""
    fb, ft = _interp_scale_pair(mode, align, recompute)
    dtype = held("float64", device)
    x = T(rand(rng, (1, 2, 5, 7), dtype), dtype)
    for scale in INTERP_SCALES:
        check_forward(lambda a, s=scale: fb(a, s), lambda a, s=scale: ft(a, s), [x], device)
    check_backward(lambda a: fb(a, 1.7), lambda a: ft(a, 1.7), [x], grad_device, rng)


# ------------------------------------------------------------------ embedding / unfold4d


@pytest.mark.parametrize("dtype,layout", FWD)
@pytest.mark.op("embedding")
def test_embedding(dtype: str, layout: str, device: burn.Device,
                   rng: np.random.Generator) -> None:
    w = T(rand(rng, (10, 4), dtype), dtype, layout)
    for ishape in ((2, 3), (5,), (0,)):
        idx = T(rng.integers(0, 10, size=ishape), "int64", grad=False)
        check_forward(bF.embedding, lambda ww, ii: tF.embedding(ii, ww), [w, idx], device)


@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.op("embedding")
def test_embedding_backward(dtype: str, grad_device: burn.Device,
                            rng: np.random.Generator) -> None:
    w = T(rand(rng, (10, 4), dtype), dtype, "transposed")
    idx = T(np.array([[1, 3, 1], [9, 0, 3]]), "int64", grad=False)  # repeats accumulate
    check_backward(bF.embedding, lambda ww, ii: tF.embedding(ii, ww), [w, idx], grad_device, rng)


UNFOLD_CONFIGS: list[dict[str, Any]] = [
    dict(kernel_size=(2, 3)), dict(kernel_size=2, stride=2, padding=1),
    dict(kernel_size=(3, 2), dilation=(2, 1), padding=(1, 0), stride=(1, 2)),
]


@pytest.mark.parametrize("dtype,layout", FWD)
@pytest.mark.op("unfold4d")
def test_unfold4d(dtype: str, layout: str, device: burn.Device, rng: np.random.Generator) -> None:
    x = T(rand(rng, (2, 3, 5, 6), dtype), dtype, layout)
    for cfg in UNFOLD_CONFIGS:
        check_forward(lambda a, cfg=cfg: bF.unfold4d(a, **cfg), lambda a, cfg=cfg: tF.unfold(
            a, **cfg), [x], device)


@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.op("unfold4d")
def test_unfold4d_backward(dtype: str, grad_device: burn.Device,
                           rng: np.random.Generator) -> None:
    x = T(rand(rng, (2, 3, 5, 6), dtype), dtype, "transposed")
    for cfg in UNFOLD_CONFIGS:
        check_backward(lambda a, cfg=cfg: bF.unfold4d(a, **cfg),
                       lambda a, cfg=cfg: tF.unfold(a, **cfg), [x], grad_device, rng)


# --------------------------------------------------------------------------- grid_sample

GRID_MODES = [(m, p, a) for m in ("bilinear", "nearest") for p in ("zeros", "border", "reflection")
              for a in (False, True)]


def _grid_pair(mode: str, pad: str, align: bool) -> tuple[Callable[..., Any], Callable[..., Any]]:
    return (lambda x, g: bF.grid_sample_2d(x, g, mode=mode, padding_mode=pad, align_corners=align),
            lambda x, g: tF.grid_sample(x, g, mode=mode, padding_mode=pad, align_corners=align))


@pytest.mark.parametrize("mode,pad,align", GRID_MODES, ids=str)
@pytest.mark.parametrize("dtype,layout", FWD)
@pytest.mark.op("grid_sample_2d")
def test_grid_sample_2d(mode: str, pad: str, align: bool, dtype: str, layout: str,
                        device: burn.Device, rng: np.random.Generator) -> None:
    fb, ft = _grid_pair(mode, pad, align)
    x = T(rand(rng, (2, 3, 5, 6), dtype), dtype, layout)
    grid = T(rand(rng, (2, 4, 3, 2), dtype, Domain(-1.3, 1.3)), dtype)
    check_forward(fb, ft, [x, grid], device)


@pytest.mark.parametrize("mode,pad,align", GRID_MODES, ids=str)
@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.op("grid_sample_2d")
def test_grid_sample_2d_backward(mode: str, pad: str, align: bool, dtype: str,
                                 grad_device: burn.Device, rng: np.random.Generator) -> None:
    fb, ft = _grid_pair(mode, pad, align)
    x = T(rand(rng, (2, 3, 5, 6), dtype), dtype, "transposed")
    grid = T(rand(rng, (2, 4, 3, 2), dtype, Domain(-1.3, 1.3)), dtype)
    check_backward(fb, ft, [x, grid], grad_device, rng)


# ------------------------------------------------------------------------------ attention


def _attention_ref(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                   mask: torch.Tensor | None = None, scale: float | None = None,
                   is_causal: bool = False) -> torch.Tensor:
    """torch's sdpa; burn's bool mask is true = masked out, torch's attn_mask true = keep."""
    return tF.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else ~mask,
                                           scale=scale, is_causal=is_causal)


def _attention_args(rng: np.random.Generator, dtype: str, layout: str, lq: int, lk: int,
                    mask_shape: tuple[int, ...] | None) -> list[Any]:
    q = T(rand(rng, (2, 2, lq, 4), dtype), dtype, layout)
    k = T(rand(rng, (2, 2, lk, 4), dtype), dtype, layout)
    v = T(rand(rng, (2, 2, lk, 3), dtype), dtype)
    if mask_shape is None:
        return [q, k, v, None]
    m = rng.random(mask_shape) < 0.4
    m[..., 0] = False  # every query keeps at least one key
    return [q, k, v, T(m, "bool", grad=False)]


ATTENTION_CASES: list[tuple[int, int, tuple[int, ...] | None, float | None, bool]] = [
    (3, 5, None, None, False),
    (3, 5, (3, 5), None, False),
    (4, 4, (2, 1, 4, 4), 0.3, False),
    (4, 4, None, None, True),
    (3, 5, None, 0.5, True),
]


@pytest.mark.parametrize("case", ATTENTION_CASES, ids=str)
@pytest.mark.parametrize("dtype,layout", FWD)
@pytest.mark.op("attention")
def test_attention(case: tuple[Any, ...], dtype: str, layout: str, device: burn.Device,
                   rng: np.random.Generator) -> None:
    lq, lk, mshape, scale, causal = case
    args = _attention_args(rng, dtype, layout, lq, lk, mshape)
    check_forward(lambda q, k, v, m: bF.attention(q, k, v, mask=m, scale=scale, is_causal=causal),
                  lambda q, k, v, m: _attention_ref(q, k, v, m, scale, causal), args, device)


@pytest.mark.parametrize("case", ATTENTION_CASES[1:4], ids=str)
@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.op("attention")
def test_attention_backward(case: tuple[Any, ...], dtype: str, grad_device: burn.Device,
                            rng: np.random.Generator) -> None:
    lq, lk, mshape, scale, causal = case
    args = _attention_args(rng, dtype, "transposed", lq, lk, mshape)
    check_backward(lambda q, k, v, m: bF.attention(q, k, v, mask=m, scale=scale,
                                                   is_causal=causal),
                   lambda q, k, v, m: _attention_ref(q, k, v, m, scale, causal), args,
                   grad_device, rng)
