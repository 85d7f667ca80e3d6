"""Typed errors of `burn.record`: every message names the file and the offending keys."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from burn.errors import BurnError, DTypeError

if TYPE_CHECKING:
    from burn.record.policy import LoadReport


class RecordError(BurnError):
    """Base class of every save / load error."""


class RecordMismatchError(RecordError):
    """A strict load whose record does not fit the module; `report` holds every difference.

    Args:
        op: the loading function.
        message: what is wrong (names the file).
        report: the full load report (missing, unexpected and mismatched keys).
        details: short lists of the offending keys for the message.
    """

    def __init__(self, op: str, message: str, *, report: LoadReport, **details: Any) -> None:
        super().__init__(op, message, **details)
        self.report = report


class RecordKeyError(RecordMismatchError, LookupError):
    """Stored keys the module lacks (unexpected) or module tensors the record lacks (missing),
    or a key remapping that sends two stored keys to one name."""


class RecordShapeError(RecordMismatchError, ValueError):
    """Stored tensors whose shape differs from the module's."""


class CorruptRecordError(RecordError, ValueError):
    """A truncated, malformed or otherwise unreadable record file."""


class RecordChecksumError(CorruptRecordError):
    """Stored tensor bytes that do not match their checksum (the file was damaged).

    Attributes:
        key: the stored tensor whose bytes are wrong.
    """

    def __init__(self, op: str, message: str, *, key: str, **details: Any) -> None:
        super().__init__(op, message, key=key, **details)
        self.key = key


class RecordDTypeError(RecordError, DTypeError):
    """A stored tensor of a dtype burn has no equivalent for (complex, float8, strings)."""


class UnsafePickleError(RecordError):
    """A pickle asked for a global (callable or class) outside the allow-list; nothing ran."""


class UnknownFormatError(RecordError, ValueError):
    """A format name or path extension that no record format handles (in that direction)."""
