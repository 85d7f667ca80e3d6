"""Matmul kernels of the cube backends, built with `KernelBuilder` and cached per dtype, rank
and configuration (never per shape: sizes and strides are runtime metadata).

Both kernels take `lhs` [..., m, k] and `rhs` [..., k, n] as strided views already broadcast to
the batch dims of `out` [..., m, n] (dense), so transposed and stride-0 inputs are read in
place. Floats accumulate in float32 (float64 for float64), ints exactly modulo 2**32 or 2**64
(`accumulator`), as numpy's integer matmul wraps.

- `naive_kernel`: one unit per output element, a plain loop over k (no shared memory).
- `tiled_kernel`: a cube of `units_y x units_x` units computes a `bm x bn` output tile, each
  unit an `rm x rn` register block (rows `ty + i*units_y`, columns `tx + j*units_x`), staging
  `bm x bk` and `bk x bn` input tiles in shared memory; the cube's batch is `z0 + CUBE_POS_Z`.
  An `Epilogue` (the fusion decorator's bias, activation, residual add) may replace its store,
  and a `Prologue` (elementwise ops computing an operand) its loads of an operand.
- `line_tiled_kernel` (float32): the same schedule on `Line[f32, 4]` columns, for GPUs: `rhs`
  and `out` read and written as 4-wide lines (`rn` counts lines per unit, columns
  `4 * (tx + j*units_x)` onwards), each unit accumulating `rm x rn` lines from a broadcast
  scalar of the lhs tile times a line of the rhs tile; the next k tile is loaded into
  registers while the current one is multiplied, and the lhs tile is stored transposed with
  `32 / bk` elements of padding per k step, so neither its stores nor its reads conflict on
  shared-memory banks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from burn.dtype import DType
from burn.ir.cube import cube_dtype

from .kernel_cache import cached_kernel


@dataclass(frozen=True)
class Tile:
    """A tiled-kernel configuration.

    Args:
        units_y: units per cube along the rows.
        units_x: units per cube along the columns.
        rm: output rows per unit.
        rn: output columns per unit.
        bk: depth of the shared-memory k tile.
        lanes: elements per column step (4: `rn` counts `Line[f32, 4]` columns).
    """

    units_y: int
    units_x: int
    rm: int
    rn: int
    bk: int
    lanes: int = 1

    @property
    def bm(self) -> int:
        """Output rows per cube."""
        return self.units_y * self.rm

    @property
    def bn(self) -> int:
        """Output columns per cube."""
        return self.units_x * self.rn * self.lanes

    @property
    def units(self) -> int:
        """Units per cube."""
        return self.units_y * self.units_x

    @property
    def name(self) -> str:
        """The autotune candidate name, `tile<bm>x<bn>x<bk>` (`line...` for line tiles)."""
        return f"{'tile' if self.lanes == 1 else 'line'}{self.bm}x{self.bn}x{self.bk}"

    @property
    def a_stride(self) -> int:
        """Elements per k step of the line kernel's transposed lhs tile (rows + padding)."""
        return self.bm + 32 // self.bk

    def shared_elements(self) -> int:
        """Shared-memory elements per cube (both input tiles, padding included)."""
        rows = self.bm if self.lanes == 1 else self.a_stride
        return rows * self.bk + self.bk * self.bn


#: The tile configurations the autotuner chooses among (by name).
TILES = {t.name: t for t in (Tile(16, 16, 1, 1, 16), Tile(16, 16, 2, 2, 16),
                             Tile(16, 16, 4, 4, 16), Tile(16, 16, 8, 8, 8),
                             Tile(16, 16, 4, 8, 16), Tile(16, 16, 8, 8, 16))}
#: The float32 line-tile configurations (GPU runtimes), best guess first.
LINE_TILES = {t.name: t for t in (Tile(16, 16, 8, 2, 8, 4), Tile(16, 16, 8, 1, 16, 4),
                                  Tile(16, 16, 4, 2, 8, 4), Tile(16, 16, 4, 1, 16, 4))}


def accumulator(dtype: DType) -> Any:
    """The burn-cube dtype a product of `dtype` accumulates in: float32 (float64 for float64),
    uint32 for int32 (wrapping arithmetic, defined on every target, equal to numpy's int32
    result modulo 2**32), int64 for int64."""
    from burn_cube import f32, i64, u32

    if dtype.is_float:
        return cube_dtype("matmul", DType.float64) if dtype is DType.float64 else f32
    return u32 if dtype is DType.int32 else i64


def _batch_offsets(b: Any, z: Any, tensors: list[Any], out: Any, rank: int) -> list[Any]:
    """Storage offsets of batch `z` (row-major over out's batch dims) in each of `tensors`
    (views broadcast to out's batch dims)."""
    from burn_cube import u32

    offsets = [b.local(u32, t.offset) for t in tensors]
    if rank > 2:
        rest = b.local(u32, z)
        for dim in reversed(range(rank - 2)):
            coord = rest % out.shape[dim] if dim else rest
            for offset, t in zip(offsets, tensors, strict=True):
                b.set(offset, offset + coord * t.stride[dim])
            if dim:
                b.set(rest, rest // out.shape[dim])
    return offsets


def _declare(b: Any, dtype: DType, rank: int) -> tuple[Any, Any, Any]:
    cube = cube_dtype("matmul", dtype)
    return (b.tensor("lhs", cube, rank=rank, write=False),
            b.tensor("rhs", cube, rank=rank, write=False),
            b.tensor("out", cube, rank=rank, write=True))


class Epilogue(Protocol):
    """Elementwise work a fused kernel does on each product element instead of storing it
    (`burn.fusion.matmul`; hashable: kernels are cached by it)."""

    def declare(self, b: Any) -> None:
        """Declare its parameters (after the kernel's own)."""

    def store(self, b: Any, out: Any, index: Any, value: Any) -> None:
        """Compute from `value` (the accumulator of element `index` of the dense `out`) and
        store the results (into `out` and its own outputs)."""


class Prologue(Protocol):
    """Elementwise work a fused kernel does on the elements of an operand as it stages them,
    computing the operand from the prologue's own inputs instead of reading it
    (`burn.fusion.matmul`; hashable: kernels are cached by it)."""

    def declare(self, b: Any) -> None:
        """Declare its parameters (after the kernel's own and the epilogue's)."""

    def begin(self, b: Any, z: Any, out: Any) -> None:
        """Work out its inputs' storage offsets for the cube's batch `z` of `out`."""

    def computes(self, operand: int) -> bool:
        """Whether it computes operand 0 (lhs) or 1 (rhs)."""

    def load(self, b: Any, operand: int, row: Any, col: Any) -> Any:
        """The value of the operand's element (`row`, `col`) of the cube's batch."""


def _store_tile(b: Any, out: Any, acc: list[list[Any]], tile: Tile, z: Any,
                corner: tuple[Any, Any], size: tuple[Any, Any],
                epilogue: Epilogue | None = None) -> None:
    """The tiled kernels' epilogue: ``out[z, r, c] = acc[i][j]`` (cast to out's dtype) for
    the unit's rows ``r = row0 + ty + i * units_y`` and columns ``c = col0 + tx + j * units_x``
    inside the ``m x n`` matrix (columns counted in lines for line tiles).

    Args:
        b: the kernel builder.
        out: the dense output tensor.
        acc: the unit's ``rm x rn`` accumulators.
        tile: the configuration.
        z: the cube's batch.
        corner: (row0, col0), the cube's first row and column.
        size: (m, n), the output's rows and columns.
        epilogue: stores in place of the plain store, where given.
    """
    (row0, col0), (m, n) = corner, size
    base = z * m * n
    for i in range(tile.rm):
        r = row0 + b.UNIT_POS_Y + i * tile.units_y
        for j in range(tile.rn):
            c = col0 + b.UNIT_POS_X + j * tile.units_x
            value = acc[i][j]
            with b.if_(b.and_(r < m, c < n)):
                if epilogue is not None:
                    epilogue.store(b, out, base + r * n + c, value)
                else:
                    out[base + r * n + c] = (value if value.dtype == out.dtype
                                             else b.cast(value, out.dtype))


@cached_kernel
def naive_kernel(dtype: DType, rank: int) -> Any:
    """One unit per element of the dense `out`: `out[z, i, j] = sum_k lhs[z, i, k] rhs[z, k, j]`.

    Args:
        dtype: element dtype of all three tensors.
        rank: their rank (>= 2).
    """
    from burn_cube import KernelBuilder, u32

    b = KernelBuilder("matmul_naive")
    lhs, rhs, out = _declare(b, dtype, rank)
    acc_t = accumulator(dtype)
    pos = b.ABSOLUTE_POS
    m, k, n = lhs.shape[rank - 2], lhs.shape[rank - 1], rhs.shape[rank - 1]
    with b.if_(pos < out.len):
        col, rows = pos % n, pos // n
        lo, ro = _batch_offsets(b, rows // m, [lhs, rhs], out, rank)
        a = b.local(u32, lo + rows % m * lhs.stride[rank - 2])
        r = b.local(u32, ro + col * rhs.stride[rank - 1])
        acc = b.local(acc_t, 0)
        with b.for_range(k):
            b.set(acc, acc + b.cast(lhs[a], acc_t) * b.cast(rhs[r], acc_t))
            b.set(a, a + lhs.stride[rank - 1])
            b.set(r, r + rhs.stride[rank - 2])
        out[pos] = b.cast(acc, out.dtype)
    return b.kernel()


@cached_kernel
def tiled_kernel(dtype: DType, rank: int, tile: Tile, epilogue: Epilogue | None = None,
                 prologue: Prologue | None = None) -> Any:
    """A `tile.bm x tile.bn` output tile per cube, cubes laid out (column tiles, row tiles,
    batches from the scalar `z0`), `tile.units_x x tile.units_y` units per cube.

    Args:
        dtype: element dtype of all three tensors.
        rank: their rank (>= 2).
        tile: the configuration.
        epilogue: elementwise work fused into the store (its parameters follow `z0`).
        prologue: elementwise work computing an operand as it is staged (its parameters
            follow the epilogue's); the operand's tensor then only gives its shape.
    """
    from burn_cube import KernelBuilder, u32

    name = "matmul_tiled" + ("_prologue" if prologue is not None else "") + (
        "_epilogue" if epilogue is not None else "")
    b = KernelBuilder(name, cube_dim=(tile.units_x, tile.units_y))
    lhs, rhs, out = _declare(b, dtype, rank)
    z0 = b.scalar("z0", u32)
    if epilogue is not None:
        epilogue.declare(b)
    if prologue is not None:
        prologue.declare(b)
    acc_t = accumulator(dtype)
    a_tile = b.shared(acc_t, tile.bm * tile.bk, name="a_tile")
    b_tile = b.shared(acc_t, tile.bk * tile.bn, name="b_tile")
    m, k, n = lhs.shape[rank - 2], lhs.shape[rank - 1], rhs.shape[rank - 1]
    z = z0 + b.CUBE_POS_Z
    lo, ro = _batch_offsets(b, z, [lhs, rhs], out, rank)
    if prologue is not None:
        prologue.begin(b, z, out)
    row0 = b.local(u32, b.CUBE_POS_Y * tile.bm)
    col0 = b.local(u32, b.CUBE_POS_X * tile.bn)
    tx, ty, unit = b.UNIT_POS_X, b.UNIT_POS_Y, b.UNIT_POS
    acc = [[b.local(acc_t, 0) for _ in range(tile.rn)] for _ in range(tile.rm)]
    a, w = [b.local(acc_t) for _ in range(tile.rm)], [b.local(acc_t) for _ in range(tile.rn)]

    def stage(dst: Any, operand: int, src: Any, base: Any, rows: int, cols: int, row0: Any,
              col0: Any, nrows: Any, ncols: Any) -> None:
        """`dst[r * cols + c] = src[row0 + r, col0 + c]` (0 outside) for the cube's tile; the
        prologue's value there where it computes `operand`."""
        computed = prologue is not None and prologue.computes(operand)
        strides = (src.stride[rank - 2], src.stride[rank - 1])
        for step in range(rows * cols // tile.units):
            e = unit + step * tile.units
            r, c = row0 + e // cols, col0 + e % cols
            value = b.local(acc_t, 0)
            with b.if_(b.and_(r < nrows, c < ncols)):
                element = (prologue.load(b, operand, r, c) if computed  # type: ignore[union-attr]
                           else src[base + r * strides[0] + c * strides[1]])
                b.set(value, b.cast(element, acc_t))
            dst[e] = value

    with b.for_range(0, k, tile.bk) as k0:
        stage(a_tile, 0, lhs, lo, tile.bm, tile.bk, row0, k0, m, k)
        stage(b_tile, 1, rhs, ro, tile.bk, tile.bn, k0, col0, k, n)
        b.sync_units()
        for kk in range(tile.bk):
            for i in range(tile.rm):
                b.set(a[i], a_tile[(ty + i * tile.units_y) * tile.bk + kk])
            for j in range(tile.rn):
                b.set(w[j], b_tile[kk * tile.bn + tx + j * tile.units_x])
            for i in range(tile.rm):
                for j in range(tile.rn):
                    b.set(acc[i][j], acc[i][j] + a[i] * w[j])
        b.sync_units()
    _store_tile(b, out, acc, tile, z, (row0, col0), (m, n), epilogue)
    return b.kernel()


@cached_kernel
def line_tiled_kernel(rank: int, tile: Tile) -> Any:
    """The float32 line tile (module docstring): `rhs` and `out` are `Line[f32, 4]` tensors
    (shapes and strides in lines), `lhs` scalars; cubes laid out as in `tiled_kernel`.

    Args:
        rank: rank of the three tensors (>= 2).
        tile: a configuration of `LINE_TILES` (`bk` a power of two up to 32).
    """
    from burn_cube import KernelBuilder, f32, u32
    from burn_cube.types import line

    vec = line(f32, tile.lanes)
    b = KernelBuilder("matmul_line_tiled", cube_dim=(tile.units_x, tile.units_y))
    lhs = b.tensor("lhs", f32, rank=rank, write=False)
    rhs = b.tensor("rhs", f32, rank=rank, line_size=tile.lanes, write=False)
    out = b.tensor("out", f32, rank=rank, line_size=tile.lanes, write=True)
    z0 = b.scalar("z0", u32)
    lines = tile.bn // tile.lanes  # lines per rhs tile row
    a_tile = b.shared(f32, tile.a_stride * tile.bk, name="a_tile")
    b_tile = b.shared(vec, tile.bk * lines, name="b_tile")
    m, k, n = lhs.shape[rank - 2], lhs.shape[rank - 1], rhs.shape[rank - 1]
    z = z0 + b.CUBE_POS_Z
    lo, ro = _batch_offsets(b, z, [lhs, rhs], out, rank)
    row0 = b.local(u32, b.CUBE_POS_Y * tile.bm)
    col0 = b.local(u32, b.CUBE_POS_X * lines)
    tx, ty, unit = b.UNIT_POS_X, b.UNIT_POS_Y, b.UNIT_POS
    sa, sb = (lhs.stride[rank - 2], lhs.stride[rank - 1]), rhs.stride[rank - 2]
    # Per unit: the lhs elements (row, k) and rhs lines (k, column) it stages, fixed per tile.
    a_at = [(e // tile.bk, e % tile.bk) for e in
            (unit + s * tile.units for s in range(tile.bm * tile.bk // tile.units))]
    b_at = [(e // lines, e % lines) for e in
            (unit + s * tile.units for s in range(tile.bk * lines // tile.units))]
    a_next = [b.local(f32) for _ in a_at]
    b_next = [b.local(vec) for _ in b_at]

    def prefetch(k0: Any) -> None:
        """Registers of the k tile at `k0` (zero outside the matrices)."""
        for reg, (r, c) in zip(a_next, a_at, strict=True):
            b.set(reg, 0.0)
            with b.if_(b.and_(row0 + r < m, k0 + c < k)):
                b.set(reg, lhs[lo + (row0 + r) * sa[0] + (k0 + c) * sa[1]])
        for reg, (r, c) in zip(b_next, b_at, strict=True):
            b.set(reg, 0.0)
            with b.if_(b.and_(k0 + r < k, col0 + c < n)):
                b.set(reg, rhs[ro + (k0 + r) * sb + col0 + c])

    acc = [[b.local(vec, 0.0) for _ in range(tile.rn)] for _ in range(tile.rm)]
    a, w = [b.local(f32) for _ in range(tile.rm)], [b.local(vec) for _ in range(tile.rn)]
    prefetch(b.const(0, u32))
    with b.for_range(0, k, tile.bk) as k0:
        for reg, (r, c) in zip(a_next, a_at, strict=True):
            a_tile[c * tile.a_stride + r] = reg
        for reg, (r, c) in zip(b_next, b_at, strict=True):
            b_tile[r * lines + c] = reg
        b.sync_units()
        prefetch(k0 + tile.bk)
        for kk in range(tile.bk):
            for i in range(tile.rm):
                b.set(a[i], a_tile[kk * tile.a_stride + ty + i * tile.units_y])
            for j in range(tile.rn):
                b.set(w[j], b_tile[kk * lines + tx + j * tile.units_x])
            for i in range(tile.rm):
                for j in range(tile.rn):
                    b.set(acc[i][j], acc[i][j] + a[i] * w[j])
        b.sync_units()
    _store_tile(b, out, acc, tile, z, (row0, col0), (m, n))
    return b.kernel()
