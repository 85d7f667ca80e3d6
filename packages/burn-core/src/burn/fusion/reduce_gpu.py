"""The reduce fuser's schedule on GPU runtimes: a group of units per row, several rows per cube
for short rows, each unit walking its row's columns ``lane, lane + group, ...`` (adjacent
units read adjacent elements) and the group combining its units' partials in shared memory.

A cube of `UNITS` units holds ``UNITS // group`` rows; `group` is a power of two chosen from
the row length (`group_for`: about `PER_UNIT` elements per unit, at most a cube). Units of a
row past the last one read row 0 and write nothing, so every unit reaches every barrier.

The partials of one level's reductions combine together, one barrier per step: float32 sums
of a group of whole planes with `plane_sum` first (then every unit adds the group's plane
totals from shared memory), the others in a shared-memory tree over the group's units
(`_take`: a NaN wins, and with an index result the first occurrence of the value or of a NaN,
as the one-unit scan of `burn.fusion.reduce`).
"""

from __future__ import annotations

from typing import Any

#: Units per cube of the GPU reduce kernel.
UNITS = 256
#: Elements per unit the row groups aim at (`group_for`).
PER_UNIT = 4


def group_for(n: int, units: int = UNITS) -> int:
    """Units per row for rows of `n` elements: the power of two nearest above
    ``n / PER_UNIT``, at most `units` (1: a unit per row)."""
    group = 1
    while group < units and group * PER_UNIT < n:
        group *= 2
    return group


def planes(props: Any, group: int) -> bool:
    """Whether a group of `group` units is whole planes of the runtime (`props`), so that
    plane sums never mix rows."""
    return bool(props.plane_size > 1 and group % props.plane_size == 0)


def combine(b: Any, partials: list[tuple[Any, Any, Any]], lane: Any, group: int, plane: bool,
            ) -> list[tuple[Any, Any]]:
    """Each row's partials combined over its group's units, as locals every unit of the row
    holds.

    Args:
        b: the kernel builder (the combine is emitted in the kernel's uniform flow).
        partials: per reduction, (kind: ``sum`` / ``max`` / ``min``, the unit's value with any
            NaN folded in, its element index or None).
        lane: the unit's position in its row's group.
        group: units per row (a power of two).
        plane: sums of float32 combine within planes first (`planes`).
    Returns:
        Per reduction, (the row's value, its index or None).
    """
    from burn_cube import bool_, f32, u32

    if group == 1:
        return [(value, index) for _, value, index in partials]
    u = b.UNIT_POS
    first = b.local(u32, u - lane)  # the group's first unit
    summed = [plane and kind == "sum" and value.dtype == f32 for kind, value, _ in partials]
    arrays: list[tuple[Any, Any]] = []
    running: list[tuple[Any, Any]] = []
    for (_, value, index), by_plane in zip(partials, summed, strict=True):
        values = b.shared(value.dtype, UNITS)
        indices = None if index is None else b.shared(u32, UNITS)
        if by_plane:
            total = b.local(value.dtype, b.plane_sum(value))
            with b.if_(b.UNIT_POS_PLANE == 0):
                values[u // b.PLANE_DIM] = total
        else:
            values[u] = value
            if indices is not None:
                indices[u] = index
        arrays.append((values, indices))
        running.append((b.local(value.dtype, value), None if index is None
                        else b.local(u32, index)))
    b.sync_units()
    tree = [t for t, by_plane in enumerate(summed) if not by_plane]
    half = group // 2
    while tree and half:
        with b.if_(lane < half):
            for t in tree:
                kind = partials[t][0]
                values, indices = arrays[t]
                value, index = running[t]
                other = values[u + half]
                if kind == "sum":
                    b.set(value, value + other)
                else:
                    at = None if indices is None else b.local(u32, indices[u + half])
                    take = b.local(bool_, _take(b, kind, value, index, other, at))
                    b.set(value, b.select(take, other, value))
                    if indices is not None:
                        b.set(index, b.select(take, at, index))
                        indices[u] = index
                values[u] = value
        b.sync_units()
        half //= 2
    out = []
    for (values, indices), by_plane, (value, _) in zip(arrays, summed, running, strict=True):
        if by_plane:  # the group's plane totals, from shared memory
            total = b.local(value.dtype, values[first // b.PLANE_DIM])
            with b.for_range(1, b.const(group, u32) // b.PLANE_DIM) as i:
                b.set(total, total + values[first // b.PLANE_DIM + i])
            out.append((total, None))
        else:
            out.append((b.local(value.dtype, values[first]),
                        None if indices is None else b.local(u32, indices[first])))
    return out


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
