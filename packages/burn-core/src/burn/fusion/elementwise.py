"""The elementwise fuser: a block of elementwise op records becomes one burn-cube kernel.

A block is a run of recorded ops whose results share one shape (inputs may broadcast to it).
Only the ops whose results are needed (held by a handle, or read by a later block) and the ops
feeding them are computed; each needed result is one output of the kernel. The kernel is built
with burn-cube's `KernelBuilder` from the rows' lowerings (`burn.ir.cube`'s emitter, the one the
cube backends' one-op kernels use), each op's value rounded to its result dtype as the unfused
op would store it, and kept in a local, so values equal the unfused ops' (on the cpu runtime bit
for bit: its kernels compile without contracting a * b + c into an FMA; CUDA's may contract it,
an ulp of that intermediate).

Kernels are cached by the block's signature (ops, how their arguments connect, dtypes, which
numbers are None, the compile-time arguments, rank, line width and schedule); the numbers
themselves are runtime scalars, so a training loop whose learning rate or step count changes
reuses its kernels. What a block computes, reads and writes is worked out once per block
structure (`Program`, keyed by the recorded ops' structures and which results are written)
and kept with its launches, planned once per argument layout, in the block's `Cell`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from burn.backends.cube.elementwise import (
    CUBE_DIM,
    GPU_RUN,
    LANES,
    LINE_DTYPES,
    MAX_ROWS,
    ROW_CUBE,
    ROW_MIN,
    broadcast_view,
    run_positions,
)
from burn.backends.cube.elementwise import _converter as number_converter
from burn.dtype import DType
from burn.fusion.emit import DTYPES, Opaque, emit_op, kernel_name
from burn.fusion.handle import Cell, Pending
from burn.fusion.stats import STATS
from burn.ir import OpDef, TensorIR
from burn.ir.cube import CUBE_DTYPES, cube_dtype, row_index, work_dtype
from burn_cube.codegen.table_c import calls_library

#: A block's signature: (rank, lanes, by rows, input dtypes, ops, written op indices, run,
#: opaque), where an op is (name, arguments, result dtype) and an argument is ("in", k),
#: ("op", j), ("num", dtype) or ("fixed", value); dtypes by `id`; run: positions a unit
#: computes; opaque: whether float operands are hidden from the compiler (`emit.Opaque`).
Signature = tuple[Any, ...]
_KERNELS: dict[Signature, Any] = {}
_VECTORIZES: dict[tuple[str, DType], bool] = {}


def fusable(dtypes: Iterable[DType]) -> bool:
    """Whether the fuser can compute an op over tensors (and a cast to dtypes) of `dtypes`:
    all of a dtype burn-cube has."""
    return all(d in CUBE_DTYPES for d in dtypes)


def vectorizes_on_cpu(op: OpDef, dtype: DType) -> bool:
    """Whether the cpu runtime's fused kernel stays vectorized with `op` on `dtype` in it: its
    cube expression holds no op the C target leaves as a per-element library call
    (`table_c.calls_library`: log, sin, pow, ... where f32 exp, tanh and erf are inline
    polynomials). Such a call keeps gcc from vectorizing the whole loop, so every other op
    fused with it would run one element at a time (a 20-op chain of mul, tanh, add and log
    over 64 x 256 floats took 675 us fused against 256 us as one kernel an op). An op
    without a cube expression (a `FUSED_MATH` activation) vectorizes except on float64, where
    its erf, tanh, exp or log1p is libm's. Kept per (op, dtype)."""
    key = (op.name, dtype)
    found = _VECTORIZES.get(key)
    if found is None:
        name = CUBE_DTYPES.get(dtype, "")
        found = _VECTORIZES[key] = dtype is not DType.float64 if op.cube is None else not any(
            calls_library(call, name) for call in _calls(op.cube))
    return found


def _calls(expr: Any) -> Iterable[str]:
    """The op names of a cube expression (nested tuples of a name and its arguments)."""
    if isinstance(expr, tuple):
        yield expr[0]
        for arg in expr[1:]:
            yield from _calls(arg)


@dataclass(slots=True)
class Program:
    """How a block of one structure runs, worked out on its first flush and kept.

    Attributes:
        live: how many of the block's ops are computed.
        single: the position of the one computed op, run by the inner backend's own kernel
            (None for a fused kernel).
        inputs: per kernel input, the (op position, argument position) that reads it first.
        numbers: per runtime scalar, its (op position, argument position, converter).
        written: the positions of the ops whose results are written.
        out_dtypes: their dtypes.
        allocs: their (dtype, burn-cube dtype), as the inner backend's `alloc` takes them.
        shape: the block's result shape.
        size: its element count.
        ops: the ops part of the kernel's signature (see `Signature`).
        outputs: the written ops' indices among the computed ones.
        launchers: planned launches by the inputs' layouts.
        opaque: the values a launch passes after the numbers (`Opaque.VALUES` where the
            inner backend hides float operands from the compiler, `opaque_math`).
    """

    live: int
    single: int | None
    inputs: tuple[tuple[int, int], ...] = ()
    numbers: tuple[tuple[int, int, Callable[[Any], Any]], ...] = ()
    written: tuple[int, ...] = ()
    out_dtypes: tuple[DType, ...] = ()
    allocs: tuple[tuple[DType, Any], ...] = ()
    shape: tuple[int, ...] = ()
    size: int = 0
    ops: tuple[Any, ...] = ()
    outputs: tuple[int, ...] = ()
    launchers: dict[Any, Callable[[Any], None]] = field(default_factory=dict)
    opaque: tuple[Any, ...] = ()


def run_block(inner: Any, block: list[Pending], values: dict[int, Any], needed: set[int],
              cell: Cell) -> dict[int, Any]:
    """Compute the needed results of `block` on `inner` (a cube backend).

    Args:
        inner: the backend computing.
        block: recorded ops whose results share one shape, in stream order.
        values: inner primitives by tensor id (the block's inputs from outside it).
        needed: ids of results that must be written.
        cell: where the block's `Program` is kept (made here on the first run).
    Returns:
        The written results by tensor id.
    """
    program = cell.plan
    if program is None:
        program = cell.plan = _program(block, needed)
    if program.live < len(block):
        STATS.ops_dead += len(block) - program.live
    if program.single is not None:
        op, args, out = block[program.single][:3]
        result = getattr(inner, op.name)(*(values[a.id] if type(a) is TensorIR else a
                                          for a in args))
        STATS.kernels_launched += 1
        return {out.id: result}
    if not program.live:
        return {}
    shape = program.shape
    outs = [inner.alloc(shape, dtype, cube) for dtype, cube in program.allocs]
    if program.size:
        # (the inputs' arrays in one pass; the tensors themselves only to plan a launch)
        arrays = [values[block[i].args[p].id].array for i, p in program.inputs]
        layouts = tuple([a.shape if a.base is None else _layout(a) for a in arrays])
        launcher = program.launchers.get(layouts)
        numbers = [convert(block[i].args[p]) for i, p, convert in program.numbers]
        if launcher is None:
            inputs = [values[block[i].args[p].id] for i, p in program.inputs]
            launcher = program.launchers[layouts] = _plan(inner, program, inputs, numbers, outs)
            program.opaque = Opaque.VALUES if opaque_math(inner) else ()
        else:
            STATS.cache_hits += 1
        arrays += numbers
        arrays += program.opaque
        arrays += [o.array for o in outs]
        launcher(arrays)
        STATS.kernels_launched += 1
    STATS.ops_fused += program.live
    return dict(zip([block[i].out.id for i in program.written], outs, strict=False))  # equal


def _program(block: list[Pending], needed: set[int], inlined: bool = False) -> Program:
    """Work out how `block` runs: the ops that are needed or feed a needed one, the kernel's
    inputs and numbers, and what it writes; `inlined`: the ops are emitted into another
    kernel (a matmul's prologue), so one live op is a program too, not the inner backend's
    own kernel."""
    want = set(needed)
    live: list[int] = []
    for i in reversed(range(len(block))):
        record = block[i]
        if record.out.id in want:
            live.append(i)
            want.update(a.id for a in record.args if type(a) is TensorIR)
    live.reverse()
    if not live or (len(live) == 1 and not inlined):
        return Program(len(live), live[0] if live else None)
    inputs: list[tuple[int, int]] = []
    slot: dict[int, tuple[str, int]] = {}
    ops: list[tuple[Any, ...]] = []
    numbers: list[tuple[int, int, Callable[[Any], Any]]] = []
    for j, i in enumerate(live):
        op, values_in, out = block[i][:3]
        args: list[tuple[str, Any]] = []
        first: Any = None  # the dtype of the op's first tensor
        for p, (role, value) in enumerate(zip(_roles(op), values_in, strict=True)):
            if role is _TENSOR:
                where = slot.get(value.id)
                if where is None:
                    where = slot[value.id] = ("in", len(inputs))
                    inputs.append((i, p))
                args.append(where)
                first = first or value.dtype
            elif role is _FIXED or value is None:
                args.append(("fixed", value))
            else:  # a number: of the tensors' dtype, or a float parameter (of a `FUSED_MATH`
                # op, its work dtype's, as its own kernel passes it: float32 for half values)
                dtype = (first if role is _SCALAR or first.is_float else
                         out.dtype if out.dtype.is_float else DType.float32)
                if op.cube is None:
                    dtype = work_dtype(dtype)
                args.append(("num", id(dtype)))
                numbers.append((i, p, _CONVERT[id(dtype)]))
        slot[out.id] = ("op", j)
        ops.append((op.name, tuple(args), id(out.dtype)))
    outputs = tuple(j for j, i in enumerate(live) if block[i].out.id in needed)
    written = tuple(live[j] for j in outputs)
    out_dtypes = tuple(block[i].out.dtype for i in written)
    shape = cast(tuple[int, ...], block[live[-1]].out.shape)
    return Program(len(live), None, tuple(inputs), tuple(numbers), written, out_dtypes,
                   tuple((d, cube_dtype("fusion", d)) for d in out_dtypes), shape,
                   math.prod(shape), tuple(ops), outputs)


_TENSOR, _SCALAR, _FLOAT, _FIXED = "tensor", "scalar", "float", "fixed"
_ROLES: dict[str, tuple[str, ...]] = {}
#: How a host number becomes a kernel scalar, by the id of its dtype (as the one-op kernels
#: convert it: ints wrap into the tensor's range).
_CONVERT: dict[int, Callable[[Any], Any]] = {id(d): number_converter(d) for d in DType}


def _roles(op: Any) -> tuple[str, ...]:
    """Per parameter of `op`: a tensor, a number of the tensors' dtype (``scalar``), a float
    number, or a compile-time argument (the dtype of casts)."""
    roles = _ROLES.get(op.name)
    if roles is None:
        roles = _ROLES[op.name] = tuple(
            _TENSOR if p.is_tensor else _SCALAR if p.type in ("scalar", "scalar?")
            else _FLOAT if p.type in ("float", "float?") else _FIXED for p in op.params)
    return roles


def _plan(inner: Any, program: Program, inputs: list[Any], numbers: list[Any],
          outs: list[Any]) -> Callable[[Any], None]:
    """The launcher of `program`'s kernel over arguments laid out as these: dense inputs of
    the result's shape as rank-1 views (in `LANES`-wide lines where every dtype is one that
    allows them, offsets are aligned and the lowerings have a line form), others read as
    broadcast or strided views of the result's rank: on the cpu runtime by rows where the last
    dimension is long enough (`elementwise_kernel(rows=True)`'s schedule: the column part of
    every index is affine), on GPUs by element, `GPU_RUN` positions a unit where not by
    lines (by rows past the x grid limit)."""
    start = time.perf_counter()
    shape = program.shape
    size = math.prod(shape)
    arrays = [t.array for t in inputs]
    dense = all(a.shape == shape and (a.base is None or t.is_contiguous)
                for a, t in zip(arrays, inputs, strict=True))
    one = inputs[0].dtype
    opaque = opaque_math(inner)
    lanes = LANES if (dense and not size % LANES
                      and one in LINE_DTYPES[inner.runtime.name]
                      and all(t.dtype is one for t in inputs)
                      and all(op[2] == id(one) for op in program.ops)
                      and all(a.offset % LANES == 0 for a in arrays)) else 1
    rank = 1 if dense else len(shape)
    rows = size // shape[-1] if rank > 1 else 0
    gpu = inner.runtime_name != "cpu"
    by_rows = rank > 1 and shape[-1] >= ROW_MIN and rows <= MAX_ROWS and (
        not gpu or -(-size // (GPU_RUN * CUBE_DIM)) > inner.runtime.properties.max_cube_count[0])

    def signature_of(lanes: int) -> Signature:
        run = GPU_RUN if gpu and lanes == 1 and size >= GPU_RUN * CUBE_DIM else 1
        return (rank, lanes, by_rows, tuple(id(t.dtype) for t in inputs), program.ops,
                program.outputs, run, opaque)

    signature = signature_of(lanes)
    kernel = _kernel(signature)
    if kernel is None:  # an op without a line form: by element
        signature = signature_of(1)
        kernel = _kernel(signature)
    lanes, run = signature[1], signature[6]
    if dense:
        views = [_flat(a, size) for a in (*arrays, *(o.array for o in outs))]
    else:
        views = [broadcast_view(t, shape).array for t in inputs] + [o.array for o in outs]
    if by_rows:
        counts = (-(-shape[-1] // ROW_CUBE), rows, 1)
    else:
        counts = (max(1, -(-size // (lanes * run * CUBE_DIM))), 1, 1)
    n_in = len(inputs)
    keep = list(Opaque.VALUES) if opaque else []
    launcher: Callable[[Any], None] = kernel.plan(inner.runtime, counts, CUBE_DIM,
                                                  *views[:n_in], *numbers, *keep,
                                                  *views[n_in:])
    STATS.compile_s += time.perf_counter() - start
    return launcher


def _kernel(signature: Signature) -> Any:
    """The cached kernel of a block signature; None where it asks for lines and an op has
    no line form."""
    if signature in _KERNELS:
        STATS.cache_hits += 1
        return _KERNELS[signature]
    from burn_cube.errors import CompileError

    try:
        kernel = _build(signature)
    except CompileError:
        if signature[1] == 1:
            raise
        kernel = None
    _KERNELS[signature] = kernel
    STATS.plans += kernel is not None
    return kernel


def _build(signature: Signature) -> Any:
    """The kernel of a block signature."""
    from burn_cube import KernelBuilder

    rank, lanes, by_rows, in_ids, ops, written, run, opaque = signature
    in_dtypes = [DTYPES[i] for i in in_ids]
    b = KernelBuilder(kernel_name("fused", ops))
    ins = [b.tensor(f"in{k}", cube_dtype("fusion", d), rank=rank, line_size=lanes, write=False)
           for k, d in enumerate(in_dtypes)]
    numbers = [b.scalar(f"s{n}", cube_dtype("fusion", DTYPES[arg[1]]))
               for n, arg in enumerate(a for op in ops for a in op[1] if a[0] == "num")]
    hide = Opaque.declare(b, "keep") if opaque else None
    outs = [b.tensor(f"out{i}", cube_dtype("fusion", DTYPES[ops[j][2]]), rank=rank,
                     line_size=lanes, write=True) for i, j in enumerate(written)]
    if by_rows:
        positions = [b.ABSOLUTE_POS_X]
        bound: Any = outs[0].shape[rank - 1]
    else:
        bound = outs[0].len
        positions = run_positions(b, bound, run)
    for pos in positions:  # each position a unit computes (by rows: one)
        _emit_position(b, pos, bound, by_rows, rank, ins, outs, iter(numbers), in_dtypes,
                       lanes, ops, written, hide)
    return b.kernel()


def _emit_position(b: Any, pos: Any, bound: Any, by_rows: bool, rank: int, ins: list[Any],
                   outs: list[Any], scalars: Any, in_dtypes: list[DType], lanes: int,
                   ops: tuple[Any, ...], written: tuple[int, ...],
                   opaque: Opaque | None) -> None:
    """The block's ops at position `pos` (a column of row ``CUBE_POS_Y`` by rows), guarded by
    `bound`: inputs loaded once each, the written results stored."""
    from burn_cube.types import line

    def index(t: Any) -> Any:
        return row_index(b, t, rank, pos) if by_rows else b.index_of(t, pos)

    loaded: dict[int, Any] = {}
    results: list[Any] = []

    def operand(p: int, role: str, value: Any) -> Any:
        if role == "op":
            return results[value]
        if role == "num":
            return next(scalars)
        if value not in loaded:
            t = ins[value]
            loaded[value] = b.local(line(cube_dtype("fusion", in_dtypes[value]), lanes),
                                    init=t[index(t)])
        return loaded[value]

    with b.if_(pos < bound):
        for op in ops:
            results.append(emit_op(b, op, operand, lanes, opaque))
        for out, j in zip(outs, written, strict=True):
            out[index(out)] = results[j]


def opaque_math(inner: Any) -> bool:
    """Whether fused kernels on `inner` hide float operands from the compiler (`Opaque`,
    element by element): on wgpu, whose WGSL drivers may assume there is no NaN or
    infinity."""
    return bool(inner.runtime_name == "wgpu")


def _flat(array: Any, size: int) -> Any:
    """A dense array as a rank-1 view of `size` elements."""
    if array.base is None and len(array.shape) == 1:
        return array
    return array.view_unchecked((size,), (1,), array.offset)


def _layout(array: Any) -> Any:
    """An array's part of a launch key (shape; for views also strides, offset, storage)."""
    base = array.base
    return array.shape if base is None else (array.shape, array.strides, array.offset,
                                             base.shape)
