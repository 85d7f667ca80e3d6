"""The cpu runtime's max-pool kernels (a unit per plane: the forward's unrolled windows where
all lie inside x, else its tap sweep; the non-overlapping backward's fill and scatter) against
torch: LeNet's shapes, ceil_mode and
padding (partial windows, windows starting in the padding), dilation, strided and transposed
inputs and gradients, many planes, -inf-only windows, NaN, ties and float16."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as tF
from cube_testing import backend as _backend
from cube_testing import record_launches
from cube_testing import upload_view as _up

from burn.backend.options import PoolOptions
from burn.backends.cube.tensor import host_array

#: (x shape, kernel, stride, padding, dilation, ceil_mode): non-overlapping windows (the
#: scatter backward; windows all inside x, and ceil_mode's partial last windows without
#: padding) first, then overlapping ones (the gather backward).
CASES = [
    ((8, 6, 24, 24), (2, 2), (2, 2), (0, 0), (1, 1), False),
    ((4, 16, 8, 8), (2, 2), (2, 2), (0, 0), (1, 1), False),
    ((2, 3, 9, 9), (2, 2), (2, 2), (0, 0), (1, 1), True),
    ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0), (1, 1), True),
    ((2, 3, 9, 7), (2, 3), (2, 3), (1, 1), (1, 1), True),
    ((2, 3, 11, 10), (2, 2), (3, 3), (1, 0), (1, 1), True),
    ((2, 2, 9, 9), (2, 2), (3, 4), (0, 1), (2, 2), False),
    ((2, 3, 10, 9), (3, 3), (2, 1), (1, 1), (1, 2), True),
    ((3, 2, 1, 17), (1, 4), (1, 3), (0, 2), (1, 1), True),
]
LAYOUTS = ["contiguous", "transposed", "strided"]


def _torch(x: torch.Tensor, o: PoolOptions) -> Any:
    return tF.max_pool2d(x, o.kernel_size, o.stride, o.padding, o.dilation, o.ceil_mode,
                         return_indices=True)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_cpu_max_pool_and_backward_match_torch(case: tuple[Any, ...], layout: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Values, indices and the input gradient (from a strided gradient) as torch's, on the
    plane kernels; ties go to the first tap (inputs rounded to halves)."""
    bk = _backend("cpu")
    launched = record_launches(monkeypatch, bk)
    shape, *window = case
    o = PoolOptions(*window)
    rng = np.random.default_rng(sum(shape))
    a = np.round(rng.standard_normal(shape) * 2).astype(np.float32) / 2
    tx = torch.tensor(a, requires_grad=True)
    ty, tidx = _torch(tx, o)
    g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    ty.backward(torch.tensor(g))
    x = _up(bk, a, layout)
    y, idx = bk.max_pool_with_indices(x, o)
    gx = bk.max_pool_backward(x, idx, _up(bk, g, "strided"), o)
    for got, want, dtype in ((y, ty, np.float32), (idx, tidx, np.int64),
                             (gx, tx.grad, np.float32)):
        assert want is not None
        assert got.shape == tuple(want.shape)
        assert got.dtype.numpy == np.dtype(dtype)
        np.testing.assert_allclose(np.array(host_array(got)), want.detach().numpy(),
                                   rtol=1e-6, atol=1e-6)
    names = {kernel.kernel.name for kernel, _ in launched.values()}
    # windows all inside x: their taps unrolled; else the tap sweep
    inside = not any(o.padding) and all(
        (out - 1) * st + (k - 1) * d < size for out, st, k, d, size in zip(
            ty.shape[2:], o.stride, o.kernel_size, o.dilation, shape[2:], strict=True))
    assert ("max_pool_windows" if inside else "max_pool_planes") in names
    assert "max_pool" not in names
    overlapping = any(s < d * (k - 1) + 1 for k, s, d in
                      zip(o.kernel_size, o.stride, o.dilation, strict=True))
    assert ("max_pool_backward_planes" in names) is not overlapping


@pytest.mark.parametrize("device", ["cpu", "wgpu"])
def test_max_pool_edges_match_torch(device: str) -> None:
    """Windows of -inf only, whose first taps are padding (the index names the first tap
    inside x, as torch's), a NaN (it wins), planes of ties, and float16 (its values exact, so
    compared with torch's float32 result), with and without padding: values, indices and the
    gradient as torch's, on the cpu kernels and the GPU ones."""
    bk = _backend(device)
    a = (np.arange(2 * 3 * 7 * 7, dtype=np.float32).reshape(2, 3, 7, 7) % 5) - 2
    a[0, 0, :3, :3] = -np.inf
    a[1, 1, 2, 2] = np.nan
    a[1, 2] = np.float32(1.5)
    rng = np.random.default_rng(4)
    for o in (PoolOptions((3, 3), (3, 3), (1, 1), (1, 1), True),
              PoolOptions((2, 2), (2, 2), (1, 1), (1, 1), True),
              PoolOptions((3, 2), (1, 2), (1, 1), (2, 1), False),
              PoolOptions((2, 2), (2, 2), (0, 0), (1, 1), False),
              PoolOptions((3, 3), (2, 2), (0, 0), (1, 1), False)):
        tx = torch.tensor(a, requires_grad=True)
        ty, tidx = _torch(tx, o)
        g = rng.standard_normal(tuple(ty.shape)).astype(np.float16)
        ty.backward(torch.tensor(g.astype(np.float32)))
        assert tx.grad is not None
        for dtype in (np.float32, np.float16):
            x = bk.upload(a.astype(dtype))
            y, idx = bk.max_pool_with_indices(x, o)
            gx = bk.max_pool_backward(x, idx, bk.upload(g.astype(dtype)), o)
            for got, want in ((y, ty), (idx, tidx), (gx, tx.grad)):
                assert got.shape == tuple(want.shape)
                assert got.dtype.numpy == (np.dtype(np.int64) if want is tidx else dtype)
                np.testing.assert_allclose(np.array(host_array(got)).astype(np.float64),
                                           want.detach().numpy().astype(np.float64),
                                           rtol=1e-3, atol=1e-3)
