"""Cumulative ops of the cube backends: cumsum, cumprod, cummax and cummin as burn-cube kernels.

A "line" is the run of elements along `dim` at one position of the other dims. Kernels read the
input in place through a view with `dim` moved last (`lines_view`) and write a dense output
through the same kind of view. One unit scans one line; where there are few long lines (a GPU
would idle) the lines are cut into chunks: chunk totals, a scan of the totals per line, then
each chunk rescanned from its carry (`_launch_scan`); float sums then round in another order
than a sequential scan.

Semantics follow the NumPy backend: int cumsum / cumprod give int64, f16 / bf16 accumulate in
float32, cummax / cummin keep the last index on ties and a NaN takes over (the last NaN's
index).
"""

from __future__ import annotations

import math
from typing import Any

from burn.dtype import DType
from burn.ir.cube import cube_dtype, work_dtype

from .kernel_cache import cached_kernel
from .layout import permute
from .tensor import CubeTensor

#: The running ops: sum, product, and the extremes with their indices.
CUM_OPS = ("sum", "prod", "max", "min")
#: Lines at least this long, and fewer lines than this, are scanned in chunks.
CHUNK_MIN_LINE, CHUNK_MAX_LINES, CHUNK = 4096, 2048, 256


def lines_view(x: CubeTensor, dim: int) -> CubeTensor:
    """A view of `x` (rank >= 1) with `dim` moved last: line `l` is logical positions
    `l * n ... l * n + n - 1` (n = the extent of `dim`)."""
    rank = len(x.shape)
    axes = tuple(d for d in range(rank) if d != dim) + (dim,)
    return permute(None, x, axes)


def as_rank1(x: CubeTensor) -> CubeTensor:
    """A 0-d tensor as a one-element rank-1 view (kernels need rank >= 1); others unchanged."""
    return x.view((1,), (1,)) if not x.shape else x


def line_start(b: Any, t: Any, line: Any, n: Any) -> Any:
    """Storage index of element 0 of line `line` of the lines view `t` (a u32 local)."""
    from burn_cube import u32

    return b.local(u32, b.index_of(t, line * n))


def _step(b: Any, op: str, acc: Any, v: Any, is_float: bool) -> tuple[Any, Any]:
    """The new accumulator for `v`, and (running extremes) whether `v` takes the index and
    value, as locals computed now (the expressions read `acc` and `v`, which callers overwrite
    next)."""
    from burn_cube import bool_

    if op in ("sum", "prod"):
        return b.local(acc.dtype, acc + v if op == "sum" else acc * v), None
    ties = v >= acc if op == "max" else v <= acc
    if is_float:
        ties = ties | b.isnan(v)
    # The value follows the index at ties too: -0.0 and 0.0 tie, and the kept value must be
    # the one at the kept index.
    take = b.local(bool_, ties)
    return b.local(acc.dtype, b.select(take, v, acc)), take


@cached_kernel
def scan_kernel(op: str, dtype: DType, out_dtype: DType, rank: int, mode: str) -> Any:
    """The running `op` over chunks of lines, one unit per chunk (`chunk` elements, a runtime
    scalar; a whole line when it is the line's length).

    Args:
        op: one of `CUM_OPS`.
        dtype: input dtype; out_dtype: the output's (int64 for int sums / products).
        rank: rank of the lines views.
        mode: "scan" writes the running values of whole lines; "carried" the same for chunks
            that start from the state the earlier chunks of their line left in `state`;
            "total" writes only each chunk's own final state into `state`.
    Returns:
        A kernel (x, [out[, idx] | state[, state_idx]] ..., units, chunk) over lines views
        (states: one per chunk, row-major in (line, chunk)).
    """
    from burn_cube import KernelBuilder, i64, u32

    acc_dtype = cube_dtype("cum" + op, work_dtype(out_dtype))
    extreme = op in ("max", "min")
    b = KernelBuilder(f"cum{op}_{mode}")
    x = b.tensor("x", cube_dtype("cum" + op, dtype), rank=rank, write=False)
    out: Any = None
    idx: Any = None
    state: Any = None
    state_idx: Any = None
    if mode != "total":
        out = b.tensor("out", cube_dtype("cum" + op, out_dtype), rank=rank, write=True)
        if extreme:
            idx = b.tensor("idx", i64, rank=rank, write=True)
    if mode != "scan":
        state = b.tensor("state", acc_dtype, rank=1, write=mode == "total")
        if extreme:
            state_idx = b.tensor("state_idx", i64, rank=1, write=mode == "total")
    units, chunk = b.scalar("units", u32), b.scalar("chunk", u32)
    unit = b.ABSOLUTE_POS
    with b.if_(unit < units):
        n = x.shape[-1]
        chunks = b.local(u32, (n + chunk - 1) // chunk)
        part = b.local(u32, unit % chunks)
        src = line_start(b, x, unit // chunks, n)
        dst = line_start(b, out, unit // chunks, n) if mode != "total" else None
        start = b.local(u32, part * chunk)
        stop = b.local(u32, b.min(start + chunk, n))
        acc, at = b.local(acc_dtype), b.local(i64)
        begin = b.local(u32, start + 1)
        fresh = (part == 0) if mode == "carried" else True
        with b.if_(fresh):
            b.set(acc, b.cast(x[src + start * x.stride[-1]], acc_dtype))
            if op == "sum" and dtype.is_float:
                # a line's leading -0.0s sum to +0.0, as torch's sum from 0 (a select: WGSL
                # compilers may fold x + 0.0 into x)
                b.set(acc, b.select(acc == 0.0, 0.0, acc))
            b.set(at, b.cast(start, i64))
            if dst is not None:
                _store(out, idx, dst + start * out.stride[-1], acc, at)
        if mode == "carried":
            with b.else_():
                b.set(acc, state[unit - 1])
                if extreme:
                    b.set(at, state_idx[unit - 1])
                b.set(begin, start)
        with b.for_range(begin, stop) as j:
            v = b.cast(x[src + j * x.stride[-1]], acc_dtype)
            new, take = _step(b, op, acc, v, dtype.is_float)
            b.set(acc, new)
            if take is not None:
                b.set(at, b.select(take, b.cast(j, i64), at))
            if dst is not None:
                _store(out, idx, dst + j * out.stride[-1], acc, at)
        if mode == "total":
            _store(state, state_idx, unit, acc, at)
    return b.kernel()


def _store(out: Any, idx: Any, index: Any, acc: Any, at: Any) -> None:
    """Write the value (and, for the extremes, the index) at storage `index`."""
    out[index] = acc
    if idx is not None:
        idx[index] = at


@cached_kernel
def carry_kernel(op: str, dtype: DType, is_float: bool) -> Any:
    """Per line, in place: chunk totals -> the running state after each chunk (`state[l, c]`
    combines chunks 0..c), as one unit per line.

    Returns:
        A kernel (state[, state_idx], lines, chunks).
    """
    from burn_cube import KernelBuilder, i64, u32

    acc_dtype = cube_dtype("cum" + op, dtype)
    b = KernelBuilder(f"cum{op}_carry")
    state = b.tensor("state", acc_dtype, rank=1, write=True)
    state_idx = b.tensor("state_idx", i64, rank=1, write=True) if op in ("max", "min") \
        else None
    lines, chunks = b.scalar("lines", u32), b.scalar("chunks", u32)
    line = b.ABSOLUTE_POS
    with b.if_(line < lines):
        first = b.local(u32, line * chunks)
        acc = b.local(acc_dtype, state[first])
        at = b.local(i64, state_idx[first]) if state_idx is not None else None
        with b.for_range(first + 1, first + chunks) as slot:
            new, take = _step(b, op, acc, state[slot], is_float)
            b.set(acc, new)
            state[slot] = acc
            if state_idx is not None:
                b.set(at, b.select(take, state_idx[slot], at))
                state_idx[slot] = at
    return b.kernel()


def cumulative(backend: Any, op: str, x: CubeTensor, dim: int,
               out_dtype: DType | None = None) -> CubeTensor | tuple[CubeTensor, CubeTensor]:
    """The running `op` of `x` along `dim`: one dense tensor (sum, prod) or the values and
    their int64 indices (max, min).

    Args:
        backend: the cube backend.
        op: one of `CUM_OPS`.
        x: the input (any strides).
        dim: the dimension (negative counts from the end).
        out_dtype: the result dtype (default: `x.dtype`).
    """
    out_dtype = out_dtype or x.dtype
    shape = x.shape
    src = as_rank1(x)
    dim = dim % len(src.shape)
    out = backend.empty(src.shape, out_dtype)
    extreme = op in ("max", "min")
    idx = backend.empty(src.shape, DType.int64) if extreme else None
    n = src.shape[dim]
    if src.size:
        views = [lines_view(t, dim) for t in (src, out, idx) if t is not None]
        _launch_scan(backend, op, views, out_dtype, src.size // n, n)
    results = [t if shape else t.view((), ()) for t in (out, idx) if t is not None]
    return (results[0], results[1]) if extreme else results[0]


def _launch_scan(backend: Any, op: str, views: list[CubeTensor], out_dtype: DType, lines: int,
                 n: int) -> None:
    """Scan `lines` lines of `n` elements: one unit per line, or in chunks when there are
    few long lines (totals per chunk, their running state per line, then each chunk)."""
    rank, dtype = len(views[0].shape), views[0].dtype
    arrays = [v.array for v in views]
    if n < CHUNK_MIN_LINE or lines >= CHUNK_MAX_LINES:
        backend.launch(scan_kernel(op, dtype, out_dtype, rank, "scan"), lines, *arrays,
                       lines, n)
        return
    chunks = math.ceil(n / CHUNK)
    acc_dtype = work_dtype(out_dtype)
    states = [backend.empty((lines * chunks,), acc_dtype)]
    if op in ("max", "min"):
        states.append(backend.empty((lines * chunks,), DType.int64))
    state_arrays = [s.array for s in states]
    units = lines * chunks
    backend.launch(scan_kernel(op, dtype, out_dtype, rank, "total"), units, arrays[0],
                   *state_arrays, units, CHUNK)
    backend.launch(carry_kernel(op, acc_dtype, dtype.is_float), lines, *state_arrays, lines,
                   chunks)
    backend.launch(scan_kernel(op, dtype, out_dtype, rank, "carried"), units, *arrays,
                   *state_arrays, units, CHUNK)


def _cum_method(op: str, kind: str) -> Any:
    """The backend method `{kind}_cum{op}` (int sums and products give int64)."""
    widen = kind == "int" and op in ("sum", "prod")

    def method(self: Any, x: CubeTensor, dim: int) -> Any:
        return cumulative(self, op, x, dim, DType.int64 if widen else None)

    method.__name__ = method.__qualname__ = f"{kind}_cum{op}"
    method.__doc__ = f"Running {op} along `dim` on burn-cube kernels."
    return method


class CubeCumulativeOps:
    """cumsum / cumprod / cummax / cummin of float and int tensors."""

    float_cumsum = _cum_method("sum", "float")
    float_cumprod = _cum_method("prod", "float")
    float_cummax = _cum_method("max", "float")
    float_cummin = _cum_method("min", "float")
    int_cumsum = _cum_method("sum", "int")
    int_cumprod = _cum_method("prod", "int")
    int_cummax = _cum_method("max", "int")
    int_cummin = _cum_method("min", "int")
