"""Indexing (t[...], t[...] = v, slice_assign, select ... one_hot) against torch.

Indexing keys follow NumPy (negative steps included, which torch lacks), so the torch reference of
`x[key]` is `x.reshape(-1)[flat]` with `flat = np.arange(x.numel()).reshape(x.shape)[key]`:
numpy decides which elements, torch does the (differentiable) gathering.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import burn
from burn.errors import ValueRangeError

from .reference import (
    GRAD_DTYPES,
    T,
    burn_tensor,
    check_backward,
    check_forward,
    op_param,
    rand,
)

SHAPE = (4, 5, 6)
Key = tuple[Any, ...]

KEYS: list[tuple[str, Key]] = [
    ("int", (1,)),
    ("neg-int", (-1,)),
    ("slice", (slice(1, 3),)),
    ("step", (slice(None, None, 2),)),
    ("neg-step", (slice(None, None, -1),)),
    ("neg-start", (slice(-2, None),)),
    ("ellipsis-int", (Ellipsis, 1)),
    ("ellipsis-neg-step", (Ellipsis, slice(None, None, -2))),
    ("none", (None, 1)),
    ("mixed", (slice(None), None, slice(1, 5, 3))),
    ("0d", (1, -2, 3)),
    ("rev-ellipsis-none", (slice(5, 1, -2), Ellipsis, None)),
    ("empty", (slice(3, 3),)),
    ("out-of-range-slice", (slice(10, 20),)),
    ("steps-all-dims", (slice(3, None, -2), slice(1, None, 2), slice(-1, 0, -3))),
    ("bool-mask", (np.arange(120).reshape(SHAPE) % 3 == 0,)),
    ("bool-dim0", (np.array([True, False, True, True]),)),
    ("int-tensor", (np.array([3, 0, 0, -1]),)),
    ("slice-int-tensor", (slice(None), np.array([0, 2]))),
]
SETITEM_KEYS = [k for k in KEYS if k[0] not in ("int-tensor",)]  # no duplicate targets


def _burn_key(key: Key, device: burn.Device) -> Key:
    out = []
    for k in key:
        if isinstance(k, np.ndarray):
            dt = burn.bool_ if k.dtype == np.bool_ else burn.int64
            out.append(burn_tensor(k, dt, device))
        else:
            out.append(k)
    return tuple(out)


def _flat(shape: tuple[int, ...], key: Key) -> torch.Tensor:
    return torch.from_numpy(np.array(np.arange(int(np.prod(shape))).reshape(shape)[key]))


def _torch_getitem(key: Key) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda x: x.reshape(-1)[_flat(tuple(x.shape), key)]


def _torch_setitem(key: Key) -> Callable[[torch.Tensor, Any], torch.Tensor]:
    def f(x: torch.Tensor, v: Any) -> torch.Tensor:
        idx = _flat(tuple(x.shape), key)
        out = x.clone(memory_format=torch.contiguous_format)
        flat = out.view(-1)
        v = v if isinstance(v, torch.Tensor) else torch.tensor(v, dtype=x.dtype)
        flat[idx] = v.to(x.dtype).expand(idx.shape)
        return out
    return f


def _value_shape(key: Key) -> tuple[int, ...]:
    return np.zeros(SHAPE)[key].shape


GETITEM_DTYPES = [("float32", "contiguous"), ("float64", "transposed"), ("int64", "strided"),
                  ("bool", "contiguous")]


@pytest.mark.parametrize("kid,key", [pytest.param(k, v, id=k) for k, v in KEYS])
@pytest.mark.parametrize("dtype,layout", GETITEM_DTYPES)
@pytest.mark.op("getitem")
def test_getitem(kid: str, key: Key, dtype: str, layout: str, device: burn.Device,
                 rng: np.random.Generator) -> None:
    bkey = _burn_key(key, device)
    check_forward(lambda x: x[bkey], _torch_getitem(key), [T(rand(rng, SHAPE, dtype), dtype,
                                                             layout)], device)


@pytest.mark.parametrize("kid,key", [pytest.param(k, v, id=k) for k, v in KEYS])
@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.op("getitem")
def test_getitem_backward(kid: str, key: Key, dtype: str, grad_device: burn.Device,
                          rng: np.random.Generator) -> None:
    if _value_shape(key) and 0 in _value_shape(key):
        key = (slice(0, 2),)  # an empty result has no gradient to compare: use a plain slice
    bkey = _burn_key(key, grad_device)
    check_backward(lambda x: x[bkey], _torch_getitem(key),
                   [T(rand(rng, SHAPE, dtype), dtype, "transposed")], grad_device, rng)


@pytest.mark.parametrize("kid,key", [pytest.param(k, v, id=k) for k, v in SETITEM_KEYS])
@pytest.mark.parametrize("dtype,layout", GETITEM_DTYPES[:3])
@pytest.mark.op("setitem")
def test_setitem(kid: str, key: Key, dtype: str, layout: str, device: burn.Device,
                 rng: np.random.Generator) -> None:
    bkey = _burn_key(key, device)

    def fb(x: Any, v: Any) -> Any:
        x[bkey] = v
        return x

    x = T(rand(rng, SHAPE, dtype), dtype, layout)
    v = T(rand(rng, _value_shape(key), dtype), dtype)
    check_forward(fb, _torch_setitem(key), [x, v], device)
    scalar = 7 if dtype == "int64" else 2.5
    check_forward(lambda t: fb(t, scalar), lambda t: _torch_setitem(key)(t, scalar), [x], device)
    if _value_shape(key) and _value_shape(key)[-1] > 1:  # a value that broadcasts
        vb = T(rand(rng, _value_shape(key)[-1:], dtype), dtype)
        check_forward(fb, _torch_setitem(key), [x, vb], device)


@pytest.mark.parametrize("kid,key", [pytest.param(k, v, id=k) for k, v in SETITEM_KEYS
                                     if k in ("slice", "neg-step", "steps-all-dims", "bool-mask",
                                              "ellipsis-int", "slice-int-tensor")])
@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.op("setitem")
def test_setitem_backward(kid: str, key: Key, dtype: str, grad_device: burn.Device,
                          rng: np.random.Generator) -> None:
    bkey = _burn_key(key, grad_device)

    def fb(x: Any, v: Any) -> Any:
        y = x * 1.0
        y[bkey] = v
        return y

    x = T(rand(rng, SHAPE, dtype), dtype, "transposed")
    v = T(rand(rng, _value_shape(key), dtype), dtype)
    check_backward(fb, _torch_setitem(key), [x, v], grad_device, rng)


SLICES: list[tuple[slice, ...]] = [
    (slice(1, 3),),
    (slice(0, 4, 2), slice(1, 5)),
    (slice(3, None, -1), slice(0, 5, 3), slice(5, 0, -2)),
]


@pytest.mark.parametrize("slices", SLICES, ids=str)
@pytest.mark.parametrize("dtype,layout", GETITEM_DTYPES)
@pytest.mark.op("slice_assign")
def test_slice_assign(slices: tuple[slice, ...], dtype: str, layout: str, device: burn.Device,
                      rng: np.random.Generator) -> None:
    x = T(rand(rng, SHAPE, dtype), dtype, layout)
    v = T(rand(rng, _value_shape(slices), dtype), dtype, layout)
    check_forward(lambda a, b: a.slice_assign(slices, b), _torch_setitem(slices), [x, v], device)


@pytest.mark.parametrize("slices", SLICES, ids=str)
@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.op("slice_assign")
def test_slice_assign_backward(slices: tuple[slice, ...], dtype: str, grad_device: burn.Device,
                               rng: np.random.Generator) -> None:
    x = T(rand(rng, SHAPE, dtype), dtype, "transposed")
    v = T(rand(rng, _value_shape(slices), dtype), dtype)
    check_backward(lambda a, b: a.slice_assign(slices, b), _torch_setitem(slices), [x, v],
                   grad_device, rng)


# ---------------------------------------------------------------- select / gather / scatter

IDX_DTYPES = [("float32", "contiguous"), ("float64", "transposed"), ("int64", "strided"),
              ("int32", "contiguous"), ("bool", "transposed")]


def _idx(a: np.ndarray) -> T:
    return T(a, "int64", grad=False)


def _select_cases(rng: np.random.Generator, dtype: str, layout: str) -> list[tuple[Any, ...]]:
    x = T(rand(rng, (4, 5), dtype), dtype, layout)
    return [(x, 0, _idx(np.array([3, 0, 3, 1]))), (x, 1, _idx(np.array([4, 2]))),
            (x, 1, _idx(np.zeros((0,), dtype=np.int64)))]


@pytest.mark.parametrize("name,dtype,layout", [op_param(n, d, lay) for n in
                                               ("select", "index_select")
                                               for d, lay in IDX_DTYPES])
def test_select(name: str, dtype: str, layout: str, device: burn.Device,
                rng: np.random.Generator) -> None:
    for x, dim, idx in _select_cases(rng, dtype, layout):
        check_forward(lambda a, i, dim=dim: getattr(a, name)(dim, i),
                      lambda a, i, dim=dim: torch.index_select(a, dim, i), [x, idx], device)


@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.op("select")
def test_select_backward(dtype: str, grad_device: burn.Device, rng: np.random.Generator) -> None:
    for x, dim, idx in _select_cases(rng, dtype, "transposed")[:2]:
        check_backward(lambda a, i, dim=dim: a.select(dim, i),
                       lambda a, i, dim=dim: torch.index_select(a, dim, i), [x, idx],
                       grad_device, rng)


@pytest.mark.parametrize("dtype,layout", IDX_DTYPES[:4])
@pytest.mark.op("select_assign")
def test_select_assign(dtype: str, layout: str, device: burn.Device,
                       rng: np.random.Generator) -> None:
    x = T(rand(rng, (4, 5), dtype), dtype, layout)
    idx = _idx(np.array([3, 0, 3]))
    v = T(rand(rng, (4, 3), dtype), dtype, layout)
    check_forward(lambda a, i, b: a.select_assign(0, i, b),
                  lambda a, i, b: torch.index_add(a, 0, i, b),
                  [x, idx, T(rand(rng, (3, 5), dtype), dtype)], device)
    check_forward(lambda a, i, b: a.select_assign(1, i, b),
                  lambda a, i, b: torch.index_add(a, 1, i, b), [x, idx, v], device)


@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.op("select_assign")
def test_select_assign_backward(dtype: str, grad_device: burn.Device,
                                rng: np.random.Generator) -> None:
    x = T(rand(rng, (4, 5), dtype), dtype, "transposed")
    idx = _idx(np.array([3, 0, 3]))
    v = T(rand(rng, (4, 3), dtype), dtype)
    check_backward(lambda a, i, b: a.select_assign(1, i, b),
                   lambda a, i, b: torch.index_add(a, 1, i, b), [x, idx, v], grad_device, rng)


@pytest.mark.parametrize("dtype,layout", IDX_DTYPES)
@pytest.mark.op("select_assign")
def test_select_assign_assign(dtype: str, layout: str, device: burn.Device,
                              rng: np.random.Generator) -> None:
    x = T(rand(rng, (4, 5), dtype), dtype, layout)
    for dim, idx, vshape in ((0, [3, 0, -2], (3, 5)), (1, [4, 1], (4, 2)), (1, [], (4, 0))):
        v = T(rand(rng, vshape, dtype), dtype, layout)
        check_forward(lambda a, i, b, d=dim: a.select_assign(d, i, b, update="assign"),
                      lambda a, i, b, d=dim: a.index_copy(d, i % a.shape[d], b),
                      [x, _idx(np.array(idx, dtype=np.int64)), v], device)
    with pytest.raises(ValueRangeError, match="select_assign"):
        burn.zeros(2, 2, device=device).select_assign(0, burn.tensor([0], device=device),
                                                      burn.zeros(1, 2, device=device), "mul")


@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.op("select_assign")
def test_select_assign_assign_backward(dtype: str, grad_device: burn.Device,
                                       rng: np.random.Generator) -> None:
    x = T(rand(rng, (4, 5), dtype), dtype, "transposed")
    v = T(rand(rng, (4, 2), dtype), dtype)
    check_backward(lambda a, i, b: a.select_assign(1, i, b, "assign"),
                   lambda a, i, b: a.index_copy(1, i, b), [x, _idx(np.array([4, 1])), v],
                   grad_device, rng)


def _gather_cases(rng: np.random.Generator, dtype: str, layout: str) -> list[tuple[Any, ...]]:
    x = T(rand(rng, (3, 4), dtype), dtype, layout)
    return [(x, 0, _idx(rng.integers(0, 3, size=(2, 4)))),
            (x, 1, _idx(rng.integers(0, 4, size=(3, 6)))),
            (T(rand(rng, (2, 3, 4), dtype), dtype, layout), -1,
             _idx(rng.integers(0, 4, size=(2, 3, 2))))]


@pytest.mark.parametrize("dtype,layout", IDX_DTYPES)
@pytest.mark.op("gather")
def test_gather(dtype: str, layout: str, device: burn.Device, rng: np.random.Generator) -> None:
    for x, dim, idx in _gather_cases(rng, dtype, layout):
        check_forward(lambda a, i, dim=dim: a.gather(dim, i),
                      lambda a, i, dim=dim: torch.gather(a, dim, i), [x, idx], device)


@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.op("gather")
def test_gather_backward(dtype: str, grad_device: burn.Device, rng: np.random.Generator) -> None:
    for x, dim, idx in _gather_cases(rng, dtype, "transposed"):
        check_backward(lambda a, i, dim=dim: a.gather(dim, i),
                       lambda a, i, dim=dim: torch.gather(a, dim, i), [x, idx], grad_device, rng)


def _unique_scatter_index(rng: np.random.Generator, shape: tuple[int, int], n: int,
                          dim: int) -> np.ndarray:
    """Indices along `dim` without repeats in any line (assign-scatter is then deterministic)."""
    rows, cols = shape
    if dim == 0:
        return np.stack([rng.permutation(n)[:rows] for _ in range(cols)], axis=1)
    return np.stack([rng.permutation(n)[:cols] for _ in range(rows)], axis=0)


@pytest.mark.parametrize("name,dtype,layout", [op_param(n, d, lay) for n in
                                               ("scatter", "scatter_add")
                                               for d, lay in IDX_DTYPES[:4]])
def test_scatter(name: str, dtype: str, layout: str, device: burn.Device,
                 rng: np.random.Generator) -> None:
    x = T(rand(rng, (4, 5), dtype), dtype, layout)
    for dim, vshape in ((0, (3, 5)), (1, (4, 3))):
        dup = rng.integers(0, x.data.shape[dim], size=vshape)
        uniq = _unique_scatter_index(rng, vshape, x.data.shape[dim], dim)
        v = T(rand(rng, vshape, dtype), dtype, layout)
        if name == "scatter":
            check_forward(lambda a, i, b, dim=dim: a.scatter(dim, i, b),
                          lambda a, i, b, dim=dim: torch.scatter(a, dim, i, b),
                          [x, _idx(uniq), v], device)
            check_forward(lambda a, i, b, dim=dim: a.scatter(dim, i, b, reduce="assign"),
                          lambda a, i, b, dim=dim: torch.scatter(a, dim, i, b),
                          [x, _idx(uniq), v], device)
            check_forward(lambda a, i, b, dim=dim: a.scatter(dim, i, b, reduce="add"),
                          lambda a, i, b, dim=dim: torch.scatter_add(a, dim, i, b),
                          [x, _idx(dup), v], device)
        else:
            check_forward(lambda a, i, b, dim=dim: a.scatter_add(dim, i, b),
                          lambda a, i, b, dim=dim: torch.scatter_add(a, dim, i, b),
                          [x, _idx(dup), v], device)


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in ("scatter", "scatter_add")
                                        for d in GRAD_DTYPES])
def test_scatter_backward(name: str, dtype: str, grad_device: burn.Device,
                          rng: np.random.Generator) -> None:
    x = T(rand(rng, (4, 5), dtype), dtype, "transposed")
    v = T(rand(rng, (4, 3), dtype), dtype)
    if name == "scatter":
        idx = _idx(_unique_scatter_index(rng, (4, 3), 5, 1))
        check_backward(lambda a, i, b: a.scatter(1, i, b),
                       lambda a, i, b: torch.scatter(a, 1, i, b), [x, idx, v], grad_device, rng)
    idx = _idx(rng.integers(0, 5, size=(4, 3)))
    check_backward(lambda a, i, b: a.scatter_add(1, i, b),
                   lambda a, i, b: torch.scatter_add(a, 1, i, b), [x, idx, v], grad_device, rng)


def _nd_take(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    return x[tuple(idx[..., i] for i in range(idx.shape[-1]))]


def _nd_put(x: torch.Tensor, idx: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    out[tuple(idx[..., i] for i in range(idx.shape[-1]))] = v
    return out


@pytest.mark.parametrize("dtype,layout", IDX_DTYPES)
@pytest.mark.op("gather_nd")
def test_gather_nd(dtype: str, layout: str, device: burn.Device, rng: np.random.Generator) -> None:
    x = T(rand(rng, (3, 4, 2), dtype), dtype, layout)
    for k, batch in ((1, (5,)), (2, (2, 3)), (3, (4,))):
        idx = np.stack([rng.integers(0, n, size=batch) for n in (3, 4, 2)[:k]], axis=-1)
        check_forward(lambda a, i: a.gather_nd(i), _nd_take, [x, _idx(idx)], device)


@pytest.mark.parametrize("dtype,layout", IDX_DTYPES)
@pytest.mark.op("scatter_nd")
def test_scatter_nd(dtype: str, layout: str, device: burn.Device,
                    rng: np.random.Generator) -> None:
    x = T(rand(rng, (3, 4, 2), dtype), dtype, layout)
    for k, vshape in ((1, (2, 4, 2)), (2, (3, 2)), (3, (5,))):
        coords = np.array(list(np.ndindex(*(3, 4, 2)[:k])))
        pick = coords[rng.permutation(len(coords))[:vshape[0]]]
        v = T(rand(rng, vshape, dtype), dtype)
        check_forward(lambda a, i, b: a.scatter_nd(i, b), _nd_put, [x, _idx(pick), v], device)


TORCH_REDUCE = {"add": "sum", "mul": "prod", "min": "amin", "max": "amax"}


def _nd_reduce(reduce: str) -> Any:
    """torch reference of scatter_nd with `reduce`: scatter_reduce over the flattened first k
    dims (include_self, as Burn's update ops)."""
    def ref(x: torch.Tensor, idx: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        k = idx.shape[-1]
        rows = int(np.prod(x.shape[:k]))
        flat = torch.zeros(idx.shape[:-1], dtype=torch.int64)
        for j in range(k):
            flat = flat * x.shape[j] + idx[..., j]
        table = x.reshape((rows,) + x.shape[k:])
        vv = v.reshape((-1,) + x.shape[k:])
        where = flat.reshape((-1,) + (1,) * (x.ndim - k)).expand(vv.shape)
        return table.scatter_reduce(0, where, vv, TORCH_REDUCE[reduce]).reshape(x.shape)
    return ref


@pytest.mark.parametrize("dtype,layout", IDX_DTYPES[:4])
@pytest.mark.parametrize("reduce", ["add", "mul", "min", "max"])
@pytest.mark.op("scatter_nd")
def test_scatter_nd_reduce(reduce: str, dtype: str, layout: str, device: burn.Device,
                           rng: np.random.Generator) -> None:
    x = T(rand(rng, (3, 4, 2), dtype), dtype, layout)
    for k, vshape in ((1, (2, 4, 2)), (2, (3, 2)), (3, (5,))):
        coords = np.array(list(np.ndindex(*(3, 4, 2)[:k])))
        pick = coords[rng.permutation(len(coords))[:vshape[0]]]
        if reduce == "add":  # repeats accumulate
            pick = np.concatenate([pick, pick[:1]])
            vshape = (vshape[0] + 1,) + vshape[1:]
        v = T(rand(rng, vshape, dtype), dtype)
        check_forward(lambda a, i, b: a.scatter_nd(i, b, reduce), _nd_reduce(reduce),
                      [x, _idx(pick), v], device)
    with pytest.raises(ValueRangeError, match="scatter_nd"):
        burn.zeros(2, 2, device=device).scatter_nd(burn.tensor([[0]], device=device),
                                                   burn.zeros(1, 2, device=device), "sum")


@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.parametrize("reduce", ["add", "mul", "min", "max"])
@pytest.mark.op("scatter_nd")
def test_scatter_nd_reduce_backward(reduce: str, dtype: str, grad_device: burn.Device,
                                    rng: np.random.Generator) -> None:
    data = (rng.permutation(24).reshape(3, 4, 2) - 12) * 0.25 + 0.125  # distinct: no ties
    x = T(data.astype(np.float64), dtype, "transposed")
    coords = np.array(list(np.ndindex(3, 4)))[rng.permutation(12)[:5]]
    v = T((rng.permutation(10).reshape(5, 2) - 5) * 0.3 + 0.05, dtype)
    check_backward(lambda a, i, b: a.scatter_nd(i, b, reduce), _nd_reduce(reduce),
                   [x, _idx(coords), v], grad_device, rng)


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in ("gather_nd", "scatter_nd")
                                        for d in GRAD_DTYPES])
def test_nd_backward(name: str, dtype: str, grad_device: burn.Device,
                     rng: np.random.Generator) -> None:
    x = T(rand(rng, (3, 4, 2), dtype), dtype, "transposed")
    if name == "gather_nd":
        idx = np.stack([rng.integers(0, n, size=(2, 3)) for n in (3, 4)], axis=-1)
        check_backward(lambda a, i: a.gather_nd(i), _nd_take, [x, _idx(idx)], grad_device, rng)
    else:
        coords = np.array(list(np.ndindex(3, 4)))[rng.permutation(12)[:5]]
        v = T(rand(rng, (5, 2), dtype), dtype)
        check_backward(lambda a, i, b: a.scatter_nd(i, b), _nd_put, [x, _idx(coords), v],
                       grad_device, rng)


# ------------------------------------------------------------------------------- masks


def _mask(rng: np.random.Generator, shape: tuple[int, ...]) -> T:
    return T(rng.random(shape) < 0.4, "bool", grad=False)


MASK_DTYPES = [("float32", "contiguous"), ("float64", "transposed"), ("int64", "strided"),
               ("bool", "contiguous"), ("float16", "contiguous")]


@pytest.mark.parametrize("name,dtype,layout", [op_param(n, d, lay) for n in
                                               ("mask_where", "where") for d, lay in MASK_DTYPES])
def test_where(name: str, dtype: str, layout: str, device: burn.Device,
               rng: np.random.Generator) -> None:
    for xs, ms, vs in (((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), (3, 1)), ((2, 3), (), ()),
                       ((0, 3), (1, 3), (3,))):
        x = T(rand(rng, xs, dtype), dtype, layout)
        v = T(rand(rng, vs, dtype), dtype)
        m = _mask(rng, ms)
        if name == "mask_where":
            check_forward(lambda a, mm, b: a.mask_where(mm, b),
                          lambda a, mm, b: torch.where(mm, b, a), [x, m, v], device)
        else:
            check_forward(lambda mm, a, b: burn.where(mm, a, b), torch.where, [m, x, v], device)


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in ("mask_where", "where")
                                        for d in GRAD_DTYPES])
def test_where_backward(name: str, dtype: str, grad_device: burn.Device,
                        rng: np.random.Generator) -> None:
    x = T(rand(rng, (3, 4), dtype), dtype, "transposed")
    v = T(rand(rng, (3, 1), dtype), dtype)
    m = _mask(rng, (4,))
    if name == "mask_where":
        check_backward(lambda a, mm, b: a.mask_where(mm, b),
                       lambda a, mm, b: torch.where(mm, b, a), [x, m, v], grad_device, rng)
    else:
        check_backward(lambda mm, a, b: burn.where(mm, a, b), torch.where, [m, x, v],
                       grad_device, rng)


@pytest.mark.parametrize("name,dtype,layout", [op_param(n, d, lay) for n in
                                               ("mask_fill", "masked_fill")
                                               for d, lay in MASK_DTYPES])
def test_mask_fill(name: str, dtype: str, layout: str, device: burn.Device,
                   rng: np.random.Generator) -> None:
    value: Any = {"int64": 5, "bool": True}.get(dtype, -1.5)
    for xs, ms in (((3, 4), (3, 4)), ((3, 4), (3, 1)), ((0, 2), (0, 2)), ((), ())):
        x = T(rand(rng, xs, dtype), dtype, layout)
        m = _mask(rng, ms)
        check_forward(lambda a, mm: getattr(a, name)(mm, value),
                      lambda a, mm: torch.masked_fill(a, mm, value), [x, m], device)


@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.op("mask_fill")
def test_mask_fill_backward(dtype: str, grad_device: burn.Device,
                            rng: np.random.Generator) -> None:
    x = T(rand(rng, (3, 4), dtype), dtype, "transposed")
    check_backward(lambda a, mm: a.mask_fill(mm, 2.0), lambda a, mm: torch.masked_fill(a, mm, 2.0),
                   [x, _mask(rng, (3, 4))], grad_device, rng)


@pytest.mark.parametrize("dtype,layout", MASK_DTYPES)
@pytest.mark.op("mask_select")
def test_mask_select(dtype: str, layout: str, device: burn.Device,
                     rng: np.random.Generator) -> None:
    for xs in ((3, 4), (0, 3), ()):
        x = T(rand(rng, xs, dtype), dtype, layout)
        check_forward(lambda a, mm: a.mask_select(mm), torch.masked_select,
                      [x, _mask(rng, xs)], device)


@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.op("mask_select")
def test_mask_select_backward(dtype: str, grad_device: burn.Device,
                              rng: np.random.Generator) -> None:
    x = T(rand(rng, (3, 4), dtype), dtype, "transposed")
    m = T(np.arange(12).reshape(3, 4) % 3 == 1, "bool", grad=False)
    check_backward(lambda a, mm: a.mask_select(mm), torch.masked_select, [x, m], grad_device, rng)


@pytest.mark.parametrize("name,dtype,layout", [op_param(n, d, lay) for n in
                                               ("argwhere", "nonzero")
                                               for d, lay in MASK_DTYPES])
def test_argwhere_nonzero(name: str, dtype: str, layout: str, device: burn.Device,
                          rng: np.random.Generator) -> None:
    tf: Callable[[Any], Any] = (torch.argwhere if name == "argwhere"  # Burn: none gives []
                                else lambda a: list(torch.nonzero(a, as_tuple=True)) if
                                a.count_nonzero() else [])
    for xs in ((3, 4), (2, 3, 2), (5,), (0, 3)):
        data = rand(rng, xs, dtype, int_range=(-1, 2))
        if dtype != "bool":
            data = data * (rng.random(xs) < 0.5)
        check_forward(lambda a: getattr(a, name)(), tf, [T(data, dtype, layout)], device)


@pytest.mark.parametrize("dtype", ["int64"])
@pytest.mark.op("one_hot")
def test_one_hot(dtype: str, device: burn.Device, rng: np.random.Generator) -> None:
    for xs in ((5,), (2, 3), (0,)):
        x = T(rng.integers(0, 4, size=xs), dtype)
        check_forward(lambda a: a.one_hot(4), lambda a: tF.one_hot(a.long(), 4).to(a.dtype),
                      [x], device)
        check_forward(lambda a: burn.one_hot(a, 6), lambda a: tF.one_hot(a.long(), 6).to(a.dtype),
                      [x], device)

