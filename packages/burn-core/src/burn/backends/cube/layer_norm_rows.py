"""Layer norm and its backward on GPU runtimes for rows that fit in registers: one cube per row
of the `[M, D]` groups, each unit holding `chunks` elements in locals (the `softmax_rows`
schedule: unit `u` holds elements `u + i * units`), so x is read once and out written once.

Forward: the row's sum of differences from its first element combines over the cube (planes,
then shared memory) into the mean (exact for a constant row), then
the sum of squared deviations from the registers into the biased variance (two exact passes over
registers, no cancellation of a one-pass sum of squares); `out = (x - mean) * rstd * w + b`,
and unit 0 writes the row's mean and `rstd = 1 / sqrt(var + eps)`.
Backward (from the forward's mean and rstd): with `xhat = (x - mean) * rstd` and `gw = grad * w`,
`dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat))`, a cube walking `BACKWARD_ROWS` rows and
keeping the column sums of `grad * xhat` (the weight's gradient) and of `grad` (the bias's) over
them in registers; the backend's `float_sum_dim` adds the cubes' partial rows.
Values accumulate in float32 (float64 for float64). The forward of rows past
`softmax_rows.SHAPES` runs the streaming kernel of `rows_gpu` (their backward, short rows and
other layouts take the protocol's composite default); the cpu runtime has its own rows
kernels (`norm_rows_cpu`, chosen in `reduction.py`).
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from burn.backend.protocol import Backend
from burn.dtype import DType
from burn.ir.cube import cube_dtype

from . import rows_gpu
from .kernel_cache import cached_kernel
from .layout import contiguous
from .softmax_rows import _combine, plan
from .tensor import CubeTensor, Shape, dense_strides


def _acc(dtype: DType) -> DType:
    """The accumulator of `dtype`: float64 for float64, else float32."""
    return DType.float64 if dtype is DType.float64 else DType.float32


class _Row:
    """A kernel's view of its cube's row: masked element indexes and register loads."""

    def __init__(self, b: Any, units: int, chunks: int, exact: bool, n: Any,
                 row: Any) -> None:
        from burn_cube import bool_, u32

        self.b, self.units = b, units
        self.start = b.local(u32, row * n)  # reassigned to walk rows
        self.valid = [None if exact else b.local(bool_, b.UNIT_POS + i * units < n)
                      for i in range(chunks)]

    def col(self, i: int, ok: Any) -> Any:
        """Column of chunk `i` (0 where masked: a valid address)."""
        c = self.b.UNIT_POS + i * self.units
        return c if ok is None else self.b.select(ok, c, 0)

    def load(self, t: Any, acc: Any, row: bool = True) -> list[Any]:
        """The unit's elements of `t` (a row of it, or the `[D]` vector `t` when not `row`)
        as `acc` locals."""
        base = t.offset + self.start if row else t.offset
        return [self.b.local(acc, self.b.cast(t[base + self.col(i, ok)], acc))
                for i, ok in enumerate(self.valid)]

    def masked(self, i: int, value: Any) -> Any:
        """`value` for chunk `i`, 0 where it is past the row's end."""
        ok = self.valid[i]
        return value if ok is None else self.b.select(ok, value, 0)

    def store(self, t: Any, values: list[Any]) -> None:
        """`t[row, col] = value` for the unit's valid chunks (dense `t`)."""
        for i, (value, ok) in enumerate(zip(values, self.valid, strict=True)):
            with nullcontext() if ok is None else self.b.if_(ok):
                t[t.offset + self.start + self.col(i, None)] = self.b.cast(value, t.dtype)


@cached_kernel
def forward_kernel(dtypes: tuple[Any, Any], units: int, chunks: int, plane: bool, exact: bool,
                   weight: bool, bias: bool) -> Any:
    """Layer norm of a row per cube (module docstring).

    Args:
        dtypes: burn-cube dtypes (tensors, accumulator).
        units: units per cube.
        chunks: elements each unit holds (``units * chunks >= n``).
        plane: combine within planes first.
        exact: rows are exactly ``units * chunks`` long.
        weight: a weight tensor follows x.
        bias: a bias tensor follows (the weight).

    Returns:
        A kernel taking ``x, [weight], [bias], out, mean, rstd, n, eps``: rank-1 tensors, x and
        out rows of n elements, mean and rstd one element per row.
    """
    from burn_cube import KernelBuilder

    dtype, acc = dtypes
    b = KernelBuilder("layer_norm_rows", cube_dim=units)
    x, w, sh, out, mean, rstd, n, eps = rows_gpu.layer_norm_args(b, dtypes, weight, bias)
    row = _Row(b, units, chunks, exact, n, b.CUBE_POS)
    values = row.load(x, acc)
    # the mean as the row's first element plus the mean of the differences from it: exact for
    # a constant row (its output then the bias, as torch's)
    first = b.local(acc, b.cast(x[x.offset + row.start], acc))
    total = b.local(acc, 0)
    for i, v in enumerate(values):
        b.set(total, total + row.masked(i, v - first))
    count = b.local(acc, b.cast(n, acc))
    mu = b.local(acc, first + _combine(b, "sum", total, units, plane) / count)
    squares = b.local(acc, 0)
    for i, v in enumerate(values):
        b.set(v, row.masked(i, v - mu))
        b.set(squares, squares + v * v)
    scale = b.local(acc, b.rsqrt(_combine(b, "sum", squares, units, plane) / count + eps))
    for v in values:
        b.set(v, v * scale)
    if w is not None:
        for v, wv in zip(values, row.load(w, acc, row=False), strict=True):
            b.set(v, v * wv)
    if sh is not None:
        for v, bv in zip(values, row.load(sh, acc, row=False), strict=True):
            b.set(v, v + bv)
    row.store(out, values)
    with b.if_(b.UNIT_POS == 0):
        mean[mean.offset + b.CUBE_POS] = b.cast(mu, dtype)
        rstd[rstd.offset + b.CUBE_POS] = b.cast(scale, dtype)
    return b.kernel()


@cached_kernel
def backward_kernel(dtypes: tuple[Any, Any], units: int, chunks: int, plane: bool,
                    exact: bool, weight: bool, bias: bool, rows: int) -> Any:
    """Input gradients of `rows` consecutive rows per cube (module docstring), and per cube
    the column sums of ``grad * xhat`` (when `weight`) and of ``grad`` (when `bias`) over its
    rows, held in registers across the rows.

    Args:
        dtypes, units, chunks, plane, exact: as `forward_kernel`.
        weight: a weight tensor follows x, and the ``grad * xhat`` partial sums are written.
        bias: the ``grad`` partial sums are written.
        rows: rows per cube (a compile-time loop: barriers stay in uniform control flow).

    Returns:
        A kernel taking ``x, [weight], mean, rstd, grad, dx, [w_part], [b_part], n, m``:
        rank-1 tensors, m rows of n elements; the partial sums are [cubes, n] in the
        accumulator dtype.
    """
    from burn_cube import KernelBuilder, bool_, u32

    dtype, acc = dtypes
    b = KernelBuilder("layer_norm_rows_backward", cube_dim=units)
    x = b.tensor("x", dtype, write=False)
    w = b.tensor("weight", dtype, write=False) if weight else None
    mean, rstd, grad = (b.tensor(name, dtype, write=False) for name in ("mean", "rstd", "grad"))
    dx = b.tensor("dx", dtype, write=True)
    parts = [b.tensor(name, acc, write=True) for name, on in (("w_part", weight),
                                                              ("b_part", bias)) if on]
    n, m = b.scalar("n", u32), b.scalar("m", u32)
    row = _Row(b, units, chunks, exact, n, b.CUBE_POS * rows)
    w_values = None if w is None else row.load(w, acc, row=False)
    totals = [[b.local(acc, 0) for _ in range(chunks)] for _ in parts]
    count = b.local(acc, b.cast(n, acc))
    with b.for_range(0, rows) as j:
        r = b.local(u32, b.CUBE_POS * rows + j)
        ok = b.local(bool_, r < m)
        b.set(r, b.select(ok, r, 0))  # rows past m read row 0 and write nothing
        b.set(row.start, r * n)
        mu = b.local(acc, b.cast(mean[mean.offset + r], acc))
        scale = b.local(acc, b.cast(rstd[rstd.offset + r], acc))
        xhat, gw = row.load(x, acc), row.load(grad, acc)
        for v in xhat:
            b.set(v, (v - mu) * scale)
        terms = ([[g * v for g, v in zip(gw, xhat, strict=True)]] if weight else []) + (
            [gw] if bias else [])  # grad * xhat for the weight, grad for the bias
        for total, term in zip(totals, terms, strict=True):
            for t, value in zip(total, term, strict=True):
                b.set(t, t + b.select(ok, value, 0))
        if w_values is not None:
            for g, wv in zip(gw, w_values, strict=True):
                b.set(g, g * wv)
        sums = [b.local(acc, 0), b.local(acc, 0)]
        for i, (g, v) in enumerate(zip(gw, xhat, strict=True)):
            b.set(sums[0], sums[0] + row.masked(i, g))
            b.set(sums[1], sums[1] + row.masked(i, g * v))
        means = [b.local(acc, _combine(b, "sum", s, units, plane) / count) for s in sums]
        with b.if_(ok):
            row.store(dx, [scale * (g - means[0] - v * means[1])
                           for g, v in zip(gw, xhat, strict=True)])
    b.set(row.start, b.CUBE_POS * n)
    for part, total in zip(parts, totals, strict=True):
        row.store(part, total)
    return b.kernel()


#: Rows per cube of the backward kernel, largest first: the most that leaves at least
#: `BACKWARD_MIN_CUBES` cubes (the column sums of a cube's rows stay in its registers, so the
#: weight's and bias's gradients sum `cubes` partial rows instead of m full ones).
BACKWARD_ROWS = (8, 4, 2, 1)
BACKWARD_MIN_CUBES = 1024


def _rows(shape: Shape, num_dims: int) -> tuple[int, int]:
    """(rows M, row length D) of a layer norm over the last `num_dims` dims of `shape`."""
    lead = len(shape) - num_dims
    m, d = 1, 1
    for size in shape[:lead]:
        m *= size
    for size in shape[lead:]:
        d *= size
    return m, d


def _rows_plan(backend: Any, shape: Shape, num_dims: int) -> tuple[int, int, int, int] | None:
    """(rows M, row length D, units, chunks) when the rows kernel serves `shape`, else None."""
    m, d = _rows(shape, num_dims)
    if m == 0 or backend.runtime_name == "cpu":
        return None
    found = plan(backend, m, d)
    return None if found is None else (m, d, *found)


def _flat(backend: Any, t: CubeTensor) -> CubeTensor:
    """A dense rank-1 view of `t` (copied first when not contiguous)."""
    return contiguous(backend, t).flat()


def _dtypes(dtype: DType) -> tuple[Any, Any]:
    """The kernels' burn-cube dtypes (tensors, accumulator) for tensors of `dtype`."""
    return cube_dtype("layer_norm", dtype), cube_dtype("layer_norm", _acc(dtype))


def layer_norm(backend: Any, x: CubeTensor, weight: CubeTensor | None, bias: CubeTensor | None,
               num_dims: int, eps: float) -> tuple[CubeTensor, CubeTensor, CubeTensor]:
    """`Backend.layer_norm` (same arguments and results) on the rows kernel where it serves x's
    shape on this runtime, else the protocol's composite default."""
    found = _rows_plan(backend, x.shape, num_dims)
    stats = (*x.shape[:len(x.shape) - num_dims], *(1,) * num_dims)
    if found is None:
        m, d = _rows(x.shape, num_dims)
        if rows_gpu.serves(backend, m, d):
            return rows_gpu.layer_norm(backend, contiguous(backend, x),
                                       None if weight is None else contiguous(backend, weight),
                                       None if bias is None else contiguous(backend, bias),
                                       stats, d, eps)
        return Backend.layer_norm(backend, x, weight, bias, num_dims, eps)
    m, d, units, chunks = found
    out, mean, rstd = (backend.empty(s, x.dtype) for s in (x.shape, stats, stats))
    plane = backend.runtime.properties.plane_size > 1
    kernel = forward_kernel(_dtypes(x.dtype), units, chunks, plane, d == units * chunks,
                            weight is not None, bias is not None)
    params = [_flat(backend, t).array for t in (x, weight, bias) if t is not None]
    backend.launch_cubes_planned(kernel, (m, 1, 1), units, *params,
                                 *(_flat(backend, t).array for t in (out, mean, rstd)), d, eps)
    return out, mean, rstd


def layer_norm_backward(backend: Any, x: CubeTensor, weight: CubeTensor | None,
                        bias: CubeTensor | None, mean: CubeTensor, rstd: CubeTensor,
                        grad: CubeTensor, num_dims: int
                        ) -> tuple[CubeTensor, CubeTensor | None, CubeTensor | None]:
    """`Backend.layer_norm_backward` (same arguments and results) on the rows kernel where it
    serves x's shape on this runtime, else the protocol's composite default."""
    found = _rows_plan(backend, x.shape, num_dims)
    if found is None:
        return Backend.layer_norm_backward(backend, x, weight, bias, mean, rstd, grad, num_dims)
    m, d, units, chunks = found
    rows = next(r for r in BACKWARD_ROWS if m >= r * BACKWARD_MIN_CUBES or r == 1)
    cubes = -(-m // rows)
    acc = _acc(x.dtype)
    dx = backend.empty(x.shape, x.dtype)
    parts = [backend.empty((cubes, d), acc) if t is not None else None for t in (weight, bias)]
    plane = backend.runtime.properties.plane_size > 1
    kernel = backward_kernel(_dtypes(x.dtype), units, chunks, plane, d == units * chunks,
                             weight is not None, bias is not None, rows)
    inputs = [_flat(backend, t).array for t in (x, weight, mean, rstd, grad) if t is not None]
    outputs = [_flat(backend, t).array for t in (dx, *parts) if t is not None]
    backend.launch_cubes_planned(kernel, (cubes, 1, 1), units, *inputs, *outputs, d, m)
    shape = x.shape[len(x.shape) - num_dims:]

    def column_sum(part: CubeTensor | None, like: CubeTensor | None) -> CubeTensor | None:
        if part is None or like is None:
            return None
        total = backend.float_sum_dim(part, 0).view(shape, dense_strides(shape))
        return total if total.dtype is like.dtype else backend.float_cast(total, like.dtype)

    return dx, column_sum(parts[0], weight), column_sum(parts[1], bias)
