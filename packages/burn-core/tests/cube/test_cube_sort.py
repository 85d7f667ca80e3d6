"""Stable sort_with_indices of the cube backends (cpu and wgpu), and sort / argsort / topk on
top of it, against the NumPy backend (the reference) and torch's stable sort: both orders,
every dim of ordinary, transposed, strided and broadcast views, NaN / inf / ties / signed
zeros, rows of one shared-memory block, of several blocks merged, empty and 0-d inputs, every
dtype the device holds, and CUDA source generation. Every test checks that the sort ran on
kernels, not on the host fallback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import torch

import burn
from burn.backends.cube import sort
from burn.backends.cube.backend import CudaBackend
from burn.dtype import DType

DEVICES = ["cpu", "wgpu", *(["cuda"] if CudaBackend.unavailable_reason() is None else [])]
View = Callable[[Any], Any]
#: name -> (data shape, view giving a rank-3 operand).
VIEWS: dict[str, tuple[tuple[int, ...], View]] = {
    "plain": ((3, 4, 5), lambda x: x),
    "transposed": ((5, 4, 3), lambda x: x.permute(2, 1, 0)),
    "strided": ((6, 9, 11), lambda x: x[::2, 1::2, 2:7]),
    "broadcast": ((3, 1, 5), lambda x: x.expand(3, 4, 5)),
}
FLOATS = {"cpu": ["float64", "float16", "bfloat16"], "wgpu": ["float16"],
          "cuda": ["float64", "float16", "bfloat16"]}


def _backend(device: str) -> Any:
    return burn.Device(device).backend


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> Iterator[str]:
    backend = _backend(request.param)
    backend.fallbacks.clear()
    yield request.param
    ours = {op: n for op, n in backend.fallbacks.items() if "sort" in op}
    assert not ours, f"ran on the host fallback: {ours}"


def _data(shape: tuple[int, ...], dtype: str, seed: int = 0, spread: int = 4) -> np.ndarray:
    """Values with many ties; floats also get NaN, inf, -inf and signed zeros."""
    rng = np.random.default_rng(seed)
    data = rng.integers(-spread, spread, shape)
    if dtype.startswith("int"):
        return data.astype(dtype)
    data = (data / 2).astype(np.float32)
    flat = data.reshape(-1)
    for i, v in zip((1, 4, 9, 17, 18, 25, 26), (np.nan, np.inf, -np.inf, np.nan, -0.0, 0.0,
                                                np.nan), strict=True):
        if i < flat.size:
            flat[i] = v
    return data


def _torch_sort(t: torch.Tensor, dim: int, descending: bool) -> tuple[np.ndarray, np.ndarray]:
    values, indices = torch.sort(t, dim=dim, descending=descending, stable=True)
    return values.numpy(), indices.numpy()


def _check(device: str, data: np.ndarray, view: View, dim: int, descending: bool,
           dtype: Any = None) -> None:
    """Values and indices on `device` equal the NumPy backend's exactly (dtype and shape
    first); they also match torch's stable sort (float32 / int64 data)."""
    ours = view(burn.tensor(data, dtype=dtype, device=device)).sort_with_indices(dim, descending)
    refs = view(burn.tensor(data, dtype=dtype, device="numpy")).sort_with_indices(dim,
                                                                                  descending)
    for got, ref in zip(ours, refs, strict=True):
        g, r = got.to_numpy(), ref.to_numpy()
        assert g.dtype == r.dtype and g.shape == r.shape
        if g.dtype.kind not in "iu":  # compare NaNs of any payload (CUDA's bfloat16 NaN)
            g, r = g.astype(np.float64), r.astype(np.float64)
        np.testing.assert_array_equal(g, r)
    if dtype is None and data.ndim:
        values, indices = _torch_sort(view(torch.from_numpy(data)), dim, descending)
        np.testing.assert_array_equal(ours[0].to_numpy(), values)
        np.testing.assert_array_equal(ours[1].to_numpy(), indices)


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("kind", ["float32", "int64"])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_on_views_matches_the_numpy_backend_and_torch(device: str, view: str, kind: str,
                                                           descending: bool) -> None:
    shape, fn = VIEWS[view]
    data = _data(shape, kind)
    for dim in (0, 1, 2, -1):
        _check(device, data, fn, dim, descending)


@pytest.mark.parametrize("n", [1, 2, 31, 33, 128, 1000, 1024, 1025, 2500])
@pytest.mark.parametrize("descending", [False, True])
def test_rows_of_one_block_and_of_merged_blocks(device: str, n: int, descending: bool) -> None:
    """Short rows sort in one shared-memory block (padded), longer ones merge blocks: one
    merge pass (1025 elements), two (2500, with an odd run left over)."""
    data = _data((3, n), "float32", seed=n, spread=n // 4 + 2)
    _check(device, data, lambda x: x, 1, descending)
    _check(device, data.T.copy(), lambda x: x, 0, descending)


@pytest.mark.parametrize("descending", [False, True])
def test_low_precision_wide_and_int32_dtypes(device: str, descending: bool) -> None:
    for dtype in [*FLOATS[device], "int32"]:
        for n in (7, 1100):
            data = _data((3, n), dtype, seed=n)
            _check(device, data, lambda x: x, 1, descending, dtype=dtype)
            _check(device, data, lambda x: x.swap_dims(0, 1), 0, descending, dtype=dtype)


@pytest.mark.parametrize("descending", [False, True])
def test_empty_and_zero_dim_inputs(device: str, descending: bool) -> None:
    for shape, dim in (((0, 3), 0), ((0, 3), 1), ((2, 0), 1), ((), 0), ((1,), 0)):
        _check(device, _data(shape, "float32"), lambda x: x, dim, descending)


def test_backend_method_on_a_zero_dim_tensor(device: str) -> None:
    backend = _backend(device)
    for kind, data in (("float", np.array(2.5, np.float32)), ("int", np.array(-3, np.int32))):
        values, indices = getattr(backend, f"{kind}_sort_with_indices")(
            backend.upload(data), 0, True)
        assert values.shape == indices.shape == ()
        assert values.dtype.numpy == data.dtype and indices.dtype is DType.int64
        np.testing.assert_array_equal(backend.float_into_data(values), data)
        np.testing.assert_array_equal(backend.int_into_data(indices), 0)


def test_sort_argsort_and_topk_build_on_the_kernels(device: str) -> None:
    data = _data((4, 40), "float32", seed=9)
    x = burn.tensor(data, device=device)
    ref = torch.from_numpy(data)
    np.testing.assert_array_equal(x.sort(0).to_numpy(), _torch_sort(ref, 0, False)[0])
    np.testing.assert_array_equal(x.argsort(1, descending=True).to_numpy(),
                                  _torch_sort(ref, 1, True)[1])
    for largest in (True, False):
        values, indices = x.topk_with_indices(5, 1, largest=largest)
        want = _torch_sort(ref, 1, largest)
        np.testing.assert_array_equal(values.to_numpy(), want[0][:, :5])
        np.testing.assert_array_equal(indices.to_numpy(), want[1][:, :5])
    ints = np.nan_to_num(data, posinf=9, neginf=-9).astype(np.int64)
    np.testing.assert_array_equal(burn.tensor(ints, device=device).argtopk(3, 1).to_numpy(),
                                  _torch_sort(torch.from_numpy(ints), 1, True)[1][:, :3])


def test_kernels_generate_cuda_source() -> None:
    x = np.zeros((2, 3), np.float16)
    idx = np.zeros((2, 3), np.int64)
    keys, pos = np.zeros(6, np.float32), np.zeros(6, np.int32)
    one = np.uint32(1)
    for descending in (False, True):
        for final, outs in ((True, (x, idx)), (False, (keys, pos))):
            block = sort.block_sort_kernel(DType.float16, descending, 2, 32, final)
            assert "__shared__" in block.source("cuda", 16, x, *outs, one)
            merge = sort.merge_kernel(DType.float16, descending, 2, final)
            assert "__global__" in merge.source("cuda", 256, keys, pos, *outs, one, one, one)
