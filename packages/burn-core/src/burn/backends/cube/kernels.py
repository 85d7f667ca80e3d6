"""Data-movement kernels shared by the cube backend families, built with `KernelBuilder`.

Each is cached per dtype and rank: a strided copy (any view into any view: contiguous copies,
cat, repeat, slice_assign), a fill, and a flip.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from burn.dtype import DType
from burn.ir.cube import cube_dtype


@cache
def copy_kernel(dtype: DType, rank: int) -> Any:
    """`dst[i] = src[i]` for every logical position, both strided views of one shape."""
    from burn_cube import KernelBuilder

    b = KernelBuilder("copy_strided")
    src = b.tensor("src", cube_dtype("copy", dtype), rank=rank, write=False)
    dst = b.tensor("dst", cube_dtype("copy", dtype), rank=rank, write=True)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < dst.len):
        dst[b.index_of(dst, pos)] = src[b.index_of(src, pos)]
    return b.kernel()


@cache
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


@cache
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
