"""The linear scatter paths of the cube backends (`scatter_kernels`: integer atomics, sorted
runs, the cpu runtime's select_assign rows) on cpu, wgpu and cuda where present (every path on
every runtime, forced by the tests): compared with torch (scatter_add, index_add, embedding
backward) or the NumPy backend (assign with duplicates), exact, and run on kernels."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import burn
import burn.functional as F
from burn.backends.cube import indexing, scatter_kernels
from burn.backends.cube.backend import CubeBackend, CudaBackend
from burn.dtype import DType
from burn.errors import BurnIndexError

NUMPY = burn.Device("numpy")
RNG = np.random.default_rng(3)
PATHS = ["atomic", "sorted", "scan"]


DEVICES = ["cpu", "wgpu", *(["cuda"] if CudaBackend.unavailable_reason() is None else [])]


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> burn.Device:
    """The device with the linear paths enabled on every runtime, no check pending."""
    monkeypatch.setattr(scatter_kernels, "SEQUENTIAL_RUNTIMES", ())
    dev = burn.Device(request.param)
    with contextlib.suppress(BurnIndexError):
        burn.sync(dev)
    return dev


@contextlib.contextmanager
def _path(monkeypatch: pytest.MonkeyPatch, name: str) -> Iterator[list[str]]:
    """Force float paths to "sorted", "scan" (per-output kernel) or "rows" (the sequential
    runtimes' select_assign kernel, on every runtime) and record the path each scatter
    takes."""
    monkeypatch.setattr(scatter_kernels, "SCAN_WORK_MAX", 0 if name == "sorted" else 1 << 62)
    if name == "rows":
        monkeypatch.setattr(scatter_kernels, "SEQUENTIAL_RUNTIMES", ("cpu", "wgpu", "cuda"))
    taken: list[str] = []
    real = scatter_kernels.path

    def record(*args: Any) -> str | None:
        got = real(*args)
        taken.append(got or "scan")
        return got

    monkeypatch.setattr("burn.backends.cube.indexing.scatter_path", record)
    yield taken


def _on(device: burn.Device, data: Any, dtype: Any = None) -> burn.Tensor:
    return burn.tensor(np.asarray(data), device=device, dtype=dtype)


def _check(got: burn.Tensor, want: torch.Tensor | np.ndarray, device: burn.Device) -> None:
    """Shape and dtype first, then exact values (NaN equal), then no host fallback."""
    ref = want.numpy() if isinstance(want, torch.Tensor) else want
    assert got.shape == ref.shape
    data = got.to_numpy()
    assert data.dtype == ref.dtype
    np.testing.assert_array_equal(data, ref)
    backend = device.backend
    assert isinstance(backend, CubeBackend) and not any(backend.fallbacks.values())


def _values(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    data = RNG.standard_normal(shape) * 50
    if np.dtype(dtype).kind == "f":
        data.flat[:4] = [np.nan, np.inf, -np.inf, 1e30][:data.size]
    return data.astype(dtype)


# --- scatter_add ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
@pytest.mark.parametrize("name", ["sorted", "scan"])
def test_scatter_add_few_long_lines_matches_torch(device: burn.Device, dtype: Any, name: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Two lines of 700 entries into 37 outputs each (many duplicates, negatives wrapped),
    along the last dim and along the first, with transposed (strided) inputs."""
    x = _values((2, 37), dtype)
    index = RNG.integers(-37, 37, (2, 700))
    values = _values((3, 700), dtype)  # larger than the indices
    atomic = dtype is np.int32 or (dtype is np.int64 and device.name != "wgpu")
    for dim in (1, 0):
        xs, ix, vs = (x, index, values) if dim == 1 else (x.T, index.T, values.T)
        xb = _on(device, xs.T.copy()).transpose(0, 1) if dim == 0 else _on(device, xs)
        ib = _on(device, ix.T.copy()).transpose(0, 1) if dim == 0 else _on(device, ix)
        with _path(monkeypatch, name) as taken:
            got = xb.scatter(dim, ib, _on(device, vs), "add")
        want = torch.from_numpy(np.ascontiguousarray(xs)).scatter_add(
            dim, torch.from_numpy(ix % 37), torch.from_numpy(np.ascontiguousarray(vs)))
        _check(got, want, device)
        assert taken == ["atomic" if atomic else name]


@pytest.mark.parametrize("depth_max, name", [(10, "sorted"), (1 << 30, "scan")])
def test_many_long_lines_take_the_sorted_path(device: burn.Device, depth_max: int, name: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines counted as many (a unit per line) but longer than `LINE_DEPTH_MAX`: sorted runs,
    torch's results either way (float scatter_add and index_add, int assign)."""
    monkeypatch.setattr(indexing, "OUTPUT_UNITS_BELOW", 0)
    monkeypatch.setattr(scatter_kernels, "LINE_DEPTH_MAX", depth_max)
    x = _values((5, 9), np.float32)
    index = RNG.integers(-9, 9, (4, 60))
    values = _values((4, 60), np.float32)
    ints = (RNG.integers(-99, 99, (5, 9)).astype(np.int32),
            np.arange(240, dtype=np.int32).reshape(4, 60))
    with _path(monkeypatch, "scan") as taken:
        got = _on(device, x).scatter(1, _on(device, index), _on(device, values), "add")
        added = _on(device, x).select_assign(1, _on(device, index[0]), _on(device, values[:1])
                                             .expand(5, 60))
        assigned = _on(device, ints[0]).scatter(1, _on(device, index), _on(device, ints[1]))
    tx, ti, tv = torch.from_numpy(x), torch.from_numpy(index % 9), torch.from_numpy(values)
    _check(got, tx.scatter_add(1, ti, tv), device)
    _check(added, tx.index_add(1, ti[0], tv[:1].expand(5, 60)), device)
    want = _on(NUMPY, ints[0]).scatter(1, _on(NUMPY, index), _on(NUMPY, ints[1]))
    _check(assigned, want.to_numpy(), device)
    assert taken == [name] * 3


def _blocked(x: np.ndarray, index: np.ndarray, values: np.ndarray, block: int,
             add: bool = True) -> np.ndarray:
    """The sorted path's order on 1-d `x` (docs/differences.md): entries sorted by target
    (stable), each run added in order through the end of the block of `block` sorted
    positions after the one it starts in, then each further block's in-order sum."""
    order = np.argsort(index, kind="stable")
    t, v, out = index[order], values[order], x.copy()
    starts = np.flatnonzero(np.r_[True, t[1:] != t[:-1]])
    for s, e in zip(starts, np.r_[starts[1:], len(t)], strict=True):
        acc, k = out[t[s]], s // block + 2
        for j in range(s, min(e, k * block)):
            acc = acc + v[j] if add else v[j]
        while k * block < e:
            part = v[k * block]
            for j in range(k * block + 1, min((k + 1) * block, e)):
                part = part + v[j] if add else v[j]
            acc, k = acc + part if add else part, k + 1
        out[t[s]] = acc
    return out


@pytest.mark.parametrize("name, block", [("atomic", 256), ("scan", 256), ("sorted", 256),
                                         ("sorted", 4)])
def test_scatter_one_line_many_duplicates_is_exact_and_repeatable(
        device: burn.Device, name: str, block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """5000 entries into 3 outputs (runs longer than a block and than the sort's blocks):
    int32 through atomics and float32 per output in index order equal torch; float32 sorted
    runs follow the documented block order (torch's for runs of up to a block); run twice,
    the same bits."""
    monkeypatch.setattr(scatter_kernels, "RUN_BLOCK", block)
    index = RNG.integers(0, 3, 5000)
    index[-300:] = 2  # a run that reaches the end of the sorted keys
    dtype = np.int32 if name == "atomic" else np.float32
    values = (RNG.standard_normal(5000) * 100).astype(dtype)
    values[7] = np.inf if name == "sorted" else values[7]
    with _path(monkeypatch, name) as taken:
        runs = [_on(device, np.zeros(3, dtype)).scatter(
            0, _on(device, index), _on(device, values), "add") for _ in range(2)]
    want: Any = _blocked(np.zeros(3, dtype), index, values, block) if name == "sorted" else (
        torch.zeros(3, dtype=torch.from_numpy(values).dtype).scatter_add(
            0, torch.from_numpy(index), torch.from_numpy(values)))
    for got in runs:
        _check(got, want, device)
    assert taken == [name] * 2


def test_sorted_runs_across_blocks_per_column(device: burn.Device,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """select_assign along dim 1 of [2, 3, 4] with 41 rows and blocks of 2 sorted positions:
    every (outer, inner) column follows the block order; assign keeps the last entry."""
    monkeypatch.setattr(scatter_kernels, "RUN_BLOCK", 2)
    x = _values((2, 3, 4), np.float32)
    rows = RNG.integers(0, 3, 41)
    values = (RNG.standard_normal((2, 41, 4)) * 100).astype(np.float32)
    with _path(monkeypatch, "sorted"):
        got = _on(device, x).select_assign(1, _on(device, rows), _on(device, values))
        assigned = _on(device, x[:1]).scatter(1, _on(device, np.tile(rows, (1, 4, 1))
                                                      .transpose(0, 2, 1)),
                                              _on(device, values[:1]))
    want = np.empty_like(x)
    for o in range(2):
        for c in range(4):
            want[o, :, c] = _blocked(x[o, :, c], rows, values[o, :, c], 2)
    _check(got, want, device)
    last = np.empty_like(x[:1])
    for c in range(4):
        last[0, :, c] = _blocked(x[0, :, c], rows, values[0, :, c], 2, add=False)
    _check(assigned, last, device)


def test_scatter_add_float16_accumulates_in_float32(device: burn.Device,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    index = RNG.integers(0, 5, (1, 400))
    values = (RNG.standard_normal((1, 400)) * 10).astype(np.float16)
    want = _on(NUMPY, np.zeros((1, 5), np.float16)).scatter(
        1, _on(NUMPY, index), _on(NUMPY, values), "add").to_numpy()
    with _path(monkeypatch, "sorted") as taken:
        got = _on(device, np.zeros((1, 5), np.float16)).scatter(
            1, _on(device, index), _on(device, values), "add")
    _check(got, want, device)
    assert taken == ["sorted"]


# --- assign ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_scatter_assign_sorted_last_duplicate_wins(device: burn.Device, dtype: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The NumPy backend's rule (docs): the entry with the largest index along dim wins."""
    x = _values((2, 11), np.float32) > 0 if dtype is np.bool_ else _values((2, 11), dtype)
    index = RNG.integers(-11, 11, (2, 300))
    values = np.arange(600).reshape(2, 300)
    vals = (values % 3 == 0) if dtype is np.bool_ else values.astype(dtype)
    want = _on(NUMPY, x).scatter(1, _on(NUMPY, index), _on(NUMPY, vals)).to_numpy()
    with _path(monkeypatch, "sorted") as taken:
        got = _on(device, x).scatter(1, _on(device, index), _on(device, vals))
    _check(got, want, device)
    assert taken == ["sorted"]


# --- select_assign / embedding backward -------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("name", ["sorted", "scan", "rows"])
def test_select_assign_matches_torch_index_add(device: burn.Device, dim: int, name: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    shape = [3, 4, 5]
    x = _values(tuple(shape), np.float32)
    rows = RNG.integers(-shape[dim], shape[dim], 90)
    shape[dim] = 90
    values = _values(tuple(reversed(shape)), np.float32).T  # a transposed (strided) view
    with _path(monkeypatch, name) as taken:
        got = _on(device, x).select_assign(dim, _on(device, rows),
                                           _on(device, values.T.copy()).permute(2, 1, 0))
    want = torch.from_numpy(x).index_add(dim, torch.from_numpy(rows % x.shape[dim]),
                                         torch.from_numpy(np.ascontiguousarray(values)))
    _check(got, want, device)
    assert taken == ["index_add_rows" if name == "rows" else name]


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float16])
@pytest.mark.parametrize("name", ["sorted", "rows"])
def test_select_assign_ints_and_half_match_torch(device: burn.Device, dtype: Any, name: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Int sums wrap as torch's (atomics where the runtime has them); float16 accumulates
    in float32 and rounds once (torch's float32 index_add, then rounded)."""
    rows = RNG.integers(0, 7, 200)
    values = (RNG.standard_normal((200, 3)) * 10 if dtype is np.float16 else RNG.integers(
        -2**30, 2**30, (200, 3))).astype(dtype)
    ref = torch.from_numpy(values)
    wide = torch.float32 if dtype is np.float16 else ref.dtype
    want = torch.ones(7, 3, dtype=wide).index_add(0, torch.from_numpy(rows), ref.to(wide)).to(
        ref.dtype)
    with _path(monkeypatch, name):
        got = _on(device, np.ones((7, 3), dtype)).select_assign(0, _on(device, rows),
                                                                 _on(device, values))
    _check(got, want, device)


def test_embedding_backward_matches_torch(device: burn.Device,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """[6, 40] tokens of a 50-row table (many repeats): the weight gradient as torch's."""
    ad = device.autodiff()
    weight = RNG.standard_normal((50, 16)).astype(np.float32)
    tokens = RNG.integers(0, 50, (6, 40))
    scale = RNG.standard_normal((6, 40, 16)).astype(np.float32)
    w = burn.tensor(weight, device=ad).require_grad()
    with _path(monkeypatch, "sorted") as taken:
        grads = (F.embedding(w, _on(ad, tokens)) * _on(ad, scale)).sum().backward()
        grad = w.grad(grads)
        assert grad is not None
        got = grad.to_numpy()
    tw = torch.from_numpy(weight).requires_grad_()
    (torch.nn.functional.embedding(torch.from_numpy(tokens), tw)
     * torch.from_numpy(scale)).sum().backward()
    assert tw.grad is not None
    assert got.shape == tuple(tw.grad.shape) and got.dtype == np.float32
    np.testing.assert_array_equal(got, tw.grad.numpy())
    assert taken == ["sorted"]


# --- edges ------------------------------------------------------------------------------
def test_one_element_and_empty(device: burn.Device, monkeypatch: pytest.MonkeyPatch) -> None:
    with _path(monkeypatch, "sorted"):
        pair = _on(device, np.array([4.0, 1.0], np.float32))
        one = _on(device, np.array([2.5], np.float32)).scatter(0, _on(device, [0, 0]), pair,
                                                               "add")
        _check(one, torch.tensor([2.5]).scatter_add(0, torch.tensor([0, 0]),
                                                    torch.tensor([4.0, 1.0])), device)
        x = _values((2, 6), np.float32)
        empty = _on(device, np.zeros((2, 0), np.int64))
        _check(_on(device, x).scatter(1, empty, _on(device, x), "add"), x, device)
        rows = _on(device, np.zeros(0, np.int64))
        _check(_on(device, x).select_assign(1, rows, _on(device, np.zeros((2, 0), np.float32))),
               x, device)


@pytest.mark.parametrize("name", PATHS)
def test_out_of_range_raises_at_next_sync_and_writes_nothing(
        device: burn.Device, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    dtype = np.int32 if name == "atomic" else np.float32
    index = np.array([0, 2, -9, 1, 2])
    with _path(monkeypatch, name):
        got = _on(device, np.zeros(3, dtype)).scatter(
            0, _on(device, index), _on(device, np.arange(1, 6).astype(dtype)), "add")
        with pytest.raises(BurnIndexError, match=r"scatter: index -9 out of range \[-3, 3\)"):
            burn.sync(device)
        # the backend's kernels themselves skip the bad entry
        backend = device.backend
        x = _on(device, np.zeros(3, dtype))
        out = backend.float_scatter(0, x._prim, _on(device, index)._prim,
                                    _on(device, np.arange(1, 6).astype(dtype))._prim, "add")
        assert backend.float_into_data(out).tolist() == [1, 4, 7]
    assert got.shape == (3,)


def _cuda_sources() -> list[str]:
    """CUDA C of every kernel of `scatter_kernels`, for the dtypes it serves."""
    idx, i1 = np.zeros((2, 3), np.int64), np.zeros(6, np.int32)
    sources = []
    for dtype in (DType.int32, DType.int64):
        acc = np.zeros((2, 3), dtype.numpy)
        sources.append(scatter_kernels.atomic_kernel(dtype, dtype, DType.int64, 2, 1).source(
            "cuda", 256, idx, acc, acc, 6))
    sources.append(scatter_kernels.keys_kernel(DType.int32, 2, 0).source(
        "cuda", 256, idx.astype(np.int32), i1, 6, 2, 3))
    for unit_stride in (False, True):
        x3 = np.zeros((2, 3, 4), np.float32)
        sources.append(scatter_kernels.index_add_rows_kernel(
            DType.float32, DType.float16, DType.int64, unit_stride).source(
                "cuda", 256, idx.ravel(), x3.astype(np.float16), x3, 2))
    for dtype, value, add in ((DType.float32, DType.float16, True),
                              (DType.bool, DType.bool, False),
                              (DType.int64, DType.int64, False)):
        vals, acc = np.zeros((2, 3), value.numpy), np.zeros(6, dtype.numpy)
        sources.append(scatter_kernels.blocks_kernel(dtype, value, 2, add).source(
            "cuda", 256, i1, idx.ravel(), vals, acc, 2, 6, 1, 4, 2))
        sources.append(scatter_kernels.runs_kernel(dtype, value, 2, add).source(
            "cuda", 256, i1, idx.ravel(), vals, acc, acc, 6, 6, 1, 6, 4, 2))
    return sources


def test_kernels_generate_cuda() -> None:
    """CUDA C of every new kernel (no GPU here): a kernel entry each, atomics where used."""
    sources = _cuda_sources()
    assert all("__global__" in src for src in sources)
    assert all("atomicAdd" in src for src in sources[:2])


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_kernels_compile_for_cuda(tmp_path: Path) -> None:
    """nvcc compiles each kernel's CUDA C (the cuda runtime compiles it with NVRTC)."""
    paths = []
    for k, src in enumerate(_cuda_sources()):
        paths.append(tmp_path / f"scatter{k}.cu")
        paths[-1].write_text(src)
    proc = subprocess.run(["nvcc", "-c", "-arch=sm_90", "-std=c++17", *map(str, paths)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[:4000]
