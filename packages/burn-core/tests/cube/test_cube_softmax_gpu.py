"""The GPU row softmax (`softmax_rows`: one cube per row held in registers, on cuda a warp per
row up to 1024 elements) against torch on wgpu (Mesa llvmpipe here) and cuda where there is
one: softmax and log-softmax over rows of several lengths (partial last chunks), dims with
strides, float16 / bfloat16, and rows with NaN, inf and -inf; the three-pass kernel keeps the
cpu runtime, short rows and rows too long for the row kernel; CUDA source generation."""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pytest
import torch

import burn
import burn.functional as F
from burn.backends.cube import softmax_rows as sr
from burn.backends.cube.backend import CudaBackend

GPUS = ["wgpu", *(["cuda"] if CudaBackend.unavailable_reason() is None else [])]
FLOATS = {"wgpu": ["float32", "float16"], "cuda": ["float32", "float16", "bfloat16", "float64"]}
TOL = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-14), "float16": (2e-3, 1e-3),
       "bfloat16": (2e-2, 1e-2)}


def _runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """Records (units a row, chunks) of each row-kernel launch from now on (a row per warp:
    ``CUDA_PLANE`` units)."""
    seen: list[tuple[int, int]] = []
    real, real_planes = sr.plan, sr.plane_plan

    def plan(backend: Any, rows: int, n: int) -> tuple[int, int] | None:
        shape = real(backend, rows, n)
        if shape is not None:
            seen.append(shape)
        return shape

    def plane_plan(backend: Any, rows: int, n: int) -> int | None:
        chunks = real_planes(backend, rows, n)
        if chunks is not None:
            seen.append((sr.CUDA_PLANE, chunks))
        return chunks

    monkeypatch.setattr(sr, "plan", plan)
    monkeypatch.setattr(sr, "plane_plan", plane_plan)
    return seen


def _check(got: burn.Tensor, want: torch.Tensor, dtype: str) -> None:
    assert tuple(got.shape) == tuple(want.shape)
    assert got.dtype == getattr(burn, dtype)
    values = got.to_numpy().astype(np.float64)
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(values, want.double().numpy(), rtol=rtol, atol=atol)


def _tensor(data: np.ndarray, device: str, dtype: str) -> tuple[burn.Tensor, torch.Tensor]:
    host = torch.from_numpy(data).to(getattr(torch, dtype))
    return burn.tensor(host.double().numpy(), device=device, dtype=getattr(burn, dtype)), host


def _torch_softmax(x: torch.Tensor, dim: int, log: bool) -> torch.Tensor:
    """torch's result for `x` (float16 / bfloat16 computed in float32 and rounded)."""
    wide = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    fn = torch.log_softmax if log else torch.softmax
    return fn(wide, dim).to(x.dtype)


@pytest.mark.parametrize("device", GPUS)
@pytest.mark.parametrize("length", [128, 200, 1000, 4096, 8192])
@pytest.mark.parametrize("log", [False, True])
def test_rows_of_each_length(device: str, length: int, log: bool,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _runs(monkeypatch)
    rng = np.random.default_rng(length)
    for dtype in FLOATS[device]:
        x, tx = _tensor(rng.uniform(-8, 8, (3, length)), device, dtype)
        got = F.log_softmax(x, 1) if log else F.softmax(x, 1)
        _check(got, _torch_softmax(tx, 1, log), dtype)
    assert runs and all(units * chunks >= length for units, chunks in runs)


@pytest.mark.parametrize("device", GPUS)
@pytest.mark.parametrize("log", [False, True])
def test_strided_rows_and_other_dims(device: str, log: bool,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _runs(monkeypatch)
    rng = np.random.default_rng(1)
    x, tx = _tensor(rng.standard_normal((4, 400, 6)), device, "float32")
    for dim in (0, 1, 2):  # rows 4, 400 and 6 long, 6, 1 and 1 apart
        got = F.log_softmax(x, dim) if log else F.softmax(x, dim)
        _check(got, _torch_softmax(tx, dim, log), "float32")
    view, tview = x[:, ::2, 1:5].swap_dims(1, 2), tx[:, ::2, 1:5].transpose(1, 2)
    got = F.log_softmax(view, 2) if log else F.softmax(view, 2)  # rows 200 long, 12 apart
    _check(got, _torch_softmax(tview, 2, log), "float32")
    # the short rows stay on the three-pass kernel; cuda holds the others a warp each
    assert runs == ([(32, 16), (32, 8)] if device == "cuda" else [(256, 2), (256, 1)])


@pytest.mark.parametrize("device", GPUS)
@pytest.mark.parametrize("log", [False, True])
def test_nan_and_infinite_rows(device: str, log: bool) -> None:
    rows = np.random.default_rng(2).uniform(-3, 3, (5, 700))
    rows[0, 17] = np.nan
    rows[1, 5] = np.inf
    rows[2, :] = -np.inf
    rows[3, 100:] = -np.inf  # a partly -inf row: zeros / -inf there
    rows[4, 699] = 80.0  # exp overflows without the max shift
    x, tx = _tensor(rows, device, "float32")
    got = F.log_softmax(x, 1) if log else F.softmax(x, 1)
    want = _torch_softmax(tx, 1, log)
    assert tuple(got.shape) == tuple(want.shape) and got.dtype == burn.float32
    np.testing.assert_allclose(got.to_numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_plans() -> None:
    cpu, wgpu = burn.Device("cpu").backend, cast(Any, burn.Device("wgpu").backend)
    assert sr.plan(cpu, 8, 8192) is None  # the cpu keeps its own schedules
    assert sr.plan(wgpu, 8, sr.MIN_LENGTH - 1) is None
    assert sr.plan(wgpu, 8, 8192) == (256, 32)
    assert sr.plan(wgpu, 8, 257) == (256, 2)
    assert sr.plan(wgpu, wgpu.runtime.properties.max_cube_count[0] + 1, 1000) is None
    longest = max(units * chunks for units, chunks in sr.SHAPES
                  if units <= wgpu.runtime.properties.max_cube_dim)
    assert sr.plan(wgpu, 8, longest) is not None and sr.plan(wgpu, 8, longest + 1) is None
    assert sr.plane_plan(cpu, 8, 256) is None and sr.plane_plan(wgpu, 8, 256) is None
    if "cuda" in GPUS:  # a warp per row from MIN_LENGTH to PLANE_ROW elements
        cuda = cast(Any, burn.Device("cuda").backend)
        assert sr.plane_plan(cuda, 8, 256) == 8 and sr.plane_plan(cuda, 8, 1000) == 32
        assert sr.plane_plan(cuda, 8, sr.MIN_LENGTH - 1) is None
        assert sr.plane_plan(cuda, 8, sr.PLANE_ROW + 1) is None


@pytest.mark.parametrize("device", GPUS)
def test_rows_past_the_row_kernel_use_the_three_pass_kernel(
        device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sr, "SHAPES", ((256, 1),))
    monkeypatch.setattr(sr, "PLANE_ROW", 0)
    runs = _runs(monkeypatch)
    x, tx = _tensor(np.random.default_rng(3).standard_normal((2, 300)), device, "float32")
    _check(F.softmax(x, 1), _torch_softmax(tx, 1, False), "float32")
    assert runs == []


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("plane", [False, True])
def test_kernels_generate_cuda_source(dtype: str, plane: bool) -> None:
    from burn.ir.cube import cube_dtype

    d = getattr(burn, dtype)
    acc = burn.float64 if dtype == "float64" else burn.float32
    x = np.zeros((4, 1), d.numpy)
    for log, exact in ((False, False), (True, False), (False, True)):
        kernel = sr.row_kernel((cube_dtype("softmax", d), cube_dtype("softmax", acc)), 2, 256,
                               4, plane, log, exact)
        src = kernel.source("cuda", 256, x, np.uint32(8), np.uint32(1), x, np.uint32(1))
        assert "__global__" in src and (src.count("bc_plane_max(") > 1) == plane
        by_planes = sr.row_kernel((cube_dtype("softmax", d), cube_dtype("softmax", acc)), 2,
                                  256, 4, plane, log, exact, True)
        src = by_planes.source("cuda", 256, x, np.uint32(8), np.uint32(1), x, np.uint32(1))
        assert "__global__" in src and "bc_plane_max(" in src and "__syncthreads" not in src
