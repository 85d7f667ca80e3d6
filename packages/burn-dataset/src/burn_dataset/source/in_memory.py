"""`InMemoryDataset`: items held in a Python list, built from rows, JSON-lines or CSV."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from burn_dataset.dataset import Dataset
from burn_dataset.errors import CorruptFileError, MissingColumnError

T = TypeVar("T")


class InMemoryDataset(Dataset[T]):
    """Items stored in memory.

    Args:
        items: the items; copied into a list.
    """

    def __init__(self, items: Iterable[T]) -> None:
        self.items = list(items)

    @classmethod
    def from_rows(cls, rows: Iterable[T]) -> InMemoryDataset[T]:
        """Dataset of ``rows`` (any items, typically dicts)."""
        return cls(rows)

    @classmethod
    def from_json_rows(cls, path: str | os.PathLike[str]) -> InMemoryDataset[Any]:
        """Read a JSON-lines file: one JSON value per non-blank line.

        Args:
            path: the file.

        Returns:
            One item per line.

        Raises:
            CorruptFileError: a line is not valid JSON (names the file and line).
        """
        items = []
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    items.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise CorruptFileError(f"{path}: line {lineno} is not valid JSON: {e}") from e
        return InMemoryDataset(items)

    @classmethod
    def from_csv(
        cls,
        path: str | os.PathLike[str],
        types: Mapping[str, Callable[[str], Any]] | None = None,
        delimiter: str = ",",
    ) -> InMemoryDataset[dict[str, Any]]:
        """Read a CSV file with a header row into one dict per row.

        Args:
            path: the file.
            types: optional converters per column (e.g. ``{"age": int}``); other columns stay
                strings.
            delimiter: the field separator.

        Returns:
            One ``{column: value}`` dict per data row.

        Raises:
            MissingColumnError: ``types`` names a column absent from the header.
            CorruptFileError: a row has the wrong field count or a value fails to convert
                (names the file, row and column).
        """
        types = dict(types or {})
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f, delimiter=delimiter)
            header = next(reader, [])
            missing = [c for c in types if c not in header]
            if missing:
                raise MissingColumnError(f"{path}: no column(s) {missing}; header is {header}")
            rows = [_typed_row(path, reader.line_num, header, r, types) for r in reader if r]
        return InMemoryDataset(rows)

    def __len__(self) -> int:
        return len(self.items)

    def _get(self, index: int) -> T:
        return self.items[index]


def _typed_row(
    path: str | os.PathLike[str],
    line: int,
    header: list[str],
    row: list[str],
    types: Mapping[str, Callable[[str], Any]],
) -> dict[str, Any]:
    """Zip ``row`` with ``header`` and apply the column converters."""
    if len(row) != len(header):
        raise CorruptFileError(
            f"{path}: line {line} has {len(row)} fields, header has {len(header)}"
        )
    out: dict[str, Any] = dict(zip(header, row, strict=True))
    for col, conv in types.items():
        try:
            out[col] = conv(out[col])
        except (TypeError, ValueError) as e:
            raise CorruptFileError(
                f"{path}: line {line}, column {col!r}: cannot convert {out[col]!r}: {e}"
            ) from e
    return out
