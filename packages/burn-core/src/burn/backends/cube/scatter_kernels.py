"""Scatter paths of the cube backends for few long lines: integer atomics and a sorted
segmented reduction.

The kernel of `indexing.py` that gives each output element one unit scanning its whole line
is quadratic when the indices have few lines along a long `dim` (one line of 16.7M entries:
every output scans 16.7M indices). Two linear paths replace it there:

- "atomic" (integer add): one unit per index entry adds its value with an integer atomic. Integer
  addition (wrapping) does not depend on the order, so the result is exact.
- "sorted" (float add, any assign): one unit per index entry writes its target's flat position
  in the output (a key; out-of-range entries get a key past every target), the keys are sorted
  with their positions by the cube sort (stable: equal keys keep increasing positions, that is
  increasing index along `dim`), and the unit at the start of each run of equal keys adds the
  run's values (or keeps the last, for assign) in a register and stores it once. It walks the
  run in order through the end of the `RUN_BLOCK`-position block after the one it starts in,
  then adds the following blocks' shares, each summed in order by a unit per block first
  (`blocks_kernel`): the depth is about 2 * RUN_BLOCK + run / RUN_BLOCK. Runs of up to
  `RUN_BLOCK` entries (and every assign, and integer sums) give the per-output kernel's
  results bit for bit (torch's CPU order); longer float runs sum block by block, always in
  the same order (docs/differences.md).

select_assign (index_add along `dim`) sorts only its 1-d indices: a run of equal rows is walked
once per (outer, inner) coordinate of the values. On the cpu runtime select_assign runs
`index_add_rows_kernel` (rows added in index order over sequential memory) on every size.
"""

from __future__ import annotations

import math
from typing import Any

from burn.dtype import DType
from burn.ir.cube import cube_dtype

from .kernel_cache import cached_kernel
from .sort import sort_with_indices
from .tensor import CubeTensor

#: Largest `lines * extent * depth` (index reads of the per-output kernel) that the per-output
#: kernel keeps on a GPU; above it the sorted path runs (integer adds always take atomics).
SCAN_WORK_MAX = 1 << 22
#: Longest index line that `indexing`'s unit-per-line GPU kernel walks (its depth); longer
#: lines take the sorted path.
LINE_DEPTH_MAX = 8192
#: Runtimes that keep sequential kernels (the cpu runtime: one unit walks each leading
#: coordinate's indices in order, linear work): `indexing`'s "rows" scatter and
#: `index_add_rows_kernel`.
SEQUENTIAL_RUNTIMES = ("cpu",)
#: Sorted positions per block of the run walk: a run is added in order through the end of
#: the block after the one it starts in (runs of up to `RUN_BLOCK` entries: wholly in order),
#: then block by block (each block's share summed in order first).
RUN_BLOCK = 256
#: Key of an out-of-range entry: past every target (keys are int32 flat output positions).
NO_TARGET = (1 << 31) - 1


def atomic_dtypes(runtime_name: str) -> tuple[DType, ...]:
    """Integer dtypes with an atomic add on `runtime_name` (WGSL has no 64-bit atomics)."""
    return (DType.int32,) if runtime_name == "wgpu" else (DType.int32, DType.int64)


def path(backend: Any, out: CubeTensor, indices: CubeTensor, dim: int, add: bool,
         select: bool, few_lines: bool) -> str | None:
    """The path of a scatter into `out`, or None for `indexing`'s kernels. On sequential
    runtimes "index_add_rows" for select_assign (`select`). Elsewhere "atomic" for integer
    adds, and "sorted" where `indexing`'s kernel would be slow: with `few_lines` (a unit per
    output element) when it would read more than `SCAN_WORK_MAX` indices, else (a unit per
    line) when lines are longer than `LINE_DEPTH_MAX`."""
    if backend.runtime_name in SEQUENTIAL_RUNTIMES:
        return "index_add_rows" if select else None
    if not out.shape:
        return None
    if add and out.dtype in atomic_dtypes(backend.runtime_name):
        return "atomic"
    depth = indices.shape[dim]
    slow = (indices.size * out.shape[dim] > SCAN_WORK_MAX if few_lines
            else depth > LINE_DEPTH_MAX)
    return "sorted" if slow and out.size < NO_TARGET else None


def _coords(b: Any, shape: list[Any], pos: Any) -> list[Any]:
    """Row-major coordinates (u32 locals) of an in-range position `pos` in `shape`."""
    from burn_cube import u32

    rest = b.local(u32, pos)
    coords: list[Any] = [None] * len(shape)
    for d in reversed(range(1, len(shape))):
        coords[d] = b.local(u32, rest % shape[d])
        b.set(rest, rest // shape[d])
    if shape:
        coords[0] = rest
    return coords


def _target(b: Any, idx: Any, sizes: list[Any], dim: int, unit: Any) -> tuple[Any, Any]:
    """`(valid, flat position)` in a dense output of shape `sizes` (u32 values) of index entry
    `unit` (row-major over idx's shape): the entry's coordinates with its index value
    (negatives wrapped) along `dim`."""
    from burn_cube import bool_, u32

    rank = len(sizes)
    c = _coords(b, [idx.shape[d] for d in range(rank)], unit)
    index = idx[b.index_of(idx, unit)]
    extent = b.cast(sizes[dim], index.dtype)
    row = b.local(index.dtype, b.select(index < 0, index + extent, index))
    valid = b.local(bool_, b.and_(row >= 0, row < extent))
    c[dim] = b.cast(b.select(valid, row, 0), u32)
    at = c[0]
    for d in range(1, rank):
        at = at * sizes[d] + c[d]
    return valid, b.local(u32, at)


@cached_kernel
def atomic_kernel(dtype: DType, value_dtype: DType, index_dtype: DType, rank: int,
                  dim: int) -> Any:
    """`out[..., indices[u], ...] += values[u]` with an integer atomic, one unit per index
    entry `u`; `values` is viewed with the indices' shape."""
    from burn_cube import KernelBuilder, u32

    cube = cube_dtype("scatter", dtype)
    b = KernelBuilder("scatter_add_atomic")
    idx = b.tensor("indices", cube_dtype("scatter", index_dtype), rank=rank, write=False)
    values = b.tensor("values", cube_dtype("scatter", value_dtype), rank=rank, write=False)
    out = b.tensor("out", cube, rank=rank, write=True)
    units = b.scalar("units", u32)
    unit = b.ABSOLUTE_POS
    with b.if_(unit < units):
        valid, at = _target(b, idx, [out.shape[d] for d in range(rank)], dim, unit)
        with b.if_(valid):
            b.atomic_add(out, at, b.cast(values[b.index_of(values, unit)], cube))
    return b.kernel()


@cached_kernel
def keys_kernel(index_dtype: DType, rank: int, dim: int) -> Any:
    """`keys[u]` = the flat position in a dense output of shape `size0`, `size1`... of index
    entry `u`, or `NO_TARGET` where the entry is out of range."""
    from burn_cube import KernelBuilder, i32, u32

    b = KernelBuilder("scatter_keys")
    idx = b.tensor("indices", cube_dtype("scatter", index_dtype), rank=rank, write=False)
    keys = b.tensor("keys", i32, rank=1, write=True)
    units = b.scalar("units", u32)
    sizes = [b.scalar(f"size{d}", u32) for d in range(rank)]
    unit = b.ABSOLUTE_POS
    with b.if_(unit < units):
        valid, at = _target(b, idx, sizes, dim, unit)
        keys[unit] = b.select(valid, b.cast(at, i32), NO_TARGET)
    return b.kernel()


def _run_tensors(b: Any, value_dtype: DType, rank: int) -> tuple[Any, Any, Any]:
    """The sorted keys, their source positions and the values of a run kernel."""
    from burn_cube import i32

    keys = b.tensor("keys", i32, rank=1, write=False)
    order = b.tensor("order", cube_dtype("scatter", DType.int64), rank=1, write=False)
    values = b.tensor("values", cube_dtype("scatter", value_dtype), rank=rank, write=False)
    return keys, order, values


def _split(b: Any, unit: Any, count: Any, inner: Any) -> tuple[Any, Any, Any]:
    """`(o, i, c)` of `unit` in (outer, count, inner), u32 locals."""
    from burn_cube import u32

    c = b.local(u32, unit % inner)
    rest = b.local(u32, unit // inner)
    return b.local(u32, rest // count), b.local(u32, rest % count), c


def _value(b: Any, run: tuple[Any, Any, Any], j: Any, column: tuple[Any, Any, Any, Any],
           cube: DType) -> Any:
    """The value of sorted position `j` in `column` = (o, n, inner, c): logical position
    `(o * n + order[j]) * inner + c` of `values`; `run` = (keys, order, values)."""
    from burn_cube import u32

    _, order, values = run
    o, n, inner, c = column
    source = (o * n + b.cast(order[j], u32)) * inner + c
    return b.cast(values[b.index_of(values, source)], cube)


def _walk(b: Any, acc: Any, run: tuple[Any, Any, Any], key: Any, start: Any, stop: Any,
          column: tuple[Any, Any, Any, Any], add: bool) -> None:
    """`acc` (+)= the values of sorted positions `start`, `start + 1`... before `stop` while
    their key is `key`, in order."""
    from burn_cube import u32

    j = b.local(u32, start)
    with b.while_(j < stop):
        with b.if_(run[0][j] != key):
            b.break_()
        value = _value(b, run, j, column, acc.dtype)
        b.set(acc, acc + value if add else value)
        b.set(j, j + 1)


@cached_kernel
def blocks_kernel(dtype: DType, value_dtype: DType, rank: int, add: bool) -> Any:
    """Unit (o, k, c) of (outer, blocks, inner): `partial[unit]` = the sum (add) or the last
    value (assign), in order, of the leading run of sorted block k (positions k * block...,
    while the key is that of its first position)."""
    from burn_cube import KernelBuilder, i32, u32

    cube = cube_dtype("scatter", dtype)
    b = KernelBuilder(f"scatter_{'add' if add else 'assign'}_blocks")
    run = _run_tensors(b, value_dtype, rank)
    partial = b.tensor("partial", cube, rank=1, write=True)
    units, n, inner, block, blocks = (b.scalar(name, u32)
                                      for name in ("units", "n", "inner", "block", "blocks"))
    unit = b.ABSOLUTE_POS
    with b.if_(unit < units):
        o, k, c = _split(b, unit, blocks, inner)
        start = b.local(u32, k * block)
        key = b.local(i32, run[0][start])
        with b.if_(key != NO_TARGET):
            column = (o, n, inner, c)
            acc = b.local(cube, _value(b, run, start, column, cube))
            _walk(b, acc, run, key, start + 1, b.min(start + block, n), column, add)
            partial[unit] = acc
    return b.kernel()


@cached_kernel
def runs_kernel(dtype: DType, value_dtype: DType, rank: int, add: bool) -> Any:
    """Unit (o, i, c) of (outer, n, inner): where sorted position `i` starts a run of equal
    keys, `out[(o * extent + key) * inner + c]` (+)= the run's values (logical position
    `(o * n + order[j]) * inner + c` of `values`), stored once: walked in order through the
    end of the block after the one holding `i`, then the following blocks' `partial`s (their
    leading runs: `blocks_kernel`) in order while the run goes on."""
    from burn_cube import KernelBuilder, i32, u32

    cube = cube_dtype("scatter", dtype)
    b = KernelBuilder(f"scatter_{'add' if add else 'assign'}_runs")
    run = _run_tensors(b, value_dtype, rank)
    partial = b.tensor("partial", cube, rank=1, write=False)
    out = b.tensor("out", cube, rank=1, write=True)
    units, n, inner, extent, block, blocks = (
        b.scalar(name, u32) for name in ("units", "n", "inner", "extent", "block", "blocks"))
    keys = run[0]
    unit = b.ABSOLUTE_POS
    with b.if_(unit < units):
        o, i, c = _split(b, unit, n, inner)
        key = b.local(i32, keys[i])
        starts = b.or_(i == 0, keys[b.select(i == 0, i, i - 1)] != key)
        with b.if_(b.and_(key != NO_TARGET, starts)):
            at = b.local(u32, (o * extent + b.cast(key, u32)) * inner + c)
            acc = b.local(cube, out[at])
            k = b.local(u32, i // block + 2)
            _walk(b, acc, run, key, i, b.min(k * block, n), (o, n, inner, c), add)
            with b.while_(k < blocks):
                with b.if_(keys[k * block] != key):
                    b.break_()
                part = partial[(o * blocks + k) * inner + c]
                b.set(acc, acc + part if add else part)
                b.set(k, k + 1)
            out[at] = acc
    return b.kernel()


@cached_kernel
def index_add_rows_kernel(dtype: DType, value_dtype: DType, index_dtype: DType,
                          unit_stride: bool) -> Any:
    """`out[o, rows[k], :] += values[o, k, :]` for k in order, one unit per `o` (`out` dense
    (outer, extent, inner), `values` a (outer, n, inner) view, with `unit_stride` one whose
    inner stride is 1): the index is read and wrapped once per row and the inner loop runs
    over sequential memory (the cpu runtime; a unit stride lets the C compiler vectorize)."""
    from burn_cube import KernelBuilder, u32

    cube = cube_dtype("scatter", dtype)
    b = KernelBuilder("index_add_rows")
    rows = b.tensor("rows", cube_dtype("scatter", index_dtype), rank=1, write=False)
    values = b.tensor("values", cube_dtype("scatter", value_dtype), rank=3, write=False)
    out = b.tensor("out", cube, rank=3, write=True)
    units = b.scalar("units", u32)
    o = b.ABSOLUTE_POS
    inner = out.shape[2]
    with b.if_(o < units), b.for_range(values.shape[1]) as k:
        index = rows[rows.offset + k * rows.stride[0]]
        extent = b.cast(out.shape[1], index.dtype)
        row = b.local(index.dtype, b.select(index < 0, index + extent, index))
        with b.if_(b.and_(row >= 0, row < extent)):
            target = b.local(u32, (o * out.shape[1] + b.cast(row, u32)) * inner)
            source = b.local(u32, values.offset + o * values.stride[0] + k * values.stride[1])
            with b.for_range(inner) as c:
                out[target + c] = out[target + c] + b.cast(
                    values[source + (c if unit_stride else c * values.stride[2])], cube)
    return b.kernel()


def index_add_rows(backend: Any, dim: int, out: CubeTensor, rows: CubeTensor,
                   values: CubeTensor) -> None:
    """index_add of `values` (an (outer, n, inner) view) into dense `out` at 1-d `rows`
    along `dim`: a unit per coordinate before `dim` walks the rows in order."""
    outer, inner = values.shape[0], values.shape[2]
    out3 = out.view((outer, out.shape[dim], inner), (out.shape[dim] * inner, inner, 1))
    unit_stride = values.strides[2] == 1 or inner == 1
    kernel = index_add_rows_kernel(out.dtype, values.dtype, rows.dtype, unit_stride)
    backend.launch(kernel, outer, rows.array, values.array, out3.array, outer)


def scatter_atomic(backend: Any, dim: int, out: CubeTensor, indices: CubeTensor,
                   values: CubeTensor) -> None:
    """Integer scatter-add of `values` (at the indices' coordinates) into dense `out`."""
    vals = values.view(indices.shape, values.strides)
    kernel = atomic_kernel(out.dtype, values.dtype, indices.dtype, len(out.shape), dim)
    backend.launch(kernel, indices.size, indices.array, vals.array, out.array, indices.size)


def _sorted_keys(backend: Any, indices: CubeTensor, shape: tuple[int, ...],
                 dim: int) -> tuple[CubeTensor, CubeTensor]:
    """Sorted int32 keys of `indices` (flat positions in a dense output of `shape`) and their
    int64 source positions (stable)."""
    keys = backend.empty((indices.size,), DType.int32)
    backend.launch(keys_kernel(indices.dtype, len(indices.shape), dim), indices.size,
                   indices.array, keys.array, indices.size, *shape)
    return sort_with_indices(backend, keys, 0, False)


def scatter_sorted(backend: Any, dim: int, out: CubeTensor, indices: CubeTensor,
                   values: CubeTensor, add: bool) -> None:
    """Scatter of `values` (at the indices' coordinates) into dense `out` by sorted runs."""
    keys, order = _sorted_keys(backend, indices, out.shape, dim)
    vals = values.view(indices.shape, values.strides)
    _launch_runs(backend, out, keys, order, vals, add, 1, indices.size, 1, out.size)


def select_assign_sorted(backend: Any, dim: int, out: CubeTensor, rows: CubeTensor,
                         values: CubeTensor) -> None:
    """index_add of `values` into dense `out` at 1-d `rows` along `dim` by sorted runs."""
    extent = out.shape[dim]
    keys, order = _sorted_keys(backend, rows, (extent,), 0)
    outer, inner = math.prod(out.shape[:dim]), math.prod(out.shape[dim + 1:])
    _launch_runs(backend, out, keys, order, values, True, outer, rows.size, inner, extent)


def _launch_runs(backend: Any, out: CubeTensor, keys: CubeTensor, order: CubeTensor,
                 values: CubeTensor, add: bool, outer: int, n: int, inner: int,
                 extent: int) -> None:
    """The block partials, then the run walk over (outer, n, inner) units into flat `out`."""
    rank = len(values.shape)
    blocks = -(-n // RUN_BLOCK)
    partial = backend.empty((outer * blocks * inner,), out.dtype)
    units = outer * blocks * inner
    backend.launch(blocks_kernel(out.dtype, values.dtype, rank, add), units, keys.array,
                   order.array, values.array, partial.array, units, n, inner, RUN_BLOCK,
                   blocks)
    units = outer * n * inner
    flat = out.view((out.size,), (1,))
    backend.launch(runs_kernel(out.dtype, values.dtype, rank, add), units, keys.array,
                   order.array, values.array, partial.array, flat.array, units, n, inner,
                   extent, RUN_BLOCK, blocks)
