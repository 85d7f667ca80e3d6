"""Reduction kernels of the cube backends, built with `burn_cube.KernelBuilder`.

One template serves every reduction: a row is a run of elements reduced to one value by a
combine op of `COMBINES` (sum, prod, max, min; any / all are max / min of 0/1), optionally with
the index of the winning element (first occurrence; a NaN wins max and min). Rows are read in
place from strided views, in one of two layouts:

- strided (``flat=False``): `x` is a view of the output's shape (the reduced dim of size 1)
  and row `r` is ``x[index_of(x, r) + k * step]`` for ``k < n``;
- flat (``flat=True``, full reductions): row `r` is the chunk ``[r * step, r * step + step)`` of
  the logical row-major positions of `x`, clipped to ``n`` (the element count).

and one of five schedules: one unit per row (``"unit"``: a sequential loop; ``"lanes"``: with
`LANES` interleaved accumulators, for the cpu runtime's dense rows; ``"sweep"``: the units of a
cube step through their rows together, for the cpu runtime's strided rows), or one
cube per row (``"tree"``: units stride over the row, then a tree in shared memory; ``"plane"``:
sums combine within planes first, for runtimes whose plane size is above 1). Values accumulate
in the `acc` dtype (float32 for float16 / bfloat16); each unit's float sum is Kahan-compensated
(long sequential runs stay accurate); where a row's elements are adjacent (``contiguous``),
blocks of them are summed plainly in vector-wide partial sums first (`BLOCK`), and
`column_sum_kernel` sums `COLUMNS` rows that start at adjacent elements together. Softmax /
log-softmax use the same layouts (strided only) in three passes: the max; the sum of
exponentials (softmax writes them); the result. A softmax of adjacent elements in its
accumulator dtype writes the exponentials in one loop and sums them in another, after a max by
plain comparisons (a NaN makes the sum NaN anyway): all three vectorize on the cpu.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from .kernel_cache import cached_kernel

#: Units per cube of the one-cube-per-row schedule (the shared-memory tree's width).
TREE_DIM = 256
#: Interleaved accumulators per unit of the ``lanes`` schedule.
LANES = 4
#: Float sums of adjacent elements (``contiguous``) in the ``lanes`` schedule: blocks of
#: `BLOCK` elements summed plainly by `BLOCK_LANES` partial sums (vector lanes on a CPU), each
#: block's total then added with Kahan compensation (as accurate as numpy's pairwise sum).
BLOCK, BLOCK_LANES = 64, 16
#: cpu float sums of adjacent rows (`column_sum_kernel`): rows per unit, and elements of each
#: row summed plainly before the Kahan-compensated add.
COLUMNS, COLUMN_BLOCK = 64, 64


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
            "max": Combine("max", None), "min": Combine("min", None),
            "peak": Combine("peak", None)}


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
    if op == "peak":  # max by a plain comparison: vectorizes; a NaN counts only if first
        return b.select(v > acc, v, acc)
    return b.select(_better(b, op, v, acc), v, acc)


class _Row:
    """Where a row's elements are: `count` of them, element `k` at `x[self.index(k)]`;
    `sweep`: the cube's units walk their rows in lockstep (see `steps`)."""

    def __init__(self, b: Any, x: Any, row: Any, n: Any, step: Any, flat: bool,
                 sweep: bool = False, contiguous: bool = False) -> None:
        from burn_cube import u32

        self.b, self.x, self.flat, self.step, self.sweep = b, x, flat, step, sweep
        #: The row's elements are adjacent in storage (a step of 1; a flat layout over a
        #: dense rank-1 view): indexes without strides, which a CPU loads as vectors.
        self.contiguous = contiguous
        if flat and contiguous:
            self.start = b.local(u32, row * step)
            self.count = b.local(u32, b.select(n - self.start < step, n - self.start, step))
            self.base = b.local(u32, x.offset + self.start)
        elif flat:
            self.start = b.local(u32, row * step)
            self.count = b.local(u32, b.select(n - self.start < step, n - self.start, step))
        else:
            self.start = b.local(u32, b.index_of(x, row))
            self.count = n

    def index(self, k: Any) -> Any:
        if self.contiguous:
            return (self.base if self.flat else self.start) + k
        if self.flat:
            return self.b.index_of(self.x, self.start + k)
        return self.start + k * self.step

    def load(self, k: Any, dtype: Any) -> Any:
        return self.b.cast(self.x[self.index(k)], dtype)

    @contextmanager
    def steps(self, start: Any, stride: int, stop: Any = None) -> Iterator[Any]:
        """``for k in range(start, stop, stride)`` (default stop: `count`); when sweeping, a
        barrier ends each step, so the C target runs the cube's units innermost (adjacent
        rows, adjacent memory)."""
        with self.b.for_range(start, self.count if stop is None else stop, stride) as k:
            yield k
            if self.sweep:
                self.b.sync_units()


def kahan_add(b: Any, acc: Any, carry: Any, v: Any) -> None:
    """``acc += v`` with Kahan compensation in `carry` (dropped once `acc` is not finite, so
    infinities and NaN propagate as in a plain sum)."""
    y = b.local(acc.dtype, v - carry)
    total = b.local(acc.dtype, acc + y)
    finite = ~(b.isinf(total) | b.isnan(total))
    b.set(carry, b.select(finite, (total - acc) - y, 0))
    b.set(acc, total)


class _Acc:
    """A running reduction in locals: the value, the winner's index (arg ops) and a Kahan
    carry (float sums unless `kahan` is False), started from `init` (at element `at`)."""

    def __init__(self, b: Any, op: str, dtype: Any, init: Any, at: Any, indexed: bool,
                 kahan: bool = True) -> None:
        from burn_cube import u32

        self.b, self.op = b, op
        self.value = b.local(dtype, init)
        self.index = b.local(u32, at) if indexed else None
        compensated = kahan and op == "sum" and dtype.is_float
        self.carry = b.local(dtype, 0) if compensated else None

    def add(self, v: Any, k: Any) -> None:
        """Take element `k` of value `v`."""
        from burn_cube import bool_

        b = self.b
        v = b.local(self.value.dtype, v)
        if self.carry is not None:
            kahan_add(b, self.value, self.carry, v)
        elif self.index is not None:
            take = b.local(bool_, _better(b, self.op, v, self.value))
            b.set(self.value, b.select(take, v, self.value))
            b.set(self.index, b.select(take, k, self.index))
        else:
            b.set(self.value, _combine(b, self.op, self.value, v))

    def merge(self, other: _Acc) -> None:
        """Take another accumulator's result (ties: the smaller index)."""
        from burn_cube import bool_

        b = self.b
        if self.carry is not None and other.carry is not None:
            kahan_add(b, self.value, self.carry, other.value - other.carry)
        elif self.index is not None and other.index is not None:
            take = b.local(bool_, _better(b, self.op, other.value, self.value) | (
                _same(b, other.value, self.value) & (other.index < self.index)))
            b.set(self.value, b.select(take, other.value, self.value))
            b.set(self.index, b.select(take, other.index, self.index))
        else:
            b.set(self.value, _combine(b, self.op, self.value, other.value))


def _accumulate(b: Any, row: _Row, op: str, acc_dtype: Any, indexed: bool, first: Any,
                stride: int, lanes: int = 1, columns: bool = False) -> tuple[Any, Any]:
    """Locals (value, index) holding the reduction of elements `first`, `first + stride`, ...
    of `row` (index None unless `indexed`). An idempotent op whose `first` is past the row
    starts from element 0 (harmless for max / min: a tie with a later index). `lanes` > 1
    (`stride` 1 only): that many interleaved accumulators, merged at the end (independent
    chains run in parallel on a CPU core). `columns` (`stride` 1): a float sum adds as
    `column_sum_kernel` does."""
    from burn_cube import u32

    identity = COMBINES[op].identity
    float_sum = op == "sum" and acc_dtype.is_float
    if lanes > 1 and row.contiguous and float_sum:
        return blocked_sum(b, row, acc_dtype, first), None
    if columns and float_sum:
        return column_sum(b, row, acc_dtype, first), None
    if identity is None:
        start = b.local(u32, b.select(first < row.count, first, 0))
        accs = [_Acc(b, op, acc_dtype, row.load(start, acc_dtype), start, indexed)
                for _ in range(lanes)]
        begin = first + stride
    else:
        accs = [_Acc(b, op, acc_dtype, identity, 0, indexed) for _ in range(lanes)]
        begin = first
    if lanes == 1:
        with row.steps(begin, stride) as k:
            accs[0].add(row.load(k, acc_dtype), k)
    else:
        main = b.local(u32, row.count - (row.count - begin) % lanes)
        with row.steps(begin, lanes, main) as k:
            for j, acc in enumerate(accs):
                acc.add(row.load(k + j, acc_dtype), k + j)
        with row.steps(main, 1) as k:
            accs[0].add(row.load(k, acc_dtype), k)
        for acc in accs[1:]:
            accs[0].merge(acc)
    return accs[0].value, accs[0].index


def blocked_sum(b: Any, row: Any, acc_dtype: Any, first: Any) -> Any:
    """A local holding the sum of elements `first`, `first + 1`, ... of a contiguous `row` (a
    `_Row`, or what has its `count`, `steps` and `load`: the reduce fuser's rows):
    whole blocks of `BLOCK` through `BLOCK_LANES` plain partial sums (adjacent elements in
    adjacent partials), their total Kahan-added; the rest one by one."""
    from burn_cube import u32

    total = _Acc(b, "sum", acc_dtype, 0, 0, False)
    main = b.local(u32, row.count - (row.count - first) % BLOCK)
    with row.steps(first, BLOCK, main) as k:
        parts = [b.local(acc_dtype, 0) for _ in range(BLOCK_LANES)]
        with b.for_range(0, BLOCK, BLOCK_LANES) as i:
            for j, part in enumerate(parts):
                b.set(part, part + row.load(k + i + j, acc_dtype))
        while len(parts) > 1:  # pairwise
            half = len(parts) // 2
            parts = [b.local(acc_dtype, parts[j] + parts[j + half]) for j in range(half)]
        total.add(parts[0], k)
    with row.steps(main, 1) as k:
        total.add(row.load(k, acc_dtype), k)
    return total.value


def column_sum(b: Any, row: Any, acc_dtype: Any, first: Any) -> Any:
    """A local holding the sum of elements `first`, `first + 1`, ... of `row` (a `_Row`) as
    `column_sum_kernel` and the reduce fuser's rows in lockstep add a column: blocks of
    `COLUMN_BLOCK` elements summed plainly, each block's sum Kahan-added."""
    total = _Acc(b, "sum", acc_dtype, 0, 0, False)
    with row.steps(first, COLUMN_BLOCK) as block:
        part = b.local(acc_dtype, 0)
        with row.steps(block, 1, b.min(block + COLUMN_BLOCK, row.count)) as k:
            b.set(part, part + row.load(k, acc_dtype))
        total.add(part, block)
    return total.value


def _tree(b: Any, op: str, acc: Any, index: Any, plane: bool) -> tuple[Any, Any]:
    """Combine every unit's (value, index) through shared memory; element 0 of the returned
    shared arrays holds the cube's result after the last barrier. `plane`: sums add up within
    each plane, then unit 0 adds the planes' totals."""
    from burn_cube import u32

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
            pair = [_Acc(b, op, acc.dtype, values[i], None if indices is None else indices[i],
                         indices is not None, kahan=False) for i in (u, u + half)]
            pair[0].merge(pair[1])
            values[u] = pair[0].value
            if indices is not None:
                indices[u] = pair[0].index
        b.sync_units()
        half //= 2
    return values, indices


@cached_kernel
def reduce_kernel(op: str, dtypes: tuple[Any, ...], rank: int, flat: bool, schedule: str,
                  units: int, outputs: tuple[bool, ...], mean: bool = False,
                  contiguous: bool = False, columns: bool = False) -> Any:
    """The reduction kernel of combine `op`.

    Args:
        op: a key of `COMBINES`.
        dtypes: burn-cube dtypes (input, accumulator, output values).
        rank: the rank of the input view.
        flat: the flat (chunked full reduction) layout, else the strided one.
        schedule: ``unit``, ``lanes``, ``sweep``, ``tree`` or ``plane`` (module docstring).
        units: units per cube of the one-unit-per-row schedules.
        outputs: whether the kernel writes (values, int64 indices), two flags.
        mean: divide each row's sum by its element count.
        contiguous: each row's elements are adjacent in storage (the caller guarantees a step
            of 1, or for the flat layout a rank-1 view of stride 1).
        columns: float sums of the one-unit-per-row schedules add as `column_sum` (the cpu
            runtime's rows over a dim with dims of more than one element after it).

    Returns:
        A kernel taking ``x, n, step`` (u32 scalars; see the module docstring), then the
        written outputs (dense rank 1, one element per row).
    """
    from burn_cube import KernelBuilder, i64, u32

    in_dtype, acc_dtype, out_dtype = dtypes
    cube = schedule in ("tree", "plane")
    b = KernelBuilder(f"reduce_{op}", cube_dim=TREE_DIM if cube else units,
                      unit_work="step" if flat else "n")
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
    elif schedule == "sweep":  # every unit steps (rows past the end redo the last row)
        r = b.ABSOLUTE_POS
        row = _Row(b, x, b.min(r, rows - 1), n, step, flat, sweep=True)
        acc, index = _accumulate(b, row, op, acc_dtype, indexed, b.const(0, u32), 1,
                                 columns=columns)
        with b.if_(r < rows):
            finish(r, row, acc, index)
    else:
        r = b.ABSOLUTE_POS
        with b.if_(r < rows):
            row = _Row(b, x, r, n, step, flat, contiguous=contiguous)
            acc, index = _accumulate(b, row, op, acc_dtype, indexed, b.const(0, u32), 1,
                                     LANES if schedule == "lanes" else 1, columns)
            finish(r, row, acc, index)
    return b.kernel()


@cached_kernel
def column_sum_kernel(dtypes: tuple[Any, ...], units: int, mean: bool) -> Any:
    """Float sums of rows that start at adjacent elements (a reduction over a leading dim of a
    dense tensor): each unit sums `COLUMNS` adjacent rows together, stepping through their
    elements in lockstep (adjacent loads, vector lanes on a CPU); blocks of `COLUMN_BLOCK`
    elements are summed plainly, then Kahan-added. The unit after the last whole group sums
    the remaining rows one by one, in the same order (every row's sum the same bits as the
    reduce fuser's, `burn.fusion.reduce`).

    Args:
        dtypes: burn-cube dtypes (input, float accumulator, output).
        units: units per cube.
        mean: divide each row's sum by its element count.

    Returns:
        A kernel taking ``x`` (rank 1: row `r` starts at ``x[r]``), ``n, step`` (u32: elements
        per row, and their distance), ``out`` (dense rank 1, one element per row) and ``work``
        (u32: a unit's elements, ``n * COLUMNS``, which the cpu runtime spreads its threads
        by), launched on ``ceil(rows / COLUMNS)`` units.
    """
    from burn_cube import KernelBuilder, u32

    in_dtype, acc_dtype, out_dtype = dtypes
    b = KernelBuilder("reduce_sum_columns", cube_dim=units, unit_work="work")
    x = b.tensor("x", in_dtype, rank=1, write=False)
    n, step = b.scalar("n", u32), b.scalar("step", u32)
    out = b.tensor("out", out_dtype, rank=1, write=True)
    b.scalar("work", u32)
    u = b.ABSOLUTE_POS
    groups = b.local(u32, out.len // COLUMNS)

    def sums(start: Any, first: Any, count: int) -> None:
        """The rows `first` to `first + count` (their elements from `start` on), in lockstep."""
        totals = [_Acc(b, "sum", acc_dtype, 0, 0, False) for _ in range(count)]
        with b.for_range(0, n, COLUMN_BLOCK) as block:
            parts = [b.local(acc_dtype, 0) for _ in range(count)]
            with b.for_range(block, b.min(block + COLUMN_BLOCK, n)) as k:
                for j, part in enumerate(parts):
                    b.set(part, part + b.cast(x[start + k * step + j], acc_dtype))
            for total, part in zip(totals, parts, strict=True):
                total.add(part, block)
        for j, total in enumerate(totals):
            value = total.value
            out[first + j] = b.cast(value / b.cast(n, acc_dtype) if mean else value, out_dtype)

    with b.if_(u < groups):
        sums(b.local(u32, x.offset + u * COLUMNS), u * COLUMNS, COLUMNS)
    with b.if_(u == groups), b.for_range(groups * COLUMNS, out.len) as r:
        sums(x.offset + r, r, 1)
    return b.kernel()


@cached_kernel
def softmax_kernel(dtypes: tuple[Any, Any], rank: int, schedule: str, units: int, log: bool,
                   contiguous: bool = False) -> Any:
    """Softmax (or log-softmax) of every row: ``exp(x - max) / sum`` (``x - max - log(sum)``).

    Args:
        dtypes: burn-cube dtypes (input and output, accumulator).
        rank: the rank of the row views of `x` and `out`.
        schedule: ``unit``, ``lanes``, ``sweep``, ``tree`` or ``plane`` (module docstring).
        units: units per cube of the one-unit-per-row schedules.
        log: log-softmax.
        contiguous: the caller guarantees ``step`` and ``out_step`` of 1 (adjacent elements).

    Returns:
        A kernel taking ``x, n, step, out, out_step``: `x` and `out` are views of the rows'
        shape (the dim of size 1), the row's elements `step` / `out_step` apart.
    """
    from burn_cube import KernelBuilder, u32

    dtype, acc_dtype = dtypes
    cube = schedule in ("tree", "plane")
    b = KernelBuilder("log_softmax" if log else "softmax", cube_dim=TREE_DIM if cube else units,
                      unit_work="n")
    x = b.tensor("x", dtype, rank=rank, write=False)
    n, step = b.scalar("n", u32), b.scalar("step", u32)
    out = b.tensor("out", dtype, rank=rank, write=True)
    out_step = b.scalar("out_step", u32)
    #: Softmax of adjacent elements in the input's dtype: the exponentials are written by one
    #: loop and summed by another (a float sum in one loop with them runs in order, unvectorized).
    separate = not log and contiguous and schedule == "lanes" and dtype == acc_dtype

    def body(r: Any, row: _Row, first: Any, stride: int, reduce: Callable[[str, Any], Any],
             valid: Any = None) -> None:
        """Row `r` (units from `first`, `stride` apart); stores only where `valid`."""
        def guard() -> Any:
            return nullcontext() if valid is None else b.if_(valid)

        base = b.local(u32, b.index_of(out, r))
        at_step = 1 if contiguous else out_step
        if separate:  # a NaN anywhere makes the sum NaN, so the max may skip it
            peak = _accumulate(b, row, "peak", acc_dtype, False, first, stride, BLOCK_LANES)[0]
        else:
            peak = reduce("max", _accumulate(b, row, "max", acc_dtype, False, first, stride,
                                             LANES if schedule == "lanes" else 1)[0])
        if separate:  # exp(x - peak) into `out`, then its sum: both loops vectorize
            with row.steps(first, stride) as k:
                out[base + k] = b.exp(row.load(k, acc_dtype) - peak)
            total = b.local(acc_dtype, _accumulate(
                b, _Row(b, out, r, n, 1, False, contiguous=True), "sum", acc_dtype, False,
                first, stride, LANES)[0])
        else:
            total = b.local(acc_dtype, 0)
            with row.steps(first, stride) as k:  # softmax keeps exp(x - peak) in `out`
                e = b.local(acc_dtype, b.exp(row.load(k, acc_dtype) - peak))
                b.set(total, total + e)
                if not log:
                    with guard():
                        out[base + k * at_step] = b.cast(e, dtype)
        total = reduce("sum", total)
        if log:
            total = b.local(acc_dtype, b.log(total))
        with row.steps(first, stride) as k, guard():
            at = base + k * at_step
            if log:
                out[at] = b.cast(row.load(k, acc_dtype) - peak - total, dtype)
            else:
                out[at] = b.cast(b.cast(out[at], acc_dtype) / total, dtype)

    if cube:
        def shared(op: str, value: Any) -> Any:
            return b.local(acc_dtype, _tree(b, op, value, None, schedule == "plane")[0][0])

        r = b.CUBE_POS
        body(r, _Row(b, x, r, n, step, False), b.UNIT_POS, TREE_DIM, shared)
    elif schedule == "sweep":  # every unit steps (rows past the end redo the last row)
        r = b.local(u32, b.min(b.ABSOLUTE_POS, x.len - 1))
        body(r, _Row(b, x, r, n, step, False, sweep=True), b.const(0, u32), 1, _same_value,
             b.ABSOLUTE_POS < x.len)
    else:
        r = b.ABSOLUTE_POS
        with b.if_(r < x.len):
            body(r, _Row(b, x, r, n, step, False, contiguous=contiguous), b.const(0, u32), 1,
                 _same_value)
    return b.kernel()


def _same_value(op: str, value: Any) -> Any:
    """A unit's own row needs no combining across units."""
    return value


@cached_kernel
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
