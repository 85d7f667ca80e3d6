"""Where the records of a CSV file sit (line numbers, field counts), and which cell of a range
of rows polars cannot parse: the data behind `MalformedRowError`s that name the file, the
0-based data row, the 1-based line and the column."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from burn_dataset.errors import MalformedRowError

_TEXT = "__burn_text__"
# scan options the record layout models; with any other option that drops or adds records,
# the layout is checked against polars' row count and dropped when they disagree
_MODELED = {"has_header", "separator", "quote_char", "skip_rows", "skip_lines",
            "skip_rows_after_header", "comment_prefix", "eol_char"}


@dataclass
class CsvFile:
    """One CSV file and the ``polars.scan_csv`` options it is read with.

    Args:
        path: the file.
        options: keyword arguments of ``polars.scan_csv``.
    """

    path: Path
    options: dict[str, Any] = field(default_factory=dict)

    def scan(self, **overrides: Any) -> pl.LazyFrame:
        """The file scanned with its options (``overrides`` replacing some)."""
        return pl.scan_csv(self.path, **{**self.options, **overrides})

    @functools.cached_property
    def layout(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(first line, field count) of each data record, from one polars pass over the
        file's physical lines; None when the options are not modeled (see `_MODELED`) and
        the record count disagrees with polars', or when polars cannot read the lines as
        text (invalid UTF-8: the read fails as a CorruptFileError then, undiagnosed)."""
        opts = self.options
        sep, quote = opts.get("separator", ","), opts.get("quote_char", '"')
        lines = pl.scan_csv(self.path, has_header=False, separator="\x1f", quote_char=None,
                            eol_char=opts.get("eol_char", "\n"), new_columns=[_TEXT],
                            schema={_TEXT: pl.String}, empty_string_is_null=False,
                            truncate_ragged_lines=True, skip_lines=opts.get("skip_lines", 0))
        text = pl.col(_TEXT).fill_null("")
        if quote:
            odd = (text.str.count_matches(quote, literal=True) % 2).cast(pl.Int64)
            start = (odd.cum_sum() - odd) % 2 == 0  # not inside a quoted field
            outside = text.str.replace_all(f"{_escaped(quote)}[^{_escaped(quote)}]*"
                                           f"{_escaped(quote)}", "")
        else:
            start, outside = pl.lit(True), text
        table = (lines.with_row_index("line", offset=1 + opts.get("skip_lines", 0))
                 .with_columns(start.alias("start"))
                 .with_columns(pl.col("start").cum_sum().alias("record"))
                 .group_by("record", maintain_order=True)
                 .agg(pl.col("line").first(), pl.col(_TEXT).fill_null("").str.join("\n")))
        if opts.get("comment_prefix"):
            table = table.filter(~pl.col(_TEXT).str.starts_with(opts["comment_prefix"]))
        try:
            records = table.select(
                "line", (outside.str.count_matches(sep, literal=True) + 1).alias("fields")
            ).collect()
        except pl.exceptions.PolarsError:
            return None
        drop = opts.get("skip_rows", 0) + (1 if opts.get("has_header", True) else 0)
        drop_after = opts.get("skip_rows_after_header", 0)
        records = records.slice(drop + drop_after)
        if set(opts) - _MODELED and records.height != self.height:
            return None
        return records["line"].to_numpy(), records["fields"].to_numpy()

    @functools.cached_property
    def header(self) -> list[str]:
        """The file's column names."""
        return list(self.scan().collect_schema())

    @functools.cached_property
    def height(self) -> int:
        """The number of data rows polars reads."""
        return int(self.scan().select(pl.len()).collect().item())

    def line(self, row: int) -> int | None:
        """The 1-based line where data row ``row`` starts (None when unknown)."""
        layout = self.layout
        return None if layout is None or row >= len(layout[0]) else int(layout[0][row])

    def diagnose(self, schema: pl.Schema, rows: Sequence[int],
                 selected: list[str]) -> MalformedRowError | None:
        """Why polars failed to read data rows ``rows`` (sorted): the first row with a bad
        field count or cell among them, else in the whole file (polars parses more rows than
        it returns); None when none is found."""
        height = self.height if self.layout is None else len(self.layout[1])
        return (self.bad_fields(np.asarray(rows))
                or (self.bad_cell(schema, rows[0], rows[-1] + 1, selected) if len(rows) else None)
                or self.bad_fields(np.arange(height))
                or self.bad_cell(schema, 0, height, selected))

    def bad_fields(self, rows: np.ndarray) -> MalformedRowError | None:
        """The error for the first of data rows ``rows`` whose field count is not the
        header's, naming the first missing (or the last, for extra fields) column; None when
        all match or the layout is unknown."""
        layout, columns = self.layout, self.header
        if layout is None:
            return None
        rows = rows[rows < len(layout[1])]
        counts = layout[1][rows]
        bad = np.flatnonzero(counts != len(columns))
        if not len(bad):
            return None
        row = int(rows[bad[0]])
        found = int(counts[bad[0]])
        if found < len(columns):
            column, what = columns[found], f"missing field (found {found} of {len(columns)})"
        else:
            column, what = columns[-1], f"extra fields (found {found} of {len(columns)})"
        return self.error(row, column, what)

    def bad_cell(self, schema: pl.Schema, start: int, stop: int,
                 selected: list[str]) -> MalformedRowError | None:
        """The first cell of data rows ``[start, stop)`` whose text does not parse as its
        column's dtype (None when every cell parses).

        Args:
            schema: the dtypes polars reads the columns with.
            start, stop: the range of data rows to look at.
            selected: the columns read (the others are not checked).
        """
        strings = {name: pl.String for name in self.header}
        try:
            raw = self.scan(schema=strings, schema_overrides=None, infer_schema=True).slice(
                start, stop - start).select(selected).collect()
        except pl.exceptions.PolarsError:
            return None
        first: tuple[int, str, str] | None = None
        for name in selected:
            dtype = schema[name]
            if dtype == pl.String:
                continue
            column = raw[name]
            try:
                parsed = column.cast(dtype, strict=False)
            except pl.exceptions.PolarsError:
                continue
            bad = np.flatnonzero((parsed.is_null() & column.is_not_null()).to_numpy())
            if len(bad) and (first is None or bad[0] < first[0]):
                first = (int(bad[0]), name, f"cannot parse {column[int(bad[0])]!r} as {dtype}")
        if first is None:
            return None
        return self.error(start + first[0], first[1], first[2])

    def error(self, row: int, column: str, what: str) -> MalformedRowError:
        """A `MalformedRowError` for data row ``row``, column ``column``."""
        return MalformedRowError(str(self.path), row, self.line(row), column, what)

    def __getstate__(self) -> dict[str, Any]:
        # the layout is re-read where needed rather than shipped to workers
        return {"path": self.path, "options": self.options}


def _escaped(char: str) -> str:
    """``char`` escaped for a polars (Rust) regex."""
    return "\\" + char if not char.isalnum() else char
