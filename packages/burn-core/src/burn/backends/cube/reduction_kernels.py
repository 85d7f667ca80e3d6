"""Reduction kernels of the cube backends, built with `burn_cube.KernelBuilder`.

One template serves every reduction: a row is a run of elements reduced to one value by a
combine op of `COMBINES` (sum, prod, max, min; any / all are max / min of 0/1), optionally with
the index of the winning element (first occurrence; a NaN wins max and min). Rows are read in
place from strided views, in one of two layouts:

- strided (``flat=False``): `x` is a view of the output's shape (the reduced dim of size 1)
  and row `r` is ``x[index_of(x, r) + k * step]`` for ``k < n``;
- flat (``flat=True``, full reductions): row `r` is the chunk ``[r * step, r * step + step)`` of
  the logical row-major positions of `x`, clipped to ``n`` (the element count).

and one of three schedules: one unit per row (``"unit"``: a sequential loop), or one cube per
row (``"tree"``: units stride over the row, then a tree in shared memory; ``"plane"``: sums
combine within planes first, for runtimes whose plane size is above 1). Values accumulate
in the `acc` dtype (float32 for float16 / bfloat16); each unit's float sum is Kahan-compensated
(long sequential runs stay accurate). Softmax / log-softmax use the same layouts
(strided only) with the max, the sum of exponentials and the write as three passes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

#: Units per cube of the one-cube-per-row schedule (the shared-memory tree's width).
TREE_DIM = 256


@dataclass(frozen=True)
class Combine:
    """How values of a row combine.

    Args:
        name: the combine op (``sum``, ``prod``, ``max``, ``min``).
        identity: the neutral value; None for idempotent ops, whose rows start from an element.
    """

    name: str
    identity: int | None


COMBINES = {"sum": Combine("sum", 0), "prod": Combine("prod", 1),
            "max": Combine("max", None), "min": Combine("min", None)}


def _better(b: Any, op: str, v: Any, acc: Any) -> Any:
    """Whether `v` beats `acc` for max / min: larger / smaller, or a NaN over a number."""
    wins = v > acc if op == "max" else v < acc
    if v.dtype.is_float:
        wins = wins | (b.isnan(v) & ~b.isnan(acc))
    return wins


def _same(b: Any, v: Any, acc: Any) -> Any:
    """Whether `v` ties with `acc` (NaN ties with NaN)."""
    if v.dtype.is_float:
        return (v == acc) | (b.isnan(v) & b.isnan(acc))
    return v == acc


def _combine(b: Any, op: str, acc: Any, v: Any) -> Any:
    """`acc` combined with `v` (max / min keep a NaN)."""
    if op == "sum":
        return acc + v
    if op == "prod":
        return acc * v
    return b.select(_better(b, op, v, acc), v, acc)


class _Row:
    """Where a row's elements are: `count` of them, element `k` at `x[self.index(k)]`."""

    def __init__(self, b: Any, x: Any, row: Any, n: Any, step: Any, flat: bool) -> None:
        from burn_cube import u32

        self.b, self.x, self.flat, self.step = b, x, flat, step
        if flat:
            self.start = b.local(u32, row * step)
            self.count = b.local(u32, b.select(n - self.start < step, n - self.start, step))
        else:
            self.start = b.local(u32, b.index_of(x, row))
            self.count = n

    def index(self, k: Any) -> Any:
        if self.flat:
            return self.b.index_of(self.x, self.start + k)
        return self.start + k * self.step

    def load(self, k: Any, dtype: Any) -> Any:
        return self.b.cast(self.x[self.index(k)], dtype)


def _accumulate(b: Any, row: _Row, op: str, acc_dtype: Any, indexed: bool, first: Any,
                stride: int) -> tuple[Any, Any]:
    """Locals (value, index) holding the reduction of elements `first`, `first + stride`, ...
    of `row` (index None unless `indexed`). An idempotent op whose `first` is past the row
    starts from element 0 (harmless for max / min: a tie with a later index)."""
    from burn_cube import bool_, u32

    identity = COMBINES[op].identity
    index = None
    if identity is None:
        start = b.local(u32, b.select(first < row.count, first, 0))
        acc = b.local(acc_dtype, row.load(start, acc_dtype))
        if indexed:
            index = b.local(u32, start)
        begin = first + stride
    else:
        acc = b.local(acc_dtype, identity)
        begin = first
    compensated = op == "sum" and acc_dtype.is_float
    carry = b.local(acc_dtype, 0) if compensated else None
    with b.for_range(begin, row.count, stride) as k:
        v = b.local(acc_dtype, row.load(k, acc_dtype))
        if carry is not None:
            _kahan_add(b, acc, carry, v)
        elif indexed:
            take = b.local(bool_, _better(b, op, v, acc))
            b.set(acc, b.select(take, v, acc))
            b.set(index, b.select(take, k, index))
        else:
            b.set(acc, _combine(b, op, acc, v))
    return acc, index


def _kahan_add(b: Any, acc: Any, carry: Any, v: Any) -> None:
    """``acc += v`` with Kahan compensation in `carry` (dropped once `acc` is not finite, so
    infinities and NaN propagate as in a plain sum)."""
    y = b.local(acc.dtype, v - carry)
    total = b.local(acc.dtype, acc + y)
    finite = ~(b.isinf(total) | b.isnan(total))
    b.set(carry, b.select(finite, (total - acc) - y, 0))
    b.set(acc, total)


def _tree(b: Any, op: str, acc: Any, index: Any, plane: bool) -> tuple[Any, Any]:
    """Combine every unit's (value, index) through shared memory; element 0 of the returned
    shared arrays holds the cube's result after the last barrier. `plane`: sums add up within
    each plane, then unit 0 adds the planes' totals."""
    from burn_cube import bool_, u32

    u = b.UNIT_POS
    values = b.shared(acc.dtype, TREE_DIM)
    if plane and op == "sum" and index is None:
        total = b.local(acc.dtype, b.plane_sum(acc))
        with b.if_(b.UNIT_POS_PLANE == 0):
            values[u // b.PLANE_DIM] = total
        b.sync_units()
        with b.if_(u == 0):
            with b.for_range(1, TREE_DIM // b.PLANE_DIM) as i:
                b.set(total, total + values[i])
            values[0] = total
        b.sync_units()
        return values, None
    values[u] = acc
    indices = None
    if index is not None:
        indices = b.shared(u32, TREE_DIM)
        indices[u] = index
    b.sync_units()
    half = TREE_DIM // 2
    while half:
        with b.if_(u < half):
            mine, other = b.local(acc.dtype, values[u]), b.local(acc.dtype, values[u + half])
            if indices is None:
                values[u] = _combine(b, op, mine, other)
            else:
                mine_i = b.local(u32, indices[u])
                other_i = b.local(u32, indices[u + half])
                take = b.local(bool_, _better(b, op, other, mine) | (
                    _same(b, other, mine) & (other_i < mine_i)))
                values[u] = b.select(take, other, mine)
                indices[u] = b.select(take, other_i, mine_i)
        b.sync_units()
        half //= 2
    return values, indices


@cache
def reduce_kernel(op: str, dtypes: tuple[Any, Any, Any], rank: int, flat: bool, schedule: str,
                  units: int, outputs: tuple[bool, bool], mean: bool = False) -> Any:
    """The reduction kernel of combine `op`.

    Args:
        op: a key of `COMBINES`.
        dtypes: burn-cube dtypes (input, accumulator, output values).
        rank: the rank of the input view.
        flat: the flat (chunked full reduction) layout, else the strided one.
        schedule: ``unit``, ``tree`` or ``plane`` (see the module docstring).
        units: units per cube of the ``unit`` schedule.
        outputs: whether the kernel writes (values, int64 indices).
        mean: divide each row's sum by its element count.

    Returns:
        A kernel taking ``x, n, step`` (u32 scalars; see the module docstring), then the
        written outputs (dense rank 1, one element per row).
    """
    from burn_cube import KernelBuilder, i64, u32

    in_dtype, acc_dtype, out_dtype = dtypes
    cube = schedule != "unit"
    b = KernelBuilder(f"reduce_{op}", cube_dim=TREE_DIM if cube else units)
    x = b.tensor("x", in_dtype, rank=rank, write=False)
    n, step = b.scalar("n", u32), b.scalar("step", u32)
    out = b.tensor("out", out_dtype, rank=1, write=True) if outputs[0] else None
    out_index = b.tensor("out_index", i64, rank=1, write=True) if outputs[1] else None
    rows = (out if out is not None else out_index).len  # type: ignore[union-attr]
    indexed = out_index is not None

    def finish(r: Any, row: _Row, value: Any, index: Any) -> None:
        if out is not None:
            if mean:
                value = value / b.cast(row.count, acc_dtype)
            out[r] = b.cast(value, out_dtype)
        if out_index is not None:
            out_index[r] = b.cast(index, i64)

    if cube:
        r = b.CUBE_POS
        row = _Row(b, x, r, n, step, flat)
        acc, index = _accumulate(b, row, op, acc_dtype, indexed, b.UNIT_POS, TREE_DIM)
        values, indices = _tree(b, op, acc, index, schedule == "plane")
        with b.if_(b.UNIT_POS == 0):
            finish(r, row, values[0], None if indices is None else indices[0])
    else:
        r = b.ABSOLUTE_POS
        with b.if_(r < rows):
            row = _Row(b, x, r, n, step, flat)
            acc, index = _accumulate(b, row, op, acc_dtype, indexed, b.const(0, u32), 1)
            finish(r, row, acc, index)
    return b.kernel()


@cache
def softmax_kernel(dtypes: tuple[Any, Any], rank: int, schedule: str, units: int, log: bool
                   ) -> Any:
    """Softmax (or log-softmax) of every row: ``exp(x - max) / sum`` (``x - max - log(sum)``).

    Args:
        dtypes: burn-cube dtypes (input and output, accumulator).
        rank: the rank of the row views of `x` and `out`.
        schedule: ``unit``, ``tree`` or ``plane`` (see the module docstring).
        units: units per cube of the ``unit`` schedule.
        log: log-softmax.

    Returns:
        A kernel taking ``x, n, step, out, out_step``: `x` and `out` are views of the rows'
        shape (the dim of size 1), the row's elements `step` / `out_step` apart.
    """
    from burn_cube import KernelBuilder, u32

    dtype, acc_dtype = dtypes
    cube = schedule != "unit"
    b = KernelBuilder("log_softmax" if log else "softmax", cube_dim=TREE_DIM if cube else units)
    x = b.tensor("x", dtype, rank=rank, write=False)
    n, step = b.scalar("n", u32), b.scalar("step", u32)
    out = b.tensor("out", dtype, rank=rank, write=True)
    out_step = b.scalar("out_step", u32)

    def body(r: Any, first: Any, stride: int,
             reduce: Callable[[str, Any], Any]) -> None:
        row = _Row(b, x, r, n, step, False)
        peak = reduce("max", _accumulate(b, row, "max", acc_dtype, False, first, stride)[0])
        total = reduce("sum", _sum_exp(b, row, acc_dtype, peak, first, stride))
        base = b.local(u32, b.index_of(out, r))
        if log:
            total = b.local(acc_dtype, b.log(total))
        with b.for_range(first, n, stride) as k:
            shifted = row.load(k, acc_dtype) - peak
            value = shifted - total if log else b.exp(shifted) / total
            out[base + k * out_step] = b.cast(value, dtype)

    if cube:
        def shared(op: str, value: Any) -> Any:
            return b.local(acc_dtype, _tree(b, op, value, None, schedule == "plane")[0][0])

        body(b.CUBE_POS, b.UNIT_POS, TREE_DIM, shared)
    else:
        r = b.ABSOLUTE_POS
        with b.if_(r < x.len):
            body(r, b.const(0, u32), 1, lambda op, value: value)
    return b.kernel()


def _sum_exp(b: Any, row: _Row, acc_dtype: Any, peak: Any, first: Any, stride: int) -> Any:
    """A local: the sum of ``exp(x - peak)`` over elements `first`, `first + stride`, ..."""
    total = b.local(acc_dtype, 0)
    with b.for_range(first, row.count, stride) as k:
        b.set(total, total + b.exp(row.load(k, acc_dtype) - peak))
    return total


@cache
def argwhere_kernel(rank: int, units: int) -> Any:
    """Coordinates of the true elements of each chunk of a bool tensor, one unit per chunk
    (`units` per cube).

    Returns:
        A kernel taking ``x`` (the bool tensor, any view), ``starts`` (int64: the number of
        true elements before each chunk), ``n`` and ``step`` (element count and chunk length,
        u32), and ``out`` (int64, dense ``[count, rank]``).
    """
    from burn_cube import KernelBuilder, bool_, i64, u32

    b = KernelBuilder("argwhere", cube_dim=units)
    x = b.tensor("x", bool_, rank=rank, write=False)
    starts = b.tensor("starts", i64, rank=1, write=False)
    n, step = b.scalar("n", u32), b.scalar("step", u32)
    out = b.tensor("out", i64, rank=1, write=True)
    r = b.ABSOLUTE_POS
    with b.if_(r < starts.len):
        row = _Row(b, x, r, n, step, True)
        at = b.local(u32, b.cast(starts[r], u32) * rank)
        with b.for_range(0, row.count) as k, b.if_(x[row.index(k)]):
            rest = b.local(u32, row.start + k)
            for dim in reversed(range(rank)):
                out[at + dim] = b.cast(rest % x.shape[dim], i64)
                b.set(rest, rest // x.shape[dim])
            b.set(at, at + rank)
    return b.kernel()
