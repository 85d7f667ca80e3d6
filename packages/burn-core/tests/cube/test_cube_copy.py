"""Strided copies of the cube backends (`backends/cube/copy.py`) against numpy on cpu and wgpu
(and cuda where there is one): transposes (tiles on the cpu, shared-memory tiles on GPUs),
permutes with adjacent rows (on the cpu rows, or rows shorter than a cube and unit-strided
in both views a unit each: runs; on GPUs element-wise, runs of 4 a unit), broadcasts,
stepped slices, offsets, 0-d, empty and single-element views, rows past the grid's 65535
(rows along z), copies into strided destinations (cat), every supported dtype; the layout
simplification; each kernel also compiles to CUDA C."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import burn
from burn.backends.cube import CudaBackend, copy, layout
from burn.backends.cube.elementwise import GPU_RUN
from burn.backends.cube.tensor import CubeTensor, host_array

DEVICES = ["cpu", "wgpu", *(["cuda"] if CudaBackend.unavailable_reason() is None else [])]
DTYPES = [burn.float32, burn.float16, burn.float64, burn.int64, burn.int32, burn.bool_]

View = Callable[[Any, Any], Any]  # (backend or None for numpy, array) -> view
#: name -> (storage shape, the view taken on the cube backend and on numpy, the copy kernel)
CASES: dict[str, tuple[tuple[int, ...], View, str]] = {
    "transpose": ((37, 300), lambda bk, a: _perm(bk, a, (1, 0)), "copy_tiles"),
    "transpose tall": ((300, 37), lambda bk, a: _perm(bk, a, (1, 0)), "copy_tiles"),
    "swap 1,2": ((5, 70, 33), lambda bk, a: _perm(bk, a, (0, 2, 1)), "copy_tiles"),
    "permute 3,1,0,2": ((6, 5, 4, 20), lambda bk, a: _perm(bk, a, (3, 1, 0, 2)), "copy_tiles"),
    "heads": ((3, 17, 4, 32), lambda bk, a: _perm(bk, a, (0, 2, 1, 3)), "copy_rows"),
    "rows of 255": ((3, 4, 255), lambda bk, a: _perm(bk, a, (1, 0, 2)), "copy_rows"),
    "rows of 256": ((3, 4, 256), lambda bk, a: _perm(bk, a, (1, 0, 2)), "copy_rows"),
    "bcast rows": ((1, 40), lambda bk, a: _expand(bk, a, (30, 40)), "copy_rows"),
    "bcast column": ((30, 1), lambda bk, a: _expand(bk, a, (30, 40)), "copy_rows"),
    "stepped slice": ((9, 50), lambda bk, a: _slice(bk, a, (slice(1, None, 2),
                                                             slice(2, None, 3))), "copy_rows"),
    "offset block": ((12, 70), lambda bk, a: _slice(bk, a, (slice(3, 9), slice(5, 60))),
                     "copy_rows"),
    "short rows": ((40, 6, 3), lambda bk, a: _perm(bk, a, (1, 0, 2)), "copy_strided"),
    "long transpose": ((2, 70000), lambda bk, a: _perm(bk, a, (1, 0)), "copy_tiles"),
    "rows past the grid": ((66000, 18), lambda bk, a: _slice(bk, a, (slice(None),
                                                                     slice(0, 17))),
                           "copy_rows"),
    "heads past the grid": ((2, 300, 120, 16), lambda bk, a: _perm(bk, a, (0, 2, 1, 3)),
                            "copy_rows"),
    "flat strided": ((400,), lambda bk, a: _slice(bk, a, (slice(1, None, 3),)), "copy_strided"),
    "single element": ((1, 1, 1), lambda bk, a: _perm(bk, a, (2, 1, 0)), "copy_strided"),
    "0-d": ((), lambda bk, a: a, "copy_strided"),
}
#: The cases whose rows the cpu runtime copies a unit each (`copy_runs`), not a cube each.
CPU_RUNS = {"heads", "rows of 255", "bcast rows", "offset block", "rows past the grid",
            "heads past the grid"}


def _perm(bk: Any, a: Any, axes: tuple[int, ...]) -> Any:
    return a.transpose(axes) if bk is None else layout.permute(bk, a, axes)


def _expand(bk: Any, a: Any, shape: tuple[int, ...]) -> Any:
    return np.broadcast_to(a, shape) if bk is None else layout.expand(bk, a, shape)


def _slice(bk: Any, a: Any, slices: tuple[slice, ...]) -> Any:
    return a[slices] if bk is None else layout.slice_(bk, a, slices)


def _data(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    if dtype is burn.bool_:
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.is_float:
        values = np.asarray(rng.standard_normal(shape) * 100)
        values.flat[:3] = [np.nan, np.inf, -np.inf][: values.size]
        return values.astype(dtype.numpy)
    info = np.iinfo(dtype.numpy)
    values = np.asarray(rng.integers(-1000, 1000, shape)).astype(dtype.numpy)
    values.flat[:2] = [info.min, info.max][: values.size]
    return values


def _kernels(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count the copy kernels `copy._plan` asks for from now on."""
    asked: Counter[str] = Counter()
    for name in ("copy_kernel", "copy_rows_kernel", "copy_runs_kernel", "copy_tiles_kernel",
                 "copy_transpose_kernel"):
        real = getattr(copy, name)

        def wrapped(*args: Any, _real: Any = real) -> Any:
            kernel = _real(*args)
            asked[kernel.kernel.name] += 1
            return kernel

        monkeypatch.setattr(copy, name, wrapped)
    return asked


@pytest.mark.parametrize("name", DEVICES)
@pytest.mark.parametrize("case", list(CASES))
def test_contiguous_copy_matches_numpy(name: str, case: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    bk: Any = burn.Device(name).backend
    bk.plans.clear()
    asked = _kernels(monkeypatch)
    shape, view, kernel = CASES[case]
    kernel = "copy_runs" if name == "cpu" and case in CPU_RUNS else kernel
    if name != "cpu":  # GPUs: shared-memory transposes, no rows kernel
        kernel = {"copy_tiles": "copy_transpose", "copy_rows": "copy_strided"}.get(kernel, kernel)
    rng = np.random.default_rng(len(case))
    dtypes = [d for d in DTYPES if bk.supports(d)]
    assert burn.float32 in dtypes and burn.bool_ in dtypes
    for dtype in dtypes:
        data = _data(rng, shape, dtype)
        expected = np.array(view(None, data), order="C", copy=True)
        out = layout.contiguous_copy(bk, view(bk, bk.upload(data)))
        assert isinstance(out, CubeTensor) and out.is_contiguous
        assert out.shape == expected.shape and out.dtype == dtype
        got = host_array(out)
        assert got.shape == expected.shape and got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected, err_msg=f"{case} {dtype}")
    assert set(asked) == {kernel}, (case, asked)


def test_gpu_copies_past_the_grid_go_by_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU runtime whose x grid the element-wise copy would exceed (a limit of 64 cubes
    here: 70 rows of 4096 floats need 280 at 4 positions a unit), copies go by rows."""
    import dataclasses

    bk: Any = burn.Device("wgpu").backend
    rt = bk.runtime
    small = dataclasses.replace(rt.properties, max_cube_count=(64, 65535, 65535))
    monkeypatch.setitem(rt.__dict__, "properties", small)  # the cached property's value
    bk.plans.clear()
    asked = _kernels(monkeypatch)
    data = np.arange(70 * 8192, dtype=np.float32).reshape(70, 8192)
    view = layout.slice_(bk, bk.upload(data), (slice(None), slice(3, 4099)))
    got = host_array(layout.contiguous_copy(bk, view))
    assert got.shape == (70, 4096) and got.dtype == np.float32
    np.testing.assert_array_equal(got, data[:, 3:4099])
    assert set(asked) == {"copy_rows"}
    bk.plans.clear()


@pytest.mark.parametrize("name", DEVICES)
def test_empty_copy_launches_nothing(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    bk: Any = burn.Device(name).backend
    asked = _kernels(monkeypatch)
    x = layout.permute(bk, bk.upload(np.zeros((0, 3, 5), np.float32)), (2, 0, 1))
    out = layout.contiguous_copy(bk, x)
    assert out.shape == (5, 0, 3) and out.dtype == burn.float32 and not asked


@pytest.mark.parametrize("name", DEVICES)
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_cat_copies_into_strided_destinations(name: str, dim: int) -> None:
    rng = np.random.default_rng(dim)
    shapes = ([(3, 20, 17), (5, 20, 17)], [(4, 2, 17), (4, 33, 17)],
              [(4, 20, 1), (4, 20, 40)])[dim]
    parts = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    transposed = [np.ascontiguousarray(p.transpose(2, 1, 0)) for p in parts]
    device = burn.Device(name)
    xs = [burn.tensor(t, device=device).permute(2, 1, 0) for t in transposed]
    out = burn.cat(xs, dim)
    expected = np.concatenate(parts, dim)
    assert tuple(out.shape) == expected.shape and out.dtype == burn.float32
    np.testing.assert_array_equal(out.to_numpy(), expected)


def test_merge_dims() -> None:
    # a dense tensor is one run; size-1 dims vanish; a transpose keeps both dims
    assert copy.merge_dims((2, 3, 4), (12, 4, 1), (12, 4, 1)) == ((24,), ((1,), (1,)))
    assert copy.merge_dims((2, 1, 4), (4, 9, 1), (4, 4, 1)) == ((8,), ((1,), (1,)))
    assert copy.merge_dims((3, 5), (1, 3), (5, 1)) == ((3, 5), ((1, 3), (5, 1)))
    # heads: batch and head merge in neither view; the last two merge only in the source's
    assert copy.merge_dims((2, 4, 6, 8), (192, 8, 32, 1), (192, 48, 8, 1)) == (
        (2, 4, 6, 8), ((192, 8, 32, 1), (192, 48, 8, 1)))
    # broadcast dims merge with each other
    assert copy.merge_dims((3, 4, 5), (0, 0, 1), (20, 5, 1)) == ((12, 5), ((0, 1), (5, 1)))
    assert copy.merge_dims((1, 1), (1, 1), (1, 1)) == ((), ((), ()))


def test_kernels_generate_cuda_source() -> None:
    """Each copy kernel, as the cpu backend plans it, also compiles to CUDA C."""
    bk: Any = burn.Device("cpu").backend
    for shape, view, kernel in CASES.values():
        x = view(bk, bk.upload(np.ones(shape, np.float32)))
        out = bk.empty(x.shape, burn.float32)
        merged, (s, d) = copy.merge_dims(x.shape, x.strides, out.strides)
        merged, s, d = (merged, s, d) if merged else ((1,), (1,), (1,))
        rank = len(merged)
        built: list[tuple[Any, Any]]
        if kernel == "copy_tiles":  # the cpu's tiles, and the GPUs' shared-memory tiles
            unit = next(k for k in range(rank - 1) if s[k] == 1)
            built = [(copy.copy_tiles_kernel(burn.float32, rank, unit), copy.TILE_ROWS),
                     (copy.copy_transpose_kernel(burn.float32, rank, unit),
                      (copy.TRANSPOSE_SIDE, copy.TRANSPOSE_ROWS))]
        elif kernel == "copy_rows":  # the cpu's rows, and the GPUs' element-wise runs
            built = [(copy.copy_rows_kernel(burn.float32, rank), copy.ROW_CUBE),
                     (copy.copy_kernel(burn.float32, rank, GPU_RUN), copy.CUBE_DIM)]
        else:
            built = [(copy.copy_kernel(burn.float32, rank), copy.CUBE_DIM)]
        views = (x.array.view_unchecked(merged, s, x.offset),
                 out.array.view_unchecked(merged, d, 0))
        for each, dim in built:
            assert "__global__" in each.source("cuda", dim, *views), kernel
