"""The reduce fuser: reductions along one dim, with the elementwise work around them, as one
burn-cube kernel.

A reduce block (`burn.fusion.stream`'s planner) holds reductions of tensors of one shape `S`
along one dim `d` (`float_sum_dim`, `float_mean_dim`, `float_max_dim_with_indices`,
`float_min_dim_with_indices`), the elementwise ops of shape `S` that feed them (fused on read)
and the elementwise ops after them, of the reduced shape `R` (`S` with `d` of size 1) or of
shape `S` reading the reduced values broadcast (fused on write): a softmax, a layer norm, a
mean of squares, softmax's backward.

The kernel runs one unit per row (the elements of `S` that differ only along `d`). Each op has
a level: inputs 0, a reduction one more than its argument, an elementwise op the largest of
its arguments'. Pass `L` loops over the row computing the per-element ops of level `L` that
a reduction of level `L + 1` or a written result needs (recomputed from the inputs, never
stored between passes) and accumulating those reductions; per-row values (reductions and the
ops of shape `R`) stay in registers. Results are written only where needed (`Stream.flush`).

Sums and means accumulate in float32 (float64 for float64) as the cube backends' reductions;
max / min take the first occurrence, a NaN winning, as they do. Kernels are cached by the
block's signature (ops, wiring, dtypes, rank, which inputs vary along `d`); numbers are
runtime scalars; launches are planned once per argument layout.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from burn.backends.cube.elementwise import broadcast_view
from burn.backends.cube.reduction import collapse
from burn.backends.cube.tensor import dense_strides
from burn.dtype import DType
from burn.fusion.elementwise import Program, _layout, _program
from burn.fusion.emit import DTYPES, emit_op
from burn.fusion.handle import Pending
from burn.fusion.stats import STATS
from burn.ir import TensorIR
from burn.ir.cube import cube_dtype

#: Reductions the fuser takes, by op, and how they combine.
REDUCTIONS = {"float_sum_dim": "sum", "float_mean_dim": "mean",
              "float_max_dim_with_indices": "max", "float_min_dim_with_indices": "min"}
#: Those with an index result (recorded as two records: values, then indices).
WITH_INDICES = frozenset(n for n in REDUCTIONS if n.endswith("_with_indices"))
#: Units per cube (one row each).
UNITS = 64
_KERNELS: dict[Any, Any] = {}


def accepts(shape: tuple[int, ...], dim: int) -> bool:
    """Whether the fuser takes a reduction of a tensor of `shape` along `dim`: a dim of two
    elements or more of a non-empty tensor (others run at once on the inner backend)."""
    return 0 <= dim < len(shape) and shape[dim] >= 2 and 0 not in shape


def reduced_dim(record: Pending) -> tuple[tuple[int, ...], int]:
    """The input shape and dim of a reduction record."""
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
        launchers: planned launches by the inputs' layouts.
    """

    program: Program
    shape: tuple[int, ...]
    dim: int
    along: tuple[bool, ...]
    full: tuple[bool, ...]
    launchers: dict[Any, Callable[[list[Any], list[Any], list[Any]], None]] = field(
        default_factory=dict)


def run_reduce(inner: Any, block: list[Pending], values: dict[int, Any], needed: set[int],
               programs: dict[Any, Any]) -> dict[int, Any]:
    """Compute the needed results of reduce block `block` on `inner` (a cube backend).

    Args:
        inner: the backend computing.
        block: the block's records in stream order.
        values: inner primitives by tensor id (the block's inputs from outside it).
        needed: ids of results that must be written.
        programs: the stream's programs by block structure (filled here).
    Returns:
        The written results by tensor id.
    """
    key = ("reduce", tuple(r.key for r in block), tuple(r.out.id in needed for r in block))
    plan = programs.get(key)
    if plan is None:
        plan = programs[key] = _reduce_program(block, needed)
    program = plan.program
    STATS.ops_dead += len(block) - program.live
    if program.single is not None:
        return _single(inner, block[program.single], values)
    if not program.live:
        return {}
    inputs = [values[block[i].args[p].id] for i, p in program.inputs]
    numbers = [convert(block[i].args[p]) for i, p, convert in program.numbers]
    outs = [inner.empty(block[i].out.shape, block[i].out.dtype) for i in program.written]
    layouts = tuple(_layout(t.array) for t in inputs)
    launcher = plan.launchers.get(layouts)
    if launcher is None:
        launcher = plan.launchers[layouts] = _plan(inner, plan, inputs, numbers, outs)
    else:
        STATS.cache_hits += 1
    launcher([t.array for t in inputs], numbers, [o.array for o in outs])
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
    along = []
    for i, p in program.inputs:
        own = block[i].args[p].shape
        at = dim - (len(shape) - len(own))
        along.append(at >= 0 and own[at] == shape[dim])
    full = tuple(block[i].out.shape == shape for i in program.written)
    return ReduceProgram(program, shape, dim, tuple(along), full)


def _plan(inner: Any, plan: ReduceProgram, inputs: list[Any], numbers: list[Any],
          outs: list[Any]) -> Callable[[list[Any], list[Any], list[Any]], None]:
    """The launcher of `plan`'s kernel over arguments laid out as these: every tensor as a
    view of the rows' shape (collapsed where every layout allows) and its step along `d`."""
    start = time.perf_counter()
    shape, dim = plan.shape, plan.dim
    n = shape[dim]
    views = [broadcast_view(t, shape) for t in inputs]
    strides = [v.strides for v in views]
    strides += [dense_strides(shape) if f else _padded(dense_strides(o.shape), o.shape)
                for o, f in zip(outs, plan.full, strict=True)]
    rows = tuple(1 if i == dim else s for i, s in enumerate(shape))
    row_shape, row_strides = collapse(rows, *strides)
    steps = [s[dim] for s, a in zip(strides[:len(views)], plan.along, strict=True) if a]
    steps += [s[dim] for s, f in zip(strides[len(views):], plan.full, strict=True) if f]
    arrays = [t.view(row_shape, st, t.offset).array
              for t, st in zip([*views, *outs], row_strides, strict=True)]
    program = plan.program
    signature = (len(row_shape), tuple(id(t.dtype) for t in inputs), plan.along, program.ops,
                 program.outputs)
    kernel = _kernel(signature)
    count = math.prod(rows)
    launch = kernel.plan(inner.runtime, (max(1, -(-count // UNITS)), 1, 1), UNITS, *arrays,
                         *steps, n, count, *numbers)
    fixed = [*steps, n, count]
    STATS.compile_s += time.perf_counter() - start

    def launcher(ins: list[Any], nums: list[Any], written: list[Any]) -> None:
        launch([*ins, *written, *fixed, *nums])

    return launcher


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
    `d`, ops, written op indices)."""
    from burn_cube import KernelBuilder, u32

    rank, in_ids, along, ops, written = signature
    levels = _levels(ops, along)
    b = KernelBuilder(f"fused_reduce_{len(ops)}_ops", cube_dim=UNITS)
    ins = [b.tensor(f"in{k}", cube_dtype("fusion", DTYPES[d]), rank=rank, write=False)
           for k, d in enumerate(in_ids)]
    outs = [b.tensor(f"out{i}", cube_dtype("fusion", DTYPES[ops[j][2]]), rank=rank,
                     write=True) for i, j in enumerate(written)]
    in_steps = {k: b.scalar(f"step{k}", u32) for k, a in enumerate(along) if a}
    out_full = [levels[j][0] == "elem" for j in written]
    out_steps = {i: b.scalar(f"out_step{i}", u32) for i, f in enumerate(out_full) if f}
    n, count = b.scalar("n", u32), b.scalar("rows", u32)
    numbers = {(j, p): b.scalar(f"s{j}_{p}", cube_dtype("fusion", DTYPES[value]))
               for j, (_, args, _) in enumerate(ops)
               for p, (role, value) in enumerate(args) if role == "num"}
    pos = b.ABSOLUTE_POS
    with b.if_(pos < count):
        bases = [b.local(u32, b.index_of(t, pos)) for t in ins]
        out_bases = [b.local(u32, b.index_of(t, pos)) for t in outs]
        rowwise = {k: b.local(ins[k].dtype, init=ins[k][bases[k]])
                   for k in range(len(ins)) if not along[k]}
        row_values: dict[int, Any] = {}

        def operand_of(j: int, elem: dict[int, Any], k: Any) -> Callable[[int, str, Any], Any]:
            def operand(p: int, role: str, value: Any) -> Any:
                if role == "num":
                    return numbers[(j, p)]
                if role == "op":
                    return elem[value] if value in elem else row_values[value]
                if along[value]:
                    return ins[value][bases[value] + k * in_steps[value]]
                return rowwise[value]
            return operand

        def write(j: int, value: Any, k: Any = None) -> None:
            for i, w in enumerate(written):
                if w == j:
                    at = out_bases[i] if k is None else out_bases[i] + k * out_steps[i]
                    outs[i][at] = value

        top = max(level for _, level in levels)
        for level in range(top + 1):
            for j, (kind, at) in enumerate(levels):
                if kind == "row" and at == level:
                    row_values[j] = emit_op(b, ops[j], operand_of(j, {}, None))
                    write(j, row_values[j])
            reductions = [j for j, (kind, at) in enumerate(levels)
                          if kind == "reduce" and at == level + 1]
            shown = [j for j, (kind, at) in enumerate(levels)
                     if kind == "elem" and at == level and j in written]
            if not reductions and not shown:
                continue
            live = _closure(ops, levels, [ops[j][1][0] for j in reductions], shown)
            accs = [_Acc(b, ops[j], _dtype_of(ops, in_ids, ops[j][1][0])) for j in reductions]
            with b.for_range(n) as k:
                elem: dict[int, Any] = {}
                for j in live:
                    elem[j] = emit_op(b, ops[j], operand_of(j, elem, k))
                for acc, j in zip(accs, reductions, strict=True):
                    acc.add(operand_of(j, elem, k)(0, *ops[j][1][0]), k)
                for j in shown:
                    write(j, elem[j], k)
            for acc, j in zip(accs, reductions, strict=True):
                row_values[j] = acc.finish(n)
                write(j, row_values[j])
    return b.kernel()


def _dtype_of(ops: tuple[Any, ...], in_ids: tuple[int, ...], arg: tuple[str, Any]) -> DType:
    """The dtype of a tensor argument (a kernel input or an op's result)."""
    role, value = arg
    return DTYPES[in_ids[value] if role == "in" else ops[value][2]]


def _closure(ops: tuple[Any, ...], levels: list[tuple[str, int]], reads: list[Any],
             shown: list[int]) -> list[int]:
    """The per-element ops a pass computes: those it writes and those feeding them or the
    reductions' arguments `reads`, in order."""
    want = set(shown) | {value for role, value in reads if role == "op"}
    for j in reversed(range(len(ops))):
        if j in want and levels[j][0] == "elem":
            want.update(value for role, value in ops[j][1] if role == "op")
    return [j for j in range(len(ops)) if j in want and levels[j][0] == "elem"]


class _Acc:
    """A reduction's accumulator in a row pass: a sum (float32 or float64), or the running
    max / min and the index of its first occurrence (a NaN wins).

    Args:
        b: the builder (declared before the pass's loop).
        op: the reduction (name, arguments, result dtype id).
        dtype: its argument's dtype.
    """

    def __init__(self, b: Any, op: tuple[Any, ...], dtype: DType) -> None:
        from burn_cube import u32

        name, _, out_id = op
        self.b, self.combine = b, REDUCTIONS[name]
        self.out = cube_dtype("fusion", DTYPES[out_id])
        self.indices = DTYPES[out_id] is DType.int64
        summed = self.combine in ("sum", "mean")
        wide = DType.float32 if summed and dtype.itemsize == 2 else dtype
        self.dtype = cube_dtype("fusion", wide)
        self.value = b.local(self.dtype, 0)
        self.index = None if summed else b.local(u32, 0)

    def add(self, v: Any, k: Any) -> None:
        """Take element `k` of the row, of value `v`."""
        b = self.b
        if self.index is None:
            b.set(self.value, self.value + b.cast(v, self.dtype))
            return
        better = v > self.value if self.combine == "max" else v < self.value
        nan = b.and_(b.isnan(v), b.not_(b.isnan(self.value)))
        take = b.local(b.const(True).dtype, b.or_(k == 0, b.or_(better, nan)))
        b.set(self.value, b.select(take, v, self.value))
        b.set(self.index, b.select(take, k, self.index))

    def finish(self, n: Any) -> Any:
        """The reduction's value in a local of its result dtype."""
        b = self.b
        if self.indices:
            return b.local(self.out, init=b.cast(self.index, self.out))
        value = self.value / b.cast(n, self.dtype) if self.combine == "mean" else self.value
        return b.local(self.out, init=b.cast(value, self.out))
