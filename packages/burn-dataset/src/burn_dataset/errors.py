"""Typed errors raised by datasets, each naming the file, row or column at fault."""

from __future__ import annotations


class DatasetError(Exception):
    """Base class of every error raised by burn_dataset."""


class CorruptFileError(DatasetError):
    """A file exists but cannot be decoded (bad image, truncated IDX, invalid JSON line...)."""


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
