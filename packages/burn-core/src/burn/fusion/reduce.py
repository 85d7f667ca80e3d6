"""The reduce fuser: reductions along one dim, with the elementwise work around them, as one
burn-cube kernel.

A reduce block (`burn.fusion.stream`'s planner) holds reductions of tensors of one shape `S`
along one dim `d` (`float_sum_dim`, `float_mean_dim`, `float_max_dim_with_indices`,
`float_min_dim_with_indices`), the elementwise ops of shape `S` that feed them (fused on read)
and the elementwise ops after them, of the reduced shape `R` (`S` with `d` of size 1) or of
shape `S` reading the reduced values broadcast (fused on write): a softmax, a layer norm, a
mean of squares, softmax's backward. Whole-tensor reductions (`float_sum`, `float_max`,
`float_min`; a mean is a sum and a division) are one row: the block's tensors are seen
flattened in row-major order (`R` is 0-d), an input that cannot be (a permuted or broadcast
one of more than one element) copied dense first.

The kernel runs one unit per row (the elements of `S` that differ only along `d`) on the cpu
runtime; on GPU runtimes a group of units per row walks its columns and combines the
reductions' partials in shared memory or planes (`burn.fusion.reduce_gpu`). Each op has
a level: inputs 0, a reduction one more than its argument, an elementwise op the largest of
its arguments'. Pass `L` loops over the row computing the per-element ops of level `L` that
a reduction of level `L + 1` or a written result needs (recomputed from the inputs, never
stored between passes) and accumulating those reductions; per-row values (reductions and the
ops of shape `R`) stay in registers. Results are written only where needed (`Stream.flush`).

Sums and means accumulate in float32 (float64 for float64) as the cube backends' reductions
(on the cpu runtime in the same order along the last dim, and along another dim of a dense
tensor where the block's rows run in lockstep, `_Rows.run_lanes`: blocks of plain partial
sums, their totals Kahan-added, so a block computes the unfused ops' values whether it is fused
or runs at once; elsewhere, a permuted view's dims or a block too wide for lockstep, equal
within float32 rounding);
max / min take the first occurrence, a NaN winning, as they do. Kernels are cached by the
block's signature (ops, wiring, dtypes, rank, which inputs vary along `d`); numbers are
runtime scalars; launches are planned once per argument layout.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from burn.backends.cube.elementwise import broadcast_view
from burn.backends.cube.layout import contiguous_copy
from burn.backends.cube.reduction import LONG_ROW, collapse
from burn.backends.cube.reduction_kernels import COLUMN_BLOCK, blocked_sum, kahan_add
from burn.backends.cube.tensor import dense_strides
from burn.dtype import DType
from burn.fusion import reduce_gpu
from burn.fusion.elementwise import Program, _layout, _program, opaque_math
from burn.fusion.emit import DTYPES, Opaque, emit_op, kernel_name
from burn.fusion.handle import Cell, Pending
from burn.fusion.stats import STATS
from burn.ir import TensorIR
from burn.ir.cube import cube_dtype, unit_work

#: Reductions the fuser takes, by op, and how they combine.
REDUCTIONS = {"float_sum_dim": "sum", "float_mean_dim": "mean",
              "float_max_dim_with_indices": "max", "float_min_dim_with_indices": "min",
              "float_sum": "sum", "float_max": "max", "float_min": "min"}
#: Those over the whole tensor (no dim).
WHOLE = frozenset({"float_sum", "float_max", "float_min"})
#: Those with an index result (recorded as two records: values, then indices).
WITH_INDICES = frozenset(n for n in REDUCTIONS if n.endswith("_with_indices"))
#: Units per cube (one row each).
UNITS = 64
#: Most elements of a whole-tensor reduction the fuser takes (one row: one unit on the cpu
#: runtime, one cube on GPUs; larger ones run on the inner backend's reduction, which
#: spreads them over threads and cubes).
WHOLE_MOST = 1 << 18
_KERNELS: dict[Any, Any] = {}


def accepts(shape: tuple[int, ...], dim: int | None, cpu: bool) -> bool:
    """Whether the fuser takes a reduction of a tensor of `shape` along `dim`: a dim of two
    elements or more of a non-empty tensor, on GPU runtimes at most `LONG_ROW` (longer rows
    run at once on the inner backend, in two passes: a cube per row would loop past llvmpipe's
    65535 iterations a unit); over the whole tensor (`dim` None) 2 to `WHOLE_MOST` elements.

    Args:
        shape: the reduced tensor's shape.
        dim: the reduced dim (None: all of them).
        cpu: whether the stream's runtime is the cpu runtime.
    """
    if dim is None:
        return 2 <= math.prod(shape) <= WHOLE_MOST
    return 0 <= dim < len(shape) and 2 <= shape[dim] and (cpu or shape[dim] <= LONG_ROW) \
        and 0 not in shape


def reduce_layout(block: list[Pending]) -> str:
    """How reduce block `block` reads its rows: "whole" (a reduction of every element),
    "columns" (along a dim whose elements are not adjacent: dims of more than one element
    after it) or "rows" (along the innermost dim, or one with only size-1 dims after it)."""
    shape, dim = reduced_dim(next(r for r in block if r.op.name in REDUCTIONS))
    if dim is None:
        return "whole"
    return "columns" if math.prod(shape[dim + 1:]) > 1 else "rows"


def reduced_dim(record: Pending) -> tuple[tuple[int, ...], int | None]:
    """The input shape and dim of a reduction record (None: the whole tensor)."""
    if record.op.name in WHOLE:
        return record.args[0].shape, None
    x, dim = record.args
    return x.shape, dim


@dataclass(slots=True)
class ReduceProgram:
    """How a reduce block of one structure runs (`Program` plus the reduction's layout).

    Attributes:
        program: the block's ops, inputs, numbers and written results.
        shape: `S`, the reduced tensors' shape.
        dim: `d`, the reduced dim.
        along: per kernel input, whether it varies along `d`.
        full: per written result, whether it has shape `S` (else `R`).
        whole: for a whole-tensor reduction the reduced tensors' shape (then `shape` is
            their element count, `dim` 0), else None.
        launchers: planned launches by the inputs' layouts.
    """

    program: Program
    shape: tuple[int, ...]
    dim: int
    along: tuple[bool, ...]
    full: tuple[bool, ...]
    whole: tuple[int, ...] | None = None
    launchers: dict[Any, Callable[[list[Any], list[Any], list[Any]], None]] = field(
        default_factory=dict)


def run_reduce(inner: Any, block: list[Pending], values: dict[int, Any], needed: set[int],
               cell: Cell) -> dict[int, Any]:
    """Compute the needed results of reduce block `block` on `inner` (a cube backend).

    Args:
        inner: the backend computing.
        block: the block's records in stream order.
        values: inner primitives by tensor id (the block's inputs from outside it).
        needed: ids of results that must be written.
        cell: where the block's `ReduceProgram` is kept (made here on the first run).
    Returns:
        The written results by tensor id.
    """
    plan = cell.plan
    if plan is None:
        plan = cell.plan = _reduce_program(block, needed)
    program = plan.program
    STATS.ops_dead += len(block) - program.live
    if program.single is not None:
        return _single(inner, block[program.single], values)
    if not program.live:
        return {}
    inputs = [values[block[i].args[p].id] for i, p in program.inputs]
    if plan.whole is not None:
        inputs = [_flat(inner, t, plan.whole) for t in inputs]
    numbers = [convert(block[i].args[p]) for i, p, convert in program.numbers]
    outs = [inner.empty(block[i].out.shape, block[i].out.dtype) for i in program.written]
    layouts = tuple(_layout(t.array) for t in inputs)
    launcher = plan.launchers.get(layouts)
    if launcher is None:
        launcher = plan.launchers[layouts] = _plan(inner, plan, inputs, numbers, outs)
    else:
        STATS.cache_hits += 1
    # the storages: the launcher lays each out as its plan's example (a row view, or the
    # storage itself where the row view is the whole storage)
    launcher([t.array if t.array.base is None else t.array.base for t in inputs], numbers,
             [o.array for o in outs])
    STATS.kernels_launched += 1
    STATS.ops_fused += program.live
    return {block[i].out.id: o for i, o in zip(program.written, outs, strict=True)}


def _single(inner: Any, record: Pending, values: dict[int, Any]) -> dict[int, Any]:
    """A block with one live op, run by the inner backend's own kernel."""
    op, args, out = record[:3]
    result = getattr(inner, op.name)(*(values[a.id] if type(a) is TensorIR else a
                                      for a in args))
    if op.name in WITH_INDICES:
        result = result[1] if out.dtype is DType.int64 else result[0]
    STATS.kernels_launched += 1
    return {out.id: result}


def _reduce_program(block: list[Pending], needed: set[int]) -> ReduceProgram:
    """The block's `Program` and the layout facts its kernel needs."""
    shape, dim = reduced_dim(next(r for r in block if r.op.name in REDUCTIONS))
    program = _program(block, needed)
    full = tuple(block[i].out.shape == shape for i in program.written)
    if dim is None:  # one row of the elements in row-major order (`_flat`)
        along = tuple(math.prod(block[i].args[p].shape) > 1 for i, p in program.inputs)
        return ReduceProgram(program, (math.prod(shape),), 0, along, full, shape)
    varies = []
    for i, p in program.inputs:
        own = block[i].args[p].shape
        at = dim - (len(shape) - len(own))
        varies.append(at >= 0 and own[at] == shape[dim])
    return ReduceProgram(program, shape, dim, tuple(varies), full)


def _plan(inner: Any, plan: ReduceProgram, inputs: list[Any], numbers: list[Any],
          outs: list[Any]) -> Callable[[list[Any], list[Any], list[Any]], None]:
    """The launcher of `plan`'s kernel over arguments laid out as these: every tensor as a
    view of the rows' shape (collapsed where every layout allows) and its step along `d`."""
    from burn_cube.codegen.c import PARALLEL_UNITS

    start = time.perf_counter()
    shape, dim = plan.shape, plan.dim
    n = shape[dim]
    views = [broadcast_view(t, shape) for t in inputs]
    strides = [v.strides for v in views]
    # (a 0-d result of a whole-tensor reduction: its row's value, stride 0)
    strides += [dense_strides(shape) if f else _padded(dense_strides(o.shape), o.shape) or (0,)
                for o, f in zip(outs, plan.full, strict=True)]
    rows = tuple(1 if i == dim else s for i, s in enumerate(shape))
    row_shape, row_strides = collapse(rows, *strides)
    steps = [s[dim] for s, a in zip(strides[:len(views)], plan.along, strict=True) if a]
    steps += [s[dim] for s, f in zip(strides[len(views):], plan.full, strict=True) if f]
    arrays = [t.view(row_shape, st, t.offset).array
              for t, st in zip([*views, *outs], row_strides, strict=True)]
    program = plan.program
    in_ids = tuple(id(t.dtype) for t in inputs)
    cpu = inner.runtime.name == "cpu"
    count = math.prod(rows)
    group = reduce_gpu.group_for(n)
    read = steps[:sum(plan.along)]  # the varying inputs' steps along `d`
    strided = bool(read) and 1 not in read
    # on the cpu, rows read strided in lockstep where adjacent rows start at adjacent
    # elements of every tensor (or at the same one), `LANES` of a run of them at a time
    per_pass, wide = _scratch(program.ops, plan.along, in_ids)
    levels = _levels(program.ops, plan.along)
    run = row_shape[-1]
    apart = tuple(st[-1] for st in row_strides)
    lanes = min(LANES, run, LANE_BYTES // (lane_slots(levels)[1] * wide.itemsize)) \
        if cpu and strided and set(apart) <= {0, 1} and lanes_fit(program.ops, levels) else 1
    if lanes > 1 and count * n >= PARALLEL_UNITS:  # (spread over threads: a unit a thread
        lanes = min(lanes, -(-run // inner.runtime.threads))  # at least)
    schedule: Any = ((lanes, tuple(a == 1 for a in apart)) if lanes > 1
                     else _row_scratch(n, per_pass, wide)) if cpu else (
        group, not strided and reduce_gpu.planes(inner.runtime.properties, group),
        reduce_gpu.chunks(n, group), reduce_gpu.UNITS // group if strided else 1)
    opaque = opaque_math(inner)
    signature = (len(row_shape), in_ids, plan.along,
                 tuple(step if step in (0, 1) else None for step in steps),
                 program.ops, program.outputs, opaque, cpu, schedule)
    kernel = _kernel(signature)
    # what the kernel counts: rows, or units of rows in lockstep (which take the runs'
    # length); steps of 0 and 1 are compiled in (an expanded input's 0: its loop vectorizes)
    items = count if lanes == 1 else count // run * -(-run // lanes)
    fixed = [*(s for s in steps if s not in (0, 1)), n, items,
             *([run, unit_work(n * lanes)] if lanes > 1 else [])]
    size = max(1, count * per_pass * n)
    rows_kept = cpu and schedule is None  # (`_Rows.level`'s, in a tensor)
    scratch = [inner.empty((size,), wide)] if rows_kept else []
    units, per_cube = (1, 1) if lanes > 1 else (UNITS, UNITS) if cpu else (
        reduce_gpu.UNITS, reduce_gpu.UNITS // group)
    keep = list(Opaque.VALUES) if opaque else []  # `Opaque`'s scalars
    launch = kernel.plan(inner.runtime, (max(1, -(-items // per_cube)), 1, 1), units, *arrays,
                         *(t.array for t in scratch), *fixed, *numbers, *keep)
    STATS.compile_s += time.perf_counter() - start

    def launcher(ins: list[Any], nums: list[Any], written: list[Any]) -> None:
        rows = [inner.empty((size,), wide).array] if rows_kept else []
        launch([*ins, *written, *rows, *fixed, *nums, *keep])

    return launcher


#: Most bytes of the scratch rows of one row of the cpu runtime's kernel kept in the cube's
#: array (on the stack, in L1; the cube's units take their rows one after the other): longer
#: rows keep theirs in a tensor of every row's, as large as the input. (Measured, 1 thread,
#: fused, a tensor of rows against the cube's array, min of 3 processes: (x * x).mean_dim(1)
#: 93 / 70 us over 512 x 512, 308 / 222 us over 1024 x 1024; layer norm from primitives
#: 218 / 182 and 755 / 647 us; softmax from primitives 373 / 358 and 1606 / 1387 us.)
ROW_SCRATCH_BYTES = 1 << 15


def _row_scratch(n: int, per_pass: int, wide: DType) -> int | None:
    """The length of a row's scratch rows in the cube's array for rows of `n` elements
    (`n` to a power of two, so that row lengths share kernels), or None where `per_pass`
    rows of it in `wide` exceed `ROW_SCRATCH_BYTES` (or none are needed)."""
    length = 1 << max(0, n - 1).bit_length()
    if not per_pass or per_pass * length * wide.itemsize > ROW_SCRATCH_BYTES:
        return None
    return length


def _scratch(ops: tuple[Any, ...], along: tuple[bool, ...], in_ids: tuple[int, ...]
             ) -> tuple[int, DType]:
    """The scratch rows the cpu kernel needs per row (the most reductions of one pass) and
    their dtype (float64 where a reduction reads float64 or a value of shape `R` is one,
    else float32)."""
    levels = _levels(ops, along)
    counts: dict[int, int] = {}
    wide = DType.float32
    for j, (kind, at) in enumerate(levels):
        if kind != "elem" and DTYPES[ops[j][2]] is DType.float64:
            wide = DType.float64
        if kind == "reduce":
            counts[at] = counts.get(at, 0) + 1
            if _operand_dtype(ops, in_ids, j) is DType.float64:
                wide = DType.float64
    return max(counts.values(), default=0), wide


def _operand_dtype(ops: tuple[Any, ...], in_ids: tuple[int, ...], j: int) -> DType:
    """The dtype reduction `j` of `ops` reads (an input's, or an op's result's)."""
    role, at = ops[j][1][0]
    return DTYPES[in_ids[at] if role == "in" else ops[at][2]]


def _flat(inner: Any, t: Any, shape: tuple[int, ...]) -> Any:
    """`t` broadcast to `shape` and seen as one dim of its elements in row-major order: a
    view where one stride walks them (a single element: stride 0), else a dense copy.

    Args:
        inner: the backend (for the copy).
        t: an input of a whole-tensor reduce block.
        shape: the reduced tensors' shape.
    """
    n = math.prod(shape)
    array = t.array
    if t.size == n and (array.base is None or t.is_contiguous):  # dense: the common case
        return t.flat()
    if t.size == 1 or (array.base is not None and not any(array.strides)):
        return t.view((n,), (0,), t.offset)  # one element, or one seen everywhere
    view = broadcast_view(t, shape)
    dims, (steps,) = collapse(shape, view.strides)
    if len(dims) > 1:
        view = contiguous_copy(inner, view)
        steps = (1,)
    return view.view((n,), steps, view.offset)


def _padded(strides: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """A dense `R`-shaped result's strides (its dim of size 1 never steps)."""
    return tuple(0 if size == 1 else s for s, size in zip(strides, shape, strict=True))


def _kernel(signature: Any) -> Any:
    """The cached kernel of a reduce signature."""
    kernel = _KERNELS.get(signature)
    if kernel is None:
        kernel = _KERNELS[signature] = _build(signature)
        STATS.plans += 1
    else:
        STATS.cache_hits += 1
    return kernel


def _levels(ops: tuple[Any, ...], along: tuple[bool, ...]) -> list[tuple[str, int]]:
    """Per op: its kind (``elem``: per element of `S`, ``row``: one value per row,
    ``reduce``) and level (module docstring)."""
    out: list[tuple[str, int]] = []
    for name, args, _ in ops:
        level, elem = 0, False
        for role, value in args:
            if role == "op":
                kind, at = out[value]
                level, elem = max(level, at), elem or kind == "elem"
            elif role == "in":
                elem = elem or along[value]
        if name in REDUCTIONS:
            out.append(("reduce", level + 1))
        else:
            out.append(("elem" if elem else "row", level))
    return out


def _build(signature: Any) -> Any:
    """The kernel of a reduce signature: (rank, input dtype ids, which inputs vary along
    `d`, the steps along `d` compiled in (0 or 1; None: a launch argument; inputs that vary,
    then the written results of shape `S`), ops, written op indices, whether float operands
    are hidden from the compiler (`emit.Opaque`), whether it is the cpu runtime's, the
    schedule: on the cpu runtime None (a unit per row, its scratch rows in a tensor), the
    length of a row's scratch rows in the cube's array (`_row_scratch`) or the rows a unit
    takes in lockstep (`LANES`) and which tensors' adjacent rows start at adjacent elements,
    on GPU runtimes units per row, whether partials combine by planes, the columns per unit
    held in registers or None, and the distance between a row's units, `reduce_gpu`)."""
    from burn_cube import KernelBuilder, bool_, u32

    rank, in_ids, along, unit, ops, written, opaque, cpu, schedule = signature
    lanes, adjacent = schedule if cpu and type(schedule) is tuple else (1, ())
    row_scratch = schedule if cpu and type(schedule) is int else None
    levels = _levels(ops, along)
    per_pass, wide = _scratch(ops, along, in_ids)
    # (a unit of rows in lockstep is a cube of its own: the cpu runtime's threads take cubes)
    # (on the cpu runtime a unit's work is its rows' elements: long rows spread over threads)
    b = KernelBuilder(kernel_name("fused_reduce", ops),
                      cube_dim=1 if lanes > 1 else UNITS if cpu else reduce_gpu.UNITS,
                      unit_work=None if not cpu else "work" if lanes > 1 else "n")
    ins = [b.tensor(f"in{k}", cube_dtype("fusion", DTYPES[d]), rank=rank, write=False)
           for k, d in enumerate(in_ids)]
    outs = [b.tensor(f"out{i}", cube_dtype("fusion", DTYPES[ops[j][2]]), rank=rank,
                     write=True) for i, j in enumerate(written)]
    # the scratch rows: a row's in the cube's array where they fit (`_row_scratch`: the
    # cube's units take their rows one after the other), else each row's in a tensor; rows in
    # lockstep keep theirs in the cube's array (`lane_slots`); no tensor can alias the cube's
    # array, so loops over it need no overlap checks
    kind = cube_dtype("fusion", wide)
    scratch = None
    if cpu and row_scratch:
        scratch = b.shared(kind, per_pass * row_scratch)
    elif cpu and lanes == 1:
        scratch = b.tensor("scratch", kind, write=True)
    elif cpu:
        scratch = b.shared(kind, lane_slots(levels)[1] * lanes)
    stepped = [*(("in", k) for k, a in enumerate(along) if a),
               *(("out", i) for i, j in enumerate(written) if levels[j][0] == "elem")]
    steps = {t: (None if step == 1 else 0 if step == 0 else b.scalar(f"step_{t[0]}{t[1]}", u32))
             for t, step in zip(stepped, unit, strict=True)}
    n, count = b.scalar("n", u32), b.scalar("rows" if lanes == 1 else "units", u32)
    # the runs' length (rows in lockstep), and a unit's elements (its rows' in all)
    runs = [b.scalar("run", u32), b.scalar("work", u32)] if lanes > 1 else []
    numbers = {(j, p): b.scalar(f"s{j}_{p}", cube_dtype("fusion", DTYPES[value]))
               for j, (_, args, _) in enumerate(ops)
               for p, (role, value) in enumerate(args) if role == "num"}
    rows = _Rows(b, ops, levels, along, numbers, written)
    if opaque:
        rows.opaque = Opaque.declare(b, "keep")
    rows.tensors = {**{("in", k): t for k, t in enumerate(ins)},
                    **{("out", i): t for i, t in enumerate(outs)}}
    rows.steps, rows.in_ids = steps, in_ids
    if lanes > 1:  # each unit `lanes` rows of a run of `run`, the run's last unit its last
        # `lanes` (computing again rows of the unit before it, into the same values)
        pos, run = b.ABSOLUTE_POS, runs[0]
        with b.if_(pos < count):
            per_run = b.local(u32, (run + (lanes - 1)) // lanes)
            first = b.local(u32, (pos // per_run) * run
                            + b.min((pos % per_run) * lanes, run - lanes))
            rows.scratch = scratch
            rows.run_lanes(first, lanes, adjacent, n)
    elif cpu:
        pos = b.ABSOLUTE_POS
        with b.if_(pos < count):
            rows.scratch, rows.per_pass = scratch, per_pass
            rows.shared_rows = row_scratch is not None
            rows.run(pos, n)
    else:  # a group of units per row; rows past the last read row 0 and write nothing
        group, rows.plane, rows.chunks, rows.spread = schedule
        slots = reduce_gpu.UNITS // group  # rows per cube
        u = b.UNIT_POS
        rows.group = group
        if rows.spread == 1:  # a row's units adjacent
            rows.lane, slot = b.local(u32, u % group), u // group
        else:  # adjacent units on adjacent rows, `slots` apart within a row
            rows.lane, slot = b.local(u32, u // slots), u % slots
        row = b.local(u32, b.CUBE_POS * slots + slot)
        rows.valid = b.local(bool_, row < count)
        rows.lead = b.local(bool_, b.and_(rows.valid, rows.lane == 0))
        rows.run(b.local(u32, b.select(rows.valid, row, 0)), n)
    return b.kernel()


#: Most rows a unit of the cpu runtime takes in lockstep where their elements are not
#: adjacent (a reduction over a leading dim: `_Rows.run_lanes`), and the most bytes of their
#: scratch rows (an array on the stack). (Fewer rows a unit read shorter runs of each tensor
#: per element: a block of the transformer suite's backward, 7 elementwise ops and their
#: sum over dim 0 of [16, 64, 512], took 760 us with 256 rows a unit, 460 us with 4096; its
#: ops unfused, then the sum, 440 us; cpu runtime, 1 thread.)
LANES, LANE_BYTES = 4096, 1 << 16


def lane_slots(levels: list[tuple[str, int]]) -> tuple[dict[int, int], int]:
    """The scratch rows of a unit of the cpu runtime's rows in lockstep (`_Rows.run_lanes`,
    one element per row in each): per op of shape `R` one, its row values; per reduction
    three (its total, block sum and Kahan carry, or its extreme and last NaN).

    Returns:
        op index -> its first scratch row, and the scratch rows in all.
    """
    slots: dict[int, int] = {}
    count = 0
    for j, (kind, _) in enumerate(levels):
        if kind != "elem":
            slots[j] = count
            count += 3 if kind == "reduce" else 1
    return slots, count


def lanes_fit(ops: tuple[Any, ...], levels: list[tuple[str, int]]) -> bool:
    """Whether a block's rows can run in lockstep (`_Rows.run_lanes`): it has values of shape
    `R` (a block whose reductions are all dead has none: its live ops are elementwise), all
    floats (the scratch rows hold them; no reduction computes indices)."""
    kept = [DTYPES[ops[j][2]].is_float for j, (kind, _) in enumerate(levels) if kind != "elem"]
    return bool(kept) and all(kept)


#: Interleaved partial accumulators per row pass (adjacent elements in adjacent partials:
#: independent chains, which the C compiler also vectorizes where the steps are 1).
PARTIALS = 8


class _Rows:
    """The body of a reduce kernel for the unit's row: its per-row values, and one pass over
    the row per level (module docstring)."""

    def __init__(self, b: Any, ops: tuple[Any, ...], levels: list[tuple[str, int]],
                 along: tuple[bool, ...], numbers: dict[tuple[int, int], Any],
                 written: tuple[int, ...]) -> None:
        self.b, self.ops, self.levels, self.along = b, ops, levels, along
        self.numbers, self.written = numbers, written
        self.bases: dict[tuple[str, int], Any] = {}
        self.tensors: dict[tuple[str, int], Any] = {}
        self.steps: dict[tuple[str, int], Any] = {}
        self.rowwise: dict[int, Any] = {}
        self.row_values: dict[int, Any] = {}
        #: per-element ops the last pass stored in the scratch rows (where their rows start)
        self.stored: dict[int, Any] = {}
        #: the cpu runtime's scratch rows (`per_pass` per row; the unit's own in the cube's
        #: array where `shared_rows`), the unit's row, input dtypes.
        self.scratch: Any = None
        self.per_pass = 0
        self.shared_rows = False
        self.row: Any = None
        self.in_ids: tuple[int, ...] = ()
        #: GPU runtimes (`reduce_gpu`): units per row, the unit's place among them, whether
        #: its row exists, whether it writes the row's values, whether sums use planes.
        self.group = 1
        self.lane: Any = None
        self.valid: Any = None
        self.lead: Any = None
        self.plane = False
        #: units between two of a row's group (1, or its cube's rows where they read rows
        #: strided, whose adjacent units then read adjacent rows)
        self.spread = 1
        #: GPU rows of at most `chunks` columns per unit: the inputs' loads held by (input,
        #: chunk), and the chunk being computed (None: loads are not held)
        self.chunks: int | None = None
        self.held: dict[tuple[int, int], Any] = {}
        self.chunk: int | None = None
        #: hides float operands from the compiler (WGSL kernels)
        self.opaque: Opaque | None = None
        #: the cpu runtime's rows in lockstep (`run_lanes`): how many, where the first's
        #: tensors start and which tensors' rows start at adjacent elements, where each op's
        #: values (a reduction's two accumulators) start in the scratch rows, and the
        #: reductions being accumulated (their row values not final yet)
        self.lane_count = 1
        self.first_bases: dict[tuple[str, int], Any] = {}
        self.adjacent: tuple[bool, ...] = ()
        self.slots: dict[int, int] = {}
        self.accumulating: set[int] = set()

    def run(self, row: Any, n: Any) -> None:
        """The body for row `row` of `n` elements: where its tensors start, its inputs that
        do not vary along `d`, then the levels' passes."""
        self._start(row)
        for level in range(max(at for _, at in self.levels) + 1):
            self.level(level, n)

    def run_lanes(self, first: Any, lanes: int, adjacent: tuple[bool, ...], n: Any) -> None:
        """The body for rows `first` to `first + lanes - 1` (each of `n` elements) in
        lockstep: each loop over the rows' elements has an inner loop over the rows, which
        start at adjacent elements of the tensors `adjacent` marks (inputs, then results)
        and at the same element of the others, so it is a vector loop as an elementwise
        kernel's. The rows' values and accumulators lie in the scratch rows (`lane_slots`)
        of the cube's array."""
        self._start(first)
        self.first_bases, self.adjacent, self.lane_count = self.bases, adjacent, lanes
        self.slots = {j: at * lanes for j, at in lane_slots(self.levels)[0].items()}
        for level in range(max(at for _, at in self.levels) + 1):
            self._lanes_level(level, n)

    def _start(self, row: Any) -> None:
        """Make `row` the unit's row: where its tensors start, its inputs that do not vary
        along `d`, no row values yet."""
        b, tensors = self.b, self.tensors
        u32 = b.ABSOLUTE_POS.dtype
        self.row = row
        self.bases = {t: b.local(u32, b.index_of(tensors[t], row)) for t in tensors}
        self.rowwise = {k: b.local(tensors[("in", k)].dtype,
                                   init=tensors[("in", k)][self.bases[("in", k)]])
                        for k, a in enumerate(self.along) if not a}
        self.row_values = {}

    def _use(self, lane: Any) -> None:
        """Make row `first + lane` of `run_lanes` the one values are computed for: where its
        tensors start, its inputs that do not vary along `d`, its row values."""
        tensors = self.tensors
        self.bases = {t: base + lane if step else base for (t, base), step in
                      zip(self.first_bases.items(), self.adjacent, strict=True)}
        self.rowwise = {k: tensors[("in", k)][self.bases[("in", k)]]
                        for k, a in enumerate(self.along) if not a}
        self.row_values = {j: self._load(self._cell(j, lane),
                                         cube_dtype("fusion", DTYPES[self.ops[j][2]]))
                           for j in self.slots
                           if self.levels[j][0] != "reduce" or j not in self.accumulating}

    def _cell(self, j: int, lane: Any, which: int = 0) -> Any:
        """Where op `j`'s value for row `first + lane` lies in the scratch rows (`which`: a
        reduction's second or third one, `lane_slots`)."""
        return self.slots[j] + which * self.lane_count + lane

    def _load(self, at: Any, kind: Any) -> Any:
        """The scratch value at `at` as `kind` (a burn-cube dtype)."""
        value = self.scratch[at]
        return value if value.dtype == kind else self.b.cast(value, kind)

    def _keep(self, at: Any, value: Any) -> None:
        """Store `value` at `at` in the scratch rows (in their dtype)."""
        self.scratch[at] = value if value.dtype == self.scratch.dtype \
            else self.b.cast(value, self.scratch.dtype)

    def at(self, tensor: tuple[str, int], k: Any) -> Any:
        """The storage index of element `k` of the row of a tensor that steps along `d`."""
        step = self.steps[tensor]
        if step is None:
            return self.bases[tensor] + k
        return self.bases[tensor] if type(step) is int else self.bases[tensor] + k * step

    def value(self, j: int, elem: dict[int, Any], k: Any) -> Any:
        """Op `j`'s value (per element `k` where it is per element) from its operands."""
        def operand(p: int, role: str, value: Any) -> Any:
            if role == "num":
                return self.numbers[(j, p)]
            if role == "op":
                return elem[value] if value in elem else self.row_values[value]
            if not self.along[value]:
                return self.rowwise[value]
            tensor = self.tensors[("in", value)]
            if self.chunk is None:
                return tensor[self.at(("in", value), k)]
            held = self.held.get((value, self.chunk))
            if held is None:
                held = self.held[(value, self.chunk)] = self.b.local(
                    tensor.dtype, tensor[self.at(("in", value), k)])
            return held
        return operand(0, *self.ops[j][1][0]) if self.ops[j][0] in REDUCTIONS \
            else emit_op(self.b, self.ops[j], operand, opaque=self.opaque)

    def write(self, j: int, value: Any, k: Any = None) -> None:
        """Store op `j`'s value where it is written (element `k` of a per-element result)."""
        for i, w in enumerate(self.written):
            if w == j:
                if k is not None:
                    self.tensors[("out", i)][self.at(("out", i), k)] = value
                elif self.lead is None:
                    self.tensors[("out", i)][self.bases[("out", i)]] = value
                else:  # one unit of the row's group writes its values
                    with self.b.if_(self.lead):
                        self.tensors[("out", i)][self.bases[("out", i)]] = value

    def _row_ops(self, level: int, lane: Any = None) -> None:
        """The row's values of `level` (ops of shape `R`), written where needed; for the row
        `lane` of `run_lanes`, also kept in its scratch rows for the passes after."""
        for j, (kind, at) in enumerate(self.levels):
            if kind == "row" and at == level:
                value = self.value(j, {}, None)
                if lane is not None:
                    value = self.b.local(cube_dtype("fusion", DTYPES[self.ops[j][2]]), value)
                    self._keep(self._cell(j, lane), value)
                self.row_values[j] = value
                self.write(j, value)

    def _pass_ops(self, level: int) -> tuple[list[int], list[int]]:
        """The reductions the pass of `level` accumulates (those of `level + 1`) and the
        per-element results of `level` it writes."""
        levels = self.levels
        return ([j for j, (kind, at) in enumerate(levels)
                 if kind == "reduce" and at == level + 1],
                [j for j, (kind, at) in enumerate(levels)
                 if kind == "elem" and at == level and j in self.written])

    def level(self, level: int, n: Any) -> None:
        """The row values of `level`, then the pass accumulating the reductions of
        `level + 1` and writing the per-element results of `level`."""
        b, levels = self.b, self.levels
        self._row_ops(level)
        reductions, shown = self._pass_ops(level)
        if not reductions and not shown:
            return
        stored, self.stored = self.stored, {}
        live = _closure(self.ops, levels, [self.ops[j][1][0] for j in reductions], shown,
                        stored)

        def element(k: Any) -> dict[int, Any]:
            elem: dict[int, Any] = {}
            for j in live:
                if j in stored:  # the last pass left it in the scratch row
                    kind = cube_dtype("fusion", DTYPES[self.ops[j][2]])
                    elem[j] = b.local(kind, init=b.cast(self.scratch[stored[j] + k], kind))
                else:
                    elem[j] = self.value(j, elem, k)
            return elem

        u32 = b.ABSOLUTE_POS.dtype
        if self.scratch is None:  # one loop per unit over its columns, then the group's combine
            start = b.local(u32, b.min(self.lane, n - 1))  # max / min start at that element
            if self.chunks is None:
                first = element(start) if reductions else {}  # (a sum takes only its dtype)
                accs = [_Acc(b, self.ops[j], self.value(j, first, start), start)
                        for j in reductions]
                with b.if_(self.valid), b.for_range(self.lane, n, self.group) as k:
                    elem = element(k)
                    for acc, j in zip(accs, reductions, strict=True):
                        acc.add(self.value(j, elem, k), k)
                    for j in shown:
                        self.write(j, elem[j], k)
            else:
                accs = self._held_pass(reductions, shown, element, start, n)
            combined = reduce_gpu.combine(
                b, [(acc.kind, acc.folded(), acc.index) for acc in accs], self.lane,
                self.group, self.spread, self.plane)
            totals = [acc.finish(value, index, n)
                      for acc, (value, index) in zip(accs, combined, strict=True)]
        else:  # the reductions' arguments to the scratch row, then reduced from it
            scratch = self.scratch
            # (an input of step 1 is reduced where it lies)
            rows = {j: (self.tensors[at], self.bases[at]) for j in reductions
                    if (at := self.ops[j][1][0]) in self.tensors and self.steps.get(at, 0) is None}
            staged = [j for j in reductions if j not in rows]
            own = 0 if self.shared_rows else self.row * self.per_pass  # the row's first
            for r, j in enumerate(staged):
                rows[j] = (scratch, b.local(u32, (own + r) * n))
            if staged or shown:
                with b.for_range(0, n) as k:
                    elem = element(k)
                    for j in staged:
                        scratch[rows[j][1] + k] = b.cast(self.value(j, elem, k), scratch.dtype)
                    for j in shown:
                        self.write(j, elem[j], k)
            totals = [self._reduce(j, *rows[j], n) for j in reductions]
            self.stored = {self.ops[j][1][0][1]: rows[j][1] for j in staged
                           if self.ops[j][1][0][0] == "op"}
        for total, j in zip(totals, reductions, strict=True):
            self.row_values[j] = total
            self.write(j, total)

    def _lanes_level(self, level: int, n: Any) -> None:
        """`level` for the rows of `run_lanes`: their row values, then the loop over the
        elements accumulating every row's reductions and writing every row's per-element
        results, then the reductions' values. Sums are as the inner backend's column sums
        (`reduction_kernels.column_sum_kernel`): blocks of `COLUMN_BLOCK` elements summed
        plainly, Kahan-added to the total (`reduction_kernels.column_sum`: the same values)."""
        b = self.b
        rows = self.lane_count
        with b.for_range(0, rows) as lane:
            self._use(lane)
            self._row_ops(level, lane)
        reductions, shown = self._pass_ops(level)
        if not reductions and not shown:
            return
        live = _closure(self.ops, self.levels, [self.ops[j][1][0] for j in reductions], shown,
                        {})
        self.accumulating = set(reductions)

        def element(k: Any) -> dict[int, Any]:
            elem: dict[int, Any] = {}
            for j in live:
                elem[j] = self.value(j, elem, k)
            return elem

        sums = {j: self._sum_dtype(j) for j in reductions
                if REDUCTIONS[self.ops[j][0]] in ("sum", "mean")}
        extremes = [j for j in reductions if j not in sums]
        zero = b.const(0, b.ABSOLUTE_POS.dtype)
        with b.for_range(0, rows) as lane:  # sums 0; max / min from the first element
            self._use(lane)
            first = element(zero) if extremes else {}
            for j in sums:
                for which in (0, 2):  # the total and its carry
                    self._keep(self._cell(j, lane, which), b.const(0, self.scratch.dtype))
            for j in extremes:
                v = self.value(j, first, zero)
                self._keep(self._cell(j, lane), v)
                self._keep(self._cell(j, lane, 1), b.select(b.isnan(v), v, b.cast(0, v.dtype)))
        with b.for_range(0, n, COLUMN_BLOCK) as block:
            with b.for_range(0, rows) as lane:
                for j in sums:
                    self._keep(self._cell(j, lane, 1), b.const(0, self.scratch.dtype))
            with b.for_range(block, b.min(block + COLUMN_BLOCK, n)) as k, \
                    b.for_range(0, rows) as lane:
                self._use(lane)
                elem = element(k)
                for j in reductions:
                    v = self.value(j, elem, k)
                    if j in sums:  # the block's plain sum
                        part = self._load(self._cell(j, lane, 1), sums[j])
                        self._keep(self._cell(j, lane, 1), part + b.cast(v, sums[j]))
                        continue
                    best = self.scratch[self._cell(j, lane)]
                    v = b.cast(v, best.dtype)
                    better = v > best if REDUCTIONS[self.ops[j][0]] == "max" else v < best
                    self._keep(self._cell(j, lane), b.select(better, v, best))
                    nan = self.scratch[self._cell(j, lane, 1)]
                    self._keep(self._cell(j, lane, 1), b.select(b.isnan(v), v, nan))
                for j in shown:
                    self.write(j, elem[j], k)
            with b.for_range(0, rows) as lane:
                for j, kind in sums.items():
                    total = b.local(kind, self._load(self._cell(j, lane), kind))
                    carry = b.local(kind, self._load(self._cell(j, lane, 2), kind))
                    kahan_add(b, total, carry, self._load(self._cell(j, lane, 1), kind))
                    self._keep(self._cell(j, lane), total)
                    self._keep(self._cell(j, lane, 2), carry)
        self.accumulating = set()
        with b.for_range(0, rows) as lane:  # the reductions' values, as row values
            self._use(lane)
            for j in reductions:
                if j in sums:
                    value = self._load(self._cell(j, lane), sums[j])
                    if REDUCTIONS[self.ops[j][0]] == "mean":
                        value = value / b.cast(n, sums[j])
                else:  # a NaN anywhere wins
                    nan = self.scratch[self._cell(j, lane, 1)]
                    value = b.select(b.isnan(nan), nan, self.scratch[self._cell(j, lane)])
                kind = cube_dtype("fusion", DTYPES[self.ops[j][2]])
                out = b.local(kind, init=b.cast(value, kind))
                self._keep(self._cell(j, lane), out)
                self.write(j, out)

    def _sum_dtype(self, j: int) -> Any:
        """The accumulator dtype of sum (or mean) `j`: float64 for float64, else float32."""
        wide = _operand_dtype(self.ops, self.in_ids, j) is DType.float64
        return cube_dtype("fusion", DType.float64 if wide else DType.float32)

    def _held_pass(self, reductions: list[int], shown: list[int],
                   element: Callable[[Any], dict[int, Any]], start: Any, n: Any) -> list[_Acc]:
        """A pass over the unit's `chunks` columns unrolled, the inputs' loads held in locals
        for the later passes (`value`); a column past the row reads element ``n - 1`` and
        takes no part. Returns the reductions' partials."""
        b = self.b
        accs: list[_Acc] = []
        for c in range(self.chunks or 0):
            column = b.local(start.dtype, self.lane + c * self.group)
            k = start if c == 0 else b.local(start.dtype, b.min(column, n - 1))
            self.chunk = c
            elem = element(k)
            values = [self.value(j, elem, k) for j in reductions]
            self.chunk = None
            if c == 0:  # max / min start at the unit's first column
                accs = [_Acc(b, self.ops[j], v, k) for j, v in zip(reductions, values,
                                                                    strict=True)]
            with b.if_(b.and_(self.valid, column < n)):
                for acc, v in zip(accs, values, strict=True):
                    acc.add(v, k)
                for j in shown:
                    self.write(j, elem[j], k)
        return accs

    def _reduce(self, j: int, scratch: Any, base: Any, n: Any) -> Any:
        """Reduction `j` of the row at `base` of `scratch` (the scratch rows, or an input of
        step 1): a sum or mean as the inner reduction sums a contiguous row (`blocked_sum`),
        max / min in `PARTIALS` interleaved partials over whole blocks, the rest one by one
        (element by element with an index result)."""
        b = self.b
        u32 = b.ABSOLUTE_POS.dtype
        arg = self.ops[j][1][0]
        dtype = DTYPES[self.in_ids[arg[1]] if arg[0] == "in" else self.ops[arg[1]][2]]
        kind = cube_dtype("fusion", dtype)

        def load(k: Any) -> Any:
            value = scratch[base + k]
            return value if kind == scratch.dtype else b.cast(value, kind)

        if REDUCTIONS[self.ops[j][0]] in ("sum", "mean"):  # in the inner sum's order
            acc = _Acc(b, self.ops[j], load(b.const(0, u32)))
            total = blocked_sum(b, _ScratchRow(b, load, n), acc.dtype, b.const(0, u32))
            return acc.finish(total, None, n)
        lanes = 1 if _indexed(self.ops[j]) else PARTIALS
        accs = [_Acc(b, self.ops[j], load(b.const(0, u32))) for _ in range(lanes)]
        main = b.local(u32, n - n % lanes)
        with b.for_range(0, main, lanes) as k:
            for lane, acc in enumerate(accs):
                acc.add(load(k + lane if lane else k), k + lane if lane else k)
        with b.for_range(main, n) as k:
            accs[0].add(load(k), k)
        return _Acc.merged(accs, n)


class _ScratchRow:
    """A row the fused kernel reduces where it lies (a scratch row, or an input of step 1),
    as `reduction_kernels.blocked_sum` reads a contiguous row: `count` elements, element `k`
    from `load(k)`.

    Args:
        b: the builder.
        load: element `k` of the row, in the reduction's input dtype.
        count: the row's length.
    """

    def __init__(self, b: Any, load: Callable[[Any], Any], count: Any) -> None:
        self.b, self._load, self.count = b, load, count

    def load(self, k: Any, dtype: Any) -> Any:
        return self.b.cast(self._load(k), dtype)

    @contextmanager
    def steps(self, start: Any, stride: int, stop: Any = None) -> Iterator[Any]:
        """``for k in range(start, stop, stride)`` (default stop: `count`)."""
        with self.b.for_range(start, self.count if stop is None else stop, stride) as k:
            yield k


def _indexed(op: tuple[Any, ...]) -> bool:
    """Whether a reduction computes indices (they run element by element)."""
    return DTYPES[op[2]] is DType.int64


def _closure(ops: tuple[Any, ...], levels: list[tuple[str, int]], reads: list[Any],
             shown: list[int], stored: dict[int, Any]) -> list[int]:
    """The per-element ops a pass computes: those it writes and those feeding them or the
    reductions' arguments `reads`, in order (not what feeds the `stored` ones)."""
    want = set(shown) | {value for role, value in reads if role == "op"}
    for j in reversed(range(len(ops))):
        if j in want and levels[j][0] == "elem" and j not in stored:
            want.update(value for role, value in ops[j][1] if role == "op")
    return [j for j in range(len(ops)) if j in want and levels[j][0] == "elem"]


class _Acc:
    """One partial of a reduction in a row pass: a sum (float32 or float64), or the running
    max / min (a NaN wins) and, for the index result, the index of its first occurrence.

    Args:
        b: the builder (declared before the pass's loop).
        op: the reduction (name, arguments, result dtype id).
        first: the value of the row's element `start` (max / min start there).
        start: that element's index (0: the row's first).
    """

    def __init__(self, b: Any, op: tuple[Any, ...], first: Any, start: Any = 0) -> None:
        from burn_cube import u32

        name, _, out_id = op
        self.b, self.combine = b, REDUCTIONS[name]
        #: how partials combine: sum (means too), max or min
        self.kind = "sum" if self.combine == "mean" else self.combine
        self.out = cube_dtype("fusion", DTYPES[out_id])
        self.indexed = _indexed(op)
        summed = self.combine in ("sum", "mean")
        dtype = first.dtype
        self.dtype = cube_dtype("fusion", DType.float32) if summed and dtype.bits < 32 else dtype
        self.value = b.local(self.dtype, 0 if summed else first)
        self.index = b.local(u32, start) if self.indexed else None
        #: max / min without an index: the last NaN seen (else 0), kept apart from the
        #: running value so that each is one select (both vectorize)
        self.nan = None if summed or self.indexed else b.local(self.dtype, 0)

    def add(self, v: Any, k: Any) -> None:
        """Take element `k` of the row, of value `v`."""
        b = self.b
        if self.combine in ("sum", "mean"):
            b.set(self.value, self.value + b.cast(v, self.dtype))
            return
        better = v > self.value if self.combine == "max" else v < self.value
        if self.nan is not None:
            b.set(self.value, b.select(better, v, self.value))
            b.set(self.nan, b.select(b.isnan(v), v, self.nan))
            return
        take = b.local(better.dtype, b.or_(better, b.and_(b.isnan(v),
                                                          b.not_(b.isnan(self.value)))))
        b.set(self.value, b.select(take, v, self.value))
        b.set(self.index, b.select(take, k, self.index))

    @staticmethod
    def merged(partials: list[_Acc], n: Any) -> Any:
        """The reduction's value from its partials, in a local of its result dtype."""
        head = partials[0]
        b = head.b
        if head.indexed:  # one partial: element by element
            return head.finish(None, head.index, n)
        value = head._pairwise([p.value for p in partials], head._pair)
        if head.nan is not None:  # a NaN anywhere wins
            nan = head._pairwise([p.nan for p in partials],
                                 lambda a, c: b.select(b.isnan(a), a, c))
            value = b.select(b.isnan(nan), nan, value)
        return head.finish(value, None, n)

    def folded(self) -> Any:
        """This partial's value, its last NaN (if any) taking the place of the running one."""
        if self.nan is None:
            return self.value
        b = self.b
        return b.local(self.dtype, b.select(b.isnan(self.nan), self.nan, self.value))

    def finish(self, value: Any, index: Any, n: Any) -> Any:
        """The reduction's result from the row's combined value and index, in a local of its
        result dtype (a mean divides by `n`)."""
        b = self.b
        if self.indexed:
            return b.local(self.out, init=b.cast(index, self.out))
        if self.combine == "mean":
            value = value / b.cast(n, self.dtype)
        return b.local(self.out, init=b.cast(value, self.out))

    def _pairwise(self, values: list[Any], pair: Callable[[Any, Any], Any]) -> Any:
        """`values` combined pairwise by `pair`."""
        while len(values) > 1:
            half = len(values) // 2
            values = [self.b.local(self.dtype, pair(values[i], values[i + half]))
                      for i in range(half)]
        return values[0]

    def _pair(self, a: Any, c: Any) -> Any:
        if self.combine in ("sum", "mean"):
            return a + c
        better = c > a if self.combine == "max" else c < a
        return self.b.select(better, c, a)
