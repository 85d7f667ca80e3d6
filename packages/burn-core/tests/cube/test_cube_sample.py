"""grid_sample_2d kernels of the cube backends (bilinear/nearest; zeros/border/reflection;
align_corners) and backward against torch on cpu and wgpu: strided, transposed and broadcast
inputs, points outside the image, sizes of 1, empty grids, float16; each op must run on kernels
(no host fallback), the image gradient must be deterministic, and the kernels must also
generate CUDA C."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as tF
from cube_testing import backend as _backend
from cube_testing import record_launches
from cube_testing import upload_view as _up

from burn.backend.options import GridSampleMode, GridSampleOptions, GridSamplePadding
from burn.backends.cube import CubeTensor
from burn.backends.cube.tensor import host_array
from burn.errors import ShapeError, ValueRangeError

DEVICES = ["cpu", "wgpu"]
LAYOUTS = ["contiguous", "transposed", "broadcast"]
_MODES: tuple[GridSampleMode, ...] = ("bilinear", "nearest")
_PADDINGS: tuple[GridSamplePadding, ...] = ("zeros", "border", "reflection")
OPTIONS = [GridSampleOptions(m, p, a)
           for m, p, a in itertools.product(_MODES, _PADDINGS, (False, True))]



def _check(got: CubeTensor, want: torch.Tensor | np.ndarray | None, dtype: Any,
           tol: float = 1e-4) -> None:
    """Shape, then dtype, then values."""
    assert want is not None
    want = want.detach().numpy() if isinstance(want, torch.Tensor) else want
    values = host_array(got)
    assert got.shape == want.shape
    assert values.dtype == np.dtype(dtype)
    np.testing.assert_allclose(values.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol)


def _grid(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Points in [-1.6, 1.6] (some outside), a few exactly on pixel centres and corners."""
    grid = (rng.random((*shape, 2)) * 3.2 - 1.6).astype(np.float32)
    grid[0, 0, :3] = np.array([[-1, -1], [1, 1], [0, 0.5]])
    return grid


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("options", OPTIONS, ids=str)
@pytest.mark.parametrize("size", [(5, 6), (1, 4)], ids=str)
def test_grid_sample_2d(device: str, layout: str, options: GridSampleOptions,
                        size: tuple[int, int]) -> None:
    bk = _backend(device)
    rng = np.random.default_rng(9)
    a = rng.standard_normal((2, 3, *size)).astype(np.float32)
    grid = _grid(rng, (2, 4, 5))
    x, gd = _up(bk, a, layout), _up(bk, grid, layout)
    tx, tg = torch.tensor(a, requires_grad=True), torch.tensor(grid, requires_grad=True)
    ty = tF.grid_sample(tx, tg, options.mode, options.padding_mode, options.align_corners)
    g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    gg = _up(bk, g, layout)
    ty.backward(torch.tensor(g))
    _check(bk.grid_sample_2d(x, gd, options), ty, np.float32)
    grad_x, grad_grid = bk.grid_sample_2d_backward(x, gd, gg, options)
    _check(grad_x, tx.grad, np.float32)
    assert tg.grad is not None
    _check(grad_grid, tg.grad, np.float32, 1e-3)
    assert bk.fallbacks["grid_sample_2d"] == bk.fallbacks["grid_sample_2d_backward"] == 0


@pytest.mark.parametrize("device", DEVICES)
def test_grid_sample_2d_deterministic_float16_and_empty(device: str) -> None:
    """Many points on few pixels: the image gradient is the same run to run; float16 is
    computed in float32 (as the NumPy backend); empty grids give empty results."""
    bk = _backend(device)
    rng = np.random.default_rng(10)
    a = rng.standard_normal((1, 2, 3, 3)).astype(np.float32)
    grid = _grid(rng, (1, 40, 40))
    g = rng.standard_normal((1, 2, 40, 40)).astype(np.float32)
    o = GridSampleOptions()
    runs = [host_array(bk.grid_sample_2d_backward(bk.upload(a), bk.upload(grid),
                                                  bk.upload(g), o)[0]).copy() for _ in range(3)]
    assert all(np.array_equal(runs[0], r) for r in runs[1:])
    h = tuple(v.astype(np.float16) for v in (a, grid, g))
    _check(bk.grid_sample_2d(*(bk.upload(v) for v in h[:2]), o),
           bk.host.grid_sample_2d(*h[:2], o), np.float16, 2e-3)
    want = bk.host.grid_sample_2d_backward(*h, o)
    for got, ref in zip(bk.grid_sample_2d_backward(*(bk.upload(v) for v in h), o), want,
                        strict=True):
        _check(got, ref, np.float16, 2e-2)
    empty = bk.upload(np.zeros((1, 0, 4, 2), np.float32))
    x = bk.upload(a)
    assert bk.grid_sample_2d(x, empty, o).shape == (1, 2, 0, 4)
    gx, gg = bk.grid_sample_2d_backward(x, empty, bk.upload(np.zeros((1, 2, 0, 4), np.float32)),
                                        o)
    assert gx.shape == a.shape and not host_array(gx).any() and gg.shape == (1, 0, 4, 2)
    assert sum(bk.fallbacks.values()) == 0


@pytest.mark.parametrize("device", DEVICES)
def test_bad_input_raises_typed_errors(device: str) -> None:
    bk = _backend(device)
    x = bk.upload(np.zeros((2, 3, 4, 4), np.float32))
    with pytest.raises(ShapeError, match="grid_sample_2d"):
        bk.grid_sample_2d(x, bk.upload(np.zeros((2, 4, 4, 3), np.float32)), GridSampleOptions())
    with pytest.raises(ValueRangeError, match="grid_sample_2d"):
        bk.grid_sample_2d(x, bk.upload(np.zeros((2, 4, 4, 2), np.float32)),
                          GridSampleOptions("bicubic"))  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match="grid_sample_2d_backward"):
        bk.grid_sample_2d_backward(x, bk.upload(np.zeros((2, 4, 5, 2), np.float32)), x,
                                   GridSampleOptions())


def test_kernels_generate_cuda_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every grid-sampling kernel (each mode and padding, float32 and float16) compiles to
    CUDA C."""
    bk = _backend("cpu")
    launched = record_launches(monkeypatch, bk)
    for dtype, o in itertools.product((np.float32, np.float16), OPTIONS):
        x, grid = bk.upload(np.ones((1, 2, 3, 3), dtype)), bk.upload(np.zeros((1, 2, 2, 2), dtype))
        bk.grid_sample_2d_backward(x, grid, bk.grid_sample_2d(x, grid, o), o)
    names = set()
    for kernel, args in launched.values():
        assert "__global__" in kernel.source("cuda", 256, *args)
        names.add(kernel.kernel.name)
    assert {"grid_sample_2d", "grid_sample_2d_grad_grid", "grid_sample_2d_grad_x"} <= names
