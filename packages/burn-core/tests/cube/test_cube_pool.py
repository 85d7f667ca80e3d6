"""Pooling kernels of the cube backends (avg, max with indices, adaptive avg; 1d/2d; backward)
against torch on cpu and wgpu: strided, transposed and broadcast inputs, padding, dilation,
ceil_mode, count_include_pad, empty batches, ties, NaN/inf, float16; each op must run on kernels
(no host fallback) and its kernels must also generate CUDA C."""

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

from burn.backend.options import PoolOptions
from burn.backends.cube import CubeTensor
from burn.backends.cube.tensor import host_array
from burn.errors import ShapeError

DEVICES = ["cpu", "wgpu"]
LAYOUTS = ["contiguous", "transposed", "strided", "broadcast"]
#: (spatial shape, kernel, stride, padding, dilation, ceil_mode, count_include_pad)
CASES = [
    ((9,), (3,), (2,), (1,), (1,), False, True),
    ((10,), (4,), (3,), (2,), (2,), True, False),
    ((6, 7), (2, 2), (2, 2), (0, 0), (1, 1), False, True),
    ((7, 8), (3, 2), (2, 1), (1, 1), (1, 2), True, False),
    ((5, 9), (3, 3), (1, 2), (1, 0), (2, 1), True, True),
]



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


def _options(case: tuple[Any, ...]) -> PoolOptions:
    return PoolOptions(*case[1:])


def _torch_pool(kind: str, x: torch.Tensor, o: PoolOptions) -> Any:
    nd = len(o.kernel_size)
    fn: Any
    if kind == "avg":
        fn = tF.avg_pool1d if nd == 1 else tF.avg_pool2d
        return fn(x, o.kernel_size, o.stride, o.padding, o.ceil_mode, o.count_include_pad)
    fn = tF.max_pool1d if nd == 1 else tF.max_pool2d
    return fn(x, o.kernel_size, o.stride, o.padding, o.dilation, o.ceil_mode,
              return_indices=True)


def _case_input(rng: np.random.Generator, case: tuple[Any, ...], batch: int = 2) -> np.ndarray:
    return rng.standard_normal((batch, 3, *case[0])).astype(np.float32)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_avg_pool(device: str, layout: str, case: tuple[Any, ...]) -> None:
    bk, o = _backend(device), _options(case)
    if o.dilation != (1,) * len(o.dilation):  # torch's avg_pool has no dilation
        o = PoolOptions(o.kernel_size, o.stride, o.padding, (1,) * len(o.dilation),
                        o.ceil_mode, o.count_include_pad)
    rng = np.random.default_rng(1)
    a = _case_input(rng, case)
    x = _up(bk, a, layout)
    tx = torch.tensor(a, requires_grad=True)
    ty = _torch_pool("avg", tx, o)
    g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    gd = _up(bk, g, layout)
    ty.backward(torch.tensor(g))
    _check(bk.avg_pool(x, o), ty, np.float32)
    _check(bk.avg_pool_backward(x, gd, o), tx.grad, np.float32)
    assert bk.fallbacks["avg_pool"] == bk.fallbacks["avg_pool_backward"] == 0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_max_pool(device: str, layout: str, case: tuple[Any, ...]) -> None:
    bk, o = _backend(device), _options(case)
    rng = np.random.default_rng(2)
    a = np.round(_case_input(rng, case) * 2) / 2  # many ties: the first tap wins
    x = _up(bk, a, layout)
    tx = torch.tensor(a, requires_grad=True)
    ty, tidx = _torch_pool("max", tx, o)
    g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    gd = _up(bk, g, layout)
    ty.backward(torch.tensor(g))
    y, idx = bk.max_pool_with_indices(x, o)
    _check(y, ty, np.float32, 0)
    _check(idx, tidx, np.int64, 0)
    _check(bk.max_pool_backward(x, idx, gd, o), tx.grad, np.float32)
    assert bk.fallbacks["max_pool_with_indices"] == bk.fallbacks["max_pool_backward"] == 0


@pytest.mark.parametrize("device", DEVICES)
def test_max_pool_nan_inf_as_numpy_backend(device: str) -> None:
    """NaN wins over every number (the first NaN of a window), -inf/inf compare as numbers."""
    bk = _backend(device)
    a = np.arange(2 * 2 * 6 * 6, dtype=np.float32).reshape(2, 2, 6, 6) % 7
    a[0, 0, 1, 1] = a[0, 0, 2, 2] = a[1, 1, 0, 0] = np.nan
    a[0, 1, 2:5, 2:5] = -np.inf  # windows of -inf only, none with padding
    a[1, 0, 3, 3] = np.inf
    for o in (PoolOptions((3, 3), (2, 2), (1, 1), (1, 1), True),
              PoolOptions((2, 3), (1, 2), (1, 0), (2, 1))):
        y, idx = bk.max_pool_with_indices(bk.upload(a), o)
        ry, ridx = bk.host.max_pool_with_indices(a, o)
        _check(y, ry, np.float32, 0)
        _check(idx, ridx, np.int64, 0)
        g = np.ones(ry.shape, np.float32)
        _check(bk.max_pool_backward(bk.upload(a), idx, bk.upload(g), o),
               bk.host.max_pool_backward(a, ridx, g, o), np.float32, 0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", [CASES[1], CASES[3]], ids=str)
def test_pool_float16_and_empty_batch(device: str, case: tuple[Any, ...]) -> None:
    bk, o = _backend(device), _options(case)
    a = _case_input(np.random.default_rng(3), case).astype(np.float16)
    y, idx = bk.max_pool_with_indices(bk.upload(a), o)
    ry, ridx = bk.host.max_pool_with_indices(a, o)
    _check(y, ry, np.float16, 0)
    _check(idx, ridx, np.int64, 0)
    _check(bk.avg_pool(bk.upload(a), o), bk.host.avg_pool(a, o), np.float16, 1e-3)
    g = np.ones(ry.shape, np.float16)
    _check(bk.avg_pool_backward(bk.upload(a), bk.upload(g), o),
           bk.host.avg_pool_backward(a, g, o), np.float16, 1e-3)
    empty = _case_input(np.random.default_rng(3), case, batch=0)
    y, idx = bk.max_pool_with_indices(bk.upload(empty), o)
    assert y.shape == idx.shape == (0, 3, *ry.shape[2:])
    assert bk.avg_pool_backward(bk.upload(empty), y, o).shape == empty.shape
    assert sum(bk.fallbacks.values()) == 0


ADAPTIVE = [((9,), (4,)), ((9,), (1,)), ((6, 7), (3, 5)), ((5, 9), (1, 1)), ((4, 4), (6, 7))]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("spatial,out", ADAPTIVE, ids=str)
def test_adaptive_avg_pool(device: str, layout: str, spatial: tuple[int, ...],
                           out: tuple[int, ...]) -> None:
    bk = _backend(device)
    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 3, *spatial)).astype(np.float32)
    x = _up(bk, a, layout)
    tx = torch.tensor(a, requires_grad=True)
    fn: Any = tF.adaptive_avg_pool1d if len(out) == 1 else tF.adaptive_avg_pool2d
    ty = fn(tx, out)
    g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    gd = _up(bk, g, layout)
    ty.backward(torch.tensor(g))
    _check(bk.adaptive_avg_pool(x, out), ty, np.float32)
    _check(bk.adaptive_avg_pool_backward(x, gd), tx.grad, np.float32)
    assert bk.fallbacks["adaptive_avg_pool"] == bk.fallbacks["adaptive_avg_pool_backward"] == 0


@pytest.mark.parametrize("device", DEVICES)
def test_adaptive_avg_pool_nan_stays_in_its_windows(device: str) -> None:
    """As torch: a NaN makes NaN only the windows that read it."""
    bk = _backend(device)
    a = np.ones((1, 1, 4, 4), np.float32)
    a[0, 0, 0, 0] = np.nan
    y = host_array(bk.adaptive_avg_pool(bk.upload(a), (2, 2)))
    np.testing.assert_array_equal(np.isnan(y), [[[[True, False], [False, False]]]])


@pytest.mark.parametrize("device", DEVICES)
def test_bad_shapes_raise_shape_errors(device: str) -> None:
    bk = _backend(device)
    x = bk.upload(np.zeros((2, 3, 4, 4), np.float32))
    with pytest.raises(ShapeError, match="avg_pool"):
        bk.avg_pool(x, PoolOptions((2,), (1,), (0,), (1,)))
    with pytest.raises(ShapeError, match="kernel larger"):
        bk.max_pool_with_indices(x, PoolOptions((5, 5), (1, 1), (0, 0), (1, 1)))
    o = PoolOptions((2, 2), (2, 2), (0, 0), (1, 1))
    with pytest.raises(ShapeError, match="max_pool_backward"):
        bk.max_pool_backward(x, x, x, o)
    with pytest.raises(ShapeError, match="adaptive_avg_pool"):
        bk.adaptive_avg_pool(x, (0, 2))
    with pytest.raises(ShapeError, match="adaptive_avg_pool_backward"):
        bk.adaptive_avg_pool_backward(x, bk.upload(np.zeros((2, 3, 2), np.float32)))


@pytest.mark.parametrize("path", ["cpu", "gpu"])
def test_kernels_generate_cuda_source(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """Every kernel the pooling ops launch (float32 and float16 paths; the cpu runtime's own
    kernels, and the GPU runtimes' ones launched here on the cpu runtime) compiles to CUDA C."""
    bk = _backend("cpu")
    if path == "gpu":
        monkeypatch.setattr(bk, "runtime_name", "wgpu", raising=False)
    launched = record_launches(monkeypatch, bk)
    for dtype, o in itertools.product((np.float32, np.float16), map(_options, CASES[2:4])):
        x = bk.upload(np.ones((1, 2, 7, 8), dtype))
        y, idx = bk.max_pool_with_indices(x, o)
        bk.max_pool_backward(x, idx, y, o)
        bk.avg_pool_backward(x, bk.avg_pool(x, o), o)
        bk.adaptive_avg_pool_backward(x, bk.adaptive_avg_pool(x, (3, 3)))
    names = set()
    for kernel, args in launched.values():
        assert "__global__" in kernel.source("cuda", 256, *args)
        names.add(kernel.kernel.name)
    own = {"cpu": {"max_pool_planes", "max_pool_backward_planes"},
           "gpu": {"max_pool", "max_pool_backward_scatter"}}[path]
    assert {"avg_pool", "avg_pool_backward", "max_pool_backward", "resample_axis2",
            "resample_axis3", *own} <= names
