"""The cpu softmax rows kernels (`softmax_rows_cpu`: a unit per dense row) against torch in
float64: rows of 16 to 1000 elements (whole lane blocks and a rest), float32 and float64, rows
with NaN, inf, -inf and values whose exponential overflows without the max shift; what it
leaves to the three-pass kernel (log-softmax, float16, other dims, strided and short rows);
gcc vectorizes its float32 loops but the max's; the backward from the output (Autodiff's
fused rule) against torch's gradient, by the rows kernel or the composite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from cube_testing import scalar_loops

import burn
import burn.functional as F
from burn.backends.cube import softmax_rows_cpu as sc
from burn.dtype import DType
from burn.ir.cube import cube_dtype

TOL = {"float32": (1e-5, 1e-7), "float64": (1e-12, 1e-15), "float16": (2e-3, 1e-3)}


def _served(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    """Records the shape of each softmax the rows kernel takes from now on."""
    seen: list[tuple[int, ...]] = []
    real = sc.softmax

    def softmax(backend: Any, x: Any, out: Any) -> None:
        seen.append(x.shape)
        real(backend, x, out)

    monkeypatch.setattr(sc, "softmax", softmax)
    return seen


def _check(got: burn.Tensor, x: np.ndarray, dim: int, log: bool, dtype: str) -> None:
    """Shape and dtype first, then values against torch's float64 result (NaN where torch's)."""
    fn = torch.log_softmax if log else torch.softmax
    want = fn(torch.from_numpy(x.astype(np.float64)), dim).numpy()
    assert tuple(got.shape) == want.shape and got.dtype == getattr(burn, dtype)
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(got.to_numpy().astype(np.float64), want, rtol=rtol, atol=atol,
                               equal_nan=True)


@pytest.mark.parametrize("length", [16, 37, 64, 1000])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rows_match_torch(length: int, dtype: str, monkeypatch: pytest.MonkeyPatch) -> None:
    served = _served(monkeypatch)
    x = np.random.default_rng(length).uniform(-8, 8, (2, 3, length)).astype(dtype)
    _check(F.softmax(burn.tensor(x, device="cpu"), -1), x, -1, False, dtype)
    assert served == [(2, 3, length)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nan_and_infinite_rows(dtype: str, monkeypatch: pytest.MonkeyPatch) -> None:
    served = _served(monkeypatch)
    rows = np.random.default_rng(2).uniform(-3, 3, (7, 37))
    rows[0, 17] = np.nan  # in a block
    rows[1, 35] = np.inf  # in the rest
    rows[2, :] = -np.inf
    rows[3, 20:] = -np.inf  # zeros there
    rows[4, 36] = 800.0  # exp overflows without the max shift, float64 too
    rows[5, 0] = np.nan  # the max's first value
    rows[6, 15] = -800.0  # underflows to 0
    x = rows.astype(dtype)
    _check(F.softmax(burn.tensor(x, device="cpu"), 1), x, 1, False, dtype)
    assert served == [(7, 37)]


def test_other_softmaxes_take_the_three_pass_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    served = _served(monkeypatch)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 40, 20)).astype(np.float32)
    t = burn.tensor(x, device="cpu")
    _check(F.log_softmax(t, 2), x, 2, True, "float32")
    _check(F.softmax(t, 1), x, 1, False, "float32")  # rows 20 apart
    _check(F.softmax(t.swap_dims(1, 2), 2), x.transpose(0, 2, 1), 2, False, "float32")
    short = x[..., :15].copy()
    _check(F.softmax(burn.tensor(short, device="cpu"), 2), short, 2, False, "float32")
    half = x.astype(np.float16)
    _check(F.softmax(burn.tensor(half, device="cpu"), 2), half, 2, False, "float16")
    assert served == []


def test_float32_loops_but_the_max_vectorize(tmp_path: Path) -> None:
    """gcc vectorizes the exponentials (float32's exp is the C target's inline polynomial;
    float64's a library call), their sum and the scaling, with the cpu runtime's compiler and
    flags; the max's loops (a NaN-aware select) stay scalar."""
    bk: Any = burn.Device("cpu").backend
    x = bk.upload(np.ones((8, 64), np.float32))
    source = sc.kernel(cube_dtype("softmax", DType.float32)).source(
        "c", 256, x.flat().array, bk.empty((8, 64), DType.float32).flat().array, 8, 64)
    lines = source.splitlines()
    fast, scalar = scalar_loops(source, tmp_path)
    assert len(fast) - len(scalar) >= 3  # exponentials, sum, scaling (per code version)
    assert all(" > " in lines[n] or "?" in lines[n] for n in scalar), \
        [lines[n - 1].strip() for n in scalar]


@pytest.mark.parametrize("dim,dtype", [(2, "float32"), (2, "float64"), (1, "float32")])
def test_backward_matches_torch(dim: int, dtype: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Autodiff's softmax rule runs the backend's `softmax_backward_from_output`: the rows
    kernel along a dense last dim, the composite along another."""
    launched: list[str] = []
    real = sc.backward_kernel

    def counted(*args: Any) -> Any:
        launched.append("rows")
        return real(*args)

    monkeypatch.setattr(sc, "backward_kernel", counted)
    rng = np.random.default_rng(dim)
    x = rng.uniform(-4, 4, (3, 20, 37)).astype(dtype)
    x[0, 1, 5], x[1, 2, 36] = np.nan, -np.inf
    g = rng.standard_normal(x.shape).astype(dtype)
    device = burn.Device("cpu").autodiff()
    t = burn.tensor(x, device=device).require_grad()
    grads = (F.softmax(t, dim) * burn.tensor(g, device=device)).sum().backward()
    tx = torch.tensor(x.astype(np.float64), requires_grad=True)
    (torch.softmax(tx, dim) * torch.from_numpy(g.astype(np.float64))).sum().backward()
    grad = t.grad(grads)
    assert tx.grad is not None and grad is not None
    got, want = grad.to_numpy(), tx.grad.numpy()
    assert got.shape == want.shape and got.dtype == np.dtype(dtype)
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol,
                               equal_nan=True)
    assert launched == (["rows"] if dim == 2 else [])
