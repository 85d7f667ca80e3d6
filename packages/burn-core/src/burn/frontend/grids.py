"""Index-built tensors as Burn makes them: triangle / diagonal masks and cartesian grids."""

from __future__ import annotations

from typing import Literal

from burn.dtype import DType
from burn.errors import ShapeError
from burn.frontend.creation import DeviceLike, arange
from burn.frontend.layout import stack
from burn.frontend.tensor import Tensor
from burn.frontend.validation import check_alloc, shape_arg


def tri_mask(op: str, shape: tuple[int, ...], offset: int, part: Literal["u", "l", "d"],
             device: DeviceLike) -> Tensor:
    """Bool mask of `shape` (>= 2 dims; broadcast over the leading ones), true *outside* the
    kept part (upper / lower triangle or diagonal at `offset`), as Burn; compared on the
    device from two aranges and read as a broadcast view (no memory of the mask's size).

    Args:
        op: the op named by errors (``tril`` for `Tensor.tril`'s mask).
        shape: the mask's shape.
        offset: the diagonal (positive above the main one).
        part: the kept part: "u" upper, "l" lower, "d" the diagonal.
        device: where the mask is made.
    Returns:
        The mask.
    Raises:
        ShapeError: for fewer than 2 dims.
        AllocationError: for a mask larger than this machine's memory.
    """
    dims = shape_arg(op, shape)
    if len(dims) < 2:
        raise ShapeError(op, "need at least 2 dims", shape=dims)
    check_alloc(op, dims, DType.bool)
    # (an offset past the matrix marks what the nearest one inside does: none of its
    # diagonals, all of one side; kept within int64 for the comparison)
    offset = max(-dims[-2], min(dims[-1], offset))
    rows = arange(dims[-2], device=device).reshape(dims[-2], 1)
    cols = arange(dims[-1], device=device).reshape(1, dims[-1])
    diff = rows - (cols - offset)  # 0 on the offset diagonal, < 0 above it
    mask = diff > 0 if part == "u" else diff < 0 if part == "l" else diff != 0
    return mask.expand(dims)


def triu_mask(shape: tuple[int, ...], offset: int = 0, device: DeviceLike = None) -> Tensor:
    """Burn's triu_mask: false on the upper triangle (diagonal `offset` and above; positive
    offsets move up), true elsewhere; a mask to `mask_fill` what triu drops.

    Raises:
        ShapeError: for fewer than 2 dims.
    """
    return tri_mask("triu_mask", shape, offset, "u", device)


def tril_mask(shape: tuple[int, ...], offset: int = 0, device: DeviceLike = None) -> Tensor:
    """Burn's tril_mask: false on the lower triangle (diagonal `offset` and below), true
    elsewhere.

    Raises:
        ShapeError: for fewer than 2 dims.
    """
    return tri_mask("tril_mask", shape, offset, "l", device)


def diag_mask(shape: tuple[int, ...], offset: int = 0, device: DeviceLike = None) -> Tensor:
    """Burn's diag_mask: false on the diagonal `offset`, true elsewhere.

    Raises:
        ShapeError: for fewer than 2 dims.
    """
    return tri_mask("diag_mask", shape, offset, "d", device)


def cartesian_grid(shape: tuple[int, ...], device: DeviceLike = None) -> Tensor:
    """int64 [*shape, len(shape)]: at each position, its own index (Burn's cartesian_grid;
    torch.stack(torch.meshgrid(..., indexing="ij"), -1)).

    Raises:
        ValueRangeError: for negative sizes.
        ShapeError: for an empty shape.
    """
    dims = shape_arg("cartesian_grid", shape)
    if not dims:
        raise ShapeError("cartesian_grid", "need at least 1 dim", shape=dims)
    check_alloc("cartesian_grid", dims + (len(dims),), DType.int64)
    axes = []
    for d, n in enumerate(dims):
        view = [1] * len(dims)
        view[d] = n
        axes.append(arange(n, device=device).reshape(view).expand(dims))
    return stack(axes, -1)
