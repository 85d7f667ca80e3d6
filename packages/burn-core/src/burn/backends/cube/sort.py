"""Stable sort with indices of the cube backends, as burn-cube kernels.

Elements are ordered by (value, source index): every key is distinct, so any sorting network
is stable. NaN is the largest value (last ascending, first descending); equal values keep their
input order in both directions, as the NumPy backend's stable argsort.

Rows along `dim` (read in place through a view with `dim` moved last) are cut into blocks of
`block` elements (a power of two of `BLOCKS`; at most `CPU_MAX_BLOCK` on the cpu target): one
cube sorts a block with a bitonic network in shared memory, padded past the row's end with
elements that order last. Rows longer than one block are then merged in passes of doubling run
width (merge path: each unit writes a few outputs, starting where a binary search along its
diagonal says), through two scratch buffers; the last pass (or the block sort of a short row)
writes the values and int64 indices.
"""

from __future__ import annotations

from typing import Any

from burn.dtype import DType
from burn.ir.cube import cube_dtype, work_dtype

from .cumulative import as_rank1, line_start, lines_view
from .kernel_cache import cached_kernel
from .tensor import CubeTensor

#: Block sizes of the shared-memory sort (few, as each is its own kernel); the largest one
#: (keys + int32 positions: <= 12 KiB) sorts rows in blocks that are then merged.
BLOCKS = (32, 64, 128, 256, 512, 1024)
#: Largest block on the cpu target, where "shared memory" is an ordinary array: there the
#: bitonic network's n log^2 n compare-exchanges cost more than merge passes (~1.5x at 1000).
CPU_MAX_BLOCK = 64
#: Units per cube of the block sort.
SORT_UNITS = 256
#: Outputs each unit of a merge pass writes.
MERGE_ITEMS = 16


def _key_first(b: Any, p: Any, q: Any, descending: bool, is_float: bool) -> Any:
    """Whether value `p` sorts strictly before value `q` (NaN the largest)."""
    if descending:
        first = p > q
        if is_float:
            first = first | (b.isnan(p) & ~b.isnan(q))
    else:
        first = p < q
        if is_float:
            first = first | (~b.isnan(p) & b.isnan(q))
    return first


def before(b: Any, a: tuple[Any, Any], c: tuple[Any, Any], descending: bool, is_float: bool,
           n: Any = None) -> Any:
    """Whether element `a` = (value, index) sorts strictly before `c`: by value, then index.
    With `n`, indices >= n are padding and order after every element (by index)."""
    (ka, ia), (kc, ic) = a, c
    earlier = ia < ic
    real = _key_first(b, ka, kc, descending, is_float) | (
        ~_key_first(b, kc, ka, descending, is_float) & earlier)
    if n is None:
        return real
    pad = b.max(ia, ic) >= n
    return (pad & earlier) | (~pad & real)


def _write(b: Any, final: bool, dst: tuple[Any, Any], at: tuple[Any, Any],
           value: Any) -> None:
    """Store (key, index) `value` at `at`: (storage index into the lines views out / idx)
    when `final`, else (scratch index) into the key / position scratch buffers."""
    from burn_cube import i64

    (keys, pos), (key, index) = dst, value
    keys[at[0]] = b.cast(key, keys.dtype)
    pos[at[1]] = b.cast(index, i64) if final else index


@cached_kernel
def block_sort_kernel(dtype: DType, descending: bool, rank: int, block: int,
                      final: bool) -> Any:
    """Bitonic sort of `block`-element blocks of rows in shared memory, one cube per block.

    Args:
        dtype: the element dtype; descending: the order.
        rank: rank of the lines views.
        block: elements per block (a power of two, >= 2; one of `BLOCKS`).
        final: write values / int64 indices into lines views (rows of one block), else keys /
            int32 positions into dense (rows, n) scratch.
    Returns:
        A kernel (x, out, idx | keys, pos, blocks_per_row), `block // 2` units per cube at most
        `SORT_UNITS`, one cube per block.
    """
    from burn_cube import KernelBuilder, i32, i64, u32

    comp = cube_dtype("sort", work_dtype(dtype))
    units = min(block // 2, SORT_UNITS)
    b = KernelBuilder("sort_block", cube_dim=units)
    x = b.tensor("x", cube_dtype("sort", dtype), rank=rank, write=False)
    if final:
        dst = (b.tensor("out", cube_dtype("sort", dtype), rank=rank, write=True),
               b.tensor("idx", i64, rank=rank, write=True))
    else:
        dst = (b.tensor("keys", comp, rank=1, write=True), b.tensor("pos", i32, rank=1,
                                                                    write=True))
    per_row = b.scalar("blocks_per_row", u32)
    keys, pos = b.shared(comp, block, name="keys_s"), b.shared(i32, block, name="pos_s")
    unit = b.UNIT_POS
    n = x.shape[-1]
    n_i32 = b.local(i32, b.cast(n, i32))
    row = b.local(u32, b.CUBE_POS // per_row)
    first = b.local(u32, (b.CUBE_POS % per_row) * block)
    src = line_start(b, x, row, n)
    out_start = line_start(b, dst[0], row, n) if final else b.local(u32, row * n)
    for part in range(block // units):
        local = unit + part * units
        pos[local] = b.cast(first + local, i32)
        with b.if_(first + local < n):
            keys[local] = b.cast(x[src + (first + local) * x.stride[-1]], comp)
    b.sync_units()
    is_float = dtype.is_float
    # one set of locals for every compare-exchange (the cpu target keeps one per unit)
    i = b.local(u32)
    a, c = (b.local(comp), b.local(i32)), (b.local(comp), b.local(i32))
    size = 2
    while size <= block:
        step = size // 2
        while step:
            for part in range(block // 2 // units):
                pair = unit + part * units
                b.set(i, (pair // step) * (2 * step) + pair % step)
                for (key, index), at in ((a, i), (c, i + step)):
                    b.set(key, keys[at])
                    b.set(index, pos[at])
                swap = b.select((i & size) == 0, before(b, c, a, descending, is_float, n_i32),
                                before(b, a, c, descending, is_float, n_i32))
                with b.if_(swap):
                    keys[i], pos[i] = c
                    keys[i + step], pos[i + step] = a
            b.sync_units()
            step //= 2
        size *= 2
    for part in range(block // units):
        local = unit + part * units
        with b.if_(first + local < n):
            spot = first + local
            where = (out_start + spot * dst[0].stride[-1],
                     out_start + spot * dst[1].stride[-1]) if final else (out_start + spot,) * 2
            _write(b, final, dst, where, (keys[local], pos[local]))
    return b.kernel()


@cached_kernel
def merge_kernel(dtype: DType, descending: bool, rank: int, final: bool) -> Any:
    """One merge pass: sorted runs of `width` (pairs of neighbours) into runs of 2 `width`, by
    merge path: each unit finds where its `MERGE_ITEMS` outputs start in the two runs (a
    binary search along its diagonal), then merges them sequentially.

    Args:
        dtype: the element dtype; descending: the order.
        rank: rank of the lines views (final pass).
        final: write values / int64 indices into lines views, else into scratch.
    Returns:
        A kernel (keys, pos, out, idx | keys2, pos2, units, n, width) over dense (rows, n)
        scratch; `width` is a multiple of `MERGE_ITEMS`.
    """
    from burn_cube import KernelBuilder, bool_, i32, i64, u32

    comp = cube_dtype("sort", work_dtype(dtype))
    b = KernelBuilder("sort_merge")
    keys, pos = b.tensor("keys", comp, rank=1, write=False), b.tensor("pos", i32, rank=1,
                                                                      write=False)
    if final:
        dst = (b.tensor("out", cube_dtype("sort", dtype), rank=rank, write=True),
               b.tensor("idx", i64, rank=rank, write=True))
    else:
        dst = (b.tensor("keys2", comp, rank=1, write=True), b.tensor("pos2", i32, rank=1,
                                                                     write=True))
    units, n, width = b.scalar("units", u32), b.scalar("n", u32), b.scalar("width", u32)
    is_float = dtype.is_float
    u = b.ABSOLUTE_POS
    with b.if_(u < units):
        per_row = b.local(u32, (n + (MERGE_ITEMS - 1)) // MERGE_ITEMS)
        row, first = b.local(u32, u // per_row), b.local(u32, (u % per_row) * MERGE_ITEMS)
        base = b.local(u32, row * n)  # the row in the scratch
        a0 = b.local(u32, (first // (2 * width)) * (2 * width))  # the runs, row-relative
        la = b.local(u32, b.min(width, n - a0))
        b0 = b.local(u32, a0 + la)
        lb = b.local(u32, b.min(width, n - b0))
        d = b.local(u32, first - a0)
        lo = b.local(u32, b.select(d > lb, d - lb, 0))
        hi = b.local(u32, b.min(d, la))
        with b.while_(lo < hi):
            mid = b.local(u32, (lo + hi) // 2)
            m, o = base + a0 + mid, base + b0 + d - 1 - mid
            with b.if_(before(b, (keys[m], pos[m]), (keys[o], pos[o]), descending, is_float)):
                b.set(lo, mid + 1)
            with b.else_():
                b.set(hi, mid)
        ia, jb = b.local(u32, lo), b.local(u32, d - lo)
        ka, pa, kb, pb = b.local(comp), b.local(i32), b.local(comp), b.local(i32)
        take = b.local(bool_)
        start = line_start(b, dst[0], row, n) if final else base
        with b.for_range(first, b.min(first + MERGE_ITEMS, n)) as p:
            ma = base + b.min(a0 + ia, n - 1)  # clamped: reads stay in the row
            mb = base + b.min(b0 + jb, n - 1)
            b.set(ka, keys[ma])
            b.set(pa, pos[ma])
            b.set(kb, keys[mb])
            b.set(pb, pos[mb])
            b.set(take, (ia < la) & ((jb >= lb) | before(b, (ka, pa), (kb, pb), descending,
                                                          is_float)))
            where = (start + p * dst[0].stride[-1], start + p * dst[1].stride[-1]) if final \
                else (start + p,) * 2
            _write(b, final, dst, where, (b.select(take, ka, kb), b.select(take, pa, pb)))
            b.set(ia, ia + b.cast(take, u32))
            b.set(jb, jb + b.cast(~take, u32))
    return b.kernel()


def sort_with_indices(backend: Any, x: CubeTensor, dim: int,
                      descending: bool) -> tuple[CubeTensor, CubeTensor]:
    """Stable sort of `x` along `dim`: dense values and their int64 source indices.

    Args:
        backend: the cube backend.
        x: the input (any strides).
        dim: the dimension (negative counts from the end).
        descending: largest first (NaN first); equal values keep their order.
    """
    shape = x.shape
    src = as_rank1(x)
    dim = dim % len(src.shape)
    out = backend.empty(src.shape, x.dtype)
    idx = backend.empty(src.shape, DType.int64)
    n = src.shape[dim]
    if src.size:
        views = [lines_view(t, dim) for t in (src, out, idx)]
        _launch_sort(backend, views, descending, src.size // n, n)
    if not shape:
        return out.view((), ()), idx.view((), ())
    return out, idx


def _launch_sort(backend: Any, views: list[CubeTensor], descending: bool, rows: int,
                 n: int) -> None:
    """Sort `rows` rows of `n` elements of lines views (x, out, idx)."""
    x, out, idx = views
    rank = len(x.shape)
    cap = CPU_MAX_BLOCK if backend.runtime.properties.target == "c" else BLOCKS[-1]
    block = next((size for size in BLOCKS if size >= n or size == cap), cap)
    per_row = -(-n // block)
    final = per_row == 1
    scratch = [] if final else [
        (backend.empty((rows * n,), work_dtype(x.dtype)), backend.empty((rows * n,),
                                                                           DType.int32))
        for _ in range(2)]
    first = (out.array, idx.array) if final else (scratch[0][0].array, scratch[0][1].array)
    kernel = block_sort_kernel(x.dtype, descending, rank, block, final)
    kernel.launch(backend.runtime, (rows * per_row, 1, 1), min(block // 2, SORT_UNITS),
                  x.array, *first, per_row)
    width, current = block, 0
    while width < n:
        last = 2 * width >= n
        target = (out.array, idx.array) if last else tuple(
            t.array for t in scratch[1 - current])
        units = rows * -(-n // MERGE_ITEMS)
        backend.launch(merge_kernel(x.dtype, descending, rank, last), units,
                       *(t.array for t in scratch[current]), *target, units, n, width)
        width, current = 2 * width, 1 - current


class CubeSortOps:
    """sort_with_indices of float and int tensors (sort, argsort and topk build on it)."""

    def float_sort_with_indices(self: Any, x: CubeTensor, dim: int,
                                descending: bool) -> tuple[CubeTensor, CubeTensor]:
        """Stable sort along `dim` with int64 indices; NaN sorts as the largest value."""
        return sort_with_indices(self, x, dim, descending)

    int_sort_with_indices = float_sort_with_indices
