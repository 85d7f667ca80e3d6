"""Shape ops a fusion stream records (`VIEWS`) where they read a pending result: each is a
block of its own (`stream._blocks`), run in the flush by the inner backend's method (a view
of the computed result, or a copy where its layout asks for one), so a reshape, expand or
transpose of a pending result does not run the pending ops at once (it did: a reshape after
a reduction was a flush barrier). Elementwise ops after it start a block of their own: the
fusers take one shape a block."""

from __future__ import annotations

from typing import Any

from burn.fusion.handle import Cell, Pending
from burn.fusion.stats import STATS
from burn.ir import TensorIR

VIEWS = tuple(f"{kind}_{name}" for kind in ("float", "int", "bool")
              for name in ("reshape", "expand", "swap_dims", "permute"))
#: The views that copy a tensor not contiguous (the cube backends' reshape): recorded reading
#: a pending view (`Stream.reads_view`), their result is checked for room as a computed one.
RESHAPES = tuple(f"{kind}_reshape" for kind in ("float", "int", "bool"))


def run_view(inner: Any, block: list[Pending], values: dict[int, Any], needed: set[int],
             cell: Cell) -> dict[int, Any]:
    """Run a view block (one record) on `inner` where its result is needed.

    Args:
        inner: the cube backend computing.
        block: the view's record.
        values: inner primitives by tensor id (its input).
        needed: ids of results that must be written.
        cell: the block's cell (unused: nothing to plan).
    Returns:
        Its result by tensor id (none where nothing needs it).
    """
    (record,) = block
    op, args, out = record[:3]
    if out.id not in needed:
        STATS.ops_dead += 1
        return {}
    runtime = inner.runtime
    before = runtime.launches  # (a copy's kernel, where the layout asks for one)
    result = getattr(inner, op.name)(*[values[a.id] if type(a) is TensorIR else a
                                       for a in args])
    STATS.kernels_launched += runtime.launches - before
    return {out.id: result}
