"""The matmul fuser: a matmul and the elementwise ops of its result's shape after it (its
epilogue: a bias, an activation, a residual add).

A matmul block (`burn.fusion.stream`'s planner) starts with the matmul. Its product is
computed by the inner backend's autotuned strategy (BLAS on the cpu runtime) and the epilogue
runs as one elementwise block reading it (`elementwise.run_block`: one kernel, planned and
cached as any block); the product is written to memory only as the epilogue's input, and kept
only where a handle holds it.
"""

from __future__ import annotations

from typing import Any

from burn.fusion.elementwise import run_block
from burn.fusion.handle import Pending
from burn.fusion.stats import STATS

#: The matmuls the fuser takes.
MATMULS = ("float_matmul",)


def accepts(lhs: tuple[int, ...], rhs: tuple[int, ...]) -> bool:
    """Whether the fuser takes a matmul of these shapes: matrices or batches of them with a
    non-empty product over a non-empty inner dim (others run at once)."""
    return (len(lhs) >= 2 and len(rhs) >= 2 and 0 not in lhs and 0 not in rhs)


def run_matmul(inner: Any, block: list[Pending], values: dict[int, Any], needed: set[int],
               programs: dict[Any, Any]) -> dict[int, Any]:
    """Compute the needed results of matmul block `block` on `inner` (a cube backend).

    Args:
        inner: the backend computing.
        block: the matmul, then its epilogue's records, in stream order.
        values: inner primitives by tensor id (the block's inputs from outside it).
        needed: ids of results that must be written.
        programs: the stream's programs by block structure (the epilogue's are kept here).
    Returns:
        The written results by tensor id.
    """
    matmul, epilogue = block[0], block[1:]
    lhs, rhs = (values[a.id] for a in matmul.args)
    product = inner.float_matmul(lhs, rhs)
    STATS.kernels_launched += 1
    values[matmul.out.id] = product
    results = run_block(inner, epilogue, values, needed, programs) if epilogue else {}
    if matmul.out.id in needed:
        results[matmul.out.id] = product
    return results
