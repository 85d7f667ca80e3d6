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
than one unit).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from burn.dtype import DType
from burn.errors import ValueRangeError
from burn.ir import OPS
from burn.ir.cube import cube_dtype

from . import layer_norm_rows
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
from .tensor import CubeTensor, Shape, dense_strides, host_array

#: Rows at least this long get a cube each on GPU runtimes.
TREE_MIN = 128
#: cpu: units per cube when there are at least this many rows (else one).
SWEEP_MIN = 64
#: Elements per chunk of a full reduction: at least (cpu, GPU) and the most chunks.
CHUNK_MIN = {"cpu": 1 << 15, "gpu": TREE_DIM * 16}
CHUNKS_MAX = {"cpu": 64, "gpu": 1024}


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
         mean: bool = False) -> None:
    """Launch reduction `op` of the rows of `x` (layout `flat`, see `reduce_kernel`) into the
    dense outputs (values, indices), one element per row."""
    rows = next(o for o in outs if o is not None).size
    schedule, units, cubes = _schedule(backend, rows, min(step, n) if flat else n,
                                       flat or step == 1)
    contiguous = schedule == "lanes" and (x.strides == (1,) if flat else step == 1)
    kernel = reduce_kernel(op, tuple(cube_dtype(op, d) for d in dtypes), len(x.shape), flat,
                           schedule, units, tuple(o is not None for o in outs), mean, contiguous)
    arrays = [o.view((o.size,), (1,)).array for o in outs if o is not None]
    kernel.launch(backend.runtime, (cubes, 1, 1), units, x.array, n, step, *arrays)


def _schedule(backend: Any, rows: int, length: int, dense: bool) -> tuple[str, int, int]:
    """(schedule, units per cube, cubes) for `rows` rows of `length` elements (`dense`: each
    row's elements are adjacent): on GPU runtimes a cube per long row (plane sums where planes
    have more than one unit), else a unit per row. On the cpu, cubes are the parallel loop:
    one unit each for few rows; dense rows use interleaved accumulators, strided rows sweep
    (adjacent rows read together)."""
    if _gpu(backend):
        if length >= TREE_MIN:
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
        raise ValueRangeError(op, "cannot reduce an empty tensor", shape=x.shape)
    return full(backend, shape, spec.empty, dtype)


def reduce_all(backend: Any, x: CubeTensor, op: str, spec: Reduction) -> CubeTensor:
    """Reduce every element of `x` to a 0-d tensor: in chunks, then the chunks' results."""
    acc, result = _dtypes(op, spec, x.dtype)
    if x.size == 0:
        return _empty_rows(backend, x, op, spec, (), result)
    out = backend.empty((), result)
    partial = _partials(backend, x, spec, acc)
    if partial is None:
        _run(backend, spec.combine, (x.dtype, acc, result), _flat(x), x.size, x.size, True,
             (out, None))
    else:
        _run(backend, spec.combine, (acc, acc, result), partial.view((1,), (0,)), partial.size,
             1, False, (out, None))
    return out


def _flat(x: CubeTensor) -> CubeTensor:
    """`x` with the fewest dims that keep its row-major element order."""
    shape, (strides,) = collapse(x.shape, x.strides)
    return x.view(shape, strides)


def _partials(backend: Any, x: CubeTensor, spec: Reduction, acc: DType) -> CubeTensor | None:
    """The reductions of the chunks of (non-empty) `x`, in `acc`; None if one chunk."""
    chunk = _chunk(backend, x.size)
    parts = math.ceil(x.size / chunk)
    if parts == 1:
        return None
    partial = backend.empty((parts,), acc)
    _run(backend, spec.combine, (x.dtype, acc, acc), _flat(x), x.size, chunk, True,
         (partial, None))
    return partial


def reduce_dim(backend: Any, x: CubeTensor, dim: int, op: str, spec: Reduction,
               outputs: tuple[bool, bool]) -> tuple[CubeTensor | None, CubeTensor | None]:
    """Reduce `x` along `dim` (kept with size 1) into the wanted (values, int64 indices)."""
    acc, result = _dtypes(op, spec, x.dtype)
    shape = tuple(1 if i == dim else s for i, s in enumerate(x.shape))
    values = backend.empty(shape, result) if outputs[0] else None
    indices = backend.empty(shape, DType.int64) if outputs[1] else None
    rows, n = math.prod(shape), x.shape[dim]
    if rows == 0:
        return values, indices
    if n == 0:
        return _empty_rows(backend, x, op, spec, shape, result), None
    row_shape, (strides,) = collapse(shape, x.strides)
    rows_view = x.view(row_shape, strides)
    if values is not None and indices is None and spec.combine == "sum" and acc.is_float and \
            not _gpu(backend) and strides == (1,) and rows >= COLUMNS:
        _column_sums(backend, rows_view, n, x.strides[dim], (x.dtype, acc, result), values,
                     spec.mean)
        return values, None
    _run(backend, spec.combine, (x.dtype, acc, result), rows_view, n, x.strides[dim], False,
         (values, indices), spec.mean)
    return values, indices


def _column_sums(backend: Any, x: CubeTensor, n: int, step: int,
                 dtypes: tuple[DType, DType, DType], out: CubeTensor, mean: bool) -> None:
    """cpu float sums of rows starting at adjacent elements (`x`: rank 1, stride 1), `COLUMNS`
    rows per unit, into dense `out`."""
    units = SWEEP_MIN
    kernel = column_sum_kernel(tuple(cube_dtype("sum", d) for d in dtypes), units, mean)
    groups = math.ceil(x.shape[0] / COLUMNS)
    kernel.launch(backend.runtime, (math.ceil(groups / units), 1, 1), units, x.array, n, step,
                  out.view((out.size,), (1,)).array)


def softmax(backend: Any, x: CubeTensor, dim: int, log: bool) -> CubeTensor:
    """Softmax (log-softmax) of `x` along `dim` in one kernel."""
    out = backend.empty(x.shape, x.dtype)
    if out.size == 0:
        return out
    n = x.shape[dim]
    dense = dense_strides(x.shape)
    row_shape, (strides, out_strides) = collapse(
        tuple(1 if i == dim else s for i, s in enumerate(x.shape)), x.strides, dense)
    acc = _dtypes("softmax", REDUCTIONS["sum"], x.dtype)[0]
    if softmax_rows(backend, x.view(row_shape, strides), out.view(row_shape, out_strides), n,
                    (x.strides[dim], dense[dim]), acc, log):
        return out
    schedule, units, cubes = _schedule(backend, out.size // n, n, x.strides[dim] == 1)
    contiguous = schedule == "lanes" and x.strides[dim] == 1 and dense[dim] == 1
    kernel = softmax_kernel((cube_dtype("softmax", x.dtype), cube_dtype("softmax", acc)),
                            len(row_shape), schedule, units, log, contiguous)
    kernel.launch(backend.runtime, (cubes, 1, 1), units, x.view(row_shape, strides).array, n,
                  x.strides[dim], out.view(row_shape, out_strides).array, dense[dim])
    return out


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


def _full_method(kind: str, name: str) -> Method:
    op, spec = f"{kind}_{name}", REDUCTIONS[name]

    def method(self: Any, x: CubeTensor) -> CubeTensor:
        return reduce_all(self, x, op, spec)

    return op, method


def _dim_method(kind: str, name: str) -> Method:
    op, spec = f"{kind}_{name}_dim", REDUCTIONS[name]

    def method(self: Any, x: CubeTensor, dim: int) -> CubeTensor:
        return cast(CubeTensor, reduce_dim(self, x, dim, op, spec, (True, False))[0])

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

    def log_softmax(self: Any, x: CubeTensor, dim: int) -> CubeTensor:
        """x - max - log(sum(exp(x - max))) along `dim`, fused."""
        return softmax(self, x, dim, log=True)

    def layer_norm(self: Any, x: CubeTensor, weight: CubeTensor | None,
                   bias: CubeTensor | None, num_dims: int, eps: float) -> Any:
        """(out, mean, rstd) of a layer norm: a cube per row on GPUs (`layer_norm_rows`)."""
        return layer_norm_rows.layer_norm(self, x, weight, bias, num_dims, eps)

    def layer_norm_backward(self: Any, x: CubeTensor, weight: CubeTensor | None,
                            bias: CubeTensor | None, mean: CubeTensor, rstd: CubeTensor,
                            grad: CubeTensor, num_dims: int) -> Any:
        """(dx, dweight, dbias) of a layer norm: a cube per row on GPUs (`layer_norm_rows`)."""
        return layer_norm_rows.layer_norm_backward(self, x, weight, bias, mean, rstd, grad,
                                                   num_dims)


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
