"""Input checks shared by the frontend; each raises a burn.errors type naming the op."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any, TypeVar, overload

import numpy as np

from burn.dtype import DEFAULT_FLOAT, DEFAULT_INT, DType, Kind, promote, result_type
from burn.errors import (
    AllocationError,
    BurnIndexError,
    DeviceError,
    DTypeError,
    ShapeError,
    ValueRangeError,
)
from burn.frontend.base import TensorBase

Shape = tuple[int, ...]
Scalar = int | float | bool


def broadcast_shapes(op: str, *shapes: Shape, dtypes: Iterable[DType] = ()) -> Shape:
    """The NumPy broadcast of `shapes`.

    Args:
        op: op name for the error message.
        shapes: shapes to broadcast together.
        dtypes: the operands' dtypes, named in the error message.
    Returns:
        The broadcast shape.
    Raises:
        ShapeError: when two sizes of one dim differ and neither is 1.
    """
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for shape in shapes:
        for i, size in enumerate(shape, ndim - len(shape)):
            if size != out[i]:
                if out[i] != 1 and size != 1:
                    named = [d.value for d in dtypes]
                    raise ShapeError(op, "shapes cannot be broadcast together",
                                     shapes=[tuple(s) for s in shapes],
                                     **({"dtypes": named} if named else {}))
                if out[i] == 1:
                    out[i] = size
    return tuple(out)


def norm_dim(op: str, dim: int, ndim: int, *, extra: int = 0, scalar: bool = False) -> int:
    """A dim in [-ndim - extra, ndim + extra) made non-negative.

    Args:
        op: op name for the error message.
        dim: the dim, possibly negative.
        ndim: rank of the tensor.
        extra: 1 for ops that insert a dim (unsqueeze, stack).
        scalar: a 0-d tensor counts as one dim (dim 0 / -1 accepted, as torch's reductions).
    Returns:
        The dim in [0, ndim + extra) (0 for a 0-d tensor with `scalar`).
    Raises:
        BurnIndexError: for a dim out of range.
    """
    n = (max(ndim, 1) if scalar else ndim) + extra
    if not isinstance(dim, int | np.integer) or isinstance(dim, bool):
        raise DTypeError(op, "dim must be an int", dim=dim)
    if not -n <= dim < n:
        raise BurnIndexError(op, "dim out of range", dim=dim, ndim=ndim,
                             valid=f"[{-n}, {n - 1}]" if n else "none: a 0-d tensor has no dim")
    return int(dim) % n


def norm_dims(op: str, dims: int | Iterable[int], ndim: int, *, scalar: bool = False
              ) -> tuple[int, ...]:
    """Normalise an int or a sequence of dims; sorted, without repeats (`scalar`: see norm_dim).

    Raises:
        BurnIndexError: for a dim out of range or repeated.
    """
    if dims.__class__ is int:  # (the usual call: one dim, nothing to sort or repeat)
        return (norm_dim(op, dims, ndim, scalar=scalar),)
    if isinstance(dims, int | np.integer):
        seq: tuple[Any, ...] = (dims,)
    elif isinstance(dims, Iterable):
        seq = tuple(dims)
    else:  # (a float, None inside a call that takes dims)
        raise DTypeError(op, "dims must be an int or a sequence of ints", dims=dims)
    out = tuple(norm_dim(op, d, ndim, scalar=scalar) for d in seq)
    if len(set(out)) != len(out):
        raise BurnIndexError(op, "dim repeated", dims=seq, ndim=ndim)
    return tuple(sorted(out))


def shape_arg(op: str, shape: Sequence[object]) -> Shape:
    """Shapes given as varargs or as one tuple/list: `(2, 3)` and `((2, 3),)` both give (2, 3).

    Raises:
        DTypeError: for non-int sizes.
        ValueRangeError: for negative sizes.
    """
    if len(shape) == 1 and isinstance(shape[0], Sequence | np.ndarray):
        shape = tuple(shape[0])
    sizes = []
    for size in shape:
        if not isinstance(size, int | np.integer) or isinstance(size, bool):
            raise DTypeError(op, "sizes must be ints", shape=shape)
        if size < 0:
            raise ValueRangeError(op, "sizes must be non-negative", shape=shape)
        sizes.append(int(size))
    return tuple(sizes)


@cache
def memory_limit() -> int:
    """Bytes one tensor may take: the machine's physical memory (2**40 where it is unknown)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return 2**40


def check_alloc(op: str, shape: Shape, dtype: DType) -> None:
    """Raise AllocationError, before allocating, for a tensor larger than `memory_limit()`.

    Raises:
        AllocationError: naming the op, shape, dtype and byte count.
    """
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > memory_limit():
        raise AllocationError(op, "tensor larger than the memory of this machine", shape=shape,
                              dtype=dtype.value, bytes=nbytes, limit=memory_limit())


def finite_scalar(op: str, name: str, value: object) -> float:
    """A finite real number argument (random bounds, arange ends) as a float.

    Raises:
        DTypeError: for a non-number (bools included).
        ValueRangeError: for nan or an infinity.
    """
    value = as_scalar(value)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise DTypeError(op, f"{name} must be a number", **{name: type(value).__name__})
    if not math.isfinite(value):
        raise ValueRangeError(op, f"{name} must be finite", **{name: value})
    return float(value)


def check_device_arg(op: str, device: object) -> None:
    """Raise DeviceError unless `device` is a Device, a device spec string or None."""
    from burn.device import Device

    if not (device is None or isinstance(device, Device | str)):
        raise DeviceError(op, "device must be a burn.Device, a spec string or None",
                          device=repr(device))


def require_tensor(op: str, value: object, dtype: DType) -> TensorBase:
    """`value`, checked to be a Tensor: the argument of a method that takes no scalar.

    Args:
        op: the method, named by the error.
        value: its argument.
        dtype: the calling tensor's dtype, named by the error.
    Returns:
        `value`.
    Raises:
        DTypeError: for anything but a Tensor.
    """
    if not isinstance(value, TensorBase):
        raise DTypeError(op, "other must be a Tensor", dtype=dtype.value,
                         other=type(value).__name__)
    return value


def check_device(op: str, a: TensorBase, b: TensorBase) -> None:
    """Raise DeviceError unless `a` and `b` live on the same device."""
    if a._device is not b._device and a._device != b._device:
        raise DeviceError(op, "tensors are on different devices",
                          lhs=str(a._device), rhs=str(b._device))


#: the Python ints a scalar operand may be, [HOST_INT_MIN, HOST_INT_END): int64's lowest to
#: uint64's largest, as torch (it raises OverflowError outside; ints past int64's largest wrap
#: into an int tensor's dtype as other host ints do)
HOST_INT_MIN, HOST_INT_END = -(1 << 63), 1 << 64


def scalar_dtype(op: str, dtype: DType, value: object) -> DType:
    """Result dtype of `tensor(dtype) op value` for a Python scalar (it never widens the tensor).

    Raises:
        DTypeError: when `value` is not a bool, int or float.
        ValueRangeError: for an int outside [-2**63, 2**64), on any dtype (as torch).
    """
    if isinstance(value, bool):
        return dtype
    if isinstance(value, int):
        check_host_int(op, value, dtype)
        return DEFAULT_INT if dtype.kind is Kind.BOOL else dtype
    if isinstance(value, float):
        return dtype if dtype.kind is Kind.FLOAT else DEFAULT_FLOAT
    raise DTypeError(op, "operand must be a Tensor or a Python scalar",
                     lhs=dtype.value, rhs=type(value).__name__)


def check_host_int(op: str, value: int, dtype: DType) -> None:
    """Refuse a Python int `value` outside [-2**63, 2**64) for a tensor of `dtype` (torch
    raises OverflowError for such an operand, whatever the tensor's dtype).

    Raises:
        ValueRangeError: naming `op`, the value and the dtype.
    """
    if not HOST_INT_MIN <= value < HOST_INT_END:
        raise ValueRangeError(op, "a Python int outside [-2**63, 2**64) cannot be converted",
                              value=value, dtype=dtype.value)


def check_fill_value(op: str, dtype: DType, value: int | float) -> None:
    """Refuse a scalar `value` (checked by `scalar_dtype`) that a `dtype` tensor cannot take
    as an element: nan or +-inf on an int or bool tensor, and a float outside [-2**63, 2**64)
    on an int tensor, as a Python int there (torch: "cannot be converted without overflow").

    Raises:
        ValueRangeError: naming `op`, the dtype and the value.
    """
    if dtype.kind is Kind.FLOAT:
        return
    if not math.isfinite(value):
        raise ValueRangeError(op, "a non-finite value cannot fill an int or bool tensor",
                              dtype=dtype.value, value=value)
    if dtype.kind is not Kind.BOOL and not HOST_INT_MIN <= value < HOST_INT_END:
        raise ValueRangeError(op, "a value outside [-2**63, 2**64) cannot fill an int tensor",
                              dtype=dtype.value, value=value)


_T = TypeVar("_T")


@overload
def as_scalar(value: np.generic) -> Any: ...
@overload
def as_scalar(value: _T) -> _T: ...
def as_scalar(value: object) -> object:
    """NumPy scalars as the Python scalar of the same value; anything else unchanged."""
    return value.item() if isinstance(value, np.generic) else value


def promote_all(dtypes: Iterable[DType]) -> DType:
    """The dtype a sequence of tensors promotes to (PyTorch's rules, see `burn.dtype.promote`)."""
    it = iter(dtypes)
    out = next(it)
    for d in it:
        out = promote(out, d)
    return out


def promote_tensors(tensors: Iterable[TensorBase]) -> DType:
    """The dtype tensors promote to in an elementwise op (torch.result_type: a 0-d tensor
    widens the result only with a higher category, see `burn.dtype.result_type`)."""
    ts = list(tensors)
    return result_type([t._dtype for t in ts if t.shape], [t._dtype for t in ts if not t.shape])


def require_kind(op: str, dtype: DType, *kinds: Kind) -> None:
    """Raise DTypeError unless `dtype` is of one of `kinds`."""
    if dtype.kind not in kinds:
        raise DTypeError(op, f"expected a {' or '.join(k.value for k in kinds)} tensor",
                         dtype=dtype.value)
