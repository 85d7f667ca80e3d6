"""Strided copies of the cube backends: one view into another of the same shape.

The two layouts are first simplified together (size-1 dimensions dropped, neighbours that are
contiguous in both views merged), then the copy runs as one of five kernels (`kernels.py`):
rank 1 by element; where the destination is unit-strided along its last dimension and the
source along another (a transpose), tiles of `TILE_ROWS` x `TILE` on the cpu runtime and
shared-memory tiles on GPUs (`copy_transpose_kernel`: the cpu's tiles write 16-element runs
per unit, uncoalesced there: 60 us for a [32, 512, 256] transpose on an H200); on the cpu
runtime, rows of `ROW_MIN` to `ROW_CUBE` elements unit-strided in both views a unit each
(`copy_runs_kernel`: a cube per row left most of its units idle; attention heads merged back
into [b, s, h * d] took 49 us instead of 19); rows (the last dimension along ``x``, one cube
row per row, rows past 65535 along z; unit- or 0-strided rows run in the C target's
vectorized loop) where the last dimension has at least `ROW_MIN` elements on the cpu runtime,
on GPUs only past the element-wise kernel's grid; the element-wise kernel with a full unravel
otherwise, on GPUs `GPU_RUN` positions a unit (a cube per row cost more than an unravel per
element there: attention heads [32, 8, 256, 64] merged back took 38-125 us by rows against
28 us element-wise, 10 us at 4 positions a unit, on an H200).
Each layout's launch is planned once and kept in `CubeBackend.plans` (`planned`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .elementwise import GPU_RUN
from .kernels import (
    ROW_CUBE,
    TILE,
    TILE_ROWS,
    TRANSPOSE_ROWS,
    TRANSPOSE_SIDE,
    copy_kernel,
    copy_rows_kernel,
    copy_runs_kernel,
    copy_tiles_kernel,
    copy_transpose_kernel,
)
from .tensor import CubeTensor, Shape, layout_key

#: Most cubes along y and z of a launch (the limit of WebGPU and CUDA).
MAX_CUBES = 65535
#: Shortest last dimension copied by rows (shorter rows leave most of a cube idle).
ROW_MIN = 16
#: Units per cube of the rank-1 and element-wise copies.
CUBE_DIM = 256


def merge_dims(shape: Shape, *strides: Shape) -> tuple[Shape, tuple[Shape, ...]]:
    """`shape` and per view its `strides`, without size-1 dimensions and with each run of
    dimensions that is contiguous in every view merged into one (the same elements in the same
    order).

    Args:
        shape: the common shape (no zero size).
        *strides: each view's element strides.
    Returns:
        The merged shape and the views' merged strides (rank 0 for a single element).
    """
    dims = [d for d, size in enumerate(shape) if size != 1]
    out_shape: list[int] = []
    out_strides: list[list[int]] = [[] for _ in strides]
    for d in dims:
        size = shape[d]
        if out_shape and all(s[-1] == view[d] * size for s, view in zip(out_strides, strides,
                                                                      strict=True)):
            out_shape[-1] *= size
            for s, view in zip(out_strides, strides, strict=True):
                s[-1] = view[d]
            continue
        out_shape.append(size)
        for s, view in zip(out_strides, strides, strict=True):
            s.append(view[d])
    return tuple(out_shape), tuple(tuple(s) for s in out_strides)


def copy_into(backend: Any, src: CubeTensor, dst: CubeTensor) -> None:
    """Copy the elements of `src` into the view `dst` (same shape)."""
    if src.size == 0:
        return
    a, b = src.array, dst.array
    launch = backend.planned(("copy", id(src.dtype), layout_key(a), layout_key(b)),
                             lambda: _plan(backend, src, dst))
    launch((a, b))


def _plan(backend: Any, src: CubeTensor, dst: CubeTensor) -> Callable[[Any], None]:
    """The launcher of a copy from `src`'s layout into `dst`'s (it takes both arrays)."""
    shape, (s_strides, d_strides) = merge_dims(src.shape, src.strides, dst.strides)
    if not shape:  # a single element
        shape, s_strides, d_strides = (1,), (1,), (1,)
    rank = len(shape)
    count = math.prod(shape[:-1])
    unit = [d for d in range(rank - 1) if s_strides[d] == 1]
    cpu = backend.runtime_name == "cpu"
    run = GPU_RUN if not cpu and shape[-1] % GPU_RUN == 0 else 1
    dim: int | tuple[int, int]
    side = TILE if cpu else TRANSPOSE_SIDE
    if rank >= 2 and d_strides[-1] == 1 and s_strides[-1] > 1 and unit and \
            count // shape[unit[0]] <= MAX_CUBES and shape[unit[0]] <= side * MAX_CUBES:
        tiles = -(-shape[-1] // side), count // shape[unit[0]]
        if cpu:
            kernel = copy_tiles_kernel(src.dtype, rank, unit[0])
            counts, dim = (tiles[0], -(-shape[unit[0]] // TILE_ROWS), tiles[1]), TILE_ROWS
        else:
            kernel = copy_transpose_kernel(src.dtype, rank, unit[0])
            counts = (tiles[0], -(-shape[unit[0]] // side), tiles[1])
            dim = (TRANSPOSE_SIDE, TRANSPOSE_ROWS)
    elif rank >= 2 and ROW_MIN <= shape[-1] < ROW_CUBE and s_strides[-1] == d_strides[-1] == 1 \
            and cpu:
        kernel = copy_runs_kernel(src.dtype, rank)
        counts, dim = (-(-count // CUBE_DIM), 1, 1), CUBE_DIM
    elif rank >= 2 and shape[-1] >= ROW_MIN and (cpu or -(-src.size // (CUBE_DIM * run))
                                                  > backend.runtime.properties.max_cube_count[0]):
        kernel = copy_rows_kernel(src.dtype, rank)  # (GPUs: copies past the x grid limit)
        per_y = min(count, MAX_CUBES)
        counts, dim = (-(-shape[-1] // ROW_CUBE), per_y, -(-count // per_y)), ROW_CUBE
    else:
        kernel = copy_kernel(src.dtype, rank, run)
        counts, dim = (-(-src.size // (CUBE_DIM * run)), 1, 1), CUBE_DIM
    a, b = src.array, dst.array
    views = (a.view_unchecked(shape, s_strides, a.offset),
             b.view_unchecked(shape, d_strides, b.offset))
    return kernel.plan(backend.runtime, counts, dim, *views)  # type: ignore[no-any-return]
