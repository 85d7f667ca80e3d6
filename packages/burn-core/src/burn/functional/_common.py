"""Argument normalisation and input checks shared by the functional ops."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from burn.errors import DTypeError, ShapeError, ValueRangeError
from burn.frontend.base import TensorBase
from burn.frontend.validation import check_device

if TYPE_CHECKING:
    from burn.frontend.tensor import Tensor

IntOrTuple = int | Sequence[int]


def ntuple(op: str, name: str, value: IntOrTuple, n: int, minimum: int = 0) -> tuple[int, ...]:
    """An int or a sequence of `n` ints as an n-tuple of ints >= `minimum`.

    Raises:
        DTypeError: for a float (stride=1.5, padding=nan), a bool or another non-int.
        ValueRangeError: for a wrong length or a value below `minimum`.
    """
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        out = (int(value),) * n
    elif isinstance(value, Sequence) and not isinstance(value, str):
        out = tuple(value)
    else:
        raise DTypeError(op, f"{name} must be an int or a sequence of {n} ints",
                         **{name: value})
    if len(out) != n or not all(isinstance(v, int | np.integer) and not isinstance(v, bool)
                                and v >= minimum for v in out):
        raise ValueRangeError(op, f"{name} must be an int >= {minimum} or {n} of them",
                              **{name: value})
    return out


def float_input(op: str, name: str, x: object, like: Tensor | None = None) -> Tensor:
    """`x`, checked to be a float Tensor (of `like`'s dtype and device when given).

    Raises:
        DTypeError: for a non-tensor, a non-float tensor or a dtype differing from `like`'s.
        DeviceError: for a device differing from `like`'s.
    """
    if not isinstance(x, TensorBase) or x._k != "float_":
        raise DTypeError(op, f"{name} must be a float tensor",
                         **{name: getattr(x, "dtype", type(x).__name__)})
    if like is not None:
        check_device(op, like, x)
        if x._dtype is not like._dtype:
            raise DTypeError(op, f"{name} must have the input's dtype",
                             x=like._dtype.value, **{name: x._dtype.value})
    return x  # type: ignore[return-value]


def batched(op: str, x: Tensor, spatial: int) -> tuple[Tensor, bool]:
    """`x` as [N, C, *spatial] (an unbatched [C, *spatial] gets N = 1) and whether it was.

    Raises:
        ShapeError: for any other rank.
    """
    ndim = x.ndim
    if ndim == spatial + 1:
        return x.unsqueeze(0), True
    if ndim != spatial + 2:
        raise ShapeError(op, f"x must be {spatial + 2}-d [N, C, *spatial] or {spatial + 1}-d",
                         x=x.shape)
    return x, False


def unbatched(out: Tensor, was: bool) -> Tensor:
    """Drop the batch dim `batched` added."""
    return out.squeeze(0) if was else out


def check_out_size(op: str, sizes: Sequence[int], **details: object) -> None:
    """Raise ShapeError when an output spatial size is not positive."""
    if any(s <= 0 for s in sizes):
        raise ShapeError(op, "output size would be empty or negative", output=tuple(sizes),
                         **details)
