"""Typed errors of burn-rl; each names the value it refused and what was expected."""

from __future__ import annotations

from burn.errors import BurnError, ShapeError, ValueRangeError


class RlError(BurnError):
    """Base class of burn-rl's errors."""


class ActionSpaceError(RlError, ValueRangeError):
    """An action outside the environment's action space."""


class ObservationShapeError(RlError, ShapeError):
    """An observation whose shape does not fit the network or the buffer."""


class UnknownEnvironmentError(RlError, LookupError):
    """A gymnasium id that is not registered."""


class BufferNotReadyError(RlError, RuntimeError):
    """A buffer sampled before it holds a batch."""


class CheckpointError(RlError, RuntimeError):
    """A checkpoint that is missing, incomplete, or from another agent or buffer."""
