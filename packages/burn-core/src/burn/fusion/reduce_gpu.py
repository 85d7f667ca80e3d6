"""The reduce fuser's schedule on GPU runtimes: a group of units per row, several rows per cube
for short rows, each unit walking its row's columns ``lane, lane + group, ...`` (adjacent
units read adjacent elements) and the group combining its units' partials in shared memory.

A cube of `UNITS` units holds ``UNITS // group`` rows; `group` is a power of two chosen from
the row length (`group_for`: about `PER_UNIT` elements per unit, at most a cube). A row's
units are adjacent, except where every input reads its row strided (a reduction along another
dim than the last): there adjacent units take adjacent rows (a row's units ``UNITS // group``
apart), whose elements usually lie side by side, so a plane's loads coalesce. Units of a
row past the last one read row 0 and write nothing, so every unit reaches every barrier.
Where a unit has at most `HELD` columns (rows up to 4096 elements) its passes are unrolled
(`chunks`) and the inputs it loads stay in registers between passes, so the row is read
once; longer rows loop over their columns and read them again each pass (from cache).

The partials of one level's reductions combine together, one barrier per step: float32 sums,
maxima and minima of a group of whole planes by plane ops first (then every unit folds the
group's plane totals from shared memory), the others (float64, those with an index result)
in a shared-memory tree over the group's units
(`_take`: a NaN wins, and with an index result the first occurrence of the value or of a NaN,
as the one-unit scan of `burn.fusion.reduce`).
"""

from __future__ import annotations

from typing import Any

#: Units per cube of the GPU reduce kernel.
UNITS = 256
#: Elements per unit the row groups aim at (`group_for`).
PER_UNIT = 4
#: Most columns per unit held in registers between passes (`chunks`): rows up to 4096 long.
HELD = 16
#: WebGPU's largest subgroup size (a group of planes on wgpu is a multiple of it).
WEB_PLANE = 128


def group_for(n: int, units: int = UNITS) -> int:
    """Units per row for rows of `n` elements: the power of two nearest above
    ``n / PER_UNIT``, at most `units` (1: a unit per row)."""
    group = 1
    while group < units and group * PER_UNIT < n:
        group *= 2
    return group


def chunks(n: int, group: int) -> int | None:
    """Columns per unit of rows of `n` elements over `group` units where they are few enough
    to unroll, each input's loads held in registers between the passes (at most `HELD`);
    None: a loop over the columns, reloading them each pass."""
    count = -(-n // group)
    return count if count <= HELD else None


def planes(props: Any, group: int) -> bool:
    """Whether a group of `group` units is whole planes of the runtime (`props`), so that
    plane ops never mix rows: CUDA's planes are its 32-unit warps; a WebGPU adapter's
    subgroups may be any size up to `WEB_PLANE` whatever size the runtime reports, so there
    groups of at least that many take planes."""
    if props.plane_size <= 1:
        return False
    return group % (props.plane_size if props.target == "cuda" else WEB_PLANE) == 0


def combine(b: Any, partials: list[tuple[Any, Any, Any]], lane: Any, group: int, spread: int,
            plane: bool) -> list[tuple[Any, Any]]:
    """Each row's partials combined over its group's units, as locals every unit of the row
    holds.

    Args:
        b: the kernel builder (the combine is emitted in the kernel's uniform flow).
        partials: per reduction, (kind: ``sum`` / ``max`` / ``min``, the unit's value with any
            NaN folded in, its element index or None).
        lane: the unit's position in its row's group.
        group: units per row (a power of two).
        spread: units between two of a row's (1: adjacent; else the cube's rows, and no
            planes).
        plane: float32 partials without an index combine within planes first (`planes`).
    Returns:
        Per reduction, (the row's value, its index or None). A sum of zeros is +0.0, as a
        sum from +0.0 is in IEEE arithmetic: compilers that assume no signed zeros (Mesa's
        llvmpipe) fold a unit's ``0 + x`` to ``x``, which keeps a -0.0.
    """
    combined = _combined(b, partials, lane, group, spread, plane)
    return [(b.local(value.dtype, b.select(value == 0.0, b.const(0.0, value.dtype), value))
             if kind == "sum" else value, index)
            for (kind, _, _), (value, index) in zip(partials, combined, strict=True)]


def _combined(b: Any, partials: list[tuple[Any, Any, Any]], lane: Any, group: int,
              spread: int, plane: bool) -> list[tuple[Any, Any]]:
    """`combine`'s values, a sum of zeros of either sign."""
    from burn_cube import bool_, f32, u32

    if group == 1 or not partials:
        return [(value, index) for _, value, index in partials]
    u = b.UNIT_POS
    first = b.local(u32, u - lane * spread)  # the group's first unit
    by_planes = [plane and value.dtype == f32 and index is None for _, value, index in partials]
    arrays: list[tuple[Any, Any]] = []
    running: dict[int, tuple[Any, Any]] = {}  # the tree's values (and indices) in registers
    for t, ((kind, value, index), by_plane) in enumerate(zip(partials, by_planes, strict=True)):
        values = b.shared(value.dtype, UNITS)
        indices = None if index is None else b.shared(u32, UNITS)
        if by_plane:
            total = _plane(b, kind, value)
            with b.if_(b.UNIT_POS_PLANE == 0):
                values[u // b.PLANE_DIM] = total
        else:
            values[u] = value
            if indices is not None:
                indices[u] = index
            running[t] = (b.local(value.dtype, value),
                          None if index is None else b.local(u32, index))
        arrays.append((values, indices))
    b.sync_units()
    half = group // 2
    while running and half:
        with b.if_(lane < half):
            for t in running:
                kind = partials[t][0]
                values, indices = arrays[t]
                value, index = running[t]
                other = values[u + half * spread]
                if kind == "sum":
                    b.set(value, value + other)
                else:
                    at = None if indices is None else b.local(u32, indices[u + half * spread])
                    take = b.local(bool_, _take(b, kind, value, index, other, at))
                    b.set(value, b.select(take, other, value))
                    if indices is not None:
                        b.set(index, b.select(take, at, index))
                        indices[u] = index
                values[u] = value
        b.sync_units()
        half //= 2
    out = []
    for (kind, value, _), (values, indices), by_plane in zip(partials, arrays, by_planes,
                                                            strict=True):
        if by_plane:  # the group's plane totals, from shared memory
            total = b.local(value.dtype, values[first // b.PLANE_DIM])
            with b.for_range(1, b.const(group, u32) // b.PLANE_DIM) as i:
                other = b.local(value.dtype, values[first // b.PLANE_DIM + i])
                b.set(total, total + other if kind == "sum" else
                      b.select(_take(b, kind, total, None, other, None), other, total))
            out.append((total, None))
        else:
            out.append((b.local(value.dtype, values[first]),
                        None if indices is None else b.local(u32, indices[first])))
    return out


def _plane(b: Any, kind: str, value: Any) -> Any:
    """`value` combined over the unit's plane: a sum, or a max / min that is NaN where a unit
    holds NaN (plane maxima of the numbers, NaN counted apart)."""
    if kind == "sum":
        return b.local(value.dtype, b.plane_sum(value))
    nan = b.local(b.isnan(value).dtype, b.isnan(value))
    sign = 1.0 if kind == "max" else -1.0  # a min is the max of the negations
    top = b.plane_max(b.select(nan, b.const(float("-inf"), value.dtype), value * sign))
    nans = b.plane_sum(b.select(nan, b.const(1.0, value.dtype), b.const(0.0, value.dtype)))
    return b.local(value.dtype, b.select(nans > 0.0, b.const(float("nan"), value.dtype),
                                         top * sign))


def _take(b: Any, kind: str, a: Any, at_a: Any, c: Any, at_c: Any) -> Any:
    """Whether (`c`, index `at_c`) replaces (`a`, `at_a`) in a max / min: it is better, or a
    NaN over a number, or (with indices) an equal value or NaN at an earlier index."""
    better = c > a if kind == "max" else c < a
    nan_c, nan_a = b.isnan(c), b.isnan(a)
    take = b.or_(better, b.and_(nan_c, b.not_(nan_a)))
    if at_c is None:
        return take
    tie = b.or_(c == a, b.and_(nan_c, nan_a))
    return b.or_(take, b.and_(tie, at_c < at_a))
