"""The cpu runtime's layer norm rows kernels (`burn.backends.cube.norm_rows_cpu`): forward and
gradients against torch (float64 autograd) over one and two normalised dims, with and without
weight / bias, contiguous and non-contiguous inputs, float32 / float64 / float16, NaN / inf
rows; one kernel for the forward and for the backward's input gradient; gcc vectorizes every
in-bounds loop of both kernels."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as tF
from cube_testing import backend as _backend
from cube_testing import scalar_loops
from cube_testing import upload_view as _up

from burn.backends.cube import norm_rows_cpu
from burn.backends.cube.layer_norm_rows import _dtypes, _flat
from burn.backends.cube.tensor import host_array
from burn_cube.kernel import IRKernel

TOL = {np.float32: 1e-5, np.float64: 1e-12, np.float16: 2e-2}


def _torch(x: np.ndarray, w: np.ndarray | None, b: np.ndarray | None, num_dims: int,
           g: np.ndarray) -> list[np.ndarray | None]:
    """torch's [out, dx, dweight, dbias] in float64."""
    tx = torch.tensor(x.astype(np.float64), requires_grad=True)
    tw, tb = (None if a is None else torch.tensor(a.astype(np.float64), requires_grad=True)
              for a in (w, b))
    out = tF.layer_norm(tx, x.shape[-num_dims:], tw, tb, 1e-5)
    out.backward(torch.tensor(g.astype(np.float64)))
    return [out.detach().numpy(), *(None if t is None or t.grad is None else t.grad.numpy()
                                    for t in (tx, tw, tb))]


def _check(out: Any, ref: np.ndarray | None, dtype: Any) -> None:
    """Shape and dtype first, then values (NaN where torch has NaN)."""
    if ref is None:
        assert out is None
        return
    assert out.shape == ref.shape
    got = host_array(out)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=TOL[dtype], atol=TOL[dtype],
                               equal_nan=True)


@pytest.mark.parametrize("num_dims,affine", list(itertools.product((1, 2), range(4))))
@pytest.mark.parametrize("dtype,layout", [(np.float32, "contiguous"),
                                          (np.float64, "transposed"),
                                          (np.float16, "strided")])
def test_matches_torch(num_dims: int, affine: int, dtype: Any, layout: str) -> None:
    bk = _backend("cpu")
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((3, 5, 6)) * 2 + 1).astype(dtype)
    d = x.shape[-num_dims:]
    w = rng.uniform(0.5, 1.5, d).astype(dtype) if affine & 1 else None
    b = rng.standard_normal(d).astype(dtype) if affine & 2 else None
    g = rng.standard_normal(x.shape).astype(dtype)
    ref = _torch(x, w, b, num_dims, g)
    xt = _up(bk, x, layout)
    wt, bt = (None if a is None else bk.upload(a) for a in (w, b))
    out, mean, rstd = bk.layer_norm(xt, wt, bt, num_dims, 1e-5)
    assert mean.shape == rstd.shape == (*x.shape[:3 - num_dims], *(1,) * num_dims)
    grads = bk.layer_norm_backward(xt, wt, bt, mean, rstd, _up(bk, g, layout), num_dims)
    for got, want in zip((out, *grads), ref, strict=True):
        _check(got, want, dtype)


def test_nan_inf_rows() -> None:
    """A NaN or inf in a row makes that row's outputs NaN and leaves other rows exact."""
    bk = _backend("cpu")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    x[1, 3], x[2, 0] = np.nan, np.inf
    w, b = (rng.standard_normal(8).astype(np.float32) for _ in range(2))
    g = rng.standard_normal(x.shape).astype(np.float32)
    ref = _torch(x, w, b, 1, g)
    wt, bt = bk.upload(w), bk.upload(b)
    out, mean, rstd = bk.layer_norm(bk.upload(x), wt, bt, 1, 1e-5)
    grads = bk.layer_norm_backward(bk.upload(x), wt, bt, mean, rstd, bk.upload(g), 1)
    for got, want in zip((out, *grads), ref, strict=True):
        _check(got, want, np.float32)


def test_empty_rows_take_default() -> None:
    bk = _backend("cpu")
    x = bk.upload(np.zeros((0, 4), np.float32))
    out, mean, rstd = bk.layer_norm(x, None, None, 1, 1e-5)
    assert (out.shape, mean.shape, rstd.shape) == ((0, 4), (0, 1), (0, 1))
    dx, dw, db = bk.layer_norm_backward(x, None, None, mean, rstd, x, 1)
    assert dx.shape == (0, 4) and dw is None and db is None


def test_kernel_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """One planned launch for the forward; for the backward one rows kernel, then the
    backend's column sums of the weight's and bias's gradients."""
    bk = _backend("cpu")
    x, w = bk.upload(np.ones((4, 8), np.float32)), bk.upload(np.ones(8, np.float32))
    calls: list[str] = []
    real_plan = IRKernel.plan

    def plan(self: Any, *args: Any, **kwargs: Any) -> Any:
        launch = real_plan(self, *args, **kwargs)

        def count(*launch_args: Any) -> Any:
            calls.append(self.kernel.name)
            return launch(*launch_args)

        return count

    bk.plans.clear()  # planned launches made from now on count theirs
    monkeypatch.setattr(IRKernel, "plan", plan)
    out, mean, rstd = bk.layer_norm(x, w, w, 1, 1e-5)
    assert calls == ["layer_norm_rows_cpu"]
    calls.clear()
    bk.layer_norm_backward(x, w, w, mean, rstd, out, 1)
    assert calls[0] == "layer_norm_rows_cpu_backward" and len(calls) == 3
    assert all(name.startswith("reduce_sum") for name in calls[1:]), calls


def _unvectorized_loops(source: str, tmp_path: Path) -> list[str]:
    """The in-bounds loops of a kernel's C that gcc leaves scalar, as source lines."""
    fast, scalar = scalar_loops(source, tmp_path)
    assert fast
    lines = source.splitlines()
    return [lines[n - 1].strip() for n in scalar]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_loops_vectorize(dtype: Any, tmp_path: Path) -> None:
    """Every in-bounds loop over a row, the partial sums' included, is vectorized by gcc (the
    sums' loop once stepped a u32 index by 16, whose loads gcc then saw with no known step,
    and ran scalar: the forward 3x slower)."""
    bk = _backend("cpu")
    m, n = 8, 64
    x, g = (bk.upload(np.ones((m, n), dtype)) for _ in range(2))
    w = bk.upload(np.ones(n, dtype))
    out, mean, rstd = bk.layer_norm(x, w, w, 1, 1e-5)
    dx, gx = bk.empty((m, n), x.dtype), bk.empty((m, n), x.dtype)
    dtypes = _dtypes(x.dtype)
    flat = [_flat(bk, t).array for t in (x, w, w, out, mean, rstd)]
    forward = norm_rows_cpu.forward_kernel(dtypes, True, True).source(
        "c", 256, *flat, m, n, 1e-5)
    flat = [_flat(bk, t).array for t in (x, w, mean, rstd, g, dx, gx)]
    backward = norm_rows_cpu.backward_kernel(dtypes, True).source("c", 256, *flat, m, n)
    assert _unvectorized_loops(forward, tmp_path) == []
    assert _unvectorized_loops(backward, tmp_path) == []
