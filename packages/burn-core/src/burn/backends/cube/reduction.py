"""Reductions of the cube backends: sum / prod / mean / max / min (with indices), arg max / min,
any / all, argwhere, and fused softmax / log-softmax, on the kernels of `reduction_kernels`.

Results match the NumPy backend: dims are kept (size 1) by the `_dim` reductions, full
reductions give 0-d tensors; int sums and products are int64; float16 / bfloat16 accumulate in
float32; max / min and their indices take the first occurrence, a NaN winning. Empty rows give
0 (sum), 1 (prod), NaN (mean), False (any), True (all); max / min of nothing is an error.

Inputs are read in place (any view). On the cpu runtime every row is one unit (dense rows with
interleaved accumulators, float sums of adjacent elements in vector-wide blocks; strided rows
swept by adjacent units together, float sums of rows starting at adjacent elements, as over a
leading dim, `COLUMNS` rows per unit), full reductions split into chunks reduced in parallel
then combined; on GPU runtimes a row of 128 elements or more is
one cube (a shared-memory tree; sums through plane sums where the runtime's planes have more
than one unit), except strided rows that start at adjacent elements (a reduction over a
leading dim): a unit per row, or per chunk of a row then per row of the chunks' results
(`COLUMN_UNITS`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from burn.dtype import DType
from burn.errors import EmptyReductionError
from burn.ir import OPS
from burn.ir.cube import cube_dtype, unit_work

from . import layer_norm_rows, loss_rows, norm_rows_cpu, softmax_rows_cpu
from .creation import full
from .reduction_kernels import (
    COLUMNS,
    LANES,
    TREE_DIM,
    argwhere_kernel,
    column_sum_kernel,
    reduce_kernel,
    softmax_kernel,
)
from .softmax_rows import softmax_rows
from .tensor import CubeTensor, Shape, dense_strides, host_array, layout_key

#: Rows at least this long get a cube each on GPU runtimes.
TREE_MIN = 128
#: cpu: units per cube when there are at least this many rows (else one).
SWEEP_MIN = 64
#: Elements per chunk of a full reduction: at least (cpu, GPU) and the most chunks.
CHUNK_MIN = {"cpu": 1 << 15, "gpu": TREE_DIM * 16}
CHUNKS_MAX = {"cpu": 64, "gpu": 1024}
#: GPU runtimes: rows longer than this reduce in two passes (`_long_rows`), in chunks of
#: `ROW_CHUNK` elements, then the chunks' results: a cube per row would loop over
#: n / 256 elements a unit, one streaming multiprocessor for the whole row, and Mesa's
#: llvmpipe ends a unit's loops after 65535 iterations (rows of 2^24 elements and more came
#: out wrong there: the sum of 17M floats 94% short, the arg max in the row's first half).
LONG_ROW = 1 << 20
ROW_CHUNK = 1 << 16
#: GPU runtimes: rows whose elements are strided while adjacent rows are adjacent (a sum over
#: a leading dim, a bias gradient's over the batch) are reduced a unit per row where there
#: are at least `COLUMN_UNITS` rows (adjacent units read adjacent elements); fewer, long
#: ones in two passes (`_column_chunks`): chunks of at least `COLUMN_CHUNK_MIN` elements a
#: unit, as many chunks as fill `COLUMN_UNITS` units (a unit keeps about one load in
#: flight: 2^16 units were slower than one pass), then the chunks' results. A cube per such
#: row read one element per 32-byte sector: the reduce_sum kernels of the d-512 encoder's
#: step (its bias gradients: sums of [8192, 512] and [8192, 2048] over rows) took 2.04 ms
#: of an H100's time under fusion, 1.35 ms in chunks (torch's reductions 0.8 ms).
COLUMN_UNITS = 1 << 18
COLUMN_CHUNK_MIN = 16


@dataclass(frozen=True)
class Reduction:
    """A reduction of the family.

    Args:
        combine: the kernels' combine op (any / all are max / min of 0 / 1).
        empty: the result of an empty row; None: reducing nothing is an error.
        mean: divide by the element count.
    """

    combine: str
    empty: float | None
    mean: bool = False


REDUCTIONS = {"sum": Reduction("sum", 0), "prod": Reduction("prod", 1),
              "mean": Reduction("sum", math.nan, mean=True), "max": Reduction("max", None),
              "min": Reduction("min", None), "any": Reduction("max", False),
              "all": Reduction("min", True)}


def collapse(shape: Shape, *strides: Shape) -> tuple[Shape, tuple[Shape, ...]]:
    """`shape` with its size-1 dims dropped and the dims adjacent in every one of the
    `strides` merged (the row-major order of the elements is kept); at least rank 1."""
    dims: list[tuple[int, tuple[int, ...]]] = []
    for i, size in enumerate(shape):
        if size == 1:
            continue
        here = tuple(s[i] for s in strides)
        if dims and all(prev == cur * size for prev, cur in zip(dims[-1][1], here, strict=True)):
            dims[-1] = (dims[-1][0] * size, here)
        else:
            dims.append((size, here))
    if not dims:
        return (1,), tuple((1,) for _ in strides)
    return (tuple(d[0] for d in dims),
            tuple(tuple(d[1][j] for d in dims) for j in range(len(strides))))


def _dtypes(op: str, spec: Reduction, dtype: DType) -> tuple[DType, DType]:
    """The (accumulator, result) dtypes of reducing `dtype`.

    Raises:
        DTypeError: naming `op`, for a dtype without burn-cube kernels.
    """
    cube_dtype(op, dtype)
    if dtype is DType.bool:
        return DType.int32, DType.bool
    if dtype.is_float:
        return (DType.float32 if dtype.itemsize == 2 else dtype), dtype
    if spec.combine in ("sum", "prod"):
        return DType.int64, DType.int64
    return dtype, dtype


def _gpu(backend: Any) -> bool:
    return backend.runtime_name != "cpu"


def _run(backend: Any, op: str, dtypes: tuple[DType, DType, DType], x: CubeTensor, n: int,
         step: int, flat: bool, outs: tuple[CubeTensor | None, CubeTensor | None],
         mean: bool = False, plan: bool = False, columns: bool = False) -> Any:
    """Launch reduction `op` of the rows of `x` (layout `flat`, see `reduce_kernel`) into the
    dense outputs (values, indices), one element per row; with `plan`, return the planned
    launch instead (it takes `x`'s array, `n`, `step` and the outputs' arrays). `columns`
    (cpu): the rows run along a dim with dims of more than one element after it (float sums
    add as the column sums do, and the reduce fuser)."""
    rows = next(o for o in outs if o is not None).size
    schedule, units, cubes = _schedule(backend, rows, min(step, n) if flat else n,
                                       flat or step == 1)
    contiguous = schedule == "lanes" and (x.strides == (1,) if flat else step == 1)
    kernel = reduce_kernel(op, tuple(cube_dtype(op, d) for d in dtypes), len(x.shape), flat,
                           schedule, units, tuple(o is not None for o in outs), mean, contiguous,
                           columns and not _gpu(backend))
    arrays = [o.view((o.size,), (1,)).array for o in outs if o is not None]
    if plan:
        return kernel.plan(backend.runtime, (cubes, 1, 1), units, x.array, n, step, *arrays)
    kernel.launch(backend.runtime, (cubes, 1, 1), units, x.array, n, step, *arrays)
    return None


def _schedule(backend: Any, rows: int, length: int, dense: bool) -> tuple[str, int, int]:
    """(schedule, units per cube, cubes) for `rows` rows of `length` elements (`dense`: each
    row's elements are adjacent): on GPU runtimes a cube per long row (plane sums where planes
    have more than one unit), else a unit per row. On the cpu, cubes are the parallel loop:
    one unit each for few rows; dense rows use interleaved accumulators, strided rows sweep
    (adjacent rows read together)."""
    if _gpu(backend):
        if length >= TREE_MIN and (dense or rows < COLUMN_UNITS):
            plane = backend.runtime.properties.plane_size > 1
            return ("plane" if plane else "tree"), TREE_DIM, rows
        return "unit", 256, math.ceil(rows / 256)
    if dense or rows < SWEEP_MIN:
        units = 1 if rows < SWEEP_MIN else SWEEP_MIN
        return ("lanes" if length >= 2 * LANES else "unit"), units, math.ceil(rows / units)
    return "sweep", SWEEP_MIN, math.ceil(rows / SWEEP_MIN)


def _chunk(backend: Any, total: int) -> int:
    """Elements per chunk of a full reduction of `total` elements."""
    where = "gpu" if _gpu(backend) else "cpu"
    return max(CHUNK_MIN[where], math.ceil(total / CHUNKS_MAX[where]))


def _empty_rows(backend: Any, x: CubeTensor, op: str, spec: Reduction, shape: Shape,
                dtype: DType) -> CubeTensor:
    """The result of reducing empty rows into `shape`."""
    if spec.empty is None:
        raise EmptyReductionError(op, "cannot reduce an empty tensor", shape=x.shape)
    return full(backend, shape, spec.empty, dtype)


@dataclass(frozen=True, slots=True)
class _AllPlan:
    """A planned `reduce_all` over one input layout: the result and accumulator dtypes, the
    chunk length and count (0: one launch), and the launches (chunks, then their results)."""

    result: DType
    acc: DType
    chunk: int
    parts: int
    first: Callable[[list[Any]], None]
    second: Callable[[list[Any]], None] | None


def reduce_all(backend: Any, x: CubeTensor, op: str, spec: Reduction) -> CubeTensor:
    """Reduce every element of `x` to a 0-d tensor: in chunks, then the chunks' results."""
    array = x.array
    key = ("reduce_all", op, id(x.dtype), layout_key(array))
    plan = backend.plans.get(key)
    if plan is None:
        if 0 in x.shape:
            return _empty_rows(backend, x, op, spec, (), _dtypes(op, spec, x.dtype)[1])
        plan = backend.planned(key, lambda: _plan_all(backend, x, spec, op))
    out = backend.empty((), plan.result)
    size = math.prod(array.shape)
    if plan.second is None:
        plan.first([array, size, plan.chunk, out.array])
    else:
        partial = backend.empty((plan.parts,), plan.acc)
        plan.first([array, size, plan.chunk, partial.array])
        plan.second([partial.array, plan.parts, 1, out.array])
    return out


def _plan_all(backend: Any, x: CubeTensor, spec: Reduction, op: str) -> _AllPlan:
    """The launches of `reduce_all` over `x`'s layout (not empty)."""
    acc, result = _dtypes(op, spec, x.dtype)
    out = backend.empty((), result)
    chunk = _chunk(backend, x.size)
    parts = math.ceil(x.size / chunk)
    if parts == 1:
        first = _run(backend, spec.combine, (x.dtype, acc, result), _flat(x), x.size, x.size,
                     True, (out, None), plan=True)
        return _AllPlan(result, acc, x.size, 0, first, None)
    partial = backend.empty((parts,), acc)
    first = _run(backend, spec.combine, (x.dtype, acc, acc), _flat(x), x.size, chunk, True,
                 (partial, None), plan=True)
    second = _run(backend, spec.combine, (acc, acc, result), partial.view((1,), (0,)), parts, 1,
                  False, (out, None), plan=True)
    return _AllPlan(result, acc, chunk, parts, first, second)


def _flat(x: CubeTensor) -> CubeTensor:
    """`x` with the fewest dims that keep its row-major element order."""
    shape, (strides,) = collapse(x.shape, x.strides)
    return x.view(shape, strides)


@dataclass(frozen=True, slots=True)
class _DimPlan:
    """A planned `reduce_dim` over one input layout: the outputs' shape and dtype, and the
    launch (taking the input's array, `scalars` and the outputs' arrays)."""

    shape: Shape
    result: DType
    scalars: tuple[int, int]
    launch: Callable[[list[Any]], None]


def reduce_dim(backend: Any, x: CubeTensor, dim: int, op: str, spec: Reduction,
               outputs: tuple[bool, bool]) -> tuple[CubeTensor | None, CubeTensor | None]:
    """Reduce `x` along `dim` (kept with size 1) into the wanted (values, int64 indices)."""
    array = x.array
    key = ("reduce_dim", op, id(x.dtype), layout_key(array), dim, outputs)
    plan = backend.plans.get(key)
    if plan is None:
        if 0 in x.shape:
            acc, result = _dtypes(op, spec, x.dtype)
            shape = tuple(1 if i == dim else s for i, s in enumerate(x.shape))
            if 0 in shape:
                return (backend.empty(shape, result) if outputs[0] else None,
                        backend.empty(shape, DType.int64) if outputs[1] else None)
            return _empty_rows(backend, x, op, spec, shape, result), None
        if x.shape[dim] > LONG_ROW and _gpu(backend):
            return _long_rows(backend, x, dim, op, spec, outputs)
        plan = backend.planned(key, lambda: _plan_dim(backend, x, dim, op, spec, outputs))
    n, step = plan.scalars
    if outputs[1]:
        indices = backend.empty(plan.shape, DType.int64)
        values = backend.empty(plan.shape, plan.result) if outputs[0] else None
        plan.launch([array, n, step, *(o.array for o in (values, indices) if o is not None)])
        return values, indices
    values = backend.empty(plan.shape, plan.result)
    plan.launch([array, n, step, values.array])
    return values, None


def _plan_dim(backend: Any, x: CubeTensor, dim: int, op: str, spec: Reduction,
              outputs: tuple[bool, bool]) -> _DimPlan:
    """The launch of `reduce_dim` over `x`'s layout (rows and their elements non-empty)."""
    acc, result = _dtypes(op, spec, x.dtype)
    shape = tuple(1 if i == dim else s for i, s in enumerate(x.shape))
    values = backend.empty(shape, result) if outputs[0] else None
    indices = backend.empty(shape, DType.int64) if outputs[1] else None
    rows, n, step = math.prod(shape), x.shape[dim], x.strides[dim]
    row_shape, (strides,) = collapse(shape, x.strides)
    rows_view = x.view(row_shape, strides)
    if values is not None and indices is None and spec.combine == "sum" and acc.is_float and \
            not _gpu(backend) and strides == (1,) and rows >= COLUMNS:
        launch = _column_sums(backend, rows_view, n, step, (x.dtype, acc, result), values,
                              spec.mean)
    elif values is not None and indices is None and not spec.mean and _gpu(backend) and \
            step != 1 and strides[-1] == 1 and n >= TREE_MIN and rows < COLUMN_UNITS and \
            _column_count(rows, n) > 1:
        launch = _column_chunks(backend, x, dim, spec.combine, (x.dtype, acc, result), values)
    else:
        launch = _run(backend, spec.combine, (x.dtype, acc, result), rows_view, n, step, False,
                      (values, indices), spec.mean, plan=True,
                      columns=math.prod(x.shape[dim + 1:]) > 1)
    return _DimPlan(shape, result, (n, step), launch)


def _column_count(rows: int, n: int) -> int:
    """The chunks `_column_chunks` cuts `rows` strided rows of `n` elements into: as many as
    `COLUMN_UNITS` asks for, or a few fewer where that count divides n (no shorter last
    chunk, whose partials take a launch and a concatenation of their own)."""
    most = min(-(-COLUMN_UNITS // rows), n // COLUMN_CHUNK_MIN)
    return next((c for c in range(most, most // 2, -1) if n % c == 0), most)


def _column_chunks(backend: Any, x: CubeTensor, dim: int, op: str,
                   dtypes: tuple[DType, DType, DType], values: CubeTensor
                   ) -> Callable[[list[Any]], None]:
    """The planned launches of `reduce_dim` (no indices, no mean) of `x` along `dim`, whose
    rows are strided and adjacent to each other, on a GPU runtime: each row's chunks reduced
    a unit each into partial results of the accumulator dtype, laid out [chunk, row] (a
    shorter last chunk: a launch of its own, its partials concatenated), then each row's
    partials (`COLUMN_UNITS`). The launch takes `x`'s array (of this layout), n, step and
    the values' array."""
    source, acc, result = dtypes
    n, step, rows = x.shape[dim], x.strides[dim], values.size
    count = 0
    passes = []  # (planned launch, the chunks' view: shape, strides, start; length, chunks)
    for view, length, chunks in _chunk_views(x, dim, -(-n // _column_count(rows, n))):
        count += chunks
        passes.append((_run(backend, op, (source, acc, acc), view, length, step, False,
                            (backend.empty((chunks * rows,), acc), None), plan=True),
                       (view.shape, view.strides, view.offset - x.offset), length, chunks))
    final = _run(backend, op, (acc, acc, result),
                 backend.empty((count, rows), acc).view((rows,), (1,)), count, rows, False,
                 (values, None), plan=True)

    def launch(args: list[Any]) -> None:
        array, parts = args[0], []
        for run, (shape, strides, start), length, chunks in passes:
            part = backend.empty((chunks, rows), acc)
            run([array.view_unchecked(shape, strides, array.offset + start), length, step,
                 part.array.view_unchecked((chunks * rows,), (1,), 0)])
            parts.append(part)
        partials = parts[0] if len(parts) == 1 else _cat(backend, parts)
        final([partials.array.view_unchecked((rows,), (1,), 0), count, rows, args[-1]])

    return launch


def _chunk_views(x: CubeTensor, dim: int, chunk: int) -> list[tuple[CubeTensor, int, int]]:
    """`x`'s rows along `dim` cut into chunks of `chunk` elements, the last one shorter: per
    run of chunks of one length (the whole ones, then the shorter one if any), a view of
    their rows (chunk by chunk, each over `x`'s other dims), their length and count."""
    n, step = x.shape[dim], x.strides[dim]
    whole, tail = divmod(n, chunk)
    rest_shape = tuple(s for i, s in enumerate(x.shape) if i != dim)
    rest_strides = tuple(s for i, s in enumerate(x.strides) if i != dim)
    views = []
    for first, count, length in ((0, whole, chunk), (whole, int(tail > 0), tail)):
        if count:
            shape, (strides,) = collapse((count, *rest_shape), (chunk * step, *rest_strides))
            views.append((x.view(shape, strides, x.offset + first * chunk * step), length,
                          count))
    return views


def _long_rows(backend: Any, x: CubeTensor, dim: int, op: str, spec: Reduction,
               outputs: tuple[bool, bool]) -> tuple[CubeTensor | None, CubeTensor | None]:
    """`reduce_dim` of rows longer than `LONG_ROW` on a GPU runtime, in two passes: each row's
    `ROW_CHUNK`-element chunks (the last one shorter) reduced into partial results of the
    accumulator dtype, laid out [chunk, row], then each row's partials; the indices of the
    chunks' winners are their own plus the chunk's start (the first chunk holding the winning
    value or a NaN wins, as the first occurrence does in one pass)."""
    acc, result = _dtypes(op, spec, x.dtype)
    n, step = x.shape[dim], x.strides[dim]
    chunks = -(-n // ROW_CHUNK)
    shape = tuple(1 if i == dim else s for i, s in enumerate(x.shape))
    rows = math.prod(shape)
    parts: list[tuple[CubeTensor, CubeTensor | None]] = []  # (values, indices) [count, rows]
    for view, length, count in _chunk_views(x, dim, ROW_CHUNK):
        part = (backend.empty((count, rows), acc),
                backend.empty((count, rows), DType.int64) if outputs[1] else None)
        _run(backend, spec.combine, (x.dtype, acc, acc), view, length, step, False, part)
        parts.append(part)
    values, indices = parts[0] if len(parts) == 1 else (
        _cat(backend, [p[0] for p in parts]),
        _cat(backend, [p[1] for p in parts]) if outputs[1] else None)
    out = backend.empty(shape, acc if spec.mean else result) if outputs[0] or spec.mean \
        else None
    winners = backend.empty(shape, DType.int64) if outputs[1] else None
    _run(backend, spec.combine, (acc, acc, acc if spec.mean else result),
         values.view((rows,), (1,)), chunks, rows, False, (out, winners))
    if spec.mean and out is not None:
        out = backend.float_div_scalar(out, float(n))
        if result is not acc:
            out = backend.float_cast(out, result)
    if winners is None or indices is None:
        return out, None
    at = backend.int_gather(0, indices, winners.view((1, rows), (rows, 1)))
    start_of = backend.int_mul_scalar(winners.view((1, rows), (rows, 1)), ROW_CHUNK)
    found = backend.int_add(at, start_of)
    return out, found.view(shape, dense_strides(shape))


def _cat(backend: Any, parts: list[Any]) -> CubeTensor:
    """`parts` (dense tensors of one dtype) concatenated along dim 0."""
    return cast(CubeTensor, getattr(backend, f"{parts[0].dtype.kind.value}_cat")(parts, 0))


def _column_sums(backend: Any, x: CubeTensor, n: int, step: int,
                 dtypes: tuple[DType, DType, DType], out: CubeTensor,
                 mean: bool) -> Callable[[list[Any]], None]:
    """The planned launch of cpu float sums of rows starting at adjacent elements (`x`: rank
    1, stride 1), `COLUMNS` rows per unit, into dense `out` (it takes `x`'s array, `n`, `step`
    and `out`'s array), in a cube per thread at least (the threads share cubes)."""
    groups = math.ceil(x.shape[0] / COLUMNS)
    units = max(1, min(SWEEP_MIN, -(-groups // backend.runtime.threads)))
    kernel = column_sum_kernel(tuple(cube_dtype("sum", d) for d in dtypes), units, mean)
    work = unit_work(n * COLUMNS)
    launch = kernel.plan(backend.runtime, (math.ceil(groups / units), 1, 1), units, x.array, n,
                         step, out.view((out.size,), (1,)).array, work)
    return lambda values: launch([*values, work])


def softmax(backend: Any, x: CubeTensor, dim: int, log: bool) -> CubeTensor:
    """Softmax (log-softmax) of `x` along `dim` in one kernel (on the cpu, planned once per
    input layout)."""
    out = backend.empty(x.shape, x.dtype)
    if out.size == 0:
        return out
    if _gpu(backend):
        _softmax_launch(backend, x, out, dim, log, False)
    elif softmax_rows_cpu.serves(backend, x, dim, log):
        softmax_rows_cpu.softmax(backend, x, out)
    else:
        launch, scalars = backend.planned(
            ("softmax", log, id(x.dtype), layout_key(x.array), dim),
            lambda: _softmax_launch(backend, x, out, dim, log, True))
        launch([x.array, scalars[0], scalars[1], out.array, scalars[2]])
    return out


def _softmax_launch(backend: Any, x: CubeTensor, out: CubeTensor, dim: int, log: bool,
                    plan: bool) -> Any:
    """Launch the softmax of `x` into the new dense `out`; with `plan`, return the planned
    launch (taking x's array, n, step, out's array, out_step) and its three scalars."""
    n = x.shape[dim]
    dense = dense_strides(x.shape)
    row_shape, (strides, out_strides) = collapse(
        tuple(1 if i == dim else s for i, s in enumerate(x.shape)), x.strides, dense)
    acc = _dtypes("softmax", REDUCTIONS["sum"], x.dtype)[0]
    if not plan and softmax_rows(backend, x.view(row_shape, strides),
                                 out.view(row_shape, out_strides), n,
                                 (x.strides[dim], dense[dim]), acc, log):
        return None
    schedule, units, cubes = _schedule(backend, out.size // n, n, x.strides[dim] == 1)
    contiguous = schedule == "lanes" and x.strides[dim] == 1 and dense[dim] == 1
    kernel = softmax_kernel((cube_dtype("softmax", x.dtype), cube_dtype("softmax", acc)),
                            len(row_shape), schedule, units, log, contiguous)
    args = (x.view(row_shape, strides).array, n, x.strides[dim],
            out.view(row_shape, out_strides).array, dense[dim])
    if plan:
        return (kernel.plan(backend.runtime, (cubes, 1, 1), units, *args),
                (n, x.strides[dim], dense[dim]))
    kernel.launch(backend.runtime, (cubes, 1, 1), units, *args)
    return None


def argwhere(backend: Any, x: CubeTensor) -> CubeTensor:
    """int64 [count, rank] coordinates of the true elements of `x`, row-major: the true
    elements of each chunk are counted on the device, then each chunk writes its own."""
    rank = len(x.shape)
    if x.size == 0:
        return backend.empty((0, rank), DType.int64)
    chunk = max(256, math.ceil(x.size / (8192 if _gpu(backend) else 64)))
    parts = math.ceil(x.size / chunk)
    counts = backend.empty((parts,), DType.int32)
    _run(backend, "sum", (DType.bool, DType.int32, DType.int32), _flat(x), x.size, chunk, True,
         (counts, None))
    per_chunk = host_array(counts)
    ends = np.cumsum(per_chunk, dtype=np.int64)
    out = backend.empty((int(ends[-1]), rank), DType.int64)
    if out.size:
        starts = backend.upload(ends - per_chunk)
        _, units, cubes = _schedule(backend, parts, 0, True)
        argwhere_kernel(rank, units).launch(
            backend.runtime, (cubes, 1, 1), units, x.array, starts.array, x.size, chunk,
            out.view((out.size,), (1,)).array)
    return out


Method = tuple[str, Callable[..., Any]]
#: `reduce_dim`'s outputs of the value reductions: the values only.
_VALUES = (True, False)


def _full_method(kind: str, name: str) -> Method:
    op, spec = f"{kind}_{name}", REDUCTIONS[name]

    def method(self: Any, x: CubeTensor) -> CubeTensor:
        return reduce_all(self, x, op, spec)

    return op, method


def _dim_method(kind: str, name: str) -> Method:
    op, spec = f"{kind}_{name}_dim", REDUCTIONS[name]

    def method(self: Any, x: CubeTensor, dim: int) -> CubeTensor:
        values: CubeTensor = reduce_dim(self, x, dim, op, spec, _VALUES)[0]  # type: ignore
        return values

    return op, method


def _indexed_method(kind: str, name: str, values: bool) -> Method:
    op = f"{kind}_{name}_dim_with_indices" if values else f"{kind}_arg{name}"
    spec = REDUCTIONS[name]

    def method(self: Any, x: CubeTensor, dim: int) -> Any:
        result = reduce_dim(self, x, dim, op, spec, (values, True))
        return result if values else result[1]

    return op, method


class CubeReductionOps:
    """Reductions, arg max / min, any / all, argwhere and softmax as burn-cube kernels."""

    def bool_argwhere(self: Any, x: CubeTensor) -> CubeTensor:
        return argwhere(self, x)

    def softmax(self: Any, x: CubeTensor, dim: int) -> CubeTensor:
        """exp(x - max) / sum(exp(x - max)) along `dim`, fused."""
        return softmax(self, x, dim, log=False)

    def softmax_backward_from_output(self: Any, out: CubeTensor, grad: CubeTensor,
                                     dim: int) -> CubeTensor:
        """Softmax's input gradient from its output (Autodiff's fused rule): one rows kernel
        on the cpu runtime where it serves, else the composite."""
        return softmax_rows_cpu.backward(self, out, grad, dim)

    def log_softmax(self: Any, x: CubeTensor, dim: int) -> CubeTensor:
        """x - max - log(sum(exp(x - max))) along `dim`, fused."""
        return softmax(self, x, dim, log=True)

    def layer_norm(self: Any, x: CubeTensor, weight: CubeTensor | None,
                   bias: CubeTensor | None, num_dims: int, eps: float) -> Any:
        """(out, mean, rstd) of a layer norm: a cube per row on GPUs (`layer_norm_rows`), a
        unit per row on the cpu runtime (`norm_rows_cpu`)."""
        rows = norm_rows_cpu if norm_rows_cpu.serves(self, x.shape, num_dims) else layer_norm_rows
        return rows.layer_norm(self, x, weight, bias, num_dims, eps)

    def layer_norm_backward(self: Any, x: CubeTensor, weight: CubeTensor | None,
                            bias: CubeTensor | None, mean: CubeTensor, rstd: CubeTensor,
                            grad: CubeTensor, num_dims: int) -> Any:
        """(dx, dweight, dbias) of a layer norm: a cube per row on GPUs (`layer_norm_rows`), a
        unit per row on the cpu runtime (`norm_rows_cpu`)."""
        rows = norm_rows_cpu if norm_rows_cpu.serves(self, x.shape, num_dims) else layer_norm_rows
        return rows.layer_norm_backward(self, x, weight, bias, mean, rstd, grad, num_dims)

    def cross_entropy(self: Any, logits: CubeTensor, target: CubeTensor,
                      weight: CubeTensor | None, ignore_index: int, label_smoothing: float,
                      reduction: str) -> CubeTensor:
        """Cross entropy: a unit per row (`loss_rows`; on GPUs for short rows)."""
        return loss_rows.cross_entropy(self, logits, target, weight, ignore_index,
                                       label_smoothing, reduction)

    def cross_entropy_backward(self: Any, logits: CubeTensor, target: CubeTensor,
                               weight: CubeTensor | None, grad: CubeTensor, ignore_index: int,
                               label_smoothing: float, reduction: str) -> CubeTensor:
        """Logit gradients of `cross_entropy`: a unit per row (`loss_rows`; on GPUs for short
        rows)."""
        return loss_rows.cross_entropy_backward(self, logits, target, weight, grad,
                                                ignore_index, label_smoothing, reduction)


_METHODS = [
    *(_full_method(k, n) for k in ("float", "int") for n in ("sum", "prod", "max", "min")),
    *(_full_method("bool", n) for n in ("any", "all")),
    *(_dim_method(k, n) for k in ("float", "int") for n in ("sum", "prod")),
    _dim_method("float", "mean"),
    *(_dim_method("bool", n) for n in ("any", "all")),
    *(_indexed_method(k, n, v) for k in ("float", "int") for n in ("max", "min")
      for v in (True, False)),
]
for _op, _method in _METHODS:
    _method.__name__ = _method.__qualname__ = _op
    _method.__doc__ = f"`{OPS[_op].signature}` as burn-cube kernels."
    setattr(CubeReductionOps, _op, _method)
