"""Kernels of the cube convolutions: im2col, col2im (a gather, no atomics) and a converting copy.

Columns are `[N, C*K, L]` (row = channel and kernel tap, K = prod(kernel), L = prod(out)),
written and read through their strides: dense for unfold4d, batch-inner (`[C*K, N*L]`
matrices) for the convolutions, or batch-last (`[C*K, L*N]`) on the cpu for short output rows.
The kernels give each unit a `chunk` of the last dim: one unit per row on the cpu (divisions
amortised over a row), one per element on GPUs (coalesced). Geometry (kernel, stride, padding,
dilation, window counts) is runtime scalars, so kernels are compiled once per dtypes and rank.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from functools import reduce
from typing import Any

from burn.dtype import DType
from burn.ir.cube import cube_dtype

from ..kernel_cache import cached_kernel

#: Per spatial dim scalar parameters of the geometry, in launch order.
GEOMETRY = ("k", "s", "p", "d", "o")


def declare_geometry(b: Any, nd: int) -> list[dict[str, Any]]:
    """Declares the u32 scalars `k, s, p, d, o` of every spatial dim (then `chunk`, `chunks`
    follow)."""
    from burn_cube import u32

    return [{name: b.scalar(f"{name}{dim}", u32) for name in GEOMETRY} for dim in range(nd)]


def split_index(b: Any, rest: Any, sizes: Sequence[Any]) -> list[Any]:
    """Row-major coordinates of `rest` over `sizes` (the first coordinate is not reduced)."""
    from burn_cube import u32

    rest = b.local(u32, rest)
    coords: list[Any] = [None] * len(sizes)
    for i in reversed(range(1, len(sizes))):
        coords[i] = b.local(u32, rest % sizes[i])
        b.set(rest, rest // sizes[i])
    coords[0] = rest
    return coords


def linear_index(coords: Sequence[Any], sizes: Sequence[Any]) -> Any:
    """Row-major linear index of `coords` over `sizes`."""
    index = coords[0]
    for coord, size in zip(coords[1:], sizes[1:], strict=True):
        index = index * size + coord
    return index


@cached_kernel
def im2col_kernel(src: DType, dst: DType, nd: int, ones: bool = False) -> Any:
    """`cols[n, r + (r / group_rows) * skip, l] = x[n, c, o*s + k*d - p]` with r = c*K + k
    (zero outside x), converted to `dst`: `skip` rows are left after each group's rows; with
    `ones`, N*G*L more units, one per element, fill the G rows of cols beyond C*K with ones,
    one after each group's rows (`skip` 1; the rows that carry a bias through a product).

    The last dim's in-image window range is worked out once per unit, so its loops carry no
    per-element test. Launch args: x (any strides, rank nd+2), cols (`[N, rows, L]`, any
    strides), `group_rows`, `skip`, per dim `k s p d o`, then `chunk` (last-dim elements per
    unit) and `chunks` (units per row).
    """
    from burn_cube import KernelBuilder, u32

    b = KernelBuilder("conv_im2col")
    x = b.tensor("x", cube_dtype("conv", src), rank=nd + 2, write=False)
    cols = b.tensor("cols", cube_dtype("conv", dst), rank=3, write=True)
    group_rows, skip = b.scalar("group_rows", u32), b.scalar("skip", u32)
    geo = declare_geometry(b, nd)
    chunk, chunks = b.scalar("chunk", u32), b.scalar("chunks", u32)
    kernel = [g["k"] for g in geo]
    outer = [g["o"] for g in geo[:-1]]
    pos = b.ABSOLUTE_POS
    with b.if_(pos < x.shape[0] * x.shape[1] * product(kernel) * product(outer) * chunks):
        n, c, *rest = split_index(b, pos, [x.shape[0], x.shape[1], *kernel, *outer, chunks])
        taps, outs, part = rest[:nd], rest[nd:-1], rest[-1]
        row = b.local(u32, linear_index([c, *taps], [x.shape[1], *kernel]))
        first = linear_index([*outs, 0], [*outer, geo[-1]["o"]]) if nd > 1 else 0
        target = b.local(u32, cols.offset + n * cols.stride[0]
                         + (row + row // group_rows * skip) * cols.stride[1]
                         + first * cols.stride[2])
        base = b.local(u32, x.offset + n * x.stride[0] + c * x.stride[1])
        inside = b.local(cube_dtype("conv", DType.bool), True)
        for dim in range(nd - 1):
            at = outs[dim] * geo[dim]["s"] + taps[dim] * geo[dim]["d"]
            size = x.shape[2 + dim]
            b.set(inside, inside & (at >= geo[dim]["p"]) & (at < geo[dim]["p"] + size))
            b.set(base, base + (at - geo[dim]["p"]) * x.stride[2 + dim])
        last = geo[-1]
        start = b.local(u32, part * chunk)
        stop = b.local(u32, b.min(start + chunk, last["o"]))
        reach = b.local(u32, taps[-1] * last["d"])
        lo = _windows_from(b, last["p"], reach, last["s"])
        hi = _windows_from(b, last["p"] + x.shape[nd + 1], reach, last["s"])
        b.set(lo, b.select(inside, b.min(b.max(lo, start), stop), stop))
        b.set(hi, b.min(b.max(hi, lo), stop))
        with b.for_range(start, lo) as o:
            cols[target + o * cols.stride[2]] = 0
        with b.for_range(lo, hi) as o:
            value = x[base + (o * last["s"] + reach - last["p"]) * x.stride[nd + 1]]
            cols[target + o * cols.stride[2]] = b.cast(value, cols.dtype)
        with b.for_range(hi, stop) as o:
            cols[target + o * cols.stride[2]] = 0
    if ones:  # the rows of ones: G = cols' rows beyond C*K, each after its group's rows
        windows = product([g["o"] for g in geo])
        rows = b.local(u32, x.shape[1] * product(kernel))
        groups = b.local(u32, cols.shape[1] - rows)
        main = b.local(u32, x.shape[0] * rows * product(outer) * chunks)
        with b.if_((pos >= main) & (pos - main < x.shape[0] * groups * windows)):
            n, group, window = split_index(b, pos - main, [x.shape[0], groups, windows])
            per = rows // groups
            cols[cols.offset + n * cols.stride[0] + (group * (per + 1) + per) * cols.stride[1]
                 + window * cols.stride[2]] = 1
    return b.kernel()


@cached_kernel
def im2col_rows_kernel(src: DType, dst: DType, nd: int, unit: bool, padded: bool,
                       ones: bool) -> Any:
    """`im2col_kernel` for the cpu runtime: one unit per column row (sample, channel and tap)
    writes all its windows, output row by output row; the last dim's in-image window range is
    worked out once per unit. With `unit` (x's last stride, the last window stride and the
    columns' last stride all 1) each output row's reads and writes are contiguous runs that the
    C compiler vectorises; without `padded` (no padding: every window is inside x) the rows
    are copied without range tests or zero fills. With `ones`, N more units fill each
    sample's row of ones after its `rows` (columns `[N, rows + 1, L]` of one group).

    Launch args: x (any strides, rank nd+2), cols (`[N, rows, L]`), `group_rows`, `skip`, per
    dim `k s p d o`, then `work` (L: a unit's elements, which the cpu runtime spreads its
    threads by).
    """
    from burn_cube import KernelBuilder, u32

    b = KernelBuilder("conv_im2col_rows", unit_work="work")
    x = b.tensor("x", cube_dtype("conv", src), rank=nd + 2, write=False)
    cols = b.tensor("cols", cube_dtype("conv", dst), rank=3, write=True)
    group_rows, skip = b.scalar("group_rows", u32), b.scalar("skip", u32)
    geo = declare_geometry(b, nd)
    b.scalar("work", u32)
    kernel = [g["k"] for g in geo]
    last, width = geo[-1], geo[-1]["o"]
    flag = cube_dtype("conv", DType.bool)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < x.shape[0] * x.shape[1] * product(kernel)):
        n, c, *taps = split_index(b, pos, [x.shape[0], x.shape[1], *kernel])
        row = b.local(u32, linear_index([c, *taps], [x.shape[1], *kernel]))
        target = b.local(u32, cols.offset + n * cols.stride[0]
                         + (row + row // group_rows * skip) * cols.stride[1])
        reach = b.local(u32, taps[-1] * last["d"])
        lo, hi = _window_range(b, last, reach, x.shape[nd + 1]) if padded else (0, width)
        first = b.local(u32, x.offset + n * x.stride[0] + c * x.stride[1]
                        + (lo * last["s"] + reach - last["p"]) * x.stride[nd + 1])
        step = 1 if unit else last["s"] * x.stride[nd + 1]
        put = 1 if unit else cols.stride[2]

        def fill(start: Any, stop: Any, at: Any) -> None:
            with b.for_range(start, stop) as o:
                cols[at + o * put] = 0

        def copy(at: Any, read: Any) -> None:
            with b.for_range(hi - lo) as j:
                cols[at + (lo + j) * put] = b.cast(x[read + j * step], cols.dtype)

        def level(dim: int, outs: list[Any], inside: Any, read: Any) -> None:
            if dim == nd - 1:
                at = b.local(u32, target + linear_index([*outs, 0], [h["o"] for h in geo])
                             * put)
                if not padded:
                    copy(at, read)
                    return
                with b.if_(inside):
                    fill(0, lo, at)
                    copy(at, read)
                    fill(hi, width, at)
                with b.if_(b.not_(inside)):
                    fill(0, width, at)
                return
            g = geo[dim]
            with b.for_range(g["o"]) as o:
                spot = o * g["s"] + taps[dim] * g["d"]
                ok = None if not padded else b.local(flag, inside & (spot >= g["p"])
                                                     & (spot < g["p"] + x.shape[2 + dim]))
                level(dim + 1, [*outs, o], ok,
                      b.local(u32, read + (spot - g["p"]) * x.stride[2 + dim]))

        level(0, [], b.local(flag, lo < hi) if padded else None, first)
    if ones:
        windows = b.local(u32, product([g["o"] for g in geo]))
        rows = x.shape[1] * product(kernel)
        with b.if_((pos >= x.shape[0] * rows) & (pos < x.shape[0] * (rows + 1))):
            at = b.local(u32, cols.offset + (pos - x.shape[0] * rows) * cols.stride[0]
                         + rows * cols.stride[1])
            with b.for_range(windows) as o:
                cols[at + o * cols.stride[2]] = 1
    return b.kernel()


@cached_kernel
def im2col_batch_last_kernel(dtype: DType, nd: int, unit: bool, padded: bool,
                             ones: bool) -> Any:
    """`im2col_rows_kernel` on batch-last data, for the cpu runtime: x transposed to dense
    `[C, *S, N]` into dense columns `[rows (+ 1), *O, N]` (`[rows, L*N]` matrices whose columns
    are (window, sample) pairs). One unit per column row (channel and tap) copies, per window,
    its N samples: contiguous runs, merged over a row of windows when the last window stride is
    1 (`unit`), so short window rows still copy long runs. Without `padded` every window is
    inside x. With `ones`, one more unit fills the row of ones after the `rows`.

    Launch args: x (dense `[C, *S, N]`), cols (dense, rank 1), per dim `k s p d o`, then `work`
    (a unit's elements, L*N). A cube per unit: the cpu runtime's threads share cubes.
    """
    from burn_cube import KernelBuilder, u32

    b = KernelBuilder("conv_im2col_batch_last", cube_dim=1, unit_work="work")
    x = b.tensor("x", cube_dtype("conv", dtype), rank=nd + 2, write=False)
    cols = b.tensor("cols", cube_dtype("conv", dtype), rank=1, write=True)
    geo = declare_geometry(b, nd)
    b.scalar("work", u32)
    kernel = [g["k"] for g in geo]
    last, width = geo[-1], geo[-1]["o"]
    n = x.shape[nd + 1]
    flag = cube_dtype("conv", DType.bool)
    pos = b.ABSOLUTE_POS
    rows = b.local(u32, x.shape[0] * product(kernel))
    span = b.local(u32, product([g["o"] for g in geo]) * n)
    with b.if_(pos < rows):
        c, *taps = split_index(b, pos, [x.shape[0], *kernel])
        target = b.local(u32, pos * span)
        reach = b.local(u32, taps[-1] * last["d"])
        lo, hi = _window_range(b, last, reach, x.shape[nd]) if padded else (0, width)
        first = b.local(u32, c * x.stride[0] + (lo * last["s"] + reach - last["p"])
                        * x.stride[nd])

        def fill(at: Any, start: Any, stop: Any) -> None:
            with b.for_range(start * n, stop * n) as j:
                cols[at + j] = 0

        def copy(at: Any, read: Any) -> None:
            if unit:
                with b.for_range((hi - lo) * n) as j:
                    cols[at + lo * n + j] = x[read + j]
                return
            with b.for_range(hi - lo) as o:
                start = b.local(u32, at + (lo + o) * n)
                source = b.local(u32, read + o * last["s"] * x.stride[nd])
                with b.for_range(n) as j:
                    cols[start + j] = x[source + j]

        def level(dim: int, outs: list[Any], inside: Any, read: Any) -> None:
            if dim == nd - 1:
                at = b.local(u32, target + linear_index([*outs, 0], [h["o"] for h in geo]) * n)
                if not padded:
                    copy(at, read)
                    return
                with b.if_(inside):
                    fill(at, 0, lo)
                    copy(at, read)
                    fill(at, hi, width)
                with b.if_(b.not_(inside)):
                    fill(at, 0, width)
                return
            g = geo[dim]
            with b.for_range(g["o"]) as o:
                spot = o * g["s"] + taps[dim] * g["d"]
                ok = None if not padded else b.local(flag, inside & (spot >= g["p"])
                                                     & (spot < g["p"] + x.shape[1 + dim]))
                level(dim + 1, [*outs, o], ok,
                      b.local(u32, read + (spot - g["p"]) * x.stride[1 + dim]))

        level(0, [], b.local(flag, lo < hi) if padded else None, first)
    if ones:
        with b.if_(pos == rows):
            with b.for_range(span) as j:
                cols[rows * span + j] = 1
    return b.kernel()


@cached_kernel
def col2im_batch_last_kernel(dtype: DType, nd: int, unit: bool, padded: bool) -> Any:
    """The adjoint of `im2col_batch_last_kernel`: dense columns `[C*K, *O, N]` summed into a
    dense batch-last `[C, *S, N]`. One unit per channel zeroes its `[*S, N]` block and adds
    each of its column rows into it, tap by tap, over the windows inside (runs of N samples,
    merged over a row of windows when the last window stride is 1: `unit`).

    Launch args: cols (dense, rank 1), out (dense `[C, *S, N]`), per dim `k s p d o`, then
    `work` (a unit's elements: its column rows', K*L*N). A cube per unit: the cpu runtime's
    threads share cubes.
    """
    from burn_cube import KernelBuilder, u32

    b = KernelBuilder("conv_col2im_batch_last", cube_dim=1, unit_work="work")
    cols = b.tensor("cols", cube_dtype("conv", dtype), rank=1, write=False)
    out = b.tensor("out", cube_dtype("conv", dtype), rank=nd + 2, write=True)
    geo = declare_geometry(b, nd)
    b.scalar("work", u32)
    last, width = geo[-1], geo[-1]["o"]
    n = out.shape[nd + 1]
    pos = b.ABSOLUTE_POS
    with b.if_(pos < out.shape[0]):
        block = b.local(u32, pos * out.stride[0])
        with b.for_range(out.stride[0]) as i:
            out[block + i] = 0
        span = b.local(u32, product([g["o"] for g in geo]) * n)

        def taps_level(dim: int, taps: list[Any]) -> None:
            if dim < nd:
                with b.for_range(geo[dim]["k"]) as tap:
                    taps_level(dim + 1, [*taps, tap])
                return
            row = linear_index([pos, *taps], [out.shape[0], *(g["k"] for g in geo)])
            source = b.local(u32, row * span)
            reach = b.local(u32, taps[-1] * last["d"])
            lo, hi = _window_range(b, last, reach, out.shape[nd]) if padded else (0, width)
            with b.if_(lo < hi):
                first = b.local(u32, block + (lo * last["s"] + reach - last["p"])
                                * out.stride[nd])
                windows_level(0, taps, [], first, source, lo, hi)

        def add(at: Any, read: Any, count: Any) -> None:
            with b.for_range(count) as j:
                out[at + j] = out[at + j] + cols[read + j]

        def windows_level(dim: int, taps: list[Any], outs: list[Any], target: Any,
                          source: Any, lo: Any, hi: Any) -> None:
            if dim == nd - 1:
                start = b.local(u32, source + (linear_index([*outs, 0], [g["o"] for g in geo])
                                               + lo) * n)
                if unit:
                    add(target, start, (hi - lo) * n)
                    return
                with b.for_range(hi - lo) as o:
                    add(b.local(u32, target + o * last["s"] * out.stride[nd]),
                        b.local(u32, start + o * n), n)
                return
            g = geo[dim]
            with b.for_range(g["o"]) as o:
                spot = b.local(u32, o * g["s"] + taps[dim] * g["d"])

                def inner() -> None:
                    shift = (spot - g["p"]) * out.stride[1 + dim]
                    windows_level(dim + 1, taps, [*outs, o], b.local(u32, target + shift),
                                  source, lo, hi)

                if padded:
                    with b.if_((spot >= g["p"]) & (spot < g["p"] + out.shape[1 + dim])):
                        inner()
                else:
                    inner()

        taps_level(0, [])
    return b.kernel()


def _window_range(b: Any, last: dict[str, Any], reach: Any, size: Any) -> tuple[Any, Any]:
    """u32 locals `lo, hi`: the windows of the last spatial dim whose tap, `reach` into the
    window, lies inside an input of `size` (padding `last["p"]`), clamped to [0, o].

    Args:
        b: the kernel builder.
        last: the last dim's geometry (`declare_geometry`).
        reach: the tap's offset into its window (tap * dilation).
        size: the input's extent along that dim.

    Returns:
        The first window inside and the end of that run.
    """
    from burn_cube import u32

    stride, width = last["s"], last["o"]
    lo = b.local(u32, b.min(_windows_from(b, last["p"], reach, stride), width))
    hi = b.local(u32, b.min(b.max(_windows_from(b, last["p"] + size, reach, stride), lo),
                            width))
    return lo, hi


def _windows_from(b: Any, bound: Any, reach: Any, stride: Any) -> Any:
    """A u32 local: the first window w with `w * stride + reach >= bound` (0 when reach
    passes bound)."""
    from burn_cube import u32

    return b.local(u32, b.select(bound > reach, (bound - reach + stride - 1) // stride, 0))


@cached_kernel
def col2im_kernel(work: DType, nd: int, bias: DType | None) -> Any:
    """`out[n, c, i] = bias[c] + sum of cols[n, c*K + k, w]` over the taps k and windows w with
    `w*s + k*d - p = i` per dim: the adjoint of im2col, a gather in `work` (a unit's rows are its
    own, so it adds tap by tap into them; the last dim loops over windows, no division).

    Launch args: cols (rank-3, any strides), out (dense `[N, C, *S]` of `work`), bias if any,
    per dim `k s p d o`, then `chunk` and `chunks`.
    """
    from burn_cube import KernelBuilder, u32

    b = KernelBuilder("conv_col2im")
    wt, cols, out, bias_t, geo = _col2im_args(b, work, nd, bias)
    chunk, chunks = b.scalar("chunk", u32), b.scalar("chunks", u32)
    sizes = [out.shape[d] for d in range(nd + 2)]
    pos = b.ABSOLUTE_POS
    with b.if_(pos < product(sizes[:-1]) * chunks):
        n, c, *outs, part = split_index(b, pos, [*sizes[:-1], chunks])
        start = b.local(u32, part * chunk)
        stop = b.local(u32, b.min(start + chunk, sizes[-1]))
        row = b.local(u32, linear_index([n, c, *outs], sizes[:-1]) * sizes[-1])
        init = b.local(wt, 0 if bias_t is None else b.cast(bias_t[b.index_of(bias_t, c)], wt))
        with b.for_range(start, stop) as i:
            out[row + i] = init
        _add_taps(b, cols, out, geo, outs, (start, stop, row), n, c)
    return b.kernel()


def _col2im_args(b: Any, work: DType, nd: int, bias: DType | None
                 ) -> tuple[Any, Any, Any, Any, list[dict[str, Any]]]:
    """The col2im kernels' arguments, declared in order: cols, out, bias if any, geometry.

    Returns:
        (the work dtype in burn-cube, cols, out, bias or None, per-dim geometry scalars).
    """
    wt = cube_dtype("conv", work)
    cols = b.tensor("cols", wt, rank=3, write=False)
    out = b.tensor("out", wt, rank=nd + 2, write=True)
    bias_t = None if bias is None else b.tensor("bias", cube_dtype("conv", bias), rank=1,
                                                 write=False)
    return wt, cols, out, bias_t, declare_geometry(b, nd)


@cached_kernel
def col2im_planes_kernel(work: DType, nd: int, bias: DType | None, unit: bool,
                         padded: bool) -> Any:
    """`col2im_kernel` for the cpu runtime: one unit per plane `(n, c)` of out, which it fills
    with the bias (or 0) and then adds each of its column rows into, tap by tap, over the
    windows inside the plane (the unit owns the plane: no atomics). With `unit` (last window
    stride and the columns' last stride 1) each window row adds a contiguous run the C
    compiler vectorises; without `padded` (no padding: every window is inside the plane) no
    window ranges are worked out.

    Launch args: cols (rank-3, any strides), out (dense `[N, C, *S]` of `work`), bias if any,
    per dim `k s p d o`.
    """
    from burn_cube import KernelBuilder, u32

    b = KernelBuilder("conv_col2im_planes")
    wt, cols, out, bias_t, geo = _col2im_args(b, work, nd, bias)
    sizes = [out.shape[d] for d in range(nd + 2)]
    last, width = geo[-1], geo[-1]["o"]
    pos = b.ABSOLUTE_POS
    with b.if_(pos < sizes[0] * sizes[1]):
        n, c = split_index(b, pos, sizes[:2])
        area = b.local(u32, product(sizes[2:]))
        plane = b.local(u32, pos * area)
        init = b.local(wt, 0 if bias_t is None else b.cast(bias_t[b.index_of(bias_t, c)], wt))
        with b.for_range(area) as i:
            out[plane + i] = init
        step = 1 if unit else last["s"]
        take = 1 if unit else cols.stride[2]

        def taps_level(dim: int, taps: list[Any]) -> None:
            if dim < nd:
                with b.for_range(geo[dim]["k"]) as tap:
                    taps_level(dim + 1, [*taps, tap])
                return
            row = linear_index([c, *taps], [sizes[1], *(g["k"] for g in geo)])
            source = b.local(u32, cols.offset + n * cols.stride[0] + row * cols.stride[1])
            reach = b.local(u32, taps[-1] * last["d"])
            if not padded:
                windows_level(0, taps, [], b.local(u32, plane + reach), source, 0, width)
                return
            lo, hi = _window_range(b, last, reach, sizes[-1])
            with b.if_(lo < hi):
                first = b.local(u32, plane + lo * last["s"] + reach - last["p"])
                windows_level(0, taps, [], first, source, lo, hi)

        def windows_level(dim: int, taps: list[Any], outs: list[Any], target: Any,
                          source: Any, lo: Any, hi: Any) -> None:
            if dim == nd - 1:
                start = b.local(u32, source + (linear_index([*outs, 0], [g["o"] for g in geo])
                                               + lo) * cols.stride[2])
                with b.for_range(hi - lo) as j:
                    at = target + j * step
                    out[at] = out[at] + cols[start + j * take]
                return
            g = geo[dim]
            with b.for_range(g["o"]) as o:
                spot = b.local(u32, o * g["s"] + taps[dim] * g["d"])

                def inner() -> None:
                    shift = (spot - g["p"]) * product(sizes[3 + dim:])
                    windows_level(dim + 1, taps, [*outs, o], b.local(u32, target + shift),
                                  source, lo, hi)

                if padded:
                    with b.if_((spot >= g["p"]) & (spot < g["p"] + sizes[2 + dim])):
                        inner()
                else:
                    inner()

        taps_level(0, [])
    return b.kernel()


def _add_taps(b: Any, cols: Any, out: Any, geo: list[dict[str, Any]], outs: list[Any],
              span: tuple[Any, Any, Any], n: Any, c: Any) -> None:
    """Adds into `out[row + i]`, i in [start, stop) (`span`), the columns of every tap that
    reads them: nested loops over the outer dims' taps (whole, in-range windows only), then per
    last-dim tap the windows landing in the span."""
    from burn_cube import u32

    nd = len(geo)
    start, stop, row = span
    windows: list[Any] = []

    def level(dim: int, tap_row: Any) -> None:
        g = geo[dim]
        if dim == nd - 1:
            with b.for_range(g["k"]) as tap:
                reach = b.local(u32, tap * g["d"])
                lo = _windows_from(b, start + g["p"], reach, g["s"])
                hi = _windows_from(b, stop + g["p"], reach, g["s"])
                first = linear_index([*windows, 0], [h["o"] for h in geo]) if nd > 1 else 0
                base = b.local(u32, cols.offset + n * cols.stride[0]
                               + (tap_row * g["k"] + tap) * cols.stride[1]
                               + first * cols.stride[2])
                with b.for_range(lo, b.min(hi, g["o"])) as w:
                    index = row + w * g["s"] + reach - g["p"]
                    out[index] = out[index] + cols[base + w * cols.stride[2]]
            return
        with b.for_range(g["k"]) as tap:
            at = outs[dim] + g["p"]
            reach = tap * g["d"]
            with b.if_(at >= reach):
                shifted = at - reach
                window = shifted // g["s"]
                with b.if_((shifted % g["s"] == 0) & (window < g["o"])):
                    windows.append(window)
                    level(dim + 1, tap_row * g["k"] + tap)
                    windows.pop()

    level(0, c)


@cached_kernel
def weight_bias_kernel(weight: DType, bias: DType, dst: DType) -> Any:
    """A weight matrix `[O, R]` (any strides) and its bias `[O]` as one dense `[O, R + 1]`
    matrix of `dst` (the bias its last column), one unit per element.

    Launch args: weight, bias, out (dense, rank 1).
    """
    from burn_cube import KernelBuilder, u32

    b = KernelBuilder("conv_weight_bias")
    w = b.tensor("weight", cube_dtype("conv", weight), rank=2, write=False)
    bias_t = b.tensor("bias", cube_dtype("conv", bias), rank=1, write=False)
    out = b.tensor("out", cube_dtype("conv", dst), rank=1, write=True)
    pos = b.ABSOLUTE_POS
    width = b.local(u32, w.shape[1] + 1)
    with b.if_(pos < w.shape[0] * width):
        row, col = b.local(u32, pos // width), b.local(u32, pos % width)
        with b.if_(col < w.shape[1]):
            out[pos] = b.cast(w[w.offset + row * w.stride[0] + col * w.stride[1]], out.dtype)
        with b.if_(col == w.shape[1]):
            out[pos] = b.cast(bias_t[bias_t.offset + row * bias_t.stride[0]], out.dtype)
    return b.kernel()


@cached_kernel
def weight_grad_split_kernel(src: DType, weight: DType, bias: DType) -> Any:
    """The inverse of `weight_bias_kernel` for gradients: matrices `[G, R, W + 1]` (any
    strides; the last column from the columns' rows of ones) as the dense weight gradient
    `[G*R, W]` of `weight` and the dense bias gradient `[G*R]` of `bias`, one unit per element.

    Launch args: total (rank 3), weight gradient (rank 1), bias gradient (rank 1).
    """
    from burn_cube import KernelBuilder, u32

    b = KernelBuilder("conv_weight_grad_split")
    total = b.tensor("total", cube_dtype("conv", src), rank=3, write=False)
    gw = b.tensor("grad_weight", cube_dtype("conv", weight), rank=1, write=True)
    gb = b.tensor("grad_bias", cube_dtype("conv", bias), rank=1, write=True)
    pos = b.ABSOLUTE_POS
    width = total.shape[2] - 1
    with b.if_(pos < total.shape[0] * total.shape[1] * total.shape[2]):
        group, row, col = split_index(b, pos, [total.shape[0], total.shape[1], total.shape[2]])
        value = b.local(total.dtype, total[total.offset + group * total.stride[0]
                                           + row * total.stride[1] + col * total.stride[2]])
        at = b.local(u32, group * total.shape[1] + row)
        with b.if_(col < width):
            gw[at * width + col] = b.cast(value, gw.dtype)
        with b.if_(col == width):
            gb[at] = b.cast(value, gb.dtype)
    return b.kernel()


@cached_kernel
def convert_kernel(src: DType, dst: DType, rank: int, bias: DType | None) -> Any:
    """`out = src (+ bias[channel of dim 1])` converted to `dst`: a strided view (rank >= 2)
    copied into a dense buffer, the sum in `src`'s dtype; rows of the last dim in chunks.

    Launch args: src, out (rank 1), bias if any, then `chunk` and `chunks`.
    """
    from burn_cube import KernelBuilder, u32

    b = KernelBuilder("conv_convert")
    x = b.tensor("src", cube_dtype("conv", src), rank=rank, write=False)
    out = b.tensor("out", cube_dtype("conv", dst), rank=1, write=True)
    bias_t = None if bias is None else b.tensor("bias", cube_dtype("conv", bias), rank=1,
                                                 write=False)
    chunk, chunks = b.scalar("chunk", u32), b.scalar("chunks", u32)
    sizes = [x.shape[d] for d in range(rank)]
    pos = b.ABSOLUTE_POS
    with b.if_(pos < product(sizes[:-1]) * chunks):
        *outer, part = split_index(b, pos, [*sizes[:-1], chunks])
        base = x.offset + sum((c * x.stride[d] for d, c in enumerate(outer[1:], 1)),
                              outer[0] * x.stride[0])
        row = linear_index(outer, sizes[:-1]) * sizes[-1]
        shift = None if bias_t is None else b.local(x.dtype, b.cast(
            bias_t[b.index_of(bias_t, outer[1])], x.dtype))
        start = part * chunk
        with b.for_range(start, b.min(start + chunk, sizes[-1])) as i:
            value = x[base + i * x.stride[rank - 1]]
            out[row + i] = b.cast(value if shift is None else value + shift, out.dtype)
    return b.kernel()


def product(values: Sequence[Any]) -> Any:
    """Product of kernel values (1 for none)."""
    return reduce(operator.mul, values[1:], values[0]) if values else 1
