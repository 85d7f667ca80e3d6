"""Interpolation kernels of the cube backends (nearest, bilinear, bicubic; align_corners; user
scales) and backward against torch on cpu and wgpu: strided, transposed and broadcast inputs,
up- and downsampling, sizes of 1, empty batches, NaN/inf, float16; each op must run on kernels
(no host fallback) and its kernels must also generate CUDA C."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as tF
from cube_testing import backend as _backend
from cube_testing import record_launches
from cube_testing import upload_view as _up

from burn.backend.options import InterpolateOptions
from burn.backends.cube import CubeTensor
from burn.backends.cube.tensor import host_array
from burn.errors import ShapeError, ValueRangeError

DEVICES = ["cpu", "wgpu"]
LAYOUTS = ["contiguous", "transposed", "broadcast"]
MODES = [("nearest", False), ("bilinear", False), ("bilinear", True), ("bicubic", False),
         ("bicubic", True)]
#: (input H, W) -> output (Ho, Wo)
SIZES = [((5, 7), (9, 4)), ((6, 6), (12, 12)), ((1, 5), (3, 1)), ((8, 3), (3, 8))]



def _check(got: CubeTensor, want: torch.Tensor | np.ndarray | None, dtype: Any,
           tol: float = 1e-5) -> None:
    """Shape, then dtype, then values (NaN where the reference has NaN)."""
    assert want is not None
    want = want.detach().numpy() if isinstance(want, torch.Tensor) else want
    values = host_array(got)
    assert got.shape == want.shape
    assert values.dtype == np.dtype(dtype)
    np.testing.assert_allclose(values.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol)


def _torch(x: torch.Tensor, size: tuple[int, int], o: InterpolateOptions) -> torch.Tensor:
    align = None if o.mode == "nearest" else o.align_corners
    if o.scales is not None:
        return tF.interpolate(x, scale_factor=o.scales, mode=o.mode, align_corners=align)
    return tF.interpolate(x, size, mode=o.mode, align_corners=align)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mode,align", MODES, ids=str)
@pytest.mark.parametrize("sizes", SIZES, ids=str)
def test_interpolate(device: str, layout: str, mode: str, align: bool,
                     sizes: tuple[tuple[int, int], tuple[int, int]]) -> None:
    bk = _backend(device)
    o = InterpolateOptions(mode, align)  # type: ignore[arg-type]
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 3, *sizes[0])).astype(np.float32)
    x = _up(bk, a, layout)
    tx = torch.tensor(a, requires_grad=True)
    ty = _torch(tx, sizes[1], o)
    g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    gd = _up(bk, g, layout)
    ty.backward(torch.tensor(g))
    _check(bk.interpolate(x, sizes[1], o), ty, np.float32, 1e-4)
    _check(bk.interpolate_backward(x, gd, sizes[1], o), tx.grad, np.float32, 1e-4)
    assert bk.fallbacks["interpolate"] == bk.fallbacks["interpolate_backward"] == 0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode,align", MODES[:2] + MODES[3:4], ids=str)
def test_interpolate_user_scales(device: str, mode: str, align: bool) -> None:
    bk = _backend(device)
    o = InterpolateOptions(mode, align, (1.7, 0.6))  # type: ignore[arg-type]
    a = np.random.default_rng(6).standard_normal((1, 2, 5, 9)).astype(np.float32)
    ty = _torch(torch.tensor(a), (8, 5), o)
    _check(bk.interpolate(bk.upload(a), tuple(ty.shape[2:]), o), ty, np.float32, 1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_interpolate_float16_nan_inf_and_empty(device: str) -> None:
    """float16 is computed in float32 (as the NumPy backend); a NaN or inf stays in the
    outputs that read it; an empty batch gives an empty result."""
    bk = _backend(device)
    a = np.random.default_rng(7).standard_normal((1, 2, 6, 6)).astype(np.float16)
    for mode in ("nearest", "bilinear", "bicubic"):
        o = InterpolateOptions(mode)  # type: ignore[arg-type]
        _check(bk.interpolate(bk.upload(a), (4, 9), o), bk.host.interpolate(a, (4, 9), o),
               np.float16, 2e-3)
        g = np.ones((1, 2, 4, 9), np.float16)
        _check(bk.interpolate_backward(bk.upload(a), bk.upload(g), (4, 9), o),
               bk.host.interpolate_backward(a, g, (4, 9), o), np.float16, 2e-3)
    b = np.ones((1, 1, 4, 4), np.float32)
    b[0, 0, 0, 0], b[0, 0, 3, 3] = np.nan, np.inf
    o = InterpolateOptions("bilinear")
    want = tF.interpolate(torch.tensor(b), (8, 8), mode="bilinear", align_corners=False)
    _check(bk.interpolate(bk.upload(b), (8, 8), o), want, np.float32)
    empty = bk.upload(np.zeros((0, 3, 4, 4), np.float32))
    assert bk.interpolate(empty, (2, 5), o).shape == (0, 3, 2, 5)
    assert sum(bk.fallbacks.values()) == 0


@pytest.mark.parametrize("device", DEVICES)
def test_bad_input_raises_typed_errors(device: str) -> None:
    bk = _backend(device)
    x = bk.upload(np.zeros((2, 3, 4, 4), np.float32))
    with pytest.raises(ShapeError, match="interpolate"):
        bk.interpolate(bk.upload(np.zeros((3, 4, 4), np.float32)), (2, 2), InterpolateOptions())
    with pytest.raises(ShapeError, match="interpolate"):
        bk.interpolate(x, (0, 2), InterpolateOptions())
    with pytest.raises(ValueRangeError, match="unknown mode"):
        bk.interpolate(x, (2, 2), InterpolateOptions("area"))  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match="interpolate_backward"):
        bk.interpolate_backward(x, x, (2, 2), InterpolateOptions())


def test_kernels_generate_cuda_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every kernel interpolate launches (float32 and float16 paths) compiles to CUDA C."""
    bk = _backend("cpu")
    launched = record_launches(monkeypatch, bk)
    o = InterpolateOptions("bicubic", True)
    for dtype in (np.float32, np.float16):
        x = bk.upload(np.ones((1, 2, 5, 6), dtype))
        bk.interpolate_backward(x, bk.interpolate(x, (7, 3), o), (7, 3), o)
    for kernel, args in launched.values():
        assert "__global__" in kernel.source("cuda", 256, *args)
    # forward (sums from the first tap) and backward: two axes, each to float32 (intermediate)
    # and to float16
    assert len(launched) == 8
