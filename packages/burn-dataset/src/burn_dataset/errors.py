"""Typed errors raised by datasets, each naming the file, row or column at fault."""

from __future__ import annotations


class DatasetError(Exception):
    """Base class of every error raised by burn_dataset."""


class CorruptFileError(DatasetError):
    """A file exists but cannot be decoded (bad image, truncated IDX, invalid JSON line...)."""


class MalformedRowError(CorruptFileError):
    """A row of a text file (CSV) with a missing or extra field or a value that does not parse.

    Args:
        file: the file.
        row: the 0-based data row.
        line: the 1-based line of the file where the row starts (None when unknown).
        column: the column at fault.
        what: what is wrong.
    """

    def __init__(self, file: str, row: int, line: int | None, column: str, what: str) -> None:
        where = f"line {line}" if line is not None else "line unknown"
        super().__init__(f"{file}: row {row} ({where}), column {column!r}: {what}")
        self.file, self.row, self.line, self.column = file, row, line, column


class ChecksumMismatchError(CorruptFileError):
    """A downloaded file's digest differs from the expected one."""


class MissingColumnError(DatasetError):
    """A requested column (or field) is absent from a file or table."""


class SchemaMismatchError(DatasetError):
    """Files, rows or splits that must share a schema do not."""


class MissingSplitError(DatasetError):
    """A split (table) is absent from a dataset file."""


class InvalidAnnotationError(DatasetError):
    """An annotation is malformed or names an unknown class."""


class DatasetUnavailableError(DatasetError):
    """Dataset files are missing and could not be fetched."""
