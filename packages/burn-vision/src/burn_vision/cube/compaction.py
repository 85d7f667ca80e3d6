"""Compact labels and statistics of the GPU labelling (`labelling.label_gpu`), as kernels.

The labels name each component by its first pixel's raster index + 1, so a component's root is
the pixel whose label is its own index + 1. Compact labels number the roots 1..n per image in
raster order: a prefix count of roots, in groups of `GROUP` elements per unit (group totals,
scanned the same way level by level until one group spans a row, then each group rescanned
from its base); the last rescan writes each root's compact label, negated, over its own entry.
One more pass gives every pixel its root's compact label (int64) and, with statistics, adds
them up with atomics (area by `atomic_add`, bounds by `atomic_min` / `atomic_max`): a unit
walks `SEGMENT` pixels of one row, gathers each run of one label (the background apart, which
it counts once per segment) and updates that label's entries once per run, so a large
component costs an atomic per run, not per pixel.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import burn
from burn import Tensor
from burn_vision.cube.primitives import cube_count, empty, launch
from burn_vision.stats import ConnectedStats

#: units per cube
CUBE_DIM = 256
#: elements each unit of the prefix count sums (and then rescans)
GROUP = 256
#: pixels of one row each unit of the statistics pass walks (by default)
SEGMENT = 32


@cache
def _group_kernel(roots: bool, rescan: bool) -> Any:
    """One level of the prefix count over `rows` rows of `n` entries, a unit per group of
    `GROUP`: without `rescan` the group's total goes to `sums`; with it the group is rescanned
    from its base in `sums`. `roots`: the entries are root flags of labels `x` (the rescan
    writes -(compact label) over each root), else counts `x` (rescanned to exclusive sums in
    place)."""
    from burn_cube import KernelBuilder, i32

    b = KernelBuilder(f"cc_group_{'roots' if roots else 'sums'}_{'rescan' if rescan else 'total'}",
                      cube_dim=CUBE_DIM)
    x = b.tensor("x", i32, rank=1, write=rescan)
    sums = b.tensor("sums", i32, rank=1, write=not rescan)
    n, groups = b.scalar("n", i32), b.scalar("groups", i32)
    unit = b.cast(b.ABSOLUTE_POS, i32)
    with b.if_(unit < b.cast(sums.len, i32)):
        row, group = b.local(i32, unit // groups), b.local(i32, unit % groups)
        start = b.local(i32, group * GROUP)
        stop = b.local(i32, b.min(start + GROUP, n))
        run = b.local(i32, sums[unit] if rescan else 0)
        with b.for_range(start, stop) as i:
            at = b.local(i32, row * n + i)
            value = b.local(i32, b.select(x[at] == i + 1, 1, 0) if roots else x[at])
            b.set(run, run + value)
            if rescan and roots:
                with b.if_(value > 0):
                    x[at] = -run
            elif rescan:
                x[at] = run - value
        if not rescan:
            sums[unit] = run
    return b.kernel()


def _count(x: Tensor, rows: int, n: int, roots: bool) -> Tensor:
    """Prefix-count `rows` rows of `n` entries of flat int32 `x` (see `_group_kernel`) and
    return each row's total (int32 [rows])."""
    groups = -(-n // GROUP)
    sums = empty(x, (rows * groups,), burn.int32)
    cubes = (cube_count(rows * groups, CUBE_DIM),)
    launch(x, _group_kernel(roots, False), cubes, CUBE_DIM, x, sums, n, groups)
    if groups == 1:  # one group a row: its total is the row's, its base 0
        totals, bases = sums, burn.zeros((rows,), dtype=burn.int32, device=x.device)
    else:
        totals, bases = _count(sums, rows, groups, False), sums  # sums rescanned to bases
    launch(x, _group_kernel(roots, True), cubes, CUBE_DIM, x, bases, n, groups)
    return totals


def _compact_label(b: Any, lab: Any, at: Any, image_base: Any) -> Any:
    """The compact label of pixel `at` (0 on the background) once roots hold their negated
    compact labels: a root's own entry, else its root's."""
    from burn_cube import i32

    v = b.local(i32, lab[at])
    c = b.local(i32, 0)
    with b.if_(v < 0):
        b.set(c, -v)
    with b.if_(v > 0):
        b.set(c, -lab[image_base + v - 1])
    return c


@cache
def _relabel_kernel() -> Any:
    """Every pixel's compact label as int64, a unit per pixel."""
    from burn_cube import KernelBuilder, i32, i64

    b = KernelBuilder("cc_relabel_gpu", cube_dim=CUBE_DIM)
    lab = b.tensor("lab", i32, rank=1, write=False)
    out = b.tensor("out", i64, rank=1, write=True)
    hw = b.scalar("hw", i32)
    pos = b.cast(b.ABSOLUTE_POS, i32)
    with b.if_(pos < b.cast(lab.len, i32)):
        out[pos] = b.cast(_compact_label(b, lab, pos, pos - pos % hw), i64)
    return b.kernel()


@cache
def _stats_kernel(segment: int) -> Any:
    """Compact int64 labels and the statistics tables (int32 [B, slots] each: area, left,
    top, right, bottom; set up as 0, w, h, -1, -1), a unit per `segment` pixels of a row."""
    from burn_cube import KernelBuilder, i32, i64

    b = KernelBuilder(f"cc_stats_gpu{segment}", cube_dim=CUBE_DIM)
    lab = b.tensor("lab", i32, rank=1, write=False)
    out = b.tensor("out", i64, rank=1, write=True)
    tables = [b.tensor(name, i32, rank=1, write=True)
              for name in ("area", "left", "top", "right", "bottom")]
    area, left, top, right, bottom = tables
    h, w, slots = b.scalar("h", i32), b.scalar("w", i32), b.scalar("slots", i32)
    segments = b.scalar("segments", i32)
    unit = b.cast(b.ABSOLUTE_POS, i32)
    with b.if_(unit < b.scalar("units", i32)):
        row = b.local(i32, unit // segments)  # image k's row y: k * h + y
        k, y = b.local(i32, row // h), b.local(i32, row % h)
        image_base, row_base = b.local(i32, k * h * w), b.local(i32, row * w)
        table_base = b.local(i32, k * slots)
        start = b.local(i32, unit % segments * segment)
        # the run being gathered (label, pixels, first and last x), and the background's
        cur, cnt, lo, hi = (b.local(i32, 0) for _ in range(4))
        bg_cnt, bg_lo, bg_hi = (b.local(i32, 0) for _ in range(3))

        def flush(label: Any, pixels: Any, first: Any, last: Any) -> None:
            with b.if_(pixels > 0):
                at = b.local(i32, table_base + label)
                b.atomic_add(area, at, pixels)
                # read first: most runs do not move a bound, and a read costs no atomic
                for table, value, lower in ((left, first, True), (right, last, False),
                                            (top, y, True), (bottom, y, False)):
                    with b.if_(value < table[at] if lower else value > table[at]):
                        (b.atomic_min if lower else b.atomic_max)(table, at, value)

        with b.for_range(start, b.min(start + segment, w)) as x:
            c = _compact_label(b, lab, row_base + x, image_base)
            out[row_base + x] = b.cast(c, i64)
            with b.if_(c == 0):
                with b.if_(bg_cnt == 0):
                    b.set(bg_lo, x)
                b.set(bg_cnt, bg_cnt + 1)
                b.set(bg_hi, x)
            with b.if_(c > 0):
                with b.if_(c != cur):
                    flush(cur, cnt, lo, hi)
                    b.set(cur, c)
                    b.set(cnt, 0)
                    b.set(lo, x)
                b.set(cnt, cnt + 1)
                b.set(hi, x)
        flush(cur, cnt, lo, hi)
        flush(0, bg_cnt, bg_lo, bg_hi)
    return b.kernel()


def compact(lab: Tensor, shape: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    """Compact int64 labels [B, H, W] (`shape`) of the GPU labelling's flat int32 labels
    `lab` (overwritten at the roots), and the number of components per image (int32 [B])."""
    bsz, h, w = shape
    counts = _count(lab, bsz, h * w, True)
    out = empty(lab, (bsz * h * w,), burn.int64)
    launch(lab, _relabel_kernel(), (cube_count(lab.numel(), CUBE_DIM),), CUBE_DIM, lab, out,
           h * w)
    return out.reshape(bsz, h, w), counts


def compact_with_stats(lab: Tensor, shape: tuple[int, ...], segment: int = SEGMENT
                       ) -> tuple[Tensor, ConnectedStats]:
    """Compact int64 labels [B, H, W] of the GPU labelling's flat int32 labels `lab`
    (overwritten at the roots) and their statistics, [B, L + 1] int64 tables; a unit of the
    statistics pass walks `segment` pixels of a row."""
    bsz, h, w = shape
    counts = _count(lab, bsz, h * w, True)
    slots = int(counts.max().item()) + 1
    out = empty(lab, (bsz * h * w,), burn.int64)
    tables = [burn.full((bsz * slots,), init, dtype=burn.int32, device=lab.device)
              for init in (0, w, h, -1, -1)]
    segments = -(-w // segment)
    units = bsz * h * segments
    launch(lab, _stats_kernel(segment), (cube_count(units, CUBE_DIM),), CUBE_DIM, lab, out, *tables,
           h, w, slots, segments, units)
    area = tables[0].reshape(bsz, slots).cast(burn.int64)
    present = area > 0  # labels past an image's count, and an all-foreground background
    left, top, right, bottom = (burn.where(present, t.reshape(bsz, slots).cast(burn.int64), 0)
                                for t in tables[1:])
    return out.reshape(bsz, h, w), ConnectedStats(area, left, top, right, bottom,
                                                  counts.cast(burn.int64))
