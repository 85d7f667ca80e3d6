"""Typed errors raised by burn. Every message names the op and the shapes/dtypes involved."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any


class BurnError(Exception):
    """Base class of every error raised by burn."""

    def __init__(self, op: str, message: str, **details: Any) -> None:
        """Args:
        op: name of the op that refused its input (e.g. "matmul").
        message: what is wrong.
        details: shapes, dtypes or values to name in the message.
        """
        self.op = op
        self.details = details
        extra = ", ".join(f"{k}={v}" for k, v in details.items())
        super().__init__(f"{op}: {message}" + (f" ({extra})" if extra else ""))


class ShapeError(BurnError, ValueError):
    """Shapes that do not fit the op: mismatch, impossible broadcast, bad reshape."""


class DTypeError(BurnError, TypeError):
    """A dtype or tensor kind (float / int / bool) the op does not accept."""


class UnsupportedDTypeError(DTypeError):
    """A dtype the device's backend declares it does not support (`Backend.supports`)."""


class BurnIndexError(BurnError, IndexError):
    """A dim or index out of range."""


class DeviceError(BurnError, RuntimeError):
    """Tensors on different devices, or a device that does not exist."""


class AutodiffError(BurnError, RuntimeError):
    """Backward through a path that does not carry gradients."""


class ValueRangeError(BurnError, ValueError):
    """An argument value outside what the op accepts (negative size, zero step, ...)."""


class EmptyReductionError(ValueRangeError, BurnIndexError):
    """A reduction without an identity (max, min, argmax, median) over an empty extent: a
    ValueRangeError, and an IndexError as PyTorch raises for an empty dim."""


class DivisionByZeroError(BurnError, ZeroDivisionError):
    """Integer division or remainder by zero (float division gives inf / nan instead)."""


class AllocationError(BurnError, MemoryError):
    """A tensor larger than the memory there is (checked before allocating)."""
