"""Non-zero padding modes of the convolutions (torch's `padding_mode`), as composites of
narrow, flip, repeat and cat, so they run (and differentiate) on every backend."""

from __future__ import annotations

from collections.abc import Sequence

import burn
from burn.errors import ShapeError
from burn.frontend.tensor import Tensor

PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def pad_spatial(layer: str, x: Tensor, pads: Sequence[tuple[int, int]], mode: str) -> Tensor:
    """Pad the last `len(pads)` dims of `x`.

    Args:
        layer: the layer's name, for error messages.
        x: the input [..., *spatial].
        pads: (before, after) per spatial dim, in order.
        mode: "reflect" (mirror without the edge), "replicate" (repeat the edge) or
            "circular" (wrap around).
    Returns:
        The padded input.
    Raises:
        ShapeError: when a reflect pad is not smaller than its dim, or a circular pad is
            larger than it (as torch).
    """
    first = x.ndim - len(pads)
    for i, (before, after) in enumerate(pads):
        dim, n = first + i, x.shape[first + i]
        if mode == "reflect" and max(before, after) >= n:
            raise ShapeError(layer, "reflect padding must be smaller than the input dim",
                             dim=dim, padding=(before, after), x=x.shape)
        if mode == "circular" and max(before, after) > n:
            raise ShapeError(layer, "circular padding must not exceed the input dim",
                             dim=dim, padding=(before, after), x=x.shape)
        parts = [_side(x, dim, n, before, mode, True), x, _side(x, dim, n, after, mode, False)]
        x = burn.cat([p for p in parts if p is not None], dim=dim)
    return x


def _side(x: Tensor, dim: int, n: int, width: int, mode: str, before: bool) -> Tensor | None:
    """The `width` values added before (or after) `x` along `dim`, or None for none."""
    if width == 0:
        return None
    if mode == "reflect":
        return x.narrow(dim, 1 if before else n - 1 - width, width).flip(dim)
    if mode == "replicate":
        return x.narrow(dim, 0 if before else n - 1, 1).repeat_dim(dim, width)
    return x.narrow(dim, n - width if before else 0, width)  # circular
