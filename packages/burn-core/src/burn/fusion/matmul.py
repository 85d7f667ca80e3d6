"""The matmul fuser: a matmul and the elementwise ops of its result's shape after it (its
epilogue: a bias, an activation, a residual add), and on GPU runtimes the elementwise ops
before it that compute an operand (its prologue: a scale, an activation, a cast).

A matmul block (`burn.fusion.stream`'s planner) starts with the matmul, or with its prologue.
Where the product runs on burn-cube kernels it runs as one kernel: the cube backends' tiled
matmul with the epilogue's ops emitted in place of its store (`matmul_kernels.Epilogue`), each
product element rounded to the matmul's dtype, then through the ops as the elementwise fuser
computes them, reading the epilogue's other inputs (broadcast views) in place; only the
results needed are written. A prologue's ops are emitted where the kernel stages the
operand's elements (`matmul_kernels.Prologue`), reading the prologue's inputs in place; its
results are recomputed by each cube that reads them and never written, so a prologue whose
results are needed elsewhere is planned as an elementwise block of its own
(`stream._written_prologues`), and one the epilogue reads, or before a product of rank 4 or
more (batch dims the kernel merges), runs its ops first as an elementwise block (`Split`).
Whether to fuse is decided once per block structure from the product's size and the strategy
the matmul's autotuner chose for the shape (`_tile`): up to `FUSE_WORK` multiply-adds, a
scalar tile or the naive kernel fuses (into that tile, or a small one), and up to
`LINE_FUSE_WORK` a float32 line tile into `LINE_FALLBACK`'s scalar tile (which loses the
lines); a larger product, or a vendor library's (BLAS on the cpu runtime, cuBLAS), runs as
the inner backend's, and the epilogue is then one fused elementwise block reading it
(`elementwise.run_block`). Kernels are cached by the block's signature; numbers are runtime
scalars.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Any, NamedTuple, cast

from burn.backends.cube.elementwise import broadcast_view
from burn.backends.cube.matmul import LINE_FALLBACK, _tuned, batches_per_launch, kernel_views
from burn.backends.cube.matmul_kernels import LINE_TILES, TILES, Tile, _batch_offsets, tiled_kernel
from burn.fusion.elementwise import Program, _program, opaque_math, run_block
from burn.fusion.emit import DTYPES, Opaque, emit_op
from burn.fusion.handle import Cell, Pending
from burn.fusion.stats import STATS
from burn.ir import TensorIR
from burn.ir.cube import cube_dtype

#: The matmuls the fuser takes.
MATMULS = ("float_matmul",)
#: The tile of fused kernels where the autotuner chose the naive kernel.
SMALL_TILE = TILES["tile32x32x16"]
#: Most multiply-adds of a product fused with its epilogue: past it, the product runs as the
#: inner backend's and the epilogue as an elementwise block. (A line tile's product fused
#: into a scalar tile loses its lines; on the H200 a tile with an epilogue ran the attention
#: scores [32, 8, 256, 64] @ [.., 64, 256] in 265 us against 85 us for the tile alone, and
#: the elementwise pass over the product costs about 35 us.)
FUSE_WORK = 1 << 24
#: Most multiply-adds of a product whose tuned kernel is a float32 line tile fused with its
#: epilogue into `LINE_FALLBACK`'s scalar tile: past it, the line tile runs alone and the
#: epilogue as an elementwise block. (wgpu on llvmpipe, linear + bias + relu synced, unfused
#: against fused: [64, 128] @ [128, 128] 1.34 against 1.32 ms, [64, 256] @ [256, 256] 1.96
#: against 3.29 ms, the MLP's [64, 784] @ [784, 256] 4.08 against 8.50 ms.)
LINE_FUSE_WORK = 1 << 20


class Unfused(NamedTuple):
    """The plan of a matmul block run as the inner backend's product, then its epilogue as
    an elementwise block (`epilogue`: that block's cell); `vendor`: the product is a vendor
    library's (BLAS, cuBLAS) for its shapes, so no block of its structure ever fuses."""

    epilogue: Cell
    vendor: bool


def accepts(lhs: tuple[int, ...], rhs: tuple[int, ...], cpu: bool) -> bool:
    """Whether the fuser takes a matmul of these shapes: matrices or batches of them with a
    non-empty product over a non-empty inner dim; on GPU runtimes (not `cpu`) at most
    `FUSE_WORK` multiply-adds. Others run at once: a larger product runs as the inner
    backend's whether recorded or not, and run at once the device starts on it while the
    host records what follows (recorded, it waited for the flush: the 6-layer encoder's
    forward took 13.2 ms on an H100 against 10.3 ms with its products run at once)."""
    if len(lhs) < 2 or len(rhs) < 2 or 0 in lhs or 0 in rhs:
        return False
    if cpu:
        return True
    batch = math.prod(max(a, b) for a, b in  # (the batch dims, broadcast)
                      zip_longest(reversed(lhs[:-2]), reversed(rhs[:-2]), fillvalue=1))
    return batch * lhs[-2] * lhs[-1] * rhs[-1] <= FUSE_WORK


def _declare_numbers(b: Any, ops: tuple[Any, ...], prefix: str) -> dict[tuple[int, int], Any]:
    """The kernel scalars of a program's numbers, by (op position, argument position)."""
    return {(j, p): b.scalar(f"{prefix}{j}_{p}", cube_dtype("fusion", DTYPES[value]))
            for j, (_, args, _) in enumerate(ops)
            for p, (role, value) in enumerate(args) if role == "num"}


def _operands(numbers: dict[tuple[int, int], Any], values: Any,
              load: Callable[[int], Any]) -> Callable[[int], Any]:
    """Per op position, `emit.emit_op`'s operand getter: a number's kernel scalar, an earlier
    op's value (`values`), an input's element (`load` of its slot, once per slot)."""
    loaded: dict[int, Any] = {}

    def operand(j: int) -> Any:
        def get(p: int, role: str, value: Any) -> Any:
            if role == "num":
                return numbers[(j, p)]
            if role == "op":
                return values[value]
            if value not in loaded:
                loaded[value] = load(value)
            return loaded[value]
        return get

    return operand


@dataclass(frozen=True)
class Epilogue:
    """A block's epilogue as the tiled kernel's `Epilogue` (equal signatures, one kernel).

    Args:
        rank: the rank of the product's shape (of the epilogue's inputs and outputs).
        in_ids: the dtype ids of the epilogue's own inputs.
        slots: the program's input slot of each of them.
        ops: the program's ops (the matmul first).
        outputs: the written ops (the first is stored into the matmul's `out`).
        opaque: whether float operands are hidden from the shader compiler (`emit.Opaque`:
            WGSL); the kernel then takes `Opaque.VALUES` after the numbers.
    """

    rank: int
    in_ids: tuple[int, ...]
    slots: tuple[int, ...]
    ops: tuple[Any, ...]
    outputs: tuple[int, ...]
    opaque: bool
    #: the parameters declared, while the kernel is built.
    params: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def declare(self, b: Any) -> None:
        """The epilogue's inputs, its outputs after the first, its numbers and, where opaque,
        the `Opaque` switch."""
        self.params["ins"] = {slot: b.tensor(f"e_in{k}", cube_dtype("fusion", DTYPES[d]),
                                             rank=self.rank, write=False)
                              for k, (slot, d) in enumerate(zip(self.slots, self.in_ids,
                                                                strict=True))}
        self.params["outs"] = [b.tensor(f"e_out{i}", cube_dtype("fusion", DTYPES[self.ops[j][2]]),
                                        rank=self.rank, write=True)
                               for i, j in enumerate(self.outputs[1:])]
        self.params["numbers"] = _declare_numbers(b, self.ops, "e_s")
        self.params["hide"] = Opaque.declare(b, "e_keep") if self.opaque else None

    def store(self, b: Any, out: Any, index: Any, value: Any) -> None:
        """The ops on product element `index` (dense), their written results stored."""
        ins, hide = self.params["ins"], self.params["hide"]
        values = [b.local(out.dtype, init=b.cast(value, out.dtype))]

        def load(slot: int) -> Any:
            t = ins[slot]
            return b.local(t.dtype, init=t[b.index_of(t, index)])

        operand = _operands(self.params["numbers"], values, load)
        for j in range(1, len(self.ops)):
            values.append(emit_op(b, self.ops[j], operand(j), opaque=hide))
        for target, j in zip([out, *self.params["outs"]], self.outputs, strict=True):
            target[index] = values[j]


class Split(NamedTuple):
    """The plan of a matmul block with a prologue that one kernel does not compute: the
    prologue as an elementwise block (`prologue`: its cell), then the rest of the block, from
    the matmul at position `at` (`rest`: its cell)."""

    at: int
    prologue: Cell
    rest: Cell


def run_matmul(inner: Any, block: list[Pending], values: dict[int, Any], needed: set[int],
               cell: Cell) -> dict[int, Any]:
    """Compute the needed results of matmul block `block` on `inner` (a cube backend).

    Args:
        inner: the backend computing.
        block: its prologue's records (elementwise ops computing an operand; GPU runtimes),
            the matmul, then its epilogue's records, in stream order.
        values: inner primitives by tensor id (the block's inputs from outside it).
        needed: ids of results that must be written.
        cell: where the block's plan is kept (made here on the first run): the fused
            kernel's, `Unfused` (the epilogue's cell, run after the inner backend's product)
            or `Split`.
    Returns:
        The written results by tensor id.
    """
    if not any(r.out.id in needed for r in block):  # nothing it computes is held or read
        STATS.ops_dead += len(block)
        return {}
    plan = cell.plan
    if plan is None:
        plan = cell.plan = _plan(inner, block, values, needed)
    elif type(plan) is Fused:
        STATS.cache_hits += 1
    if type(plan) is Split:  # (the prologue writes what the product and epilogue read)
        rest = block[plan.at:]
        written = needed  # (`run_block` reads it only to make the prologue's program)
        if plan.prologue.plan is None:
            written = needed | {a.id for r in rest for a in r.args if type(a) is TensorIR}
        values.update(run_block(inner, block[:plan.at], values, written, plan.prologue))
        return run_matmul(inner, rest, values, needed, plan.rest)
    if type(plan) is Unfused:
        lhs, rhs = (values[a.id] for a in block[0].args)
        return _unfused(inner, block, lhs, rhs, values, needed, plan.epilogue)
    return _run_fused(inner, plan, block, values)


def product_at(block: list[Pending]) -> int:
    """The position of the product in `block` (a matmul block: after its prologue, if any;
    0 where there is none).

    Args:
        block: the records of the block in stream order.
    Returns:
        The position.
    """
    return next((i for i, r in enumerate(block) if r.op.name in MATMULS), 0)


def _plan(inner: Any, block: list[Pending], values: dict[int, Any], needed: set[int]
          ) -> Fused | Unfused | Split:
    """A matmul block's plan, worked out on its first run (module docstring)."""
    at = product_at(block)
    if at:
        return _prologue_plan(inner, block, at, values, needed) or Split(at, Cell(), Cell())
    lhs, rhs = (values[a.id] for a in block[0].args)
    tile = _tile(inner, lhs, rhs, cast(tuple[int, ...], block[0].out.shape))
    fused = None if tile is None or len(block) < 2 else _fused_plan(inner, block, needed, tile)
    return Unfused(Cell(), tile is None) if fused is None else fused


def _run_fused(inner: Any, plan: Fused, block: list[Pending], values: dict[int, Any]
               ) -> dict[int, Any]:
    """Run a block as its one fused kernel (`plan`)."""
    program, tile, prologue, before = plan.program, plan.tile, plan.prologue, plan.before
    matmul = block[plan.at]
    shape = program.shape
    outs = [inner.empty(shape, dtype) for dtype in program.out_dtypes]
    # the prologue's inputs seen with its operands' kernel shape
    ins = [broadcast_view(values[block[i].args[p].id], plan.view) for i, p in before.inputs]
    operands: list[Any] = [values.get(a.id) for a in matmul.args]  # (None: computed)
    if prologue is not None:  # a computed operand: a view of its shape and dtype, never read
        kind, at = plan.carrier
        carrier = _unread(ins[at] if kind == "in" else operands[at], plan.view)
        operands = [carrier if prologue.computes(k) else t for k, t in enumerate(operands)]
    lhs, rhs = operands
    lv, rv, ov = kernel_views(lhs, rhs, outs[0])
    kernel = plan.kernels.get(len(ov.shape))
    if kernel is None:  # (batched: the rank of the views, batch dims merged as strides allow)
        kernel = plan.kernels[len(ov.shape)] = tiled_kernel(lhs.dtype, len(ov.shape), tile,
                                                            plan.epilogue, prologue)
    rest = block[plan.at:]
    args = [broadcast_view(values[rest[i].args[p].id], shape).array for i, p in plan.reads]
    args += [o.array for o in outs[1:]]
    args += [convert(rest[i].args[p]) for i, p, convert in program.numbers]
    if plan.epilogue is not None and plan.epilogue.opaque:
        args += Opaque.VALUES
    if prologue is not None:
        args += [t.array for t in ins]
        args += [convert(block[i].args[p]) for i, p, convert in before.numbers]
        if prologue.opaque:
            args += Opaque.VALUES
    for cube_count, z0 in plan.launches:
        inner.launch_cubes_planned(kernel, cube_count, (tile.units_x, tile.units_y), lv.array,
                                   rv.array, ov.array, z0, *args)
    STATS.kernels_launched += len(plan.launches)
    live = program.live + before.live
    STATS.ops_fused += live
    STATS.ops_dead += len(block) - live
    return {rest[i].out.id: o for i, o in zip(program.written, outs, strict=True)}


def _unread(t: Any, shape: tuple[int, ...]) -> Any:
    """A view of `t`'s storage with `shape` and zero strides: what a kernel takes for a
    computed operand, whose shape it reads and whose values it does not."""
    array = t.array
    view = array.view_unchecked(shape, (0,) * len(shape), array.offset)
    view.address = array.address
    return type(t)(view, t.dtype)


def _tile(inner: Any, lhs: Any, rhs: Any, shape: tuple[int, ...]) -> Tile | None:
    """The tile a fused kernel of this product takes, or None where the product is worth
    more on its own (module docstring)."""
    work = math.prod(shape) * lhs.shape[-1]
    if work > FUSE_WORK:
        return None
    name = _tuned(inner, lhs, rhs, shape)
    if name in TILES:
        return TILES[name]
    if name == "naive":
        return SMALL_TILE
    return TILES[LINE_FALLBACK] if name in LINE_TILES and work <= LINE_FUSE_WORK else None


@dataclass(frozen=True)
class Prologue:
    """A block's prologue as the tiled kernel's `Prologue`: the elementwise ops computing
    one or both operands, emitted where the kernel stages the operand's elements (each
    element is computed by every cube reading it: the ops are recomputed, never written).

    Args:
        rank: the rank of the kernel's operand views (of the prologue's inputs).
        in_ids: the dtype ids of its inputs.
        ops: the program's ops.
        computed: per operand (lhs, rhs), the op computing it, or None (read as it is).
        opaque: whether float operands are hidden from the shader compiler (`emit.Opaque`:
            WGSL); the kernel then takes `Opaque.VALUES` after the numbers.
    """

    rank: int
    in_ids: tuple[int, ...]
    ops: tuple[Any, ...]
    computed: tuple[int | None, int | None]
    opaque: bool
    #: the parameters declared, while the kernel is built.
    params: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def declare(self, b: Any) -> None:
        """The prologue's inputs, its numbers and, where opaque, its `Opaque` switch."""
        self.params["ins"] = [b.tensor(f"p_in{k}", cube_dtype("fusion", DTYPES[d]),
                                       rank=self.rank, write=False)
                              for k, d in enumerate(self.in_ids)]
        self.params["numbers"] = _declare_numbers(b, self.ops, "p_s")
        self.params["hide"] = Opaque.declare(b, "p_keep") if self.opaque else None

    def begin(self, b: Any, z: Any, out: Any) -> None:
        """The inputs' storage offsets of batch `z`."""
        self.params["bases"] = _batch_offsets(b, z, self.params["ins"], out, self.rank)

    def computes(self, operand: int) -> bool:
        """Whether the prologue computes operand 0 (lhs) or 1 (rhs)."""
        return self.computed[operand] is not None

    def load(self, b: Any, operand: int, row: Any, col: Any) -> Any:
        """The ops computing `operand`'s element (`row`, `col`), from its inputs' elements."""
        ins, bases = self.params["ins"], self.params["bases"]
        last = cast(int, self.computed[operand])
        used = {last}
        for j in range(last, -1, -1):  # the ops the operand depends on
            if j in used:
                used.update(value for role, value in self.ops[j][1] if role == "op")
        values: dict[int, Any] = {}

        def load(k: int) -> Any:
            t = ins[k]
            at = bases[k] + row * t.stride[self.rank - 2] + col * t.stride[self.rank - 1]
            return b.local(t.dtype, init=t[at])

        operand_of = _operands(self.params["numbers"], values, load)
        for j in sorted(used):
            values[j] = emit_op(b, self.ops[j], operand_of(j), opaque=self.params["hide"])
        return values[last]


class Fused(NamedTuple):
    """The plan of a matmul block run as one kernel, worked out on its first run.

    Attributes:
        program: the program of the matmul and its epilogue (the matmul first).
        tile: the kernel's tile.
        kernels: the tiled kernels with the epilogue by the rank of the kernel views
            (`kernel_views`).
        launches: per launch, its cube count and first batch (`z0`).
        reads: per epilogue input, the (op position, argument position) reading it (from
            the matmul).
        epilogue: the kernels' epilogue, or None (the product alone, after a prologue).
        at: the matmul's position in the block (after its prologue's records).
        prologue: the kernels' prologue, or None.
        before: the prologue's program (`elementwise._program`).
        view: the shape the prologue's inputs are seen with (its operands' in the kernel).
        carrier: where a computed operand's stand-in comes from (`_unread`): ("in", k) the
            prologue's input k, or ("operand", k) the matmul's other operand, k, both of the
            product's dtype.
    """

    program: Program
    tile: Tile
    kernels: dict[int, Any]
    launches: tuple[tuple[tuple[int, int, int], int], ...]
    reads: tuple[tuple[int, int], ...]
    epilogue: Epilogue | None
    at: int = 0
    prologue: Prologue | None = None
    before: Program = Program(0, None)
    view: tuple[int, ...] = ()
    carrier: tuple[str, int] = ("in", 0)


def _fused_plan(inner: Any, block: list[Pending], needed: set[int], tile: Tile
                ) -> Fused | None:
    """The plan of `block` (a matmul and its epilogue, or the matmul alone) where one kernel
    computes it: a live matmul and epilogue whose first written result has the product's
    dtype and whose ops do not read the matmul's operands; else None. On wgpu the epilogue
    hides float operands (`emit.Opaque`)."""
    matmul = block[0]
    shape = cast(tuple[int, ...], matmul.out.shape)
    if len(block) == 1:
        product = Program(1, None, written=(0,), out_dtypes=(matmul.out.dtype,), shape=shape)
        STATS.plans += 1
        return Fused(product, tile, {}, _launches(inner, shape, tile), (), None)
    program = _program(block, needed)
    if program.single is not None or not program.ops or program.ops[0][0] not in MATMULS:
        return None
    product = program.ops[0]
    operands = {value for _, value in product[1]}
    if program.ops[program.outputs[0]][2] != product[2] or any(
            role == "in" and value in operands for _, args, _ in program.ops[1:]
            for role, value in args):
        return None
    slots = tuple(k for k in range(len(program.inputs)) if k not in operands)
    reads = tuple(program.inputs[k] for k in slots)
    in_ids = tuple(id(block[i].args[p].dtype) for i, p in reads)
    epilogue = Epilogue(len(shape), in_ids, slots, program.ops, program.outputs,
                        opaque_math(inner))
    STATS.plans += 1
    return Fused(program, tile, {}, _launches(inner, shape, tile), reads, epilogue)


def _launches(inner: Any, shape: tuple[int, ...], tile: Tile
              ) -> tuple[tuple[tuple[int, int, int], int], ...]:
    """Per launch of a tiled product of `shape`: its cube count and first batch."""
    cx, cy = math.ceil(shape[-1] / tile.bn), math.ceil(shape[-2] / tile.bm)
    batches = math.prod(shape[:-2])
    per_launch = batches_per_launch(inner, cx * cy * tile.units)
    return tuple(((cx, cy, min(per_launch, batches - z0)), z0)
                 for z0 in range(0, batches, per_launch))


def _prologue_plan(inner: Any, block: list[Pending], at: int, values: dict[int, Any],
                   needed: set[int]) -> Fused | None:
    """The plan of a block whose records before the matmul (at `at`) compute an operand,
    where one kernel computes it all: a product of rank 2 or 3 the tiled kernel takes
    (`_tile`, timed on a dense stand-in of the computed operand), a prologue whose results
    only the matmul reads (none read by the epilogue; none is written: the planner makes a
    prologue with a result to write a block of its own, `stream._written_prologues`) with a
    tensor of the product's dtype to stand in for a computed operand (an input, or the other
    operand), and an epilogue `_fused_plan` takes; else None."""
    matmul, before, rest = block[at], block[:at], block[at:]
    shape = cast(tuple[int, ...], matmul.out.shape)
    mine = {r.out.id for r in before}
    if len(shape) > 3 or any(
            type(a) is TensorIR and a.id in mine for r in rest[1:] for a in r.args):
        return None
    program = _program(before, {a.id for a in matmul.args if a.id in mine}, inlined=True)
    dtype = matmul.out.dtype
    carrier = next((("in", k) for k, (i, p) in enumerate(program.inputs)
                    if before[i].args[p].dtype is dtype), None) or next(
        (("operand", k) for k, a in enumerate(matmul.args) if a.id not in mine), None)
    if carrier is None:  # (both operands computed from inputs of other dtypes)
        return None
    lhs, rhs = (inner.empty(a.shape, a.dtype) if a.id in mine else values[a.id]
                for a in matmul.args)
    tile = _tile(inner, lhs, rhs, shape)
    fused = None if tile is None else _fused_plan(inner, rest, needed, tile)
    if fused is None:
        return None
    op_of = {before[i].out.id: j for i, j in zip(program.written, program.outputs, strict=True)}
    computed = cast(tuple[int | None, int | None], tuple(op_of.get(a.id) for a in matmul.args))
    in_ids = tuple(id(before[i].args[p].dtype) for i, p in program.inputs)
    prologue = Prologue(len(shape), in_ids, program.ops, computed, opaque_math(inner))
    return fused._replace(at=at, prologue=prologue, before=program,
                          view=(*shape[:-2], *program.shape[-2:]), carrier=carrier)


def _unfused(inner: Any, block: list[Pending], lhs: Any, rhs: Any, values: dict[int, Any],
             needed: set[int], epilogue_cell: Cell) -> dict[int, Any]:
    """The product of `lhs` and `rhs` by the inner backend's matmul (BLAS on the cpu), then
    the epilogue as one fused elementwise block reading it. The product's kernels are counted
    as the runtime launched them (none for a BLAS product), as when it runs at once."""
    matmul, epilogue = block[0], block[1:]
    runtime = inner.runtime
    before = runtime.launches
    product = inner.float_matmul(lhs, rhs)
    STATS.kernels_launched += runtime.launches - before
    values[matmul.out.id] = product
    results = run_block(inner, epilogue, values, needed, epilogue_cell) if epilogue else {}
    if matmul.out.id in needed:
        results[matmul.out.id] = product
    return results
