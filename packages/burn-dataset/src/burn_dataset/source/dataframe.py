"""`DataframeDataset`: rows of a polars DataFrame, or of CSV / Parquet files scanned lazily."""

from __future__ import annotations

import bisect
import functools
import itertools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import polars as pl

from burn_dataset.dataset import Dataset
from burn_dataset.errors import (
    CorruptFileError,
    DatasetUnavailableError,
    MissingColumnError,
    SchemaMismatchError,
)
from burn_dataset.source.csv_rows import CsvFile

PathArg = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
Frame = pl.DataFrame | pl.LazyFrame
R = TypeVar("R")

_CACHED_CHUNKS = 4
_ROW = "__burn_row__"


def _as_paths(paths: PathArg) -> list[Path]:
    """One path or several, as a list of existing paths."""
    out = [Path(paths)] if isinstance(paths, str | os.PathLike) else [Path(p) for p in paths]
    if not out:
        raise ValueError("no file given")
    missing = [str(p) for p in out if not p.is_file()]
    if missing:
        raise DatasetUnavailableError(f"files not found: {missing}")
    return out


def _wrap(label: str, what: str, fn: Callable[[], R]) -> R:
    """Run ``fn``, turning polars / IO failures into a CorruptFileError naming ``label``."""
    try:
        return fn()
    except (pl.exceptions.PolarsError, OSError) as e:
        raise CorruptFileError(f"{label}: cannot {what}: {e}") from e


class DataframeDataset(Dataset[dict[str, Any]]):
    """Rows as ``{column: value}`` dicts, read ``chunk_size`` rows at a time.

    Eager frames are read row by row, in place; lazy ones (``from_csv``, ``from_parquet``) are
    scanned per file and only the chunk holding a requested row is collected, so single items
    never load a whole file. The last few chunks are cached, which makes sequential reading
    cost one scan per chunk; ``get_many`` reads the distinct chunks of its rows once each, or,
    when they are more than the cache holds (shuffled batches), just its rows in one scan per
    file.

    Args:
        df: a polars DataFrame or LazyFrame.
        columns: columns to keep (default: all).
        chunk_size: rows fetched per read.

    Attributes:
        scans: file reads (lazy scans collected) so far.

    Raises:
        MissingColumnError: a requested column is absent (names it and the columns present).
    """

    def __init__(
        self, df: Frame, *, columns: Sequence[str] | None = None, chunk_size: int = 1024
    ) -> None:
        self._init_parts([("<dataframe>", df)], columns, chunk_size)

    @classmethod
    def from_csv(
        cls,
        paths: PathArg,
        *,
        columns: Sequence[str] | None = None,
        chunk_size: int = 1024,
        lazy: bool = True,
        **scan_options: Any,
    ) -> DataframeDataset:
        """Scan one or more CSV files (``polars.scan_csv``); rows of all files in order.

        A row with fewer (or more) fields than the header, or a value that does not parse as
        its column's dtype, raises a `MalformedRowError` when its chunk is read (lazy) or here
        (``lazy=False``). An empty cell is a null value, as in polars and pandas. The first
        read of a lazy file's rows costs one more pass over the file, which finds each row's
        line and field count.

        Args:
            paths: a file or a sequence of files sharing one schema.
            columns: columns to keep (default: all).
            chunk_size: rows fetched per read.
            lazy: read chunks on demand (True) or every file here (False).
            **scan_options: passed to ``polars.scan_csv``.

        Raises:
            DatasetUnavailableError: a file does not exist.
            SchemaMismatchError: files disagree on column names or types (names both files).
            MissingColumnError: a requested column is absent from a file.
            MalformedRowError: (``lazy=False``) a row with a missing field or a bad value;
                names the file, the 0-based data row, the 1-based line and the column.
            CorruptFileError: polars cannot parse a file.
        """
        files = [CsvFile(p, scan_options) for p in _as_paths(paths)]
        return cls._from_files([f.path for f in files], lambda p: pl.scan_csv(p, **scan_options),
                               columns, chunk_size, files, lazy)

    @classmethod
    def from_parquet(
        cls,
        paths: PathArg,
        *,
        columns: Sequence[str] | None = None,
        chunk_size: int = 1024,
        **scan_options: Any,
    ) -> DataframeDataset:
        """Lazily scan one or more Parquet files (``polars.scan_parquet``); see ``from_csv``."""
        return cls._from_files(paths, lambda p: pl.scan_parquet(p, **scan_options), columns,
                               chunk_size)

    @classmethod
    def _from_files(
        cls,
        paths: PathArg,
        scan: Callable[[Path], pl.LazyFrame],
        columns: Sequence[str] | None,
        chunk_size: int,
        csv: Sequence[CsvFile] = (),
        lazy: bool = True,
    ) -> DataframeDataset:
        """The dataset over ``paths``, each scanned with ``scan``; ``csv`` (one per path, or
        none) locates malformed rows; ``lazy=False`` reads every file now."""
        parts = [(str(p), _wrap(str(p), "scan", functools.partial(scan, p)))
                 for p in _as_paths(paths)]
        ds = cls.__new__(cls)
        ds._init_parts(parts, columns, chunk_size, dict(enumerate(csv)))
        if not lazy:
            ds._parts = [(label, ds._collect(k, "read", ds._lazy_part(k)[1],
                                             range(ds._height_of(k))))
                         for k, (label, _) in enumerate(ds._parts)]
        return ds

    def _init_parts(
        self, parts: Sequence[tuple[str, Frame]], columns: Sequence[str] | None, chunk_size: int,
        csv: dict[int, CsvFile] | None = None,
    ) -> None:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
        schemas = [_wrap(label, "read schema", f.collect_schema) for label, f in parts]
        if columns is not None:
            for (label, _), schema in zip(parts, schemas, strict=True):
                missing = [c for c in columns if c not in schema]
                if missing:
                    raise MissingColumnError(
                        f"{label}: no column(s) {missing}; columns are {list(schema)}"
                    )
            parts = [(label, f.select(columns)) for label, f in parts]
            schemas = [pl.Schema({c: s[c] for c in columns}) for s in schemas]
        for (label, _), schema in zip(parts[1:], schemas[1:], strict=True):
            if schema != schemas[0]:
                diff = sorted(set(schema.items()) ^ set(schemas[0].items()), key=str)
                raise SchemaMismatchError(
                    f"{label} and {parts[0][0]} have different schemas; differing "
                    f"(column, dtype): {diff}"
                )
        self.schema = schemas[0]
        self.chunk_size = chunk_size
        self._csv = csv or {}
        self._parts = parts
        self._ends = list(itertools.accumulate(_height(label, f) for label, f in parts))
        self.scans = 0
        self._init_local()

    def _init_local(self) -> None:
        """The chunk cache and its lock: per process, never pickled."""
        self._cache: OrderedDict[tuple[int, int], list[dict[str, Any]]] = OrderedDict()
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        # Process workers started with "spawn" receive the dataset pickled: a lock cannot be,
        # and the cached chunks are cheaper to re-read than to ship.
        state = self.__dict__.copy()
        del state["_cache"], state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_local()

    @property
    def columns(self) -> list[str]:
        """Column names, in order."""
        return list(self.schema)

    def __len__(self) -> int:
        return self._ends[-1]

    def _height_of(self, part: int) -> int:
        """Row count of part ``part``."""
        return self._ends[part] - (self._ends[part - 1] if part else 0)

    def _locate(self, index: int) -> tuple[int, int]:
        """The part holding row ``index`` and the row's position in it."""
        k = bisect.bisect_right(self._ends, index)
        return k, index - (self._ends[k - 1] if k else 0)

    def _get(self, index: int) -> dict[str, Any]:
        return self._get_many([index])[0]

    def _get_many(self, indices: list[int]) -> list[dict[str, Any]]:
        """Rows at ``indices``: eager parts read row by row; for lazy ones the requested chunks
        are read into the cache when they fit in it, else the requested rows are read in one
        scan of the part."""
        rows: list[dict[str, Any] | None] = [None] * len(indices)
        wanted: dict[int, dict[int, list[int]]] = {}  # part -> local row -> positions
        for pos, index in enumerate(indices):
            part, local = self._locate(index)
            frame = self._parts[part][1]
            if isinstance(frame, pl.DataFrame):
                rows[pos] = frame.row(local, named=True)
            else:
                wanted.setdefault(part, {}).setdefault(local, []).append(pos)
        for part, positions in wanted.items():
            for local, row in self._read(part, sorted(positions)).items():
                for pos in positions[local]:
                    rows[pos] = row
        return rows  # type: ignore[return-value]

    def _read(self, part: int, locals_: list[int]) -> dict[int, dict[str, Any]]:
        """Rows ``locals_`` (sorted, distinct) of lazy part ``part``, by local row."""
        size = self.chunk_size
        starts = sorted({local - local % size for local in locals_})
        with self._lock:
            missing = [start for start in starts if (part, start) not in self._cache]
        if len(missing) > _CACHED_CHUNKS:  # random access: one scan for just these rows
            _, frame = self._lazy_part(part)
            picked = frame.with_row_index(_ROW).filter(pl.col(_ROW).is_in(locals_)).drop(_ROW)
            found = self._collect(part, f"read {len(locals_)} rows", picked, locals_).to_dicts()
            return dict(zip(locals_, found, strict=True))
        chunks = {start: self._chunk(part, start) for start in starts}
        return {local: chunks[local - local % size][local % size] for local in locals_}

    def _chunk(self, part: int, start: int) -> list[dict[str, Any]]:
        """Rows ``[start, start + chunk_size)`` of lazy part ``part``, through the chunk
        cache."""
        key = (part, start)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        _, frame = self._lazy_part(part)
        stop = min(start + self.chunk_size, self._height_of(part))
        rows = self._collect(part, f"read rows {start}..{stop}",
                             frame.slice(start, self.chunk_size), range(start, stop)).to_dicts()
        with self._lock:
            self._cache[key] = rows
            while len(self._cache) > _CACHED_CHUNKS:
                self._cache.popitem(last=False)
        return rows

    def _lazy_part(self, part: int) -> tuple[str, pl.LazyFrame]:
        """Label and frame of part ``part``, which must be lazy (eager ones are read in place)."""
        label, frame = self._parts[part]
        if not isinstance(frame, pl.LazyFrame):
            raise TypeError(f"{label}: part {part} is an eager frame, not a lazy scan")
        return label, frame

    def _collect(self, part: int, what: str, frame: pl.LazyFrame,
                 rows: Sequence[int]) -> pl.DataFrame:
        """Run one scan of part ``part``, counted in ``scans``, reading its data rows
        ``rows`` (sorted); those of a CSV file are checked for missing fields.

        Raises:
            MalformedRowError: a CSV row with a missing or extra field or a bad value.
            CorruptFileError: polars cannot read the part.
        """
        with self._lock:
            self.scans += 1
        label, csv = self._parts[part][0], self._csv.get(part)
        try:
            out = frame.collect()
        except pl.exceptions.PolarsError as e:
            bad = None if csv is None else csv.diagnose(self.schema, rows, self.columns)
            raise (bad or CorruptFileError(f"{label}: cannot {what}: {e}")) from e
        except OSError as e:
            raise CorruptFileError(f"{label}: cannot {what}: {e}") from e
        bad = None if csv is None else csv.bad_fields(np.asarray(rows, dtype=np.int64))
        if bad is not None:
            raise bad
        return out


def _height(label: str, frame: Frame) -> int:
    """Row count of ``frame`` (a metadata read for Parquet, one streaming pass for CSV)."""
    if isinstance(frame, pl.DataFrame):
        return frame.height
    return _wrap(label, "count rows", lambda: frame.select(pl.len()).collect().item())
