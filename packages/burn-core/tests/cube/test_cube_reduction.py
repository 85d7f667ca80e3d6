"""Reductions of the cube backends (cpu and wgpu) against torch / numpy: full and per-dim
sum / prod / mean / max / min (with indices), arg max / min, any / all, argwhere and the fused
softmax / log-softmax, on ordinary, transposed, strided, broadcast, empty and 0-d inputs, edge
values (NaN, inf, ties), the chunked and per-cube schedules, and CUDA source generation. Every
test checks that its ops ran on kernels, not on the host fallback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import torch

import burn
import burn.functional as F
from burn.backends.cube import CubeTensor
from burn.backends.cube import reduction as red
from burn.backends.cube.backend import CudaBackend
from burn.backends.cube.reduction_kernels import (
    COMBINES,
    TREE_DIM,
    argwhere_kernel,
    reduce_kernel,
    softmax_kernel,
)
from burn.backends.cube.tensor import host_array
from burn.errors import ValueRangeError

#: cpu and wgpu always; cuda where a GPU and CuPy are there.
DEVICES = ["cpu", "wgpu", *(["cuda"] if CudaBackend.unavailable_reason() is None else [])]
View = Callable[[Any], Any]  # applied to a burn tensor and to a torch tensor alike

#: name -> (data shape, view); the view gives the operand (rank 3 unless said).
VIEWS: dict[str, tuple[tuple[int, ...], View]] = {
    "plain": ((3, 4, 5), lambda x: x),
    "transposed": ((5, 4, 3), lambda x: x.permute(2, 1, 0)),
    "strided": ((6, 9, 11), lambda x: x[::2, 1::2, 2:7]),
    "broadcast": ((3, 1, 5), lambda x: x.expand(3, 4, 5)),
}
FLOATS = {"cpu": ["float32", "float64", "float16", "bfloat16"], "wgpu": ["float32", "float16"],
          "cuda": ["float32", "float64", "float16", "bfloat16"]}
INTS = ["int32", "int64"]
SCHEDULES = ("unit", "lanes", "sweep", "tree", "plane")
TORCH_FULL: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "sum": torch.sum, "prod": torch.prod, "max": torch.amax, "min": torch.amin}


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> Iterator[str]:
    backend = _backend(request.param)
    backend.fallbacks.clear()
    yield request.param
    ours = {op: n for op, n in backend.fallbacks.items() if _ours(op)}
    assert not ours, f"ran on the host fallback: {ours}"


def _ours(op: str) -> bool:
    """Whether `op` is an op of this family."""
    names = ("_sum", "_prod", "_mean_dim", "_max", "_min", "_argmax", "_argmin", "_any",
             "_all", "_argwhere", "softmax")
    return any(n in op for n in names) and "cum" not in op


def _prim(t: burn.Tensor) -> CubeTensor:
    prim = t._prim
    assert isinstance(prim, CubeTensor)
    return prim


def _backend(device: str) -> Any:
    return burn.Device(device).backend


def _operand(device: str, view: str, dtype: str, prod: bool = False
             ) -> tuple[CubeTensor, torch.Tensor]:
    """The view `view` of random data as a cube primitive and as a torch tensor (`prod`: values
    whose products stay in range)."""
    shape, fn = VIEWS[view]
    rng = np.random.default_rng(0)
    data: np.ndarray
    if "int" in dtype:
        data = rng.integers(-1, 2, shape) if prod else rng.integers(-5, 6, shape)
    else:
        data = rng.uniform(0.5, 1.5, shape) if prod else rng.uniform(-2, 2, shape)
    host = torch.from_numpy(np.asarray(data, np.float64)).to(getattr(torch, dtype))
    t = burn.tensor(host.float().numpy() if dtype == "bfloat16" else host.numpy(),
                    device=device, dtype=getattr(burn, dtype))
    return _prim(fn(t)), fn(host)


def _check(got: CubeTensor, want: torch.Tensor, dtype: str | None = None,
           exact: bool = False) -> None:
    """Shape, dtype, then values of `got` against `want`."""
    assert got.shape == tuple(want.shape)
    assert got.dtype.value == (dtype or str(want.dtype).removeprefix("torch."))
    values = host_array(got)
    ref = want.float().numpy() if want.dtype == torch.bfloat16 else want.numpy()
    if exact or not want.dtype.is_floating_point:
        np.testing.assert_array_equal(np.asarray(values, ref.dtype), ref)
    else:
        low = want.dtype in (torch.float16, torch.bfloat16)
        tol = 2e-2 if low else 1e-5
        np.testing.assert_allclose(np.asarray(values, np.float64), ref.astype(np.float64),
                                   rtol=tol, atol=tol, equal_nan=True)


# --- full reductions --------------------------------------------------------------------------
@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min"])
def test_full_reductions(device: str, view: str, name: str) -> None:
    bk = _backend(device)
    for dtype in (*FLOATS[device], *INTS):
        x, ref = _operand(device, view, dtype, prod=name == "prod")
        kind = "int" if "int" in dtype else "float"
        got = getattr(bk, f"{kind}_{name}")(x)
        want = TORCH_FULL[name](ref.double() if kind == "float" else ref)
        _check(got, want.to(ref.dtype) if kind == "float" else want)


@pytest.mark.parametrize("size", [1, 1000, 100_003, 1_000_001])
def test_full_sum_chunks(device: str, size: int) -> None:
    """Sizes of one chunk and many (chunked, then combined), contiguous and strided."""
    bk = _backend(device)
    rng = np.random.default_rng(1)
    data = rng.standard_normal(2 * size).astype(np.float32)
    x = _prim(burn.tensor(data, device=device))
    strided = x.view((size,), (2,), 1)
    for t, ref in ((x.view((size,), (1,)), data[:size]), (strided, data[1::2])):
        _check(bk.float_sum(t), torch.tensor(ref.astype(np.float64).sum(), dtype=torch.float32))
        _check(bk.float_max(t), torch.tensor(ref.max()), exact=True)
        _check(bk.float_min(t), torch.tensor(ref.min()), exact=True)
    _check(bk.int_sum(_prim(burn.tensor(np.arange(size, dtype=np.int32), device=device))),
           torch.tensor(size * (size - 1) // 2), "int64")


def test_int_sum_prod_widen(device: str) -> None:
    """int32 sums and products are int64 and do not wrap at 32 bits."""
    bk = _backend(device)
    x = _prim(burn.tensor(np.full((4, 3), 2**30, np.int32), device=device, dtype=burn.int32))
    _check(bk.int_sum(x), torch.tensor(12 * 2**30), "int64")
    _check(bk.int_sum_dim(x, 0), torch.full((1, 3), 4 * 2**30), "int64")
    y = _prim(burn.tensor(np.full((2, 3), 2**16, np.int32), device=device, dtype=burn.int32))
    _check(bk.int_prod_dim(y, 0), torch.full((1, 3), 2**32), "int64")
    _check(bk.int_max(x), torch.tensor(2**30, dtype=torch.int32))


def test_low_precision_accumulates_in_float32(device: str) -> None:
    """5000 ones in float16 sum to 5000 (a float16 accumulator would stop at 2048)."""
    bk = _backend(device)
    for dtype in FLOATS[device][2:] if device != "wgpu" else ("float16",):
        x = _prim(burn.ones((5000,), device=device, dtype=getattr(burn, dtype)))
        _check(bk.float_sum(x), torch.tensor(5000.0, dtype=getattr(torch, dtype)), exact=True)
        _check(bk.float_mean_dim(x, 0), torch.ones(1, dtype=getattr(torch, dtype)), exact=True)


def test_zero_dim(device: str) -> None:
    bk = _backend(device)
    x = _prim(burn.tensor(np.array(2.5, np.float32), device=device))
    for name in ("sum", "prod", "max", "min"):
        _check(getattr(bk, f"float_{name}")(x), torch.tensor(2.5), exact=True)
    b = _prim(burn.tensor(np.array(True), device=device))
    _check(bk.bool_any(b), torch.tensor(True))
    _check(bk.bool_all(b), torch.tensor(True))
    _check(bk.bool_argwhere(b), torch.zeros((1, 0), dtype=torch.int64))
    t = burn.tensor(np.array(-1.5, np.float32), device=device)
    assert float(t.sum(0).item()) == -1.5
    np.testing.assert_allclose(F.softmax(t, 0).numpy(), 1.0)
    assert int(t.argmax(0).item()) == 0


# --- per-dim reductions -----------------------------------------------------------------------
@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("name", ["sum", "prod", "mean"])
def test_dim_reductions(device: str, view: str, name: str) -> None:
    bk = _backend(device)
    kinds = [("float", d) for d in FLOATS[device]]
    if name != "mean":
        kinds += [("int", d) for d in INTS]
    for kind, dtype in kinds:
        x, ref = _operand(device, view, dtype)
        for dim in range(3):
            got = getattr(bk, f"{kind}_{name}_dim")(x, dim)
            base = ref.double() if kind == "float" else ref
            want = getattr(torch, name)(base, dim, keepdim=True)
            _check(got, want.to(ref.dtype) if kind == "float" else want)


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("name", ["max", "min"])
def test_dim_with_indices_and_arg(device: str, view: str, name: str) -> None:
    """Values, then indices as numpy's arg max / min (first occurrence), with many ties."""
    bk = _backend(device)
    for dtype in (*FLOATS[device], *INTS):
        kind = "int" if "int" in dtype else "float"
        x, ref = _operand(device, view, dtype)
        if kind == "float":
            x = _prim(burn.tensor(torch.round(ref.float()).numpy(), device=device,
                                  dtype=getattr(burn, dtype)))  # ties
            ref = torch.round(ref)
        host = ref.float().numpy()
        arg = getattr(np, f"arg{name}")
        for dim in range(3):
            values, indices = getattr(bk, f"{kind}_{name}_dim_with_indices")(x, dim)
            want = getattr(torch, f"a{name}")(ref, dim, keepdim=True)
            idx = torch.from_numpy(arg(host, axis=dim, keepdims=True))
            _check(values, want, exact=True)
            _check(indices, idx, "int64")
            _check(getattr(bk, f"{kind}_arg{name}")(x, dim), idx, "int64")


def test_nan_and_inf(device: str) -> None:
    """A NaN wins max and min (its first index); infinities are ordinary values."""
    bk = _backend(device)
    nan, inf = np.nan, np.inf
    data = np.array([[1.0, nan, 3.0, nan], [-inf, 2.0, inf, inf], [5.0, 5.0, -1.0, -1.0],
                     [nan, nan, nan, nan]], np.float32)
    x = _prim(burn.tensor(data, device=device))
    for name in ("max", "min"):
        arg = getattr(np, f"arg{name}")
        for dim in (0, 1):
            values, indices = getattr(bk, f"float_{name}_dim_with_indices")(x, dim)
            want = np.take_along_axis(data, arg(data, axis=dim, keepdims=True), axis=dim)
            _check(values, torch.from_numpy(want), exact=True)
            _check(indices, torch.from_numpy(arg(data, axis=dim, keepdims=True)), "int64")
        whole = getattr(bk, f"float_{name}")(x)
        assert np.isnan(host_array(whole))
        finite = x.view((2, 4), (4, 1), 4)  # rows 1 and 2: inf and -inf, no NaN
        _check(getattr(bk, f"float_{name}")(finite),
               torch.tensor(getattr(np, name)(data[1:3])), exact=True)
    _check(bk.float_sum_dim(x, 1), torch.from_numpy(data).sum(1, keepdim=True))


@pytest.mark.parametrize("n", [127, 128, 300, 1000])
def test_long_rows(device: str, n: int) -> None:
    """Rows around the per-cube threshold (a shared-memory tree on GPU runtimes), with the max
    at a late tie and NaN in one row."""
    bk = _backend(device)
    rng = np.random.default_rng(n)
    data = rng.standard_normal((3, n)).astype(np.float32)
    data[0, [n // 3, n - 1]] = 9.0
    data[1, [n // 2, n - 3]] = np.nan
    x = _prim(burn.tensor(data, device=device))
    ref = torch.from_numpy(data)
    for t, axis in ((x, 1), (_prim(burn.tensor(data, device=device).swap_dims(0, 1)), 0)):
        host = data if axis == 1 else data.T
        values, indices = bk.float_max_dim_with_indices(t, axis)
        _check(indices, torch.from_numpy(np.argmax(host, axis=axis, keepdims=True)), "int64")
        _check(values, torch.from_numpy(np.max(host, axis=axis, keepdims=True)), exact=True)
        _check(bk.float_argmin(t, axis),
               torch.from_numpy(np.argmin(host, axis=axis, keepdims=True)), "int64")
        _check(bk.float_sum_dim(t, axis),
               torch.from_numpy(host.astype(np.float64).sum(axis, keepdims=True)).float())
        _check(bk.float_mean_dim(t, axis),
               torch.from_numpy(host.astype(np.float64).mean(axis, keepdims=True)).float())
    _check(bk.softmax(x, 1), torch.softmax(ref, 1))
    _check(bk.log_softmax(x, 1), torch.log_softmax(ref, 1))
    ints = _prim(burn.tensor(rng.integers(-50, 50, (2, n)), device=device, dtype=burn.int64))
    _check(bk.int_sum_dim(ints, 1),
           torch.from_numpy(np.array(host_array(ints))).sum(1, keepdim=True))


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_strided_rows_reduced_in_chunks(device: str, dtype: str) -> None:
    """Rows whose elements are strided and whose starts are adjacent (a sum over a leading
    dim, as a bias gradient's) reduce on GPU runtimes in chunks a unit each, then the
    chunks' results (`_column_chunks`): sums, products, max and min as torch's, whether the
    chunks divide the rows (8192) or leave a shorter last one (129, 1000), along outer and
    middle dims, on a sliced view too, and the same again (the planned launches)."""
    rng = np.random.default_rng(5)
    cases = [((8192, 48), 0), ((129, 7), 0), ((1000, 3, 40), 0), ((4, 3000, 5), 1)]
    for shape, dim in cases:
        data = np.round(rng.standard_normal(shape) * 3).astype(dtype)  # (sums exact)
        views = [(burn.tensor(data, device=device), data)]
        if shape == (1000, 3, 40):  # every other row of a larger tensor
            wide = np.repeat(data, 2, axis=0)
            views.append((burn.tensor(wide, device=device)[::2], wide[::2]))
        for x, host in views:
            ref = torch.from_numpy(np.ascontiguousarray(host))
            small = x.clamp(-1, 1) if dtype == "int32" else x / 64 + 1
            small_ref = ref.clamp(-1, 1) if dtype == "int32" else ref / 64 + 1
            wide_ref = ref if dtype == "int32" else ref.double()
            for _ in range(2):
                pairs = [(x.sum(dim), wide_ref.sum(dim).to(ref.sum(dim).dtype)),
                         (x.amax(dim), ref.amax(dim)),
                         (x.amin(dim), ref.amin(dim))]
                if shape[dim] <= 1000:  # (float products drift with their length)
                    pairs.append((small.prod(dim), small_ref.prod(dim)))
                for got, want in pairs:
                    _check(_prim(got), want)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "bool"])
def test_rows_reduced_in_two_passes(device: str, dtype: str,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows past `LONG_ROW` (made 1000 here) reduce on GPU runtimes in `ROW_CHUNK`-element
    chunks (made 128), then the chunks' results: values, first-occurrence indices (a NaN
    winning), means and int / bool widening as one pass gives, along inner, outer and middle
    dims, with and without a short last chunk, on strided views."""
    monkeypatch.setattr(red, "LONG_ROW", 1000)
    monkeypatch.setattr(red, "ROW_CHUNK", 128)
    rng = np.random.default_rng(3)
    cases = [((1, 3001), 1), ((3, 1024), 1), ((2, 1300, 3), 1), ((1025, 2), 0), ((5000,), 0)]
    for shape, dim in cases:
        data = rng.standard_normal(shape) * 3
        if dtype == "bool":
            data = data > 4
        elif dtype == "int32":
            data = np.round(data).astype(np.int32)
        else:
            data = data.astype(dtype)
            data.reshape(-1)[[7, 1500]] = np.nan if shape == (3, 1024) else data.reshape(-1)[7]
        x = burn.tensor(data, device=device)
        ref = torch.from_numpy(data)
        if shape == (2, 1300, 3):  # a strided view of the same values
            x = burn.tensor(np.ascontiguousarray(data.transpose(2, 1, 0)),
                            device=device).permute(2, 1, 0)
        if dtype == "bool":
            pairs = [(x.any(dim), ref.any(dim)), (x.all(dim), ref.all(dim)),
                     (x.sum(dim), ref.sum(dim))]
        else:
            small = x.clamp(-1, 1) if dtype == "int32" else x / 8 + 1
            small_ref = ref.clamp(-1, 1) if dtype == "int32" else ref / 8 + 1
            values, indices = x.max_dim_with_indices(dim)
            ref_max = ref.max(dim, keepdim=True)
            pairs = [(x.sum(dim), ref.sum(dim)), (small.prod(dim), small_ref.prod(dim)),
                     (x.amin(dim), ref.amin(dim)), (x.argmax(dim), ref.argmax(dim)),
                     (x.argmin(dim), ref.argmin(dim)), (values, ref_max.values),
                     (indices, ref_max.indices)]
            if dtype != "int32":
                pairs.append((x.mean(dim), ref.mean(dim)))
        for got, want in pairs:
            _check(_prim(got), want)


@pytest.mark.skipif("wgpu" not in DEVICES, reason="needs the wgpu backend")
def test_rows_past_llvmpipe_loop_limit() -> None:
    """A row of 2^24 + 3 floats on wgpu (Mesa's llvmpipe ends a unit's loops after 65535
    iterations: a cube per row summed 94% short): sum, mean and arg max against numpy, also
    under fusion (a fused reduce block over such rows runs at once, in two passes)."""
    n = (1 << 24) + 3
    data = np.random.default_rng(0).random((1, n), dtype=np.float32)
    data[0, n - 2] = 7.0
    want = data.astype(np.float64)
    for device in ("wgpu", "wgpu+fusion"):
        x = burn.tensor(data, device=device)
        np.testing.assert_allclose(x.sum(1).numpy(), want.sum(1), rtol=1e-5)
        np.testing.assert_allclose(x.mean(1).numpy(), want.mean(1), rtol=1e-5)
        np.testing.assert_allclose((x * x).sum(1).numpy(), (want * want).sum(1), rtol=1e-5)
        assert x.argmax(1).numpy().tolist() == [n - 2]


@pytest.mark.parametrize("dim", [0, 1])
def test_many_rows(device: str, dim: int) -> None:
    """Many rows, strided (dim 0: the cpu sweeps adjacent rows together) or dense (dim 1:
    interleaved accumulators), with ties, NaN and a length that is not a multiple of 4."""
    bk = _backend(device)
    rng = np.random.default_rng(8)
    data = np.round(rng.standard_normal((71, 130)) * 2).astype(np.float32)
    data[5, 7] = data[40, 3] = data[66, 129] = np.nan
    x, ref = _prim(burn.tensor(data, device=device)), torch.from_numpy(data)
    for name in ("max", "min"):
        arg = getattr(np, f"arg{name}")(data, axis=dim, keepdims=True)
        values, indices = getattr(bk, f"float_{name}_dim_with_indices")(x, dim)
        _check(indices, torch.from_numpy(arg), "int64")
        _check(values, torch.from_numpy(np.take_along_axis(data, arg, axis=dim)), exact=True)
    _check(bk.float_sum_dim(x, dim), ref.double().sum(dim, keepdim=True).float())
    _check(bk.float_mean_dim(x, dim), ref.mean(dim, keepdim=True))
    finite = np.nan_to_num(data)
    fx, fref = _prim(burn.tensor(finite, device=device)), torch.from_numpy(finite)
    _check(bk.softmax(fx, dim), torch.softmax(fref, dim))
    _check(bk.log_softmax(fx, dim), torch.log_softmax(fref, dim))
    ints = rng.integers(-3, 4, (71, 130))
    ix = _prim(burn.tensor(ints, device=device, dtype=burn.int64))
    _check(bk.int_argmax(ix, dim), torch.from_numpy(np.argmax(ints, axis=dim, keepdims=True)))
    _check(bk.int_prod_dim(_prim(burn.tensor(np.sign(ints), device=device, dtype=burn.int32)),
                           dim), torch.from_numpy(np.sign(ints)).prod(dim, keepdim=True))
    mask = ints > 2
    _check(bk.bool_any_dim(_prim(burn.tensor(mask, device=device)), dim),
           torch.from_numpy(mask).any(dim, keepdim=True))


def test_empty(device: str) -> None:
    """Empty rows give 0 / 1 / NaN / False / True; max / min of nothing raise; no rows give
    empty results."""
    bk = _backend(device)
    x = _prim(burn.tensor(np.zeros((0, 3), np.float32), device=device))
    _check(bk.float_sum(x), torch.tensor(0.0), exact=True)
    _check(bk.float_prod(x), torch.tensor(1.0), exact=True)
    _check(bk.int_sum(_prim(burn.tensor(np.zeros((2, 0), np.int32), device=device,
                                        dtype=burn.int32))), torch.tensor(0), "int64")
    _check(bk.float_sum_dim(x, 0), torch.zeros((1, 3)), exact=True)
    _check(bk.float_prod_dim(x, 0), torch.ones((1, 3)), exact=True)
    _check(bk.float_mean_dim(x, 0), torch.full((1, 3), torch.nan))
    _check(bk.float_sum_dim(x, 1), torch.zeros((0, 1)))
    _check(bk.float_argmax(x, 1), torch.zeros((0, 1), dtype=torch.int64))
    values, indices = bk.float_max_dim_with_indices(x, 1)
    assert values.shape == indices.shape == (0, 1)
    _check(bk.softmax(x, 1), torch.zeros((0, 3)))
    for op in ("float_max", "float_min"):
        with pytest.raises(ValueRangeError, match=op):
            getattr(bk, op)(x)
    with pytest.raises(ValueRangeError, match="float_argmax"):
        bk.float_argmax(x, 0)
    with pytest.raises(ValueRangeError, match="max"):
        burn.tensor(np.zeros((0, 3), np.float32), device=device).max()
    b = _prim(burn.tensor(np.zeros((0, 2), bool), device=device))
    _check(bk.bool_any(b), torch.tensor(False))
    _check(bk.bool_all(b), torch.tensor(True))
    _check(bk.bool_any_dim(b, 0), torch.zeros((1, 2), dtype=torch.bool))
    _check(bk.bool_all_dim(b, 0), torch.ones((1, 2), dtype=torch.bool))
    _check(bk.bool_argwhere(b), torch.zeros((0, 2), dtype=torch.int64))


# --- bool -------------------------------------------------------------------------------------
@pytest.mark.parametrize("view", list(VIEWS))
def test_any_all(device: str, view: str) -> None:
    bk = _backend(device)
    shape, fn = VIEWS[view]
    rng = np.random.default_rng(3)
    for p in (0.0, 0.15, 1.0):
        data = rng.random(shape) < p
        x, ref = _prim(fn(burn.tensor(data, device=device))), fn(torch.from_numpy(data))
        _check(bk.bool_any(x), torch.any(ref))
        _check(bk.bool_all(x), torch.all(ref))
        for dim in range(3):
            _check(bk.bool_any_dim(x, dim), torch.any(ref, dim, keepdim=True))
            _check(bk.bool_all_dim(x, dim), torch.all(ref, dim, keepdim=True))


@pytest.mark.parametrize("view", list(VIEWS))
def test_argwhere(device: str, view: str) -> None:
    bk = _backend(device)
    shape, fn = VIEWS[view]
    rng = np.random.default_rng(4)
    for p in (0.0, 0.3, 1.0):
        data = rng.random(shape) < p
        x, ref = _prim(fn(burn.tensor(data, device=device))), fn(torch.from_numpy(data))
        _check(bk.bool_argwhere(x), torch.argwhere(ref))


def test_argwhere_large(device: str) -> None:
    """Many chunks; the public API's nonzero-style callers see the same coordinates."""
    bk = _backend(device)
    data = np.random.default_rng(5).random((300, 700)) < 0.01
    x = burn.tensor(data, device=device)
    _check(bk.bool_argwhere(_prim(x)), torch.argwhere(torch.from_numpy(data)))
    np.testing.assert_array_equal(x.argwhere().numpy(), np.argwhere(data))
    flat = np.random.default_rng(6).random(200_001) < 0.5
    _check(bk.bool_argwhere(_prim(burn.tensor(flat, device=device))),
           torch.argwhere(torch.from_numpy(flat)))


# --- softmax ----------------------------------------------------------------------------------
@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("log", [False, True])
def test_softmax(device: str, view: str, log: bool) -> None:
    bk = _backend(device)
    ref_fn = torch.log_softmax if log else torch.softmax
    for dtype in FLOATS[device]:
        x, ref = _operand(device, view, dtype)
        for dim in range(3):
            got = (bk.log_softmax if log else bk.softmax)(x, dim)
            _check(got, ref_fn(ref.double(), dim).to(ref.dtype))


def test_softmax_edges(device: str) -> None:
    """Large values do not overflow; -inf entries get 0 (log: -inf); NaN / +inf rows are NaN
    (as torch)."""
    data = np.array([[1000.0, 1001.0, 999.0], [-np.inf, 0.0, 1.0], [np.nan, 0.0, 1.0],
                     [np.inf, 0.0, 1.0]], np.float32)
    x = burn.tensor(data, device=device)
    for burn_fn, torch_fn in ((F.softmax, torch.softmax), (F.log_softmax, torch.log_softmax)):
        got = burn_fn(x, -1)
        want = torch_fn(torch.from_numpy(data), -1)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_public_api(device: str) -> None:
    """The frontend's reductions reach the kernels."""
    rng = np.random.default_rng(7)
    data = rng.standard_normal((4, 6)).astype(np.float32)
    x, ref = burn.tensor(data, device=device), torch.from_numpy(data)
    np.testing.assert_allclose(x.sum().numpy(), ref.sum().numpy(), rtol=1e-5)
    np.testing.assert_allclose(x.mean(1).numpy(), ref.mean(1).numpy(), rtol=1e-5)
    np.testing.assert_array_equal(x.max(0).numpy(), ref.amax(0).numpy())
    np.testing.assert_array_equal(x.argmin(1).numpy(), ref.argmin(1).numpy())
    np.testing.assert_allclose(F.softmax(x, 0).numpy(), torch.softmax(ref, 0).numpy(),
                               rtol=1e-5, atol=1e-6)
    mask = x > 0
    assert bool(mask.any().item()) and not bool(mask.all().item())


# --- kernels ----------------------------------------------------------------------------------
def _cuda_cases() -> Iterator[tuple[str, tuple[Any, ...]]]:
    import burn_cube as bc

    ones = np.ones((4, 5), np.float32)
    for op in COMBINES:
        for flat in (False, True):
            for schedule in SCHEDULES:
                for dtypes, indexed in (((bc.f16, bc.f32, bc.f16), op in ("max", "min")),
                                        ((bc.i32, bc.i64, bc.i64), False),
                                        ((bc.bool_, bc.i32, bc.bool_), False)):
                    units = TREE_DIM if schedule in ("tree", "plane") else 64
                    kern = reduce_kernel(op, dtypes, 2, flat, schedule, units,
                                         (True, indexed), op == "sum")
                    x = np.ones((4, 5), dtypes[0].numpy)
                    outs = [np.zeros(4, dtypes[2].numpy)] + ([np.zeros(4, np.int64)]
                                                             if indexed else [])
                    yield f"reduce_{op}", (kern, units, x, 5, 1, *outs)
    for schedule in SCHEDULES:
        for log in (False, True):
            units = TREE_DIM if schedule in ("tree", "plane") else 1
            kern = softmax_kernel((bc.f32, bc.f32), 2, schedule, units, log)
            yield "softmax", (kern, units, ones, 5, 1, ones.copy(), 1)
    yield "argwhere", (argwhere_kernel(2, 64), 64, ones > 0, np.zeros(2, np.int64), 20, 10,
                       np.zeros(40, np.int64))


def test_cuda_sources() -> None:
    """Every kernel shape (schedules, layouts, index outputs, dtypes) generates CUDA C."""
    for name, (kern, units, *args) in _cuda_cases():
        source = kern.source("cuda", units, *args)
        assert "__global__" in source, name


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_every_schedule(device: str, schedule: str) -> None:
    """Each schedule on each runtime, whichever the backend would pick there: sums, arg max
    with ties and NaN, and softmax, rows strided in memory."""
    import burn_cube as bc

    bk = _backend(device)
    rng = np.random.default_rng(9)
    data = np.round(rng.standard_normal((301, 5)) * 2).astype(np.float32)
    data[[10, 200], 2] = np.nan
    x = _prim(burn.tensor(data, device=device))
    rows = x.view((5,), (1,))  # row r: data[:, r], elements 5 apart
    units = TREE_DIM if schedule in ("tree", "plane") else 2
    cubes = 5 if schedule in ("tree", "plane") else 3
    total, best = bk.empty((5,), burn.float32), bk.empty((5,), burn.int64)
    reduce_kernel("sum", (bc.f32,) * 3, 1, False, schedule, units, (True, False)).launch(
        bk.runtime, (cubes, 1, 1), units, rows.array, 301, 5, total.array)
    reduce_kernel("max", (bc.f32,) * 3, 1, False, schedule, units, (False, True)).launch(
        bk.runtime, (cubes, 1, 1), units, rows.array, 301, 5, best.array)
    np.testing.assert_allclose(host_array(total), data.astype(np.float64).sum(0), rtol=1e-6)
    np.testing.assert_array_equal(host_array(best), np.argmax(data, 0))
    finite = np.nan_to_num(data)
    fx = _prim(burn.tensor(finite, device=device))
    out = bk.empty(fx.shape, burn.float32)
    softmax_kernel((bc.f32, bc.f32), 1, schedule, units, False).launch(
        bk.runtime, (cubes, 1, 1), units, fx.view((5,), (1,)).array, 301, 5,
        out.view((5,), (1,)).array, 5)
    np.testing.assert_allclose(host_array(out), torch.softmax(torch.from_numpy(finite), 0),
                               rtol=1e-5, atol=1e-7)


def test_collapse() -> None:
    assert red.collapse((2, 1, 3, 4), (12, 12, 4, 1)) == ((24,), ((1,),))
    assert red.collapse((2, 3), (1, 2)) == ((2, 3), ((1, 2),))
    assert red.collapse((1, 1), (5, 7)) == ((1,), ((1,),))
    assert red.collapse((4, 5), (0, 0), (5, 1)) == ((20,), ((0,), (1,)))


def test_cpu_row_kernels_weigh_their_units_by_row_length(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cpu runtime spreads a launch over its threads by units times `unit_work`: every row
    kernel (reductions, softmax, layer norm, cross entropy, the fused reduce) names its row
    length there, so a few long rows (a [64, 1031] sum) use the threads like many short ones;
    results against torch."""
    from burn_cube.runtime.cpu import CpuRuntime

    planned: dict[str, str | None] = {}
    plan = CpuRuntime.plan

    def recording(self: Any, compiled: Any, kernel: Any, *args: Any) -> Any:
        planned[kernel.name] = kernel.unit_work
        return plan(self, compiled, kernel, *args)

    monkeypatch.setattr(CpuRuntime, "plan", recording)
    rng = np.random.default_rng(7)
    data = rng.standard_normal((64, 1031)).astype(np.float32)  # (a layout no other test plans)
    weight = rng.standard_normal(1031).astype(np.float32)
    target = rng.integers(0, 1031, 64)
    x, w, t = torch.from_numpy(data), torch.from_numpy(weight), torch.from_numpy(target)
    for spec in ("cpu", "cpu+fusion"):
        bx, bw = burn.tensor(data, device=spec), burn.tensor(weight, device=spec)
        bt = burn.tensor(target, device=spec)
        results = {
            "sum": (bx.sum(1), x.sum(1)),
            "softmax": (F.softmax(bx, 1), torch.softmax(x, 1)),
            "layer norm": (F.layer_norm(bx, 1031, bw), torch.nn.functional.layer_norm(
                x, (1031,), w)),
            "cross entropy": (F.cross_entropy(bx, bt), torch.nn.functional.cross_entropy(x, t)),
            "mean of squares": ((bx * bx).mean_dim(1).squeeze(1), (x * x).mean(1)),
        }
        for name, (ours, theirs) in results.items():
            assert tuple(ours.shape) == tuple(theirs.shape), name
            np.testing.assert_allclose(ours.to_numpy(), theirs.numpy(), rtol=1e-4, atol=1e-5,
                                       err_msg=name)
    rows = {name: work for name, work in planned.items()
            if name.startswith(("reduce_", "softmax", "layer_norm", "cross_entropy_rows",
                                "fused_reduce"))}
    assert {"reduce_sum", "softmax_rows_cpu", "layer_norm_rows_cpu", "cross_entropy_rows"} \
        <= rows.keys() and any(name.startswith("fused_reduce") for name in rows), planned
    assert all(work in ("n", "classes") for work in rows.values()), rows
