"""Input validation shared by the ops: typed `burn.errors` naming the op, the argument and the
expected form."""

from __future__ import annotations

from collections.abc import Sequence

import burn
from burn import Tensor
from burn.dtype import Kind
from burn.errors import DTypeError, ShapeError, ValueRangeError


def tensor_arg(op: str, name: str, value: object) -> Tensor:
    """`value` itself when it is a burn Tensor.

    Raises:
        DTypeError: for anything else.
    """
    if not isinstance(value, Tensor):
        raise DTypeError(op, f"{name} must be a burn.Tensor", got=type(value).__name__)
    return value


def image_arg(op: str, name: str, value: object, kinds: Sequence[Kind], min_ndim: int = 2,
              max_ndim: int | None = None, form: str = "[..., H, W]") -> Tensor:
    """A tensor of one of `kinds` with `min_ndim`..`max_ndim` dims.

    Raises:
        DTypeError: for a non-tensor or a kind outside `kinds`.
        ShapeError: for a rank outside the range.
    """
    x = tensor_arg(op, name, value)
    if x.kind not in kinds:
        raise DTypeError(op, f"{name} must be a {' or '.join(k.value for k in kinds)} tensor "
                         f"{form}", dtype=x.dtype)
    if x.ndim < min_ndim or (max_ndim is not None and x.ndim > max_ndim):
        raise ShapeError(op, f"{name} must be shaped {form}", shape=x.shape)
    return x


def positive_int(op: str, name: str, value: object) -> int:
    """`value` as an int >= 1.

    Raises:
        ValueRangeError: for a non-int or an int < 1.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueRangeError(op, f"{name} must be an int >= 1", got=value)
    return value


def pair(op: str, name: str, value: int | Sequence[int], minimum: int = 1) -> tuple[int, int]:
    """An int or a pair of ints, each >= `minimum`, as (first, second).

    Raises:
        ValueRangeError: for anything else.
    """
    items = (value, value) if isinstance(value, int) else tuple(value)
    if (len(items) != 2 or any(isinstance(v, bool) or not isinstance(v, int) for v in items)
            or any(v < minimum for v in items)):
        raise ValueRangeError(op, f"{name} must be an int or a pair of ints >= {minimum}",
                              got=value)
    return items[0], items[1]


def choice(op: str, name: str, value: object, allowed: Sequence[object]) -> None:
    """Raises ValueRangeError unless `value` is one of `allowed`."""
    if value not in allowed:
        raise ValueRangeError(op, f"{name} must be one of {list(allowed)}", got=value)


def probability(op: str, name: str, value: float) -> float:
    """`value` as a float in [0, 1].

    Raises:
        ValueRangeError: outside [0, 1].
    """
    if not 0.0 <= value <= 1.0:
        raise ValueRangeError(op, f"{name} must be in [0, 1]", got=value)
    return float(value)


def as_tensor(value: object, ref: Tensor, dtype: burn.DType | None = None) -> Tensor:
    """`value` (tensor, array or nested list) as a tensor on `ref`'s device."""
    if isinstance(value, Tensor):
        t = value if value.device == ref.device else value.to_device(ref.device)
        return t if dtype is None or t.dtype == dtype else t.cast(dtype)
    return burn.tensor(value, dtype=dtype, device=ref.device)
