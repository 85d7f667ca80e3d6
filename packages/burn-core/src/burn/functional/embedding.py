"""Embedding lookup."""

from __future__ import annotations

from typing import TYPE_CHECKING

from burn.errors import DTypeError, ShapeError
from burn.frontend.base import TensorBase
from burn.frontend.indexing import checked_indices
from burn.frontend.validation import check_device
from burn.functional._common import float_input

if TYPE_CHECKING:
    from burn.frontend.tensor import Tensor


def embedding(weight: Tensor, indices: Tensor) -> Tensor:
    """Rows of `weight` [V, D] picked by int `indices` of any shape -> [*indices, D].

    Raises:
        ShapeError: for a non-2-d weight. DTypeError: for non-int indices.
        BurnIndexError: for indices outside [0, V) (negative ones too, as torch).
    """
    op = "embedding"
    weight = float_input(op, "weight", weight)
    if weight.ndim != 2:
        raise ShapeError(op, "weight must be 2-d [V, D]", weight=weight.shape)
    if not isinstance(indices, TensorBase) or indices._k != "int_":
        raise DTypeError(op, "indices must be an int tensor",
                         indices=getattr(indices, "dtype", type(indices).__name__))
    check_device(op, weight, indices)
    idx = checked_indices(op, indices, weight.shape[0], wrap_negative=False)
    return weight._wrap(weight._bk.embedding(weight._prim, idx._prim))
