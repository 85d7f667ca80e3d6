"""Scaled dot-product attention."""

from __future__ import annotations

from typing import TYPE_CHECKING

from burn.errors import DTypeError, ShapeError
from burn.frontend.base import TensorBase
from burn.frontend.validation import broadcast_shapes, check_device
from burn.functional._common import float_input

if TYPE_CHECKING:
    from burn.frontend.tensor import Tensor


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None,
              scale: float | None = None, is_causal: bool = False) -> Tensor:
    """softmax(q k^T * scale, masked) v.

    Args:
        q: [..., Lq, E].
        k: [..., Lk, E].
        v: [..., Lk, Ev].
        mask: bool, true = masked out; broadcasts to [..., Lq, Lk].
        scale: defaults to 1 / sqrt(E).
        is_causal: mask keys after each query (top-left aligned, as torch).
    Returns:
        [..., Lq, Ev].
    Raises:
        ShapeError: for inconsistent shapes. DTypeError: for non-float q / k / v or a non-bool
            mask.
    """
    op = "attention"
    q = float_input(op, "q", q)
    k, v = float_input(op, "k", k, q), float_input(op, "v", v, q)
    sq, sk, sv = q.shape, k.shape, v.shape
    if (min(len(sq), len(sk), len(sv)) < 2 or sq[-1] != sk[-1] or sk[-2] != sv[-2]):
        raise ShapeError(op, "need q [..., Lq, E], k [..., Lk, E], v [..., Lk, Ev]", q=sq,
                         k=sk, v=sv)
    batch = broadcast_shapes(op, sq[:-2], sk[:-2], sv[:-2])
    if mask is not None:
        if not isinstance(mask, TensorBase) or mask._k != "bool_":
            raise DTypeError(op, "mask must be a bool tensor (true = masked out)",
                             mask=getattr(mask, "dtype", type(mask).__name__))
        check_device(op, q, mask)
        broadcast_shapes(op, batch + (sq[-2], sk[-2]), mask.shape)
    prim = q._bk.attention(q._prim, k._prim, v._prim, None if mask is None else mask._prim,
                           scale, is_causal)
    return q._wrap(prim)
