"""Softmax / log-softmax on GPU runtimes for rows that fit in registers: one cube per row,
each unit holding `chunks` elements of it in locals, so the row is read once and written once
(the three-pass kernel of `reduction_kernels` reads it twice and writes it twice).

Unit `u` holds elements `u + i * units` (i < chunks: adjacent units read adjacent elements).
The row's max and sum of exponentials combine within planes first (where the runtime has
planes), then across the cube through shared memory; every unit reads the cube's result.
On cuda, rows of up to `PLANE_ROW` elements go a warp each instead (`plane_plan`: lane `u`
holds elements `u + 32 i`), combined by warp shuffles alone, `units / 32` rows a cube.
Values accumulate in the `acc` dtype (float32 for float16 / bfloat16).
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from burn.dtype import DType
from burn.ir.cube import cube_dtype

from . import rows_gpu
from .kernel_cache import cached_kernel
from .tensor import CubeTensor

#: (units per cube, largest chunks per unit): rows up to 256 * 32 = 8192 elements run on 256
#: units, longer ones up to 1024 * 32 on 1024 units.
SHAPES = ((256, 32), (1024, 32))
#: Rows shorter than this stay on the three-pass kernel (its one-unit-per-row schedule).
MIN_LENGTH = 128
#: cuda's plane (warp) size, and the longest rows a plane holds on cuda (a cube per row of
#: 256 spent more on its shared-memory combine and barriers than on the row: 83 us against
#: torch's 36 for softmax over [32, 8, 256, 256] on an H200).
CUDA_PLANE, PLANE_ROW = 32, 1024


def plan(backend: Any, rows: int, n: int) -> tuple[int, int] | None:
    """(units, chunks) of the row kernel for `rows` rows of `n` elements on `backend`, chunks
    a power of two; None on the cpu runtime, for short rows, rows past the largest shape and
    more rows than the grid's x limit."""
    props = backend.runtime.properties
    if backend.runtime_name == "cpu" or n < MIN_LENGTH or rows > props.max_cube_count[0]:
        return None
    for units, most in SHAPES:
        if units <= props.max_cube_dim and n <= units * most:
            return units, _chunks(units, n)
    return None


def plane_plan(backend: Any, rows: int, n: int) -> int | None:
    """The chunks of the row kernel by planes (a row per cuda warp, `SHAPES`' first units
    a cube) for `rows` rows of `n` elements, or None where it does not serve them."""
    props = backend.runtime.properties
    if backend.runtime_name != "cuda" or props.plane_size != CUDA_PLANE or \
            not MIN_LENGTH <= n <= PLANE_ROW or \
            -(-rows // (SHAPES[0][0] // CUDA_PLANE)) > props.max_cube_count[0]:
        return None
    return _chunks(CUDA_PLANE, n)


def _chunks(width: int, n: int) -> int:
    """The least power of two `c` with ``width * c >= n``."""
    chunks = 1
    while width * chunks < n:
        chunks *= 2
    return chunks


def _combine(b: Any, op: str, value: Any, units: int, plane: bool) -> Any:
    """`value` combined (``max`` or ``sum``) over the cube's units, as a local every unit
    holds: within each plane first where `plane`, then across the cube in shared memory."""
    from burn_cube import u32

    merge = b.max if op == "max" else (lambda p, q: p + q)
    u = b.UNIT_POS
    partial = b.shared(value.dtype, units)
    if plane:
        value = b.local(value.dtype, b.plane_max(value) if op == "max" else b.plane_sum(value))
        with b.if_(b.UNIT_POS_PLANE == 0):
            partial[u // b.PLANE_DIM] = value
        b.sync_units()
        total = b.local(value.dtype, partial[0])
        with b.for_range(1, units // b.PLANE_DIM) as i:
            b.set(total, merge(total, partial[i]))
        return total
    partial[u] = value
    b.sync_units()
    half = units // 2
    while half:
        with b.if_(u < half):
            partial[u] = merge(partial[u], partial[u + b.const(half, u32)])
        b.sync_units()
        half //= 2
    return b.local(value.dtype, partial[0])


@cached_kernel
def row_kernel(dtypes: tuple[Any, Any], rank: int, units: int, chunks: int, plane: bool,
               log: bool, exact: bool, by_planes: bool = False) -> Any:
    """Softmax (log-softmax) of a row per cube, or per plane, ``exp(x - max) * (1 / sum)``
    (``x - max - log(sum)``).

    Args:
        dtypes: burn-cube dtypes (input and output, accumulator).
        rank: the rank of the row views of `x` and `out`.
        units: units per cube.
        chunks: elements each unit holds (``units * chunks >= n``; by planes,
            ``CUDA_PLANE * chunks >= n``).
        plane: combine within planes first.
        log: log-softmax.
        exact: rows are exactly that long (no element is masked).
        by_planes: a row per plane (cuda's 32 lanes), combined by plane operations only.

    Returns:
        A kernel taking ``x, n, step, out, out_step``, as `reduction_kernels.softmax_kernel`:
        `x` and `out` are views of the rows' shape (the dim of size 1), a row's elements
        `step` / `out_step` apart; one cube per row (by planes: ``units / 32`` rows a cube).
    """
    from burn_cube import KernelBuilder, bool_, u32

    dtype, acc = dtypes
    b = KernelBuilder("log_softmax_rows" if log else "softmax_rows", cube_dim=units)
    x = b.tensor("x", dtype, rank=rank, write=False)
    n, step = b.scalar("n", u32), b.scalar("step", u32)
    out = b.tensor("out", dtype, rank=rank, write=True)
    out_step = b.scalar("out_step", u32)
    if by_planes:
        width = CUDA_PLANE
        r = b.local(u32, b.CUBE_POS * (units // width) + b.UNIT_POS // width)
        u = b.UNIT_POS_PLANE
    else:
        width, r, u = units, b.CUBE_POS, b.UNIT_POS
    with nullcontext() if not by_planes else b.if_(r < x.len):  # a whole plane either way
        start = b.local(u32, b.index_of(x, r))
        base = b.local(u32, b.index_of(out, r))
        valid = [None if exact else b.local(bool_, u + i * width < n) for i in range(chunks)]

        def masked(ok: Any, value: Any, other: Any) -> Any:
            return value if ok is None else b.select(ok, value, other)

        def combine(op: str, value: Any) -> Any:
            if not by_planes:
                return _combine(b, op, value, units, plane)
            return b.local(value.dtype, b.plane_max(value) if op == "max"
                           else b.plane_sum(value))

        values = [b.local(acc, b.cast(x[start + masked(ok, u + i * width, 0) * step], acc))
                  for i, ok in enumerate(valid)]
        peak = b.local(acc, values[0])  # element u, or element 0 (a tie) for units past n
        for v, ok in zip(values[1:], valid[1:], strict=True):
            b.set(peak, masked(ok, b.max(peak, v), peak))
        peak = combine("max", peak)
        total = b.local(acc, 0)
        for v, ok in zip(values, valid, strict=True):
            if log:
                b.set(total, total + masked(ok, b.exp(v - peak), 0))
            else:
                b.set(v, b.exp(v - peak))
                b.set(total, total + masked(ok, v, 0))
        total = combine("sum", total)
        lse = b.local(acc, b.log(total)) if log else None
        scale = None if log else b.local(acc, b.const(1, acc) / total)
        for i, (v, ok) in enumerate(zip(values, valid, strict=True)):
            with nullcontext() if ok is None else b.if_(ok):
                result = v - peak - lse if log else v * scale
                out[base + (u + i * width) * out_step] = b.cast(result, dtype)
    return b.kernel()


def softmax_rows(backend: Any, x: CubeTensor, out: CubeTensor, n: int,
                 steps: tuple[int, int], acc: DType, log: bool) -> bool:
    """Launch the row kernel when it serves rows of `n` elements here.

    Args:
        backend: the cube backend.
        x: the input's row view (the softmax dim of size 1).
        out: the output's row view.
        n: elements per row.
        steps: element strides of a row in `x` and in `out`.
        acc: accumulator dtype.
        log: log-softmax.

    Returns:
        Whether it ran (False: the caller runs the three-pass kernel); dense rows longer
        than `SHAPES` hold run `rows_gpu`'s streaming kernel.
    """
    planes = plane_plan(backend, x.size, n)
    shape = plan(backend, x.size, n) if planes is None else (SHAPES[0][0], planes)
    if shape is None:
        if rows_gpu.serves(backend, x.size, n) and rows_gpu.dense_rows(x, out, n, steps):
            rows_gpu.softmax(backend, x, out, x.size, n, log, acc)
            return True
        return False
    units, chunks = shape
    width = units if planes is None else CUDA_PLANE
    kernel = row_kernel((cube_dtype("softmax", x.dtype), cube_dtype("softmax", acc)),
                        len(x.shape), units, chunks, backend.runtime.properties.plane_size > 1,
                        log, n == width * chunks, planes is not None)
    backend.launch_cubes_planned(kernel, (-(-x.size // (units // width)), 1, 1), units,
                                 x.array, n, steps[0], out.array, steps[1])
    return True
