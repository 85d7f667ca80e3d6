"""The matmul fuser: a matmul and the elementwise ops of its result's shape after it (its
epilogue: a bias, an activation, a residual add).

A matmul block (`burn.fusion.stream`'s planner) starts with the matmul. Where the product runs
on burn-cube kernels it runs as one kernel: the cube backends' tiled matmul with the epilogue's
ops emitted in place of its store (`matmul_kernels.Epilogue`), each product element rounded to
the matmul's dtype, then through the ops as the elementwise fuser computes them, reading the
epilogue's other inputs (broadcast views) in place; only the results needed are written.
Whether to fuse is decided once per block structure from the product's size and the strategy
the matmul's autotuner chose for the shape (`_tile`): up to `FUSE_WORK` multiply-adds, a scalar
tile or the naive kernel fuses (into that tile, or a small one) and a float32 line tile into
`LINE_FALLBACK`'s scalar tile; a larger product, or a vendor library's (BLAS on the cpu
runtime, cuBLAS), runs as the inner backend's, and the epilogue is then one fused elementwise
block reading it (`elementwise.run_block`). Kernels are
cached by the block's signature; numbers are runtime scalars.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

from burn.backends.cube.elementwise import broadcast_view
from burn.backends.cube.matmul import LINE_FALLBACK, _tuned, batches_per_launch, kernel_views
from burn.backends.cube.matmul_kernels import LINE_TILES, TILES, Tile, tiled_kernel
from burn.fusion.elementwise import Program, _program, opaque_math, run_block
from burn.fusion.emit import DTYPES, Opaque, emit_op
from burn.fusion.handle import Cell, Pending
from burn.fusion.stats import STATS
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


class Unfused(NamedTuple):
    """The plan of a matmul block run as the inner backend's product, then its epilogue as
    an elementwise block (`epilogue`: that block's cell); `vendor`: the product is a vendor
    library's (BLAS, cuBLAS) for its shapes, so no block of its structure ever fuses."""

    epilogue: Cell
    vendor: bool


def accepts(lhs: tuple[int, ...], rhs: tuple[int, ...]) -> bool:
    """Whether the fuser takes a matmul of these shapes: matrices or batches of them with a
    non-empty product over a non-empty inner dim (others run at once)."""
    return len(lhs) >= 2 and len(rhs) >= 2 and 0 not in lhs and 0 not in rhs


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
        self.params["numbers"] = {
            (j, p): b.scalar(f"e_s{j}_{p}", cube_dtype("fusion", DTYPES[value]))
            for j, (_, args, _) in enumerate(self.ops)
            for p, (role, value) in enumerate(args) if role == "num"}
        self.params["hide"] = Opaque.declare(b, "e_keep") if self.opaque else None

    def store(self, b: Any, out: Any, index: Any, value: Any) -> None:
        """The ops on product element `index` (dense), their written results stored."""
        ins, numbers, hide = self.params["ins"], self.params["numbers"], self.params["hide"]
        values = [b.local(out.dtype, init=b.cast(value, out.dtype))]
        loaded: dict[int, Any] = {}

        def operand(j: int) -> Any:
            def get(p: int, role: str, value: Any) -> Any:
                if role == "num":
                    return numbers[(j, p)]
                if role == "op":
                    return values[value]
                if value not in loaded:
                    t = ins[value]
                    loaded[value] = b.local(t.dtype, init=t[b.index_of(t, index)])
                return loaded[value]
            return get

        for j in range(1, len(self.ops)):
            values.append(emit_op(b, self.ops[j], operand(j), opaque=hide))
        for target, j in zip([out, *self.params["outs"]], self.outputs, strict=True):
            target[index] = values[j]


def run_matmul(inner: Any, block: list[Pending], values: dict[int, Any], needed: set[int],
               cell: Cell) -> dict[int, Any]:
    """Compute the needed results of matmul block `block` on `inner` (a cube backend).

    Args:
        inner: the backend computing.
        block: the matmul, then its epilogue's records, in stream order.
        values: inner primitives by tensor id (the block's inputs from outside it).
        needed: ids of results that must be written.
        cell: where the block's plan is kept (made here on the first run): the fused
            kernel's, or `Unfused` (the epilogue's cell, run after the inner backend's
            product).
    Returns:
        The written results by tensor id.
    """
    matmul = block[0]
    lhs, rhs = (values[a.id] for a in matmul.args)
    plan = cell.plan
    if plan is None:
        shape = cast(tuple[int, ...], matmul.out.shape)
        tile = _tile(inner, lhs, rhs, shape)
        fused = None if tile is None else _fused_plan(inner, block, needed, tile)
        plan = cell.plan = Unfused(Cell(), tile is None) if fused is None else fused
    elif type(plan) is not Unfused:
        STATS.cache_hits += 1
    if type(plan) is Unfused:
        return _unfused(inner, block, lhs, rhs, values, needed, plan.epilogue)
    program, tile, kernels, epilogue = plan.program, plan.tile, plan.kernels, plan.epilogue
    shape = program.shape
    outs = [inner.empty(shape, dtype) for dtype in program.out_dtypes]
    lv, rv, ov = kernel_views(lhs, rhs, outs[0])
    kernel = kernels.get(len(ov.shape))
    if kernel is None:  # (batched: the rank of the views, batch dims merged as strides allow)
        kernel = kernels[len(ov.shape)] = tiled_kernel(lhs.dtype, len(ov.shape), tile,
                                                       epilogue)
    ins = [broadcast_view(values[block[i].args[p].id], shape).array for i, p in plan.reads]
    numbers = [convert(block[i].args[p]) for i, p, convert in program.numbers]
    if epilogue.opaque:
        numbers += Opaque.VALUES
    for cube_count, z0 in plan.launches:
        inner.launch_cubes_planned(kernel, cube_count, (tile.units_x, tile.units_y), lv.array,
                                   rv.array, ov.array, z0, *ins,
                                   *(o.array for o in outs[1:]), *numbers)
    STATS.kernels_launched += len(plan.launches)
    STATS.ops_fused += program.live
    STATS.ops_dead += len(block) - program.live
    return {block[i].out.id: o for i, o in zip(program.written, outs, strict=True)}


def _tile(inner: Any, lhs: Any, rhs: Any, shape: tuple[int, ...]) -> Tile | None:
    """The tile a fused kernel of this product takes, or None where the product is worth
    more on its own (module docstring)."""
    if math.prod(shape) * lhs.shape[-1] > FUSE_WORK:
        return None
    name = _tuned(inner, lhs, rhs, shape)
    if name in TILES:
        return TILES[name]
    if name == "naive":
        return SMALL_TILE
    return TILES[LINE_FALLBACK] if name in LINE_TILES else None


class Fused(NamedTuple):
    """The plan of a matmul block run as one kernel, worked out on its first run.

    Attributes:
        program: the block's program (the matmul first).
        tile: the kernel's tile.
        kernels: the tiled kernels with the epilogue by the rank of the kernel views
            (`kernel_views`).
        launches: per launch, its cube count and first batch (`z0`).
        reads: per epilogue input, the (op position, argument position) reading it.
        epilogue: the kernels' epilogue.
    """

    program: Program
    tile: Tile
    kernels: dict[int, Any]
    launches: tuple[tuple[tuple[int, int, int], int], ...]
    reads: tuple[tuple[int, int], ...]
    epilogue: Epilogue


def _fused_plan(inner: Any, block: list[Pending], needed: set[int], tile: Tile
                ) -> Fused | None:
    """The block's plan where one kernel computes it: a live matmul and epilogue whose first
    written result has the product's dtype and whose ops do not read the matmul's operands;
    else None. On wgpu the epilogue hides float operands (`emit.Opaque`)."""
    if len(block) < 2:
        return None
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
    shape = program.shape
    epilogue = Epilogue(len(shape), in_ids, slots, program.ops, program.outputs,
                        opaque_math(inner))
    cx, cy = math.ceil(shape[-1] / tile.bn), math.ceil(shape[-2] / tile.bm)
    batches = math.prod(shape[:-2])
    per_launch = batches_per_launch(inner, cx * cy * tile.units)
    launches = tuple(((cx, cy, min(per_launch, batches - z0)), z0)
                     for z0 in range(0, batches, per_launch))
    STATS.plans += 1
    return Fused(program, tile, {}, launches, reads, epilogue)


def _unfused(inner: Any, block: list[Pending], lhs: Any, rhs: Any, values: dict[int, Any],
             needed: set[int], epilogue_cell: Cell) -> dict[int, Any]:
    """The product of `lhs` and `rhs` by the inner backend's matmul (BLAS on the cpu), then
    the epilogue as one fused elementwise block reading it."""
    matmul, epilogue = block[0], block[1:]
    product = inner.float_matmul(lhs, rhs)
    STATS.kernels_launched += 1
    values[matmul.out.id] = product
    results = run_block(inner, epilogue, values, needed, epilogue_cell) if epilogue else {}
    if matmul.out.id in needed:
        results[matmul.out.id] = product
    return results
