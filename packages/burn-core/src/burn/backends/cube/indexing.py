"""Indexing kernels of the cube backends: select, select_assign, gather, scatter, embedding.

Inputs are read in place as strided views (broadcast, permuted, sliced); results are new dense
tensors. Indices arrive checked and wrapped (`checks.py`), but every kernel wraps negatives
again and never reads or writes out of bounds: an out-of-range index reads as 0 and writes
nothing.

Scatter (and select_assign, a scatter of indices broadcast over the values) is deterministic
and exact, with no float atomics: every output element is updated by one unit only, in
increasing index order along `dim`, so duplicate indices accumulate in index order with "add"
and the last one wins with "assign", exactly as the NumPy backend's `np.add.at` / fancy
assignment. A unit owns a line of the indices (every coordinate but `dim`) and walks it, or,
on a GPU when there are few lines, a unit owns one output element and scans its line for the
entries hitting it (more work, more parallelism); the depth is the indices' extent along
`dim` either way. Where that scan would be long (few long lines), GPUs take
`scatter_kernels`' linear paths instead: integer atomics for int adds, or the entries sorted
by target and each run walked in index order (the same results, but for float runs longer
than `scatter_kernels.RUN_BLOCK`, summed block by block). The cpu runtime's select_assign
reads each index once and adds its row over sequential memory (`scatter_kernels`).
float16 / bfloat16 accumulate in a float32 copy (as the NumPy backend computes them) that is
cast back once.
"""

from __future__ import annotations

import math
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from burn.dtype import DType
from burn.errors import ShapeError
from burn.ir.cube import cube_dtype

from .checks import CubeCheckOps
from .elementwise import CUBE_DIM, flat_view
from .kernel_cache import cached_kernel
from .layout import contiguous_copy, copy_into
from .scatter_kernels import (
    index_add_rows,
    scatter_atomic,
    scatter_sorted,
    select_assign_sorted,
)
from .scatter_kernels import path as scatter_path
from .tensor import CubeTensor, Shape, dense_strides, layout_key


def _coords(b: Any, shape: list[Any], pos: Any, skip: int | None = None) -> list[Any]:
    """Row-major coordinates of an in-range position `pos` in `shape` (u32 values; u32
    locals); dimension `skip` is left out of the unravelling (its entry is None)."""
    from burn_cube import u32

    dims = [d for d in range(len(shape)) if d != skip]
    rest = b.local(u32, pos)
    coords: list[Any] = [None] * len(shape)
    for d in reversed(dims[1:]):
        coords[d] = b.local(u32, rest % shape[d])
        b.set(rest, rest // shape[d])
    if dims:
        coords[dims[0]] = rest  # the outermost coordinate is what is left
    return coords


def _shape(t: Any, rank: int) -> list[Any]:
    """The shape of kernel tensor `t` (u32 values)."""
    return [t.shape[d] for d in range(rank)]


def _at(t: Any, coords: list[Any], dim: int | None = None, value: Any = None) -> Any:
    """Storage index of `t` at `coords`, with `value` as the coordinate of `dim`."""
    index = t.offset
    for d, c in enumerate(coords):
        index = index + (value if d == dim else c) * t.stride[d]
    return index


def _wrapped(b: Any, index: Any, size: Any) -> tuple[Any, Any]:
    """`(valid, position)` of an index value against the extent `size` (u32): negatives
    wrapped; the position is u32 and 0 where not valid."""
    from burn_cube import bool_, u32

    extent = b.cast(size, index.dtype)
    wrapped = b.local(index.dtype, index)
    b.set(wrapped, b.select(wrapped < 0, wrapped + extent, wrapped))
    valid = b.local(bool_, b.and_(wrapped >= 0, wrapped < extent))
    return valid, b.local(u32, b.cast(b.select(valid, wrapped, 0), u32))


@cached_kernel
def _select_kernel(dtype: DType, index_dtype: DType, index_rank: int, by_rows: bool) -> Any:
    """`out[o, k, i] = x[o, indices.flat[k], i]`: `x` and dense `out` seen as (outer, n,
    inner), indices of any rank (embedding) taken flat. One unit per element, or with
    `by_rows` one unit per (o, k) row walking `i` (the cpu runtime: sequential memory, one
    index read per row)."""
    from burn_cube import KernelBuilder, u32

    cube_dt = cube_dtype("select", dtype)
    b = KernelBuilder("index_select_rows" if by_rows else "index_select")
    x = b.tensor("x", cube_dt, rank=3, write=False)
    idx = b.tensor("indices", cube_dtype("select", index_dtype), rank=index_rank, write=False)
    out = b.tensor("out", cube_dt, rank=3, write=True)
    units = b.scalar("units", u32)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < units):
        c = _coords(b, _shape(out, 3), pos * out.shape[2] if by_rows else pos)
        valid, row = _wrapped(b, idx[b.index_of(idx, c[1])], x.shape[1])
        start = b.local(u32, _at(x, c, 1, row))
        if by_rows:
            with b.for_range(out.shape[2]) as i:
                _store_or_zero(b, valid, out, pos * out.shape[2] + i, x, start + i * x.stride[2])
        else:
            _store_or_zero(b, valid, out, pos, x, start)
    return b.kernel()


def _store_or_zero(b: Any, valid: Any, out: Any, target: Any, x: Any, source: Any) -> None:
    """`out[target] = x[source]` where `valid`, else 0 (an out-of-range index reads 0)."""
    with b.if_(valid):
        out[target] = x[source]
    with b.else_():
        out[target] = b.cast(0, out.dtype)


@cached_kernel
def _gather_kernel(dtype: DType, index_dtype: DType, rank: int, dim: int, by_rows: bool) -> Any:
    """`out[i][j] = x[indices[i][j]][j]` (dim 0); `out` is dense, of the indices' shape. One
    unit per element, or with `by_rows` one unit per row of the last dimension walking it
    (the cpu runtime: no unravelling per element)."""
    from burn_cube import KernelBuilder, u32

    cube = cube_dtype("gather", dtype)
    b = KernelBuilder("gather_rows" if by_rows else "gather")
    x = b.tensor("x", cube, rank=rank, write=False)
    idx = b.tensor("indices", cube_dtype("gather", index_dtype), rank=rank, write=False)
    out = b.tensor("out", cube, rank=rank, write=True)
    units = b.scalar("units", u32)
    unit = b.ABSOLUTE_POS
    with b.if_(unit < units), ExitStack() as loops:
        if by_rows:
            c = _coords(b, _shape(idx, rank - 1), unit)
            c.append(loops.enter_context(b.for_range(idx.shape[rank - 1])))
            pos = unit * idx.shape[rank - 1] + c[-1]
        else:
            c, pos = _coords(b, _shape(idx, rank), unit), unit
        valid, row = _wrapped(b, idx[_at(idx, c)], x.shape[dim])
        _store_or_zero(b, valid, out, pos, x, _at(x, c, dim, row))
    return b.kernel()


#: Scatter on a GPU runs one unit per output element (each scanning its line's indices)
#: while the indices have fewer lines than this, one unit per line otherwise.
OUTPUT_UNITS_BELOW = 4096


@cached_kernel
def _scatter_kernel(dtype: DType, value_dtype: DType, index_dtype: DType, rank: int, dim: int,
                    add: bool, mode: str) -> Any:
    """`out[..., indices[..., k, ...], ...] (+)= values[..., k, ...]` in place, each output
    updated in increasing `k` by the one unit owning it. `mode` "lines": a unit per line of
    `indices` (every coordinate but `dim`) walks `k`; "rows": a unit per coordinate before
    `dim` walks `k`, then the coordinates after it (sequential memory, for the cpu runtime);
    "outputs": a unit per output element of the indices' lines scans the line's `k` for the
    entries hitting it (parallel where there are few lines)."""
    from burn_cube import KernelBuilder, u32

    cube = cube_dtype("scatter", dtype)
    b = KernelBuilder(f"scatter_{'add' if add else 'assign'}_{mode}")
    idx = b.tensor("indices", cube_dtype("scatter", index_dtype), rank=rank, write=False)
    values = b.tensor("values", cube_dtype("scatter", value_dtype), rank=rank, write=False)
    out = b.tensor("out", cube, rank=rank, write=True)
    units = b.scalar("units", u32)
    unit = b.ABSOLUTE_POS
    with b.if_(unit < units), ExitStack() as loops:
        if mode == "outputs":
            c = _coords(b, [out.shape[d] if d == dim else idx.shape[d] for d in range(rank)],
                        unit)
            target = b.local(u32, _at(out, c))
            acc = b.local(cube, out[target])
        elif mode == "rows":
            c = _coords(b, _shape(idx, dim), unit)
        else:
            c = _coords(b, _shape(idx, rank), unit, skip=dim)
        k = loops.enter_context(b.for_range(idx.shape[dim]))
        if mode == "rows":
            c += [None] + [loops.enter_context(b.for_range(idx.shape[d]))
                           for d in range(dim + 1, rank)]
        valid, row = _wrapped(b, idx[_at(idx, c, dim, k)], out.shape[dim])
        if mode == "outputs":
            with b.if_(b.and_(valid, row == c[dim])):
                value = b.cast(values[_at(values, c, dim, k)], cube)
                b.set(acc, acc + value if add else value)
        else:
            with b.if_(valid):
                target = b.local(u32, _at(out, c, dim, row))
                value = b.cast(values[_at(values, c, dim, k)], cube)
                out[target] = out[target] + value if add else value
        loops.close()
        if mode == "outputs":
            out[target] = acc
    return b.kernel()


def _scatter_mode(backend: Any, indices: CubeTensor, dim: int, extent: int) -> tuple[str, int]:
    """The scatter kernel's mode on `backend` and its number of units (`extent`: the
    output's size along `dim`)."""
    before = math.prod(indices.shape[:dim])
    lines = before * math.prod(indices.shape[dim + 1:])
    if backend.runtime_name == "cpu":
        return "rows", before
    if lines < OUTPUT_UNITS_BELOW:
        return "outputs", lines * extent
    return "lines", lines


def _merged(shape: Shape, strides: Shape) -> tuple[int, int] | None:
    """`(size, stride)` of dimensions seen as one, or None where their strides do not allow
    it."""
    size, stride = 1, 0
    for n, s in zip(reversed(shape), reversed(strides), strict=True):
        if n == 1:
            continue
        if size == 1:
            size, stride = n, s
        elif s != stride * size:
            return None
        else:
            size *= n
    return size, stride


def _around(x: CubeTensor, dim: int) -> CubeTensor | None:
    """`x` as an (outer, x.shape[dim], inner) view, or None where its strides do not allow
    it."""
    outer = _merged(x.shape[:dim], x.strides[:dim])
    inner = _merged(x.shape[dim + 1:], x.strides[dim + 1:])
    if outer is None or inner is None:
        return None
    return x.view((outer[0], x.shape[dim], inner[0]), (outer[1], x.strides[dim], inner[1]))


def select(backend: Any, x: CubeTensor, dim: int, indices: CubeTensor) -> CubeTensor:
    """`x` at `indices` (any rank, taken flat) along `dim`: dense, `indices.size` entries
    there. The launch is planned once per layout of `x` and `indices` (`_SelectPlan`)."""
    xa, ia = x.array, indices.array
    key = ("select", id(x.dtype), layout_key(xa), dim, id(indices.dtype), layout_key(ia))
    plan = backend.plans.get(key)
    if plan is None:
        plan = backend.planned(key, lambda: _select_plan(backend, x, dim, indices))
    out = backend.empty(plan.shape, x.dtype)
    if plan.launch is not None:
        if plan.copy:
            xa = contiguous_copy(backend, x).array
        plan.launch((xa, ia, out.array, plan.units))
    return out


@dataclass
class _SelectPlan:
    """A planned select: the result's shape, whether `x` is copied dense first (its strides
    do not fold around `dim`), the unit count, and the launcher taking `x`'s (or its copy's),
    the indices' and the result's arrays and the unit count (None: an empty result)."""

    shape: Shape
    copy: bool
    units: int
    launch: Any


def _select_plan(backend: Any, x: CubeTensor, dim: int, indices: CubeTensor) -> _SelectPlan:
    """Work out the launch of `select`: `x` (or its dense copy) seen as (outer, n, inner),
    the indices flat, the result as (outer, indices.size, inner)."""
    shape = x.shape[:dim] + (indices.size,) + x.shape[dim + 1:]
    out = backend.empty(shape, x.dtype)
    x3 = _around(x, dim)
    copy = x3 is None
    if not out.size:
        return _SelectPlan(shape, copy, 0, None)
    if x3 is None:
        x3 = _around(contiguous_copy(backend, x), dim)
        assert x3 is not None  # a dense tensor always folds
    flat = _merged(indices.shape, indices.strides)
    index = indices.view((indices.size,), (flat[1],)) if flat else indices
    outer, inner = x3.shape[0], x3.shape[2]
    out3 = out.view((outer, indices.size, inner), dense_strides((outer, indices.size, inner)))
    by_rows = backend.runtime_name == "cpu"
    units = out.size // inner if by_rows else out.size
    kernel = _select_kernel(x.dtype, indices.dtype, len(index.shape), by_rows)
    launch = kernel.plan(backend.runtime, (max(1, -(-units // CUBE_DIM)), 1, 1), CUBE_DIM,
                         x3.array, index.array, out3.array, units)
    return _SelectPlan(shape, copy, units, launch)


def _check_fits(op: str, dim: int, x: CubeTensor, indices: CubeTensor,
                values: CubeTensor | None = None) -> None:
    """Refuse indices that do not have x's rank or do not fit in `x` outside `dim` (and in
    `values` everywhere).

    Raises:
        ShapeError: naming `op` and the shapes.
    """
    rank = len(x.shape)
    fits = len(indices.shape) == rank and all(
        i <= s for d, (i, s) in enumerate(zip(indices.shape, x.shape, strict=True)) if d != dim)
    if values is not None:
        fits = fits and len(values.shape) == rank and all(
            i <= v for i, v in zip(indices.shape, values.shape, strict=True))
    if not fits:
        raise ShapeError(op, "indices must have the input's rank and fit in it"
                         + (" and in the values" if values is not None else ""), x=x.shape,
                         indices=indices.shape, dim=dim,
                         **({} if values is None else {"values": values.shape}))


def gather(backend: Any, dim: int, x: CubeTensor, indices: CubeTensor) -> CubeTensor:
    """torch.gather: dense, of the indices' shape.

    Raises:
        ShapeError: for indices that do not fit in `x` (`_check_fits`).
    """
    _check_fits("gather", dim, x, indices)
    out = backend.empty(indices.shape, x.dtype)
    if out.size:
        by_rows = backend.runtime_name == "cpu"
        units = out.size // indices.shape[-1] if by_rows else out.size
        kernel = _gather_kernel(x.dtype, indices.dtype, len(x.shape), dim, by_rows)
        backend.launch(kernel, units, x.array, indices.array, out.array, units)
    return out


def scatter(backend: Any, op: str, dim: int, x: CubeTensor, indices: CubeTensor,
            values: CubeTensor, add: bool, rows: CubeTensor | None = None) -> CubeTensor:
    """A dense copy of `x` with `values` (at the indices' coordinates) written or added at
    `indices` along `dim`, in index order; `op` names the op in errors; `rows`: the 1-d
    indices that `indices` broadcasts (select_assign).

    Raises:
        ShapeError: for indices that do not fit in `x` and `values` (`_check_fits`).
    """
    _check_fits(op, dim, x, indices, values)
    low = add and x.dtype in (DType.float16, DType.bfloat16)
    out = backend.float_cast(x, DType.float32) if low else _dense_copy(backend, x)
    if indices.size:
        _scatter_into(backend, dim, out, indices, values, add, rows)
    return backend.float_cast(out, x.dtype) if low else out


def _scatter_into(backend: Any, dim: int, out: CubeTensor, indices: CubeTensor,
                  values: CubeTensor, add: bool, rows: CubeTensor | None) -> None:
    """Scatter into dense `out` by the path its runtime and sizes call for (module
    docstring; `scatter_kernels` for its paths); `rows`: select_assign's
    1-d indices, which `indices` broadcasts."""
    lines = indices.size // indices.shape[dim] if indices.shape else 1
    path = scatter_path(backend, out, indices, dim, add, rows is not None,
                        lines < OUTPUT_UNITS_BELOW)
    if path == "index_add_rows":
        vals = _around(values, dim) or _around(contiguous_copy(backend, values), dim)
        assert vals is not None and rows is not None  # a dense tensor always folds
        index_add_rows(backend, dim, out, rows, vals)
    elif path == "atomic":
        scatter_atomic(backend, dim, out, indices, values)
    elif path == "sorted" and rows is not None:
        select_assign_sorted(backend, dim, out, rows, values)
    elif path == "sorted":
        scatter_sorted(backend, dim, out, indices, values, add)
    else:
        mode, units = _scatter_mode(backend, indices, dim, out.shape[dim])
        kernel = _scatter_kernel(out.dtype, values.dtype, indices.dtype, len(out.shape), dim,
                                 add, mode)
        backend.launch(kernel, units, indices.array, values.array, out.array, units)


def _dense_copy(backend: Any, x: CubeTensor) -> CubeTensor:
    """A new dense tensor holding `x` (a flat copy when `x` is contiguous)."""
    if not x.is_contiguous:
        return contiguous_copy(backend, x)
    out = backend.empty(x.shape, x.dtype)
    copy_into(backend, flat_view(x), flat_view(out))
    return out


def _rows(indices: CubeTensor, dim: int, shape: Shape) -> CubeTensor:
    """1-d `indices` seen along `dim` of `shape` (stride 0 elsewhere)."""
    strides = tuple(indices.strides[0] if d == dim else 0 for d in range(len(shape)))
    return indices.view(shape, strides)


class CubeIndexingOps(CubeCheckOps):
    """select / select_assign / gather / scatter / embedding kernels, and the device checks."""

    def float_select(self: Any, x: CubeTensor, dim: int, indices: CubeTensor) -> CubeTensor:
        """torch.index_select.

        Raises:
            ShapeError: for indices that are not 1-d.
        """
        if len(indices.shape) != 1:
            raise ShapeError("select", "indices must be 1-d", x=x.shape, indices=indices.shape)
        return select(self, x, dim, indices)

    int_select = bool_select = float_select

    def float_select_assign(self: Any, x: CubeTensor, dim: int, indices: CubeTensor,
                            values: CubeTensor) -> CubeTensor:
        """torch.index_add on a copy: duplicate indices accumulate in index order.

        Raises:
            ShapeError: unless `indices` is 1-d and `values` is `x` with `dim` resized to it.
        """
        want = x.shape[:dim] + indices.shape + x.shape[dim + 1:]
        if len(indices.shape) != 1 or values.shape != want:
            raise ShapeError("select_assign", "values must match the selected shape",
                             x=x.shape, indices=indices.shape, values=values.shape, dim=dim)
        return scatter(self, "select_assign", dim, x, _rows(indices, dim, values.shape), values,
                       True, indices)

    int_select_assign = float_select_assign

    def float_gather(self: Any, dim: int, x: CubeTensor, indices: CubeTensor) -> CubeTensor:
        """torch.gather (indices may be smaller than `x` outside `dim`)."""
        return gather(self, dim, x, indices)

    int_gather = bool_gather = float_gather

    def float_scatter(self: Any, dim: int, x: CubeTensor, indices: CubeTensor,
                      values: CubeTensor, reduce: str = "assign") -> CubeTensor:
        """torch.scatter ("assign": the last duplicate wins) / scatter_add ("add": duplicates
        accumulate in index order) on a copy."""
        return scatter(self, "scatter", dim, x, indices, values, reduce == "add")

    int_scatter = float_scatter

    def bool_scatter(self: Any, dim: int, x: CubeTensor, indices: CubeTensor,
                     values: CubeTensor) -> CubeTensor:
        """Assign-scatter of bool values (the last duplicate wins)."""
        return scatter(self, "scatter", dim, x, indices, values, False)

    def embedding(self: Any, weight: CubeTensor, indices: CubeTensor) -> CubeTensor:
        """Rows of `weight` [V, D] at `indices` (any shape) -> [*indices, D], one kernel.

        Raises:
            ShapeError: for a weight that is not 2-d.
        """
        if len(weight.shape) != 2:
            raise ShapeError("embedding", "weight must be [V, D]", weight=weight.shape)
        rows = select(self, weight, 0, indices)
        shape = (*indices.shape, weight.shape[1])
        return rows.view(shape, dense_strides(shape))
