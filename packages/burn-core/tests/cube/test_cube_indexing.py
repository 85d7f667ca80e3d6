"""Indexing kernels of the cube backends (select, select_assign, gather, scatter, embedding) and
the device-side index / divisor checks, on cpu and wgpu: compared with torch (or the NumPy
backend where torch leaves duplicates undefined), and run on kernels, not the host fallback."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import burn
import burn.functional as F
from burn.backends.cube import checks, indexing
from burn.backends.cube.backend import CubeBackend, CudaBackend
from burn.dtype import DType
from burn.errors import BurnIndexError, DivisionByZeroError, ShapeError

DEVICES = ["cpu", "wgpu", *(["cuda"] if CudaBackend.unavailable_reason() is None else [])]
NUMPY = burn.Device("numpy")
RNG = np.random.default_rng(0)


def _on(device: burn.Device, data: Any, dtype: Any = None) -> burn.Tensor:
    return burn.tensor(np.asarray(data), device=device, dtype=dtype)


def _check(got: burn.Tensor, want: torch.Tensor | np.ndarray, device: burn.Device,
           op: str) -> None:
    """Shape and dtype first, then exact values (NaN equal), then no host fallback for `op`."""
    ref = want.numpy() if isinstance(want, torch.Tensor) else want
    assert got.shape == ref.shape
    data = got.to_numpy()
    assert data.dtype == ref.dtype
    np.testing.assert_array_equal(data, ref)
    assert _fallbacks(device)[op] == 0


def _fallbacks(device: burn.Device) -> Counter[str]:
    backend = device.backend
    assert isinstance(backend, CubeBackend)
    return backend.fallbacks


def _floats(*shape: int) -> np.ndarray:
    data = RNG.standard_normal(shape).astype(np.float32)
    data.flat[:3] = [np.nan, np.inf, -np.inf][:data.size]
    return data


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> burn.Device:
    """The device, with no failed check pending from an earlier test."""
    dev = burn.Device(request.param)
    with contextlib.suppress(BurnIndexError, DivisionByZeroError):
        burn.sync(dev)
    return dev


# --- select -------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("index_dtype", [burn.int32, burn.int64])
def test_select_matches_torch(device: burn.Device, dim: int, index_dtype: Any) -> None:
    data = _floats(3, 4, 5)
    rows = [2, 0, -1, 2, 1]
    got = _on(device, data).select(dim, _on(device, rows, index_dtype))
    want = torch.from_numpy(data).index_select(dim, torch.tensor(rows) % data.shape[dim])
    _check(got, want, device, "float_select")


def test_select_of_views_and_dtypes(device: burn.Device) -> None:
    data = np.arange(60).reshape(3, 4, 5)
    rows = np.array([3, 1, 0, 3, 2, 1, 0, 2])
    for dtype, kind in ((burn.int64, "int"), (burn.int32, "int"), (burn.bool_, "bool"),
                        (burn.float16, "float")):
        x = _on(device, data % 3 if dtype is burn.bool_ else data, dtype).permute(2, 0, 1)
        idx = _on(device, rows)[::2]  # a strided index view
        got = x.select(2, idx)
        want = torch.from_numpy(x.to_numpy()).index_select(2, torch.from_numpy(rows[::2]))
        _check(got, want, device, f"{kind}_select")
    broadcast = _on(device, np.arange(4.0, dtype=np.float32)).reshape(1, 4).expand(3, 4)
    _check(broadcast.select(1, _on(device, [3, 3])), np.full((3, 2), 3.0, np.float32),
           device, "float_select")


def test_select_plan_reused_with_new_data(device: burn.Device) -> None:
    """A select planned for a layout (dense, or a permuted view copied dense first) gives
    the new values when it runs again on other tensors of that layout."""
    rows = [1, 0, 1, -1]
    for round_ in range(3):
        data = _floats(3, 4, 2) + round_
        dense = _on(device, data)
        _check(dense.select(1, _on(device, rows)),
               torch.from_numpy(data).index_select(1, torch.tensor(rows) % 4), device,
               "float_select")
        permuted = dense.permute(2, 0, 1)  # outer dims (2, 3) with strides that do not merge
        want = torch.from_numpy(data).permute(2, 0, 1).index_select(2, torch.tensor([3, 0]))
        _check(permuted.select(2, _on(device, [3, 0])), want, device, "float_select")


def test_select_empty(device: burn.Device) -> None:
    x = _on(device, _floats(3, 4))
    _check(x.select(1, _on(device, np.zeros(0, np.int64))), np.zeros((3, 0), np.float32),
           device, "float_select")
    _check(_on(device, np.zeros((0, 4), np.float32)).select(1, _on(device, [1, 0])),
           np.zeros((0, 2), np.float32), device, "float_select")


def test_backend_select_wraps_negatives_and_zeroes_out_of_range(device: burn.Device) -> None:
    backend = device.backend
    x = _on(device, np.arange(4.0, dtype=np.float32))
    idx = _on(device, [-1, 5, 0, -9])
    got = backend.float_into_data(backend.float_select(x._prim, 0, idx._prim))
    np.testing.assert_array_equal(got, [3.0, 0.0, 0.0, 0.0])


# --- gather -------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1])
def test_gather_matches_torch(device: burn.Device, dim: int) -> None:
    data = _floats(4, 5)
    index = RNG.integers(0, data.shape[dim], (3, 4))  # smaller than x outside dim
    got = _on(device, data).gather(dim, _on(device, index))
    want = torch.from_numpy(data).gather(dim, torch.from_numpy(index))
    _check(got, want, device, "float_gather")


def test_gather_of_views_dtypes_and_empty(device: burn.Device) -> None:
    data = np.arange(20).reshape(4, 5)
    index = RNG.integers(-4, 4, (5, 3))
    x = _on(device, data).transpose(0, 1)  # [5, 4], strided
    idx = _on(device, index.T.copy()).transpose(0, 1)  # [5, 3], strided
    want = torch.from_numpy(data.T.copy()).gather(1, torch.from_numpy(index % 4))
    _check(x.gather(1, idx), want, device, "int_gather")
    flags = _on(device, data % 2 == 0)
    _check(flags.gather(0, _on(device, [[3, 0, 1, 2, 0]])),
           torch.from_numpy(data % 2 == 0).gather(0, torch.tensor([[3, 0, 1, 2, 0]])),
           device, "bool_gather")
    _check(_on(device, _floats(3, 2)).gather(0, _on(device, np.zeros((0, 2), np.int64))),
           np.zeros((0, 2), np.float32), device, "float_gather")
    _check(_on(device, np.array([1.5, 2.5], np.float32)).gather(0, _on(device, [1, 1, 0])),
           np.array([2.5, 2.5, 1.5], np.float32), device, "float_gather")


# --- scatter ------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, dim", [((4, 6), 0), ((4, 6), 1), ((3, 4, 5), 0),
                                        ((3, 4, 5), 1), ((3, 4, 5), 2)])
def test_scatter_add_matches_torch_with_duplicates(device: burn.Device, shape: tuple[int, ...],
                                                   dim: int) -> None:
    data = _floats(*shape)
    index = RNG.integers(0, shape[dim], tuple(max(n - 1, 1) for n in shape))
    values = RNG.standard_normal(shape).astype(np.float32)  # larger than the indices
    got = _on(device, data).scatter(dim, _on(device, index), _on(device, values), "add")
    want = torch.from_numpy(data).scatter_add(dim, torch.from_numpy(index),
                                              torch.from_numpy(values))
    _check(got, want, device, "float_scatter")


def test_scatter_add_is_exact_in_index_order(device: burn.Device) -> None:
    """Many duplicates into one float: the same bits as the NumPy backend's np.add.at."""
    values = (RNG.standard_normal(2000) * 100).astype(np.float32)
    index = np.zeros(2000, np.int64)
    index[::7] = 1
    for dtype in (burn.float32, burn.float16, burn.int32):
        want = burn.zeros(3, dtype=dtype, device=NUMPY).scatter(
            0, _on(NUMPY, index), _on(NUMPY, values, dtype), "add").to_numpy()
        got = burn.zeros(3, dtype=dtype, device=device).scatter(
            0, _on(device, index), _on(device, values, dtype), "add")
        _check(got, want, device, "int_scatter" if dtype is burn.int32 else "float_scatter")


def test_scatter_assign_last_duplicate_wins(device: burn.Device) -> None:
    x = np.arange(12).reshape(3, 4)
    index = np.array([[2, 2, 0, 1], [2, 0, 0, 1]])
    values = np.arange(100, 108).reshape(2, 4)
    want = burn.tensor(x, device=NUMPY).scatter(0, _on(NUMPY, index), _on(NUMPY, values))
    got = _on(device, x).scatter(0, _on(device, index), _on(device, values))
    _check(got, want.to_numpy(), device, "int_scatter")
    flags = np.zeros((3, 4), bool)
    want_b = _on(NUMPY, flags).scatter(0, _on(NUMPY, index), _on(NUMPY, values % 2 == 0))
    got_b = _on(device, flags).scatter(0, _on(device, index), _on(device, values % 2 == 0))
    _check(got_b, want_b.to_numpy(), device, "bool_scatter")


def test_scatter_views_scalar_values_and_empty(device: burn.Device) -> None:
    data = _floats(5, 3)
    x = _on(device, data.T.copy()).transpose(0, 1)  # [5, 3] strided
    index = _on(device, [[4, 0, 1], [1, 1, 1]])
    want = torch.from_numpy(data).scatter(0, torch.tensor([[4, 0, 1], [1, 1, 1]]), 7.0)
    _check(x.scatter(0, index, 7.0), want, device, "float_scatter")
    empty = _on(device, np.zeros((0, 3), np.int64))
    _check(x.scatter(0, empty, _on(device, _floats(2, 3)), "add"), data, device,
           "float_scatter")


@pytest.mark.parametrize("below", [0, 1 << 20])
def test_scatter_one_unit_per_line_or_per_output(device: burn.Device, below: int,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Both GPU modes (forced by the line threshold) give the NumPy backend's exact results
    (torch's index_add for select_assign: the NumPy backend sums each index's run first)."""
    monkeypatch.setattr(indexing, "OUTPUT_UNITS_BELOW", below)
    data = _floats(3, 7, 4)
    index = RNG.integers(-7, 7, (3, 9, 2))
    values = (RNG.standard_normal((3, 9, 4)) * 100).astype(np.float32)
    for reduce in ("add", "assign"):
        want = _on(NUMPY, data).scatter(1, _on(NUMPY, index), _on(NUMPY, values), reduce)
        got = _on(device, data).scatter(1, _on(device, index), _on(device, values), reduce)
        _check(got, want.to_numpy(), device, "float_scatter")
    rows = np.array([0, 2, 2, -1, 2])
    got = _on(device, data).select_assign(1, _on(device, rows), _on(device, values[:, :5]))
    ref = torch.from_numpy(data).index_add(1, torch.from_numpy(rows % 7),
                                           torch.from_numpy(values[:, :5].copy()))
    _check(got, ref, device, "float_select_assign")


# --- select_assign ------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1])
def test_select_assign_matches_torch_index_add(device: burn.Device, dim: int) -> None:
    data = _floats(4, 5)
    rows = np.array([1, 3, 1, -1, 0, 1])
    shape = list(data.shape)
    shape[dim] = len(rows)
    values = RNG.standard_normal(shape).astype(np.float32)
    got = _on(device, data).select_assign(dim, _on(device, rows), _on(device, values))
    want = torch.from_numpy(data).index_add(dim, torch.from_numpy(rows % data.shape[dim]),
                                            torch.from_numpy(values))
    _check(got, want, device, "float_select_assign")


def test_select_assign_ints_half_and_views(device: burn.Device) -> None:
    rows = np.array([2, 2, 0, 2])
    values = np.arange(12).reshape(4, 3)
    lows = (burn.float16, burn.bfloat16) if device.backend.supports(DType.bfloat16) else (
        burn.float16,)
    for dtype, op in ((burn.int64, "int"), (burn.int32, "int"), *((d, "float") for d in lows)):
        want = _on(NUMPY, np.ones((3, 3)), dtype).select_assign(
            0, _on(NUMPY, rows), _on(NUMPY, values * 0.37, dtype))
        got = _on(device, np.ones((3, 3)), dtype).select_assign(
            0, _on(device, rows), _on(device, values * 0.37, dtype))
        _check(got, want.to_numpy(), device, f"{op}_select_assign")
    v = _on(device, values.T.copy(), burn.float32).transpose(0, 1)
    got = burn.zeros(3, 3, device=device).select_assign(0, _on(device, rows), v)
    ref = torch.zeros(3, 3).index_add(0, torch.from_numpy(rows), torch.from_numpy(values).float())
    _check(got, ref, device, "float_select_assign")


# --- embedding ----------------------------------------------------------------------------
def test_embedding_matches_torch(device: burn.Device) -> None:
    weight = _floats(6, 4)
    index = np.array([[5, 0, 2], [2, 2, 1]])
    idx = _on(device, index.T.copy()).transpose(0, 1)  # strided
    got = F.embedding(_on(device, weight), idx)
    want = torch.nn.functional.embedding(torch.from_numpy(index), torch.from_numpy(weight))
    _check(got, want, device, "embedding")
    assert _fallbacks(device)["float_select"] == 0
    _check(F.embedding(_on(device, weight), _on(device, 3)), weight[3], device, "embedding")
    _check(F.embedding(_on(device, weight), _on(device, np.zeros((2, 0), np.int64))),
           np.zeros((2, 0, 4), np.float32), device, "embedding")


def test_embedding_backward_accumulates_duplicates(device: burn.Device) -> None:
    ad = device.autodiff()
    weight = _floats(5, 3)
    weight[:1] = 1.0
    index = np.array([1, 4, 1, 1, 0])
    w = burn.tensor(weight, device=ad).require_grad()
    grads = (F.embedding(w, _on(ad, index))
             * _on(ad, np.arange(15.0, dtype=np.float32).reshape(5, 3))).sum().backward()
    tw = torch.from_numpy(weight).requires_grad_()
    (torch.nn.functional.embedding(torch.from_numpy(index), tw)
     * torch.arange(15.0).reshape(5, 3)).sum().backward()
    grad = w.grad(grads)
    assert grad is not None and tw.grad is not None
    np.testing.assert_array_equal(grad.to_numpy(), tw.grad.numpy())
    assert _fallbacks(device)["float_select_assign"] == 0


def test_backend_refuses_shapes_that_do_not_fit(device: burn.Device) -> None:
    backend = device.backend
    x = _on(device, _floats(3, 4))._prim
    idx2, idx1 = _on(device, np.zeros((2, 5), np.int64))._prim, _on(device, [0, 1])._prim
    with pytest.raises(ShapeError, match=r"gather: .*x=\(3, 4\), indices=\(2, 5\)"):
        backend.float_gather(0, x, idx2)
    with pytest.raises(ShapeError, match=r"scatter: .*values=\(2, 4\)"):
        backend.float_scatter(0, x, idx2, _on(device, _floats(2, 4))._prim, "add")
    with pytest.raises(ShapeError, match="select: indices must be 1-d"):
        backend.float_select(x, 0, idx2)
    with pytest.raises(ShapeError, match="select_assign: values must match"):
        backend.float_select_assign(x, 0, idx1, x)
    with pytest.raises(ShapeError, match="embedding: weight must be"):
        backend.embedding(_on(device, _floats(2))._prim, idx1)


# --- device-side checks -------------------------------------------------------------------
@pytest.mark.parametrize("op, run", [
    ("select", lambda x, i: x.select(0, i)),
    ("gather", lambda x, i: x.gather(0, i.reshape(3, 1).expand(3, 2))),
    ("embedding", lambda x, i: F.embedding(x, i)),
    ("scatter", lambda x, i: x.scatter(0, i.reshape(3, 1).expand(3, 2), 1.0)),
])
def test_bad_indices_are_reported_at_the_next_sync(device: burn.Device, op: str,
                                                   run: Callable[..., burn.Tensor]) -> None:
    x = _on(device, np.arange(8.0, dtype=np.float32).reshape(4, 2))
    out = run(x, _on(device, [0, 9, 1]))  # checked on the device: no error yet
    assert out.shape[0] == (4 if op == "scatter" else 3)
    low = 0 if op == "embedding" else -4  # embedding does not wrap negatives
    with pytest.raises(BurnIndexError, match=rf"{op}: index 9 out of range \[{low}, 4\)"):
        burn.sync(device)
    burn.sync(device)  # reported once
    assert x.select(0, _on(device, [-1, 0])).to_numpy().tolist() == [[6.0, 7.0], [0.0, 1.0]]


def test_checks_past_the_flag_buffer(device: burn.Device) -> None:
    """Slots are handed out past the read ones and the flag buffer (`checks.CAPACITY` slots)
    is cleared at a sync past its half, or when a check finds it used up: over several wraps,
    with syncs at odd points or none, each bad index is reported once at the sync after it,
    and good checks never report a stale failure."""
    x = _on(device, np.arange(8.0, dtype=np.float32).reshape(4, 2))
    good, bad = _on(device, [0, 3]), _on(device, [1, 7])
    bad_at = {5, checks.CAPACITY - 1, checks.CAPACITY, 2 * checks.CAPACITY + 3}
    reported = []
    for k in range(3 * checks.CAPACITY + 10):
        x.select(0, bad if k in bad_at else good)
        if k % 7 == 3 or k in bad_at:
            try:
                burn.sync(device)
            except BurnIndexError as err:
                assert "select: index 7 out of range" in str(err)
                reported.append(k)
    burn.sync(device)
    assert reported == sorted(bad_at)
    for _ in range(checks.CAPACITY + 10):  # no sync: a check finds the buffer used up
        x.select(0, good)
    x.select(0, bad)
    with pytest.raises(BurnIndexError, match="select: index 7 out of range"):
        burn.sync(device)
    burn.sync(device)  # reported once
    assert x.select(0, good).to_numpy().tolist() == [[0.0, 1.0], [6.0, 7.0]]


def test_bad_indices_raise_at_into_data_and_memory_stats(device: burn.Device) -> None:
    x = _on(device, np.arange(4.0, dtype=np.float32))
    out = x.select(0, _on(device, [4]))
    with pytest.raises(BurnIndexError, match="select: index 4"):
        out.to_numpy()
    backend = device.backend
    bad = backend.check_indices("take", _on(device, [-1, 1])._prim, 3, wrap_negative=False)
    with pytest.raises(BurnIndexError, match=r"take: index -1 out of range \[0, 3\)"):
        backend.memory_stats()
    assert backend.int_into_data(bad).tolist() == [0, 1]  # the bad entry reads as 0


def test_into_data_reads_pending_checks_after_its_own_download(
        device: burn.Device, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading a result with checks pending waits for the device once: the download waits for
    every queued kernel, so the flags (host memory on cpu and cuda) are read without a sync
    of their own; a failed check still raises instead of returning the values."""
    x = _on(device, np.arange(12.0, dtype=np.float32).reshape(3, 4))
    runtime = device.backend.runtime
    syncs: list[int] = []
    real_sync = runtime.sync
    monkeypatch.setattr(runtime, "sync", lambda: syncs.append(1) or real_sync())
    out = x.gather(1, _on(device, [[3, -1]]))
    assert out.to_numpy().tolist() == [[3.0, 3.0]]
    assert syncs == []
    bad = x.gather(1, _on(device, [[0, 4]]))
    with pytest.raises(BurnIndexError, match=r"gather: index 4 out of range \[-4, 4\)"):
        bad.to_numpy()
    assert syncs == []


@pytest.mark.parametrize("export", [np.asarray, lambda t: np.from_dlpack(t), torch.from_dlpack],
                         ids=["array", "numpy-dlpack", "torch-dlpack"])
def test_bad_indices_raise_at_zero_copy_export(device: burn.Device,
                                               export: Callable[[Any], Any]) -> None:
    """Sharing a result's memory (numpy's __array__, DLPack) is a sync point too: a gather
    with a bad index never hands out the zeroed values."""
    x = _on(device, np.arange(12.0, dtype=np.float32).reshape(3, 4))
    out = x.gather(1, _on(device, [[0, 5]]))
    with pytest.raises(BurnIndexError, match=r"gather: index 5 out of range \[-4, 4\)"):
        export(out)
    assert np.asarray(out).shape == (1, 2)  # reported once


def test_checks_wrap_negatives_of_every_int_dtype_and_shape(device: burn.Device) -> None:
    backend = device.backend
    for dtype in (burn.int32, burn.int64):
        idx = _on(device, np.array([[-3, 2], [0, -1]]), dtype).transpose(0, 1)
        out = backend.check_indices("select", idx._prim, 3)
        assert backend.dtype(out) is DType(dtype.value) and backend.shape(out) == (2, 2)
        assert backend.int_into_data(out).tolist() == [[0, 0], [2, 2]]
    scalar = backend.check_indices("getitem", _on(device, -2)._prim, 5)
    assert backend.int_into_data(scalar).shape == () and int(backend.int_into_data(scalar)) == 3
    empty = _on(device, np.zeros(0, np.int64))._prim
    assert backend.check_indices("select", empty, 0) is empty


def test_more_checks_than_flag_slots(device: burn.Device) -> None:
    x = _on(device, np.arange(3.0, dtype=np.float32))
    for _ in range(checks.CAPACITY + 5):
        x = x.select(0, _on(device, [2, 1, 0]))
    assert x.to_numpy().tolist() == [2.0, 1.0, 0.0]


def test_a_late_failed_check_among_many_is_reported_once(device: burn.Device) -> None:
    """Of many pending checks only the 70th fails: its error is raised at the sync (the
    flags are read past the first words), and every flag is clear afterwards."""
    x = _on(device, np.arange(3.0, dtype=np.float32))
    good = _on(device, [2, 1, 0])
    for i in range(100):
        x.select(0, _on(device, [0, 7]) if i == 69 else good)
    with pytest.raises(BurnIndexError, match=r"select: index 7 out of range \[-3, 3\)"):
        burn.sync(device)
    burn.sync(device)  # reported once: the flags were cleared
    x.select(0, good)
    burn.sync(device)  # the cleared slots are reused without a stale failure


def test_division_by_zero_is_reported_at_the_next_sync(device: burn.Device) -> None:
    a = _on(device, [4, 5])
    out = a // _on(device, [2, 0])  # no error yet
    with pytest.raises(DivisionByZeroError, match="floor_div: integer division by zero"):
        out.to_numpy()
    assert (a // _on(device, [2, 5])).to_numpy().tolist() == [2, 1]
    _ = a % _on(device, np.array(0))
    with pytest.raises(DivisionByZeroError, match="remainder"):
        burn.sync(device)


# --- CUDA source (compile-only: no GPU here) ----------------------------------------------
@pytest.mark.parametrize("dtype", [DType.float32, DType.float16, DType.bfloat16, DType.int64,
                                   DType.bool])
def test_kernels_generate_cuda(dtype: DType) -> None:
    x, idx = np.zeros((2, 3), dtype.numpy), np.zeros((2, 3), np.int64)
    i1, x3 = np.zeros(3, np.int32), np.zeros((2, 3, 4), dtype.numpy)
    for by_rows in (False, True):
        assert "__global__" in indexing._select_kernel(dtype, DType.int32, 1, by_rows).source(
            "cuda", 256, x3, i1, x3, 24)
    for by_rows in (False, True):
        assert "__global__" in indexing._gather_kernel(dtype, DType.int64, 2, 0, by_rows).source(
            "cuda", 256, x, idx, x, 2)
    if dtype is not DType.bool:
        acc = np.zeros((2, 3), np.float32 if dtype.itemsize == 2 else dtype.numpy)
        acc_dtype = DType.float32 if dtype.itemsize == 2 else dtype
        for mode in ("lines", "rows", "outputs"):
            assert "__global__" in indexing._scatter_kernel(
                acc_dtype, dtype, DType.int64, 2, 1, True, mode).source(
                    "cuda", 256, idx, x, acc, 3)
    flags = np.zeros(4, np.int32)
    assert "__global__" in checks._check_kernel(DType.int64, 2, False).source(
        "cuda", 256, idx, flags, 0, np.zeros(6, np.int64), -3, 3)
    assert "__global__" in checks._check_kernel(DType.int32, 1, True).source(
        "cuda", 256, i1, flags, 0)
