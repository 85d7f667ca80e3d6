"""Data-movement kernels shared by the cube backend families, built with `KernelBuilder`.

Each is cached per dtype and rank: strided copies (any view into any view: contiguous copies,
cat, repeat, slice_assign; `copy.py` picks one), a fill, and a flip.
"""

from __future__ import annotations

from typing import Any

from burn.dtype import DType
from burn.ir.cube import cube_dtype, row_index

from .kernel_cache import cached_kernel

#: Units per cube of `copy_rows_kernel` (one cube row per `ROW_CUBE` columns).
ROW_CUBE = 256
#: Tiles of `copy_tiles_kernel` (a cube each): `TILE_ROWS` rows by `TILE` columns.
TILE, TILE_ROWS = 16, 256
#: `copy_transpose_kernel`'s square tile side, and the rows of units of its cube.
TRANSPOSE_SIDE, TRANSPOSE_ROWS = 32, 8


@cached_kernel
def copy_kernel(dtype: DType, rank: int, run: int = 1) -> Any:
    """`dst[i] = src[i]` for every logical position, both strided views of one shape, `run`
    consecutive positions of the last dimension a unit (its size a multiple of `run`): the
    positions unravelled once per run."""
    from burn_cube import KernelBuilder

    b = KernelBuilder("copy_strided")
    src = b.tensor("src", cube_dtype("copy", dtype), rank=rank, write=False)
    dst = b.tensor("dst", cube_dtype("copy", dtype), rank=rank, write=True)
    first = b.ABSOLUTE_POS * run
    with b.if_(first < dst.len):
        s, d = b.index_of(src, first), b.index_of(dst, first)
        if run > 1:
            s, d = b.local(s.dtype, s), b.local(d.dtype, d)
        for k in range(run):
            dst[d + k * dst.stride[rank - 1]] = src[s + k * src.stride[rank - 1]]
    return b.kernel()


@cached_kernel
def copy_rows_kernel(dtype: DType, rank: int) -> Any:
    """`dst[i] = src[i]` by rows: the row (the leading dimensions) is ``CUBE_POS_Y`` plus
    ``CUBE_POS_Z`` times ``CUBE_COUNT_Y`` (grids past 65535 rows), the column
    ``ABSOLUTE_POS_X``; indexes are affine in the column, so rows whose last dimension is
    unit (or 0) strided in both views take the C target's vectorized fast path."""
    from burn_cube import KernelBuilder

    b = KernelBuilder("copy_rows", ROW_CUBE)
    src = b.tensor("src", cube_dtype("copy", dtype), rank=rank, write=False)
    dst = b.tensor("dst", cube_dtype("copy", dtype), rank=rank, write=True)
    col, n = b.ABSOLUTE_POS_X, dst.shape[rank - 1]
    row = b.local(col.dtype, b.CUBE_POS_Y + b.CUBE_POS_Z * b.CUBE_COUNT_Y)
    with b.if_(b.and_(col < n, row < dst.len // n)):
        dst[row_index(b, dst, rank, col, row)] = src[row_index(b, src, rank, col, row)]
    return b.kernel()


@cached_kernel
def copy_transpose_kernel(dtype: DType, rank: int, dim: int) -> Any:
    """`dst[i] = src[i]` through shared memory (GPU runtimes), `src` unit-strided along `dim`
    and `dst` along the last dimension: a cube of `TRANSPOSE_SIDE` x `TRANSPOSE_ROWS` units
    reads a `TRANSPOSE_SIDE`-square tile with consecutive units on consecutive `src`
    elements, then writes it with consecutive units on consecutive `dst` elements (both
    coalesced; the tile's rows padded by one against bank conflicts). ``CUBE_POS_X`` /
    ``CUBE_POS_Y`` the tile along the last dimension / `dim`, ``CUBE_POS_Z`` the other
    dimensions flattened."""
    from burn_cube import KernelBuilder

    side, rows, last = TRANSPOSE_SIDE, TRANSPOSE_ROWS, rank - 1
    b = KernelBuilder("copy_transpose", (side, rows))
    src = b.tensor("src", cube_dtype("copy", dtype), rank=rank, write=False)
    dst = b.tensor("dst", cube_dtype("copy", dtype), rank=rank, write=True)
    tile = b.shared(cube_dtype("copy", dtype), side * (side + 1), name="tile")
    s, d = _outer_offsets(b, src, dst, dim, last, src.offset, dst.offset)
    s, d = b.local(b.UNIT_POS_X.dtype, s), b.local(b.UNIT_POS_X.dtype, d)
    first_row, first_col = b.CUBE_POS_Y * side, b.CUBE_POS_X * side
    n_rows, n_cols = dst.shape[dim], dst.shape[last]
    for j in range(0, side, rows):  # read: units along dim (src's unit stride)
        r, c = first_row + b.UNIT_POS_X, first_col + b.UNIT_POS_Y + j
        with b.if_(b.and_(r < n_rows, c < n_cols)):
            tile[(b.UNIT_POS_Y + j) * (side + 1) + b.UNIT_POS_X] = \
                src[s + r * src.stride[dim] + c * src.stride[last]]
    b.sync_units()
    for j in range(0, side, rows):  # write: units along the last dimension (dst's)
        r, c = first_row + b.UNIT_POS_Y + j, first_col + b.UNIT_POS_X
        with b.if_(b.and_(r < n_rows, c < n_cols)):
            dst[d + r * dst.stride[dim] + c * dst.stride[last]] = \
                tile[b.UNIT_POS_X * (side + 1) + b.UNIT_POS_Y + j]
    return b.kernel()


@cached_kernel
def copy_runs_kernel(dtype: DType, rank: int) -> Any:
    """`dst[i] = src[i]` by short rows, a unit each (``ABSOLUTE_POS``, over the leading
    dimensions): both views unit-strided along the last dimension, whose elements the unit
    copies in one loop (vectorized by the C target)."""
    from burn_cube import KernelBuilder

    b = KernelBuilder("copy_runs")
    src = b.tensor("src", cube_dtype("copy", dtype), rank=rank, write=False)
    dst = b.tensor("dst", cube_dtype("copy", dtype), rank=rank, write=True)
    last = rank - 1
    n = dst.shape[last]
    row = b.ABSOLUTE_POS
    with b.if_(row < dst.len // n):
        s, d, rest = src.offset, dst.offset, row  # the row's coordinates, found once for both
        for k in reversed(range(last)):
            coord = rest if k == 0 else b.local(row.dtype, rest % dst.shape[k])
            s, d = s + coord * src.stride[k], d + coord * dst.stride[k]
            if k:
                rest = b.local(row.dtype, rest // dst.shape[k])
        s, d = b.local(row.dtype, s), b.local(row.dtype, d)
        with b.for_range(0, n) as col:
            dst[d + col] = src[s + col]
    return b.kernel()


@cached_kernel
def copy_tiles_kernel(dtype: DType, rank: int, dim: int) -> Any:
    """`dst[i] = src[i]` in tiles of `TILE_ROWS` positions of dimension `dim` (a unit each,
    ``CUBE_POS_Y``) by `TILE` of the last (``CUBE_POS_X``, a loop per unit), the other
    dimensions flattened into ``CUBE_POS_Z``. A transposing copy (`src` unit-strided along
    `dim`, `dst` along the last) then touches each cache line of either side once per cube
    (consecutive units read adjacent elements, each unit writes a run) instead of one line
    per element."""
    from burn_cube import KernelBuilder

    b = KernelBuilder("copy_tiles", TILE_ROWS)
    src = b.tensor("src", cube_dtype("copy", dtype), rank=rank, write=False)
    dst = b.tensor("dst", cube_dtype("copy", dtype), rank=rank, write=True)
    last = rank - 1
    row = b.CUBE_POS_Y * TILE_ROWS + b.UNIT_POS
    with b.if_(row < dst.shape[dim]):
        s, d = _outer_offsets(b, src, dst, dim, last, src.offset + row * src.stride[dim],
                              dst.offset + row * dst.stride[dim])
        first = b.CUBE_POS_X * TILE
        with b.for_range(first, b.min(first + TILE, dst.shape[last])) as col:
            dst[d + col * dst.stride[last]] = src[s + col * src.stride[last]]
    return b.kernel()


def _outer_offsets(b: Any, src: Any, dst: Any, dim: int, last: int, s: Any, d: Any
                   ) -> tuple[Any, Any]:
    """`s` and `d` moved to the cube's place along the dimensions before `last` but `dim`,
    flattened into ``CUBE_POS_Z`` (row-major), in `src` and in `dst`."""
    rest = b.CUBE_POS_Z
    outer = [k for k in range(last) if k != dim]
    for k in reversed(outer):
        coord = rest if k == outer[0] else rest % dst.shape[k]
        s, d = s + coord * src.stride[k], d + coord * dst.stride[k]
        if k != outer[0]:
            rest = rest // dst.shape[k]
    return s, d


@cached_kernel
def fill_kernel(dtype: DType) -> Any:
    """`out[i] = value` over a rank-1 tensor."""
    from burn_cube import KernelBuilder

    b = KernelBuilder("fill")
    value = b.scalar("value", cube_dtype("full", dtype))
    out = b.tensor("out", cube_dtype("full", dtype), rank=1, write=True)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < out.len):
        out[pos] = value
    return b.kernel()


@cached_kernel
def flip_kernel(dtype: DType, axes: tuple[bool, ...]) -> Any:
    """`out` (dense) = `src` read with the dimensions marked in `axes` reversed."""
    from burn_cube import KernelBuilder, u32

    rank = len(axes)
    b = KernelBuilder("flip")
    src = b.tensor("src", cube_dtype("flip", dtype), rank=rank, write=False)
    out = b.tensor("out", cube_dtype("flip", dtype), rank=rank, write=True)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < out.len):
        rest = b.local(u32, pos)
        index = b.local(u32, src.offset)
        for dim in reversed(range(rank)):
            coord = rest % out.shape[dim]
            if axes[dim]:
                coord = out.shape[dim] - 1 - coord
            b.set(index, index + coord * src.stride[dim])
            b.set(rest, rest // out.shape[dim])
        out[pos] = src[index]
    return b.kernel()
