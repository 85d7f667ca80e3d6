"""Matmul of the cube backends (cpu and wgpu) against torch: every strategy (kernels, BLAS) on
ordinary, transposed, strided and broadcast views, the public API's dtypes, empty inputs and
edge values, batch splitting, errors, and CUDA source generation. Every kernel path checks
that no matmul ran on the host fallback."""

from __future__ import annotations

import dataclasses
import itertools
import warnings
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_limits

import burn
from burn.backends.cube import CubeTensor
from burn.backends.cube import matmul as mm
from burn.backends.cube.backend import CubeBackend, CudaBackend
from burn.backends.cube.matmul_kernels import (
    LINE_TILES,
    TILES,
    line_tiled_kernel,
    naive_kernel,
    tiled_kernel,
)
from burn.backends.numpy import blas
from burn.dtype import DType
from burn.errors import DTypeError, ShapeError, UnsupportedDTypeError

CUDA = CudaBackend.unavailable_reason() is None
DEVICES = ["cpu", "wgpu", *(["cuda"] if CUDA else [])]
OPS = ("float_matmul", "int_matmul")

View = Callable[[Any], Any]  # applied to a burn tensor and to a torch tensor alike


def _backend(device: str) -> CubeBackend:
    backend = burn.Device(device).backend
    assert isinstance(backend, CubeBackend)
    return backend


def _prim(t: burn.Tensor) -> CubeTensor:
    prim = t._prim
    assert isinstance(prim, CubeTensor)
    return prim


def _tr(x: Any) -> Any:
    """The last two dims exchanged (burn: swap_dims, torch: transpose)."""
    nd = len(x.shape)
    return x.swap_dims(nd - 2, nd - 1) if isinstance(x, burn.Tensor) else x.transpose(-2, -1)


#: name -> (lhs data shape, rhs data shape, lhs view, rhs view); the views give the operands.
CASES: dict[str, tuple[tuple[int, ...], tuple[int, ...], View, View]] = {
    "plain": ((37, 45), (45, 29), lambda x: x, lambda x: x),
    "transposed": ((45, 37), (29, 45), _tr, _tr),
    "strided": ((40, 90), (3, 45, 70), lambda x: x[::2, 1::2], lambda x: x[1, :, ::3]),
    "broadcast": ((2, 1, 5, 7), (3, 7, 66), lambda x: x, lambda x: x),
    "expanded": ((1, 9, 17), (17, 20), lambda x: x.expand(4, 9, 17), lambda x: x),
    "batched_t": ((3, 20, 70), (3, 130, 20), _tr, lambda x: x.permute(0, 2, 1)),
    # whole 4-wide lines in rhs (the line tiles' own layouts): a column slice at offset 4,
    # and a stride-0 broadcast batch
    "lines": ((3, 33, 45), (45, 68), lambda x: x[1], lambda x: x[:, 4:]),
    "lines_broadcast": ((2, 1, 9, 16), (3, 16, 40), lambda x: x, lambda x: x),
    "columns_t": ((9, 12), (16, 12), lambda x: x, _tr),  # n = 16, but no unit column stride
    # attention heads split from [batch, seq, heads * dim]: batch strides merge into no run
    "heads": ((2, 5, 12), (2, 6, 12), lambda x: x.reshape(2, 5, 3, 4).permute(0, 2, 1, 3),
              lambda x: x.reshape(2, 6, 3, 4).permute(0, 2, 3, 1)),
}
#: the cases whose rhs and out read as whole lines (the others take `mm.LINE_FALLBACK`).
LINE_CASES = ("lines", "lines_broadcast")


def _operands(device: str, case: str, dtype: str, seed: int = 0
              ) -> tuple[burn.Tensor, burn.Tensor, torch.Tensor, torch.Tensor]:
    sa, sb, va, vb = CASES[case]
    rng = np.random.default_rng(seed)
    out = []
    for shape, view in ((sa, va), (sb, vb)):
        data = rng.integers(-9, 10, shape) if "int" in dtype else rng.standard_normal(shape)
        host = torch.from_numpy(np.asarray(data, np.float64)).to(getattr(torch, dtype))
        t = burn.tensor(host.float().numpy() if dtype == "bfloat16" else host.numpy(),
                        device=device, dtype=getattr(burn, dtype))
        out.append((view(t), view(host)))
    return out[0][0], out[1][0], out[0][1], out[1][1]


def _expected(a: torch.Tensor, b: torch.Tensor) -> np.ndarray:
    """torch's product, float16 / bfloat16 in float32 as the NumPy backend computes them."""
    if a.dtype in (torch.float16, torch.bfloat16):
        return torch.matmul(a.float(), b.float()).to(a.dtype).float().numpy()
    return torch.matmul(a, b).numpy()


def _check(got: burn.Tensor | CubeTensor, a: torch.Tensor, b: torch.Tensor, dtype: str) -> None:
    values = got.to_numpy() if isinstance(got, burn.Tensor) else _host(got)
    want = _expected(a, b)
    assert tuple(got.shape) == want.shape
    assert got.dtype == getattr(burn, dtype)
    if dtype in ("float16", "bfloat16"):
        np.testing.assert_allclose(values.astype(np.float32), want, rtol=2e-2, atol=5e-2)
    elif "int" in dtype:
        np.testing.assert_array_equal(values, want)
    else:
        np.testing.assert_allclose(values, want, rtol=1e-5, atol=1e-4)


def _host(t: CubeTensor) -> np.ndarray:
    from burn.backends.cube.tensor import host_array

    return np.asarray(host_array(t))


#: every runner each device has (the autotuner sees fewer on cpu: `mm.candidates`).
STRATEGIES = {"cpu": ["blas", "gemm", *TILES, *LINE_TILES, "naive"],
              "wgpu": [*TILES, *LINE_TILES, "naive"],
              "cuda": ["cublas", "cublas_dense", *TILES, *LINE_TILES, "naive"]}
RUNS = [(d, s) for d in DEVICES for s in STRATEGIES[d]]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("device,strategy", RUNS)
def test_every_strategy_reads_views_in_place(device: str, strategy: str, case: str) -> None:
    """Each runner on float32 and int32, straight from the backend (no autotuning)."""
    backend = _backend(device)
    dtypes = {"cublas": ("float32", "bfloat16", "float16"),
              "cublas_dense": ("float32", "bfloat16", "float16"), "gemm": ("float32", "float64")
              }.get(strategy, ("float32", "int32"))
    for dtype in dtypes:
        a, b, ta, tb = _operands(device, case, dtype)
        _check(mm.matmul(backend, _prim(a), _prim(b), strategy), ta, tb, dtype)


@pytest.mark.parametrize("device,strategy", [(d, s) for d in DEVICES for s in LINE_TILES])
def test_line_tiles_run_their_kernel_on_whole_lines(device: str, strategy: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """float32 operands with whole lines run the line kernel (the fallback is never called);
    other dtypes and layouts run `LINE_FALLBACK`, with the same results as torch."""
    backend = _backend(device)
    fallback = mm.RUNNERS[mm.LINE_FALLBACK]
    calls: list[str] = []

    def counted(*args: Any) -> CubeTensor:
        calls.append(mm.LINE_FALLBACK)
        return fallback(*args)

    monkeypatch.setitem(mm.RUNNERS, mm.LINE_FALLBACK, counted)
    for case in LINE_CASES:
        a, b, ta, tb = _operands(device, case, "float32", seed=4)
        _check(mm.matmul(backend, _prim(a), _prim(b), strategy), ta, tb, "float32")
    # NaN and inf through the line kernel: a NaN row, an inf column and inf - inf
    x = np.array([[1.0, np.nan, 2.0], [np.inf, 1.0, 0.0], [1.0, 2.0, 3.0]], np.float32)
    y = np.array([[1.0, 0.0, 2.0, 1.0], [0.0, 1.0, 0.0, 1.0], [-np.inf, 2.0, 1.0, 0.0]],
                 np.float32)
    got = mm.matmul(backend, backend.upload(x), backend.upload(y), strategy)
    assert got.shape == (3, 4) and got.dtype is DType.float32
    np.testing.assert_array_equal(_host(got), (torch.from_numpy(x) @ torch.from_numpy(y)).numpy())
    assert calls == []
    for case, dtype in (("lines", "int32"), ("plain", "float32"), ("columns_t", "float32")):
        a, b, ta, tb = _operands(device, case, dtype, seed=4)
        _check(mm.matmul(backend, _prim(a), _prim(b), strategy), ta, tb, dtype)
    assert len(calls) == 3


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int32",
                                   "int64"])
def test_public_matmul_runs_on_kernels(device: str, dtype: str) -> None:
    """`a @ b` through the frontend (autotuned) for each dtype the device holds; a dtype it
    does not hold is refused where a tensor of it would be made."""
    backend = _backend(device)
    if not backend.supports(getattr(DType, dtype)):
        with pytest.raises(UnsupportedDTypeError, match=device):
            burn.zeros((2, 2), dtype=dtype, device=device)
        return
    backend.fallbacks.clear()
    for case in ("plain", "broadcast", "transposed"):
        a, b, ta, tb = _operands(device, case, dtype, seed=1)
        _check(a @ b, ta, tb, dtype)
    assert all(backend.fallbacks[op] == 0 for op in OPS)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shapes", [((0, 3), (3, 2)), ((2, 0), (0, 3)), ((0, 2, 3), (3, 4)),
                                    ((2, 3), (3, 0)), ((1, 1), (1, 1))], ids=str)
def test_empty_and_degenerate_shapes(device: str, shapes: tuple[tuple[int, ...], ...]) -> None:
    backend = _backend(device)
    backend.fallbacks.clear()
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    got = burn.tensor(a, device=device) @ burn.tensor(b, device=device)
    want = torch.from_numpy(a) @ torch.from_numpy(b)
    assert tuple(got.shape) == tuple(want.shape) and got.dtype == burn.float32
    np.testing.assert_allclose(got.to_numpy(), want.numpy(), rtol=1e-6)
    assert all(backend.fallbacks[op] == 0 for op in OPS)


@pytest.mark.parametrize("device,strategy", RUNS)
def test_edge_values(device: str, strategy: str) -> None:
    """NaN and inf propagate as in torch; int32 products wrap as numpy's int32 matmul."""
    backend = _backend(device)
    a = np.array([[1.0, np.nan, 2.0], [np.inf, 1.0, 0.0], [1.0, 2.0, 3.0]], np.float32)
    b = np.array([[1.0, 0.0], [0.0, 1.0], [-np.inf, 2.0]], np.float32)
    got = mm.matmul(backend, backend.upload(a), backend.upload(b), strategy)
    np.testing.assert_array_equal(_host(got), (torch.from_numpy(a) @ torch.from_numpy(b)).numpy())
    if strategy in ("cublas", "cublas_dense", "gemm"):  # floats only
        return
    big = np.full((2, 3), 2**30, np.int32)
    got = mm.matmul(backend, backend.upload(big), backend.upload(big.T.copy()), strategy)
    assert _host(got).dtype == np.int32
    np.testing.assert_array_equal(_host(got), np.matmul(big, big.T))
    wide = np.full((1, 2), 2**40, np.int64)
    got = mm.matmul(backend, backend.upload(wide), backend.upload(wide.T.copy()), strategy)
    np.testing.assert_array_equal(_host(got), np.matmul(wide, wide.T))


#: (m, k, n, lhs view, rhs view) past the cpu kernel's edges: rows not a multiple of its 8,
#: columns not of its 32 (float32) / 16 (float64) lanes, depths over one block of 256 steps,
#: column-major lhs and rhs, rhs transposed with fewer rows than columns (the c^T path),
#: negative and zero strides, sizes that run on OpenMP threads (2M multiply-adds: split by
#: rows where there are more rows than columns, else by columns, a column-major lhs packed
#: over several blocks of depth both ways).
GEMM_EDGES = [
    (203, 600, 90, _tr, lambda x: x), (97, 600, 300, _tr, lambda x: x),
    (64, 784, 256, lambda x: x, _tr), (256, 64, 784, _tr, lambda x: x),
    (64, 784, 256, lambda x: x, lambda x: x),  # b packed by each strip's first tile
    (13, 600, 70, lambda x: x, lambda x: x), (200, 300, 90, _tr, _tr),
    (1, 1, 1, lambda x: x, lambda x: x), (9, 33, 1, lambda x: x.flip(0), lambda x: x.flip(1)),
    (40, 7, 33, lambda x: x[:, :], lambda x: x[:1].expand(7, 33)),
    (130, 520, 100, lambda x: x, _tr),
    # the c^T path at edges of its scratch's square copy blocks (16): 37 x 90 outputs, and
    # a lhs of rows in reverse (a negative row stride)
    (37, 300, 90, lambda x: x, _tr), (21, 70, 50, lambda x: x.flip(0), _tr),
    # few outputs of long rows, rhs column-major: dot products over two blocks of depth
    (6, 3000, 7, lambda x: x, _tr), (3, 1100, 9, lambda x: x, _tr),
    # strips of at most one vector (all columns, the last strip), float32's and float64's
    (64, 256, 10, lambda x: x, lambda x: x), (19, 40, 16, _tr, lambda x: x),
    (45, 70, 8 + 32, lambda x: x, lambda x: x), (45, 70, 17 + 32, lambda x: x, _tr),
    # a transposed rhs just below and at the depth of the c^T path (64)
    (64, 10, 256, lambda x: x, _tr), (37, 63, 90, lambda x: x, _tr),
    (37, 64, 90, lambda x: x, _tr),
    # the wide micro-kernel (from 128 columns, both operands' rows contiguous), on threads
    # split by rows and by columns, a last strip of columns part of a vector
    (203, 300, 200, lambda x: x, lambda x: x), (50, 600, 300, lambda x: x, lambda x: x),
    (7, 40, 129, lambda x: x, lambda x: x),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("index", range(len(GEMM_EDGES)))
def test_cpu_gemm_kernel_past_its_blocking_edges(index: int, dtype: str) -> None:
    """The cpu runtime's own kernel against torch, each operand a view read in place."""
    _check_gemm_edge(index, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cpu_gemm_kernel_with_more_threads_than_cores(dtype: str) -> None:
    """The threaded splits (by rows, a column-major lhs packed over blocks of depth; by
    columns) with 8 OpenMP threads on this machine's cores, several times: a thread
    descheduled mid-product while another reaches the last, shorter block of depth still reads
    its own packed strips."""
    with threadpool_limits(limits=8, user_api="openmp"):
        for _ in range(16):
            for index in (0, 1, 2, 5, len(GEMM_EDGES) - 3, len(GEMM_EDGES) - 2):
                _check_gemm_edge(index, dtype)


#: (lhs data, rhs data, lhs view, rhs view): batches of small products past 2M multiply-adds
#: in all, which the cpu kernel runs on OpenMP threads across the batch: attention's scores
#: and values from heads split off [batch, seq, heads * dim], a rhs broadcast over the
#: batch (stride 0) and a column-major lhs in each matrix (the c^T and packed paths).
GEMM_BATCHES = [
    ((16, 64, 128), (16, 64, 128), lambda x: x.reshape(16, 64, 4, 32).permute(0, 2, 1, 3),
     lambda x: x.reshape(16, 64, 4, 32).permute(0, 2, 3, 1)),
    ((16, 4, 64, 64), (16, 64, 128), lambda x: x,
     lambda x: x.reshape(16, 64, 4, 32).permute(0, 2, 1, 3)),
    ((9, 1, 40, 70), (5, 70, 33), lambda x: x.expand(9, 5, 40, 70), lambda x: x),
    ((30, 41, 70), (30, 41, 90), _tr, lambda x: x),
    # batches in reverse (negative offsets) times every other matrix of a batch
    ((40, 40, 30), (80, 30, 50), lambda x: x.flip(0), lambda x: x[::2]),
    # a contiguous batch from an offset times a matrix: flattened into one product
    ((5, 7, 30), (30, 11), lambda x: x[1:], lambda x: x),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("index", range(len(GEMM_BATCHES)))
def test_cpu_gemm_kernel_runs_batches_across_threads(index: int, dtype: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Batched products on the cpu runtime's own kernel (never BLAS), against torch, with 8
    OpenMP threads on this machine's cores several times and on one."""
    def no_blas(*args: Any) -> Any:
        raise AssertionError("a float batch went to BLAS")

    monkeypatch.setattr(mm, "run_blas", no_blas)
    sa, sb, va, vb = GEMM_BATCHES[index]
    rng = np.random.default_rng(index)
    host = [torch.from_numpy(rng.standard_normal(s)).to(getattr(torch, dtype)) for s in (sa, sb)]
    a, b = va(burn.tensor(host[0].numpy(), device="cpu")), vb(burn.tensor(host[1].numpy(),
                                                                          device="cpu"))
    ta, tb = va(host[0]), vb(host[1])
    want = _expected(ta, tb)
    for threads, repeats in ((8, 8), (1, 1)):
        with threadpool_limits(limits=threads, user_api="openmp"):
            for _ in range(repeats):
                got = mm.matmul(_backend("cpu"), _prim(a), _prim(b), "gemm")
                assert tuple(got.shape) == want.shape and got.dtype == getattr(burn, dtype)
                np.testing.assert_allclose(
                    _host(got), want, rtol=1e-5 if dtype == "float32" else 1e-12,
                    atol=1e-4 if dtype == "float32" else 1e-11)


def _check_gemm_edge(index: int, dtype: str) -> None:
    """`GEMM_EDGES[index]` by the cpu runtime's own kernel against torch."""
    m, k, n, va, vb = GEMM_EDGES[index]
    rng = np.random.default_rng(index)
    out = []
    for shape, view in (((k, m) if va is _tr else (m, k), va), (((n, k) if vb is _tr else (k, n)),
                                                                  vb)):
        host = torch.from_numpy(rng.standard_normal(shape)).to(getattr(torch, dtype))
        out.append((view(burn.tensor(host.numpy(), device="cpu")), view(host)))
    (a, ta), (b, tb) = out
    got = mm.matmul(_backend("cpu"), _prim(a), _prim(b), "gemm")
    want = _expected(ta, tb)
    assert tuple(got.shape) == want.shape and got.dtype == getattr(burn, dtype)
    np.testing.assert_allclose(_host(got), want, rtol=1e-5 if dtype == "float32" else 1e-12,
                               atol=1e-4 if dtype == "float32" else 1e-11)


@pytest.mark.parametrize("depth,rhs_layout", [(300, "c"), (3000, "t")])  # tiles; dot products
def test_cpu_gemm_kernel_propagates_nan_and_inf_in_edge_tiles(depth: int, rhs_layout: str
                                                               ) -> None:
    """NaN and inf in the last partial tile (the zero padding never reaches the result), and
    in the dot products' remainder past whole vectors."""
    a = np.ones((11, depth), np.float32)
    a[10, depth - 1], a[3, 0] = np.inf, np.nan
    b = np.ones((depth, 35), np.float32)
    b[depth - 1, 34] = 0.0
    backend = _backend("cpu")
    rhs = backend.upload(b) if rhs_layout == "c" else _prim(
        burn.tensor(b.T.copy(), device="cpu").swap_dims(0, 1))
    got = _host(mm.matmul(backend, backend.upload(a), rhs, "gemm"))
    want = (torch.from_numpy(a) @ torch.from_numpy(b)).numpy()
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got[10, 34]) and np.isinf(got[10, 0]) and np.isnan(got[3]).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("lhs_layout", ["c", "t"])  # rows read in place; packed from columns
def test_cpu_gemm_kernel_runs_every_count_of_last_rows(lhs_layout: str, dtype: str) -> None:
    """A last strip of each row count the kernels are specialized on (1..MR: the narrow
    kernel's MR 8 with AVX-512, else 6, the wide one's 6: 17..24 rows cover every remainder),
    its last row holding NaN and inf, against torch in float64: depth over one block, ragged
    columns, narrow (45) and wide (150: two strips of 64 float32 columns and part of one)."""
    backend = _backend("cpu")
    rng = np.random.default_rng(7)
    for m, n in itertools.product(range(17, 25), (45, 150)):
        a = rng.standard_normal((m, 300)).astype(dtype)
        a[m - 1, 299], a[m - 1, 0] = np.nan, np.inf
        b = rng.standard_normal((300, n)).astype(dtype)
        lhs = backend.upload(a) if lhs_layout == "c" else _prim(
            burn.tensor(a.T.copy(), device="cpu").swap_dims(0, 1))
        got = _host(mm.matmul(backend, lhs, backend.upload(b), "gemm"))
        want = (torch.from_numpy(a).double() @ torch.from_numpy(b).double()).numpy()
        assert got.shape == want.shape and got.dtype == np.dtype(dtype)
        assert np.isnan(got[m - 1]).all()
        np.testing.assert_allclose(got[:m - 1], want[:m - 1], rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("rows", [2, 4096])  # OpenBLAS's own one thread; pinned to one
def test_cpu_blas_products_propagate_nan_without_warnings(rows: int) -> None:
    backend = _backend("cpu")
    a = np.ones((rows, 64), np.float32)
    a[0, 0] = np.inf
    b = np.ones((64, 2), np.float32)
    b[0, 1] = 0.0
    assert blas.one_thread(a, b) is (rows == 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # inf * 0 in numpy's matmul warns unless told not to
        got = _host(mm.matmul(backend, backend.upload(a), backend.upload(b), "blas"))
    want = (torch.from_numpy(a) @ torch.from_numpy(b)).numpy()
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    assert np.isinf(got[0, 0]) and np.isnan(got[0, 1])


@pytest.mark.parametrize("device", DEVICES)
def test_batches_beyond_the_grid_limit_are_split(device: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mm, "batches_per_launch", lambda backend, cubes: 2)
    a, b, ta, tb = _operands(device, "broadcast", "float32")
    backend = _backend(device)
    _check(mm.matmul(backend, _prim(a), _prim(b), "tile32x32x16"), ta, tb, "float32")


def test_batch_dims_merge_where_the_strides_allow() -> None:
    backend = _backend("cpu")
    lhs = backend.upload(np.zeros((2, 3, 4, 5), np.float32))
    rhs = backend.upload(np.zeros((5, 6), np.float32))
    out = backend.empty((2, 3, 4, 6), DType.float32)
    lv, rv, ov = mm.kernel_views(lhs, rhs, out)
    assert (lv.shape, rv.shape, ov.shape) == ((6, 4, 5), (6, 5, 6), (6, 4, 6))
    assert rv.strides[0] == 0
    odd = backend.upload(np.zeros((2, 1, 4, 5), np.float32))  # (2, 3) batch: not mergeable
    lv, _, _ = mm.kernel_views(odd, backend.upload(np.zeros((3, 5, 6), np.float32)), out)
    assert lv.shape == (2, 3, 4, 5) and lv.strides[:2] == (20, 0)


@pytest.mark.parametrize("device", DEVICES)
def test_bad_operands_raise_typed_errors(device: str) -> None:
    backend = _backend(device)
    f = backend.upload(np.zeros((2, 3), np.float32))
    with pytest.raises(ShapeError, match="matmul"):
        mm.matmul(backend, f, backend.upload(np.zeros((4, 2), np.float32)))
    with pytest.raises(ShapeError, match="matmul"):
        mm.matmul(backend, backend.upload(np.zeros((), np.float32)), f)
    with pytest.raises(DTypeError, match="matmul.*int32"):
        mm.matmul(backend, f, backend.upload(np.zeros((3, 2), np.int32)))


@pytest.mark.parametrize("dtype", [DType.float32, DType.float16, DType.bfloat16, DType.float64,
                                   DType.int32, DType.int64])
def test_kernels_generate_cuda_source(dtype: DType) -> None:
    x = np.zeros((2, 3, 3), dtype.numpy)
    assert "void __launch_bounds__(BC_CD) bc_matmul_naive(" in naive_kernel(dtype, 3).source(
        "cuda", 256, x, x, x)
    for tile in TILES.values():
        src = tiled_kernel(dtype, 3, tile).source("cuda", (tile.units_x, tile.units_y), x, x, x,
                                                  np.uint32(0))
        assert "__shared__" in src
    x4 = np.zeros((2, 4, 4), np.float32)  # whole lines
    for tile in LINE_TILES.values() if dtype is DType.float32 else ():
        src = line_tiled_kernel(3, tile).source("cuda", (tile.units_x, tile.units_y), x4, x4,
                                                x4, np.uint32(0))
        assert "__shared__" in src and "float4" in src


def test_candidates_per_runtime() -> None:
    cpu, wgpu = _backend("cpu"), _backend("wgpu")
    assert mm.candidates(cpu, DType.float32, mm.CPU_GEMM_TUNE_WORK * 2) == ["blas"]
    for dtype in (DType.float32, DType.float64):
        assert mm.candidates(cpu, dtype, 1 << 10) == ["gemm"]
        assert mm.candidates(cpu, dtype, mm.CPU_GEMM_ONLY_WORK) == ["gemm"]
        assert mm.candidates(cpu, dtype, mm.CPU_GEMM_ONLY_WORK * 2) == ["blas", "gemm"]
        assert mm.candidates(cpu, dtype, mm.CPU_GEMM_TUNE_WORK) == ["blas", "gemm"]
    for dtype in (DType.float16, DType.bfloat16):
        assert mm.candidates(cpu, dtype, 1 << 20) == ["blas"]
    assert mm.candidates(cpu, DType.int32, 1 << 10) == ["blas", *mm.CPU_INT_TILES]
    assert mm.candidates(cpu, DType.int64, 1 << 30) == [mm.CPU_INT_TILES[0]]
    assert mm.candidates(wgpu, DType.float32, 1 << 10) == [*LINE_TILES, *TILES, "naive"]
    assert mm.candidates(wgpu, DType.int32, 1 << 10) == [*TILES, "naive"]
    cuda = SimpleNamespace(runtime=SimpleNamespace(properties=SimpleNamespace(
        name="cuda", max_cube_dim=1024)))
    for dtype in (DType.float16, DType.bfloat16, DType.float32, DType.float64, DType.int64):
        item = 8 if dtype in (DType.float64, DType.int64) else 4  # the accumulator's bytes
        lines = LINE_TILES if dtype is DType.float32 else {}
        tiles = [name for name, t in {**lines, **TILES}.items()
                 if t.shared_elements() * item <= 16384]
        host = ["cublas", "cublas_dense"] if dtype.is_float else []
        assert mm.candidates(cuda, dtype, 1 << 30) == [*host, *tiles, "naive"]
    assert "tile128x128x16" not in mm.candidates(cuda, DType.float64, 1 << 30)


@pytest.mark.parametrize("device", DEVICES)
def test_the_tuned_choice_is_remembered_per_runtime(device: str) -> None:
    backend = _backend(device)
    a, b, ta, tb = _operands(device, "plain", "int32", seed=3)
    _check(a @ b, ta, tb, "int32")
    work = 64 * 64 * 32  # buckets of m = 37, k = 45, n = 29
    choice = mm._CHOICES[backend.runtime][("int32", 1, 64, 64, 32, "cc")]
    assert choice in mm.candidates(backend, DType.int32, work)


@pytest.mark.skipif(not CUDA, reason="cuBLAS needs a CUDA device")
def test_cublas_multiplies_split_heads_in_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Operands whose batch strides merge into no single run (split attention heads) are
    read in place by one cuBLAS call on pointer arrays: no copy, not one call per run."""
    calls: list[str] = []

    def counted(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        return lambda *args: calls.append(name) or real(*args)

    backend = _backend("cuda")
    a, b, ta, tb = _operands("cuda", "plain", "float32", seed=5)
    _check(mm.matmul(backend, _prim(a), _prim(b), "cublas"), ta, tb, "float32")  # cuBLAS loaded
    cublas = mm._cublas()
    batched = mm._gemm_batched_ex()
    assert batched is not None, "cublasGemmBatchedEx not found in the loaded libcublas"
    monkeypatch.setattr(cublas, "gemmStridedBatchedEx",
                        counted("gemmStridedBatchedEx", cublas.gemmStridedBatchedEx))
    monkeypatch.setattr(mm, "_gemm_batched_ex", lambda: counted("gemmBatchedEx", batched))
    a, b, ta, tb = _operands("cuda", "heads", "float32", seed=5)
    assert _prim(a).strides == (60, 4, 12, 1)  # a view, not a copy
    _check(mm.matmul(backend, _prim(a), _prim(b), "cublas"), ta, tb, "float32")
    assert calls == ["gemmBatchedEx"]
    calls.clear()  # `cublas_dense`: dense copies of both, one strided batched call
    _check(mm.matmul(backend, _prim(a), _prim(b), "cublas_dense"), ta, tb, "float32")
    assert calls == ["gemmStridedBatchedEx"]


def test_the_tuned_choice_depends_on_the_operands_layouts() -> None:
    """Dense, transposed and other strided operands are tuned apart: a strategy's speed
    depends on the layout it reads."""
    backend = _backend("cpu")
    for case, layouts in (("plain", "cc"), ("transposed", "tt"), ("heads", "st")):
        a, b, _, _ = _operands("cpu", case, "int32", seed=6)
        assert mm._layout(_prim(a)) + mm._layout(_prim(b)) == layouts
        a @ b
    keys = [key for key in mm._CHOICES[backend.runtime] if key[0] == "int32"]
    assert {"cc", "tt", "st"} <= {key[5] for key in keys}


def test_tiles_that_overflow_the_grid_are_not_candidates() -> None:
    small = SimpleNamespace(runtime=SimpleNamespace(
        properties=SimpleNamespace(max_cube_count=(4, 2, 1))))
    assert mm._fits(small, "tile32x32x16", 64, 128) and mm._fits(small, "naive", 10**6, 10**6)
    assert not mm._fits(small, "tile32x32x16", 65, 128)
    assert not mm._fits(small, "tile32x32x16", 64, 129)


def _cublas_read(storage: np.ndarray, offset: int, op: int, ld: int, rows: int,
                 cols: int) -> np.ndarray:
    """The column-major `rows x cols` matrix cuBLAS reads at `offset` with operation `op`
    (transposed for `_OP_T`) and leading dimension `ld`, emulated on host storage."""
    shape = (cols, rows) if op == mm._OP_T else (rows, cols)
    stored = np.lib.stride_tricks.as_strided(storage[offset:], (shape[1], shape[0]),
                                             (ld * storage.itemsize, storage.itemsize)).T
    return stored.T if op == mm._OP_T else stored


@pytest.mark.parametrize("case", CASES)
def test_gemm_operands_read_each_layout_in_place(case: str) -> None:
    """`_gemm_operand` checked without a GPU: cuBLAS's column-major reading of every case's
    matrices (C^T = B^T A^T per batch) emulated on the host storage equals torch's product."""
    backend = _backend("cpu")
    a, b, ta, tb = _operands("cpu", case, "float32")
    out = backend.empty(tuple(torch.matmul(ta, tb).shape), DType.float32)
    lv, rv, ov = mm.kernel_views(_prim(a), _prim(b), out)
    layouts = mm._gemm_operand(lv), mm._gemm_operand(rv)
    if None in layouts:  # cupy.matmul's case: a matrix without a unit stride
        assert case == "strided" and 1 not in lv.strides[-2:]
        return
    (op_a, ld_a), (op_b, ld_b) = layouts  # type: ignore[misc]
    m, k, n = lv.shape[-2], lv.shape[-1], rv.shape[-1]
    got = np.zeros(ov.array.extent, np.float32)
    offsets = mm.batch_offsets(ov.shape[:-2], [t.strides[:-2] for t in (lv, rv, ov)])
    for at_a, at_b, at_out in offsets.T:  # the matrices of cuBLAS's pointer arrays
        bt = _cublas_read(_host(rv.view((rv.array.extent,), (1,), 0)), rv.offset + at_b,
                          op_b, ld_b, n, k)
        at_ = _cublas_read(_host(lv.view((lv.array.extent,), (1,), 0)), lv.offset + at_a,
                           op_a, ld_a, k, m)
        got[at_out:at_out + m * n] = (bt @ at_).T.reshape(-1)
    want = torch.matmul(ta, tb).numpy()
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-4)


def test_gemm_operand_refuses_layouts_without_a_unit_stride() -> None:
    backend = _backend("cpu")
    t = backend.upload(np.zeros((6, 8), np.float32))
    assert mm._gemm_operand(t.view((3, 4), (16, 2))) is None  # no unit stride
    assert mm._gemm_operand(t.view((3, 4), (0, 1))) is None  # stride-0 rows overlap
    assert mm._gemm_operand(t.view((3, 4), (1, 0))) is None
    assert mm._gemm_operand(t.view((1, 4), (99, 1))) == (mm._OP_N, 4)
    assert mm._gemm_operand(t.view((3, 1), (1, 99))) == (mm._OP_N, 1)
    assert mm._gemm_operand(t.view((3, 4), (1, 3))) == (mm._OP_T, 3)


@pytest.mark.skipif(not CUDA, reason="needs an NVIDIA GPU (runs on the GPU machine)")
def test_tf32_switch_on_cuda() -> None:
    """TF32 off (default): float32 products to float32 accuracy; on: cuBLAS's products differ,
    within TF32's accuracy (about 1e-3 relative), the autotuner tunes TF32 products apart, and
    the switch is restored."""
    assert mm.settings.allow_tf32 is False
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((256, 512)).astype(np.float32) for _ in range(2))
    want = a.astype(np.float64) @ b.T.astype(np.float64)
    x, y = burn.tensor(a, device="cuda"), burn.tensor(b, device="cuda").t()
    backend = _backend("cuda")
    exact = _host(mm.matmul(backend, _prim(x), _prim(y), "cublas"))
    np.testing.assert_allclose(exact, want, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose((x @ y).to_numpy(), want, rtol=1e-4, atol=1e-3)
    mm.settings.allow_tf32 = True
    try:
        fast = _host(mm.matmul(backend, _prim(x), _prim(y), "cublas"))
        tuned = (x @ y).to_numpy()
    finally:
        mm.settings.allow_tf32 = False
    assert fast.dtype == np.float32 and fast.shape == want.shape
    np.testing.assert_allclose(fast, want, rtol=2e-2, atol=0.2)
    np.testing.assert_allclose(tuned, want, rtol=2e-2, atol=0.2)
    assert any(key[0] == "float32+tf32" for key in mm._CHOICES[backend.runtime])
    assert not np.array_equal(fast, exact)  # TF32 rounding did change the products


# ------------------------------------------------------- units' loops bounded (llvmpipe)
def _deep(m: int, k: int, n: int, dtype: str = "float32", seed: int = 5
          ) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if "int" in dtype:
        return rng.integers(-3, 4, (m, k)).astype(dtype), rng.integers(-3, 4, (k, n)).astype(dtype)
    return rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)


def test_llvmpipe_reports_its_units_loop_bound() -> None:
    """wgpu on Mesa's llvmpipe ends a unit's loops after 65535 iterations without an error:
    its runtime says so (`Properties.max_unit_loop`); the cpu runtime has no such bound."""
    runtime = _backend("wgpu").runtime
    expected = 65535 if "llvmpipe" in runtime.properties.device.lower() else 0
    assert runtime.properties.max_unit_loop == expected
    assert _backend("cpu").runtime.properties.max_unit_loop == 0


@pytest.mark.parametrize("shape", [(1, 65536, 1), (3, 70000, 2)], ids=str)
def test_a_product_deeper_than_the_loop_bound_never_takes_a_kernel_looping_past_it(
        shape: tuple[int, int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    """On a runtime whose units' loops stop at `max_unit_loop`, a product whose tuned choice
    would loop past it over the depth (the naive kernel loops once an element; here it is
    made the tuned choice) runs by a kernel that loops within it, and equals torch (on
    llvmpipe the naive kernel's sum stopped at 65535 products: 65535 for 65536 ones)."""
    backend = _backend("wgpu")
    bound = backend.runtime.properties.max_unit_loop
    if not bound:  # (a GPU adapter: no bound to keep to; the next test imposes one)
        monkeypatch.setattr(backend.runtime, "properties", dataclasses.replace(
            backend.runtime.properties, max_unit_loop=65535))
        bound = 65535
    monkeypatch.setitem(mm._EXACT, backend.runtime, {})
    monkeypatch.setattr(mm, "_bucket_choice", lambda *args: "naive")
    m, k, n = shape
    a, b = _deep(m, k, n)
    got = burn.tensor(a, device="wgpu") @ burn.tensor(b, device="wgpu")
    want = torch.from_numpy(a).double() @ torch.from_numpy(b).double()
    assert got.shape == tuple(want.shape) and got.dtype == burn.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-3)
    (choice,) = mm._EXACT[backend.runtime].values()
    assert choice != "naive" and mm._unit_loops(choice, k) <= bound
    ones = np.ones((1, k), np.float32)
    assert (burn.tensor(ones, device="wgpu") @ burn.tensor(ones.T.copy(), device="wgpu")
            ).item() == k


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_a_product_every_kernel_would_loop_past_the_bound_over_sums_its_depths_chunks(
        dtype: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where every kernel's units would loop past the bound over the whole depth (a bound of
    100 iterations and a depth of 2003: the deepest tile's 16-element steps loop 126 times),
    the product is the sum of its depth chunks' products (`run_k_chunks`), each within the
    bound; batched and broadcast operands and views keep torch's values."""
    backend = _backend("wgpu")
    monkeypatch.setattr(backend.runtime, "properties", dataclasses.replace(
        backend.runtime.properties, max_unit_loop=100))
    monkeypatch.setitem(mm._EXACT, backend.runtime, {})
    chunks: list[int] = []
    real = mm.run_k_chunks

    def counted(*args: Any) -> CubeTensor:
        chunks.append(args[1].shape[-1])
        return real(*args)

    monkeypatch.setitem(mm.RUNNERS, "k_chunks", counted)
    a, b = _deep(6, 2003, 5, dtype)
    batch = np.stack([a, -a])  # [2, 6, 2003] times [2003, 5]
    lhs = burn.tensor(batch, device="wgpu")
    rhs = burn.tensor(np.ascontiguousarray(b.T), device="wgpu").swap_dims(0, 1)  # a view
    got = lhs @ rhs
    want = torch.from_numpy(batch) @ torch.from_numpy(b)
    assert got.shape == tuple(want.shape) and got.dtype == getattr(burn, dtype)
    if dtype == "int32":
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    else:
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-3)
    assert chunks == [2003]
    assert all(mm._unit_loops(choice, 100) <= 100 for choice in mm._EXACT[backend.runtime].values()
               if choice != "k_chunks")
