"""SQLite datasets: `SqliteDataset` reads one table (a split) row by row; `SqliteDatasetWriter`
builds such a file atomically."""

from __future__ import annotations

import os
import sqlite3
import threading
import uuid
import weakref
from collections.abc import Iterable, Iterator, Mapping
from contextlib import closing, contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from burn_dataset.dataset import Dataset
from burn_dataset.errors import (
    CorruptFileError,
    DatasetUnavailableError,
    MissingSplitError,
    SchemaMismatchError,
)

_SQL_TYPES: dict[type, str] = {bool: "INTEGER", int: "INTEGER", float: "REAL", str: "TEXT",
                               bytes: "BLOB", bytearray: "BLOB", memoryview: "BLOB"}


def _quote(name: str) -> str:
    """Quote an SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection to the SQLite file at ``path``."""
    return sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)


@contextmanager
def _reading(path: Path, what: str) -> Iterator[None]:
    """Turn SQLite's errors on a damaged or foreign file into `CorruptFileError`s naming the
    file and what was being read."""
    try:
        yield
    except sqlite3.DatabaseError as e:
        raise CorruptFileError(f"{path}: not a readable SQLite dataset ({what}): "
                               f"{type(e).__name__}: {e}") from e


def list_splits(path: str | os.PathLike[str]) -> list[str]:
    """Names of the splits (tables) of the SQLite file at ``path``, sorted.

    Raises:
        CorruptFileError: the file is not SQLite, or is truncated or damaged.
    """
    with _reading(Path(path), "table list"), closing(_connect_read_only(Path(path))) as conn:
        rows = conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
    return sorted(r[0] for r in rows)


class SqliteDataset(Dataset[dict[str, Any]]):
    """One table of an SQLite file; rows are fetched by rowid on demand.

    Items are ``{column: value}`` dicts; BLOB columns come back as ``bytes``. Rowids may have
    gaps (deleted rows): the dataset then keeps the list of rowids, never the rows.
    Connections are per thread, so items may be read from worker threads.

    Args:
        path: the SQLite file.
        split: the table to read.

    Raises:
        DatasetUnavailableError: the file does not exist.
        MissingSplitError: the file has no such table (lists the splits it has).
        CorruptFileError: the file is not SQLite, or is truncated or damaged (also when an
            item is read: the message names the file, split and rowids).
    """

    def __init__(self, path: str | os.PathLike[str], split: str) -> None:
        self.path = Path(path)
        self.split = split
        if not self.path.is_file():
            raise DatasetUnavailableError(f"SQLite dataset file not found: {self.path}")
        splits = list_splits(self.path)
        if split not in splits:
            raise MissingSplitError(f"{self.path}: no split {split!r}; splits are {splits}")
        self._local = threading.local()
        with _reading(self.path, f"split {split!r}"):
            self._index(split)

    def _index(self, split: str) -> None:
        conn = self._conn()
        table = _quote(split)
        self.columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        lo, hi, count = conn.execute(
            f"SELECT min(rowid), max(rowid), count(*) FROM {table}"
        ).fetchone()
        self._len = count
        self._first = lo or 0
        contiguous = count == 0 or hi - lo + 1 == count
        self._rowids = None if contiguous else [
            r[0] for r in conn.execute(f"SELECT rowid FROM {table} ORDER BY rowid")
        ]
        select = ", ".join(_quote(c) for c in self.columns)
        self._select = f"SELECT rowid, {select} FROM {table}"

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = _connect_read_only(self.path)
        return conn

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_local"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()

    def _rowid(self, index: int) -> int:
        return self._first + index if self._rowids is None else self._rowids[index]

    def __len__(self) -> int:
        return self._len

    def _get(self, index: int) -> dict[str, Any]:
        return self._get_many([index])[0]

    def _get_many(self, indices: list[int]) -> list[dict[str, Any]]:
        rowids = [self._rowid(i) for i in indices]
        by_rowid: dict[int, dict[str, Any]] = {}
        conn = self._conn()
        for start in range(0, len(rowids), 500):  # stay under SQLite's parameter limit
            chunk = sorted(set(rowids[start:start + 500]))
            marks = ",".join("?" * len(chunk))
            with _reading(self.path, f"split {self.split!r}, rowids {chunk[0]}..{chunk[-1]}"):
                for row in conn.execute(f"{self._select} WHERE rowid IN ({marks})", chunk):
                    by_rowid[row[0]] = dict(zip(self.columns, row[1:], strict=True))
        missing = [r for r in rowids if r not in by_rowid]
        if missing:
            raise CorruptFileError(f"{self.path}: split {self.split!r} lost rowids "
                                   f"{missing[:8]} (the file changed since it was opened)")
        return [by_rowid[r] for r in rowids]


def _discard(conn: sqlite3.Connection, tmp: Path) -> None:
    """Close ``conn`` (rolling back) and delete the temporary file and its journal."""
    conn.close()
    for p in (tmp, tmp.with_name(tmp.name + "-journal")):
        p.unlink(missing_ok=True)


def _column_type(value: Any) -> str:
    """SQLite declared type of a column whose first value is ``value``."""
    return "" if value is None else _SQL_TYPES.get(type(value), "")


class SqliteDatasetWriter:
    """Builds an SQLite dataset file: one table per split, one column per item key.

    Rows are buffered and inserted ``batch_size`` at a time, each batch in one transaction,
    into a temporary file beside ``path``; ``finish()`` renames it to ``path`` atomically.
    A writer that is aborted, garbage-collected or left by an exception (as a context
    manager) leaves no file at ``path`` and removes its temporary file.

    Args:
        path: the final file.
        overwrite: replace an existing file at ``path`` on ``finish()``.
        batch_size: rows per insert transaction.

    Raises:
        FileExistsError: ``path`` exists and ``overwrite`` is False.
    """

    def __init__(
        self, path: str | os.PathLike[str], overwrite: bool = False, batch_size: int = 1000
    ) -> None:
        self.path = Path(path)
        self.overwrite = overwrite
        self.batch_size = batch_size
        self._check_target()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex}.tmp")
        self._conn = sqlite3.connect(self._tmp)
        self._finalizer = weakref.finalize(self, _discard, self._conn, self._tmp)
        self._columns: dict[str, list[str]] = {}
        self._counts: dict[str, int] = {}
        self._pending: dict[str, list[tuple[Any, ...]]] = {}

    def _ensure_open(self) -> None:
        if not self._finalizer.alive:
            raise RuntimeError(f"writer for {self.path} is already finished or aborted")

    def _check_target(self) -> None:
        if self.path.exists() and not self.overwrite:
            raise FileExistsError(f"{self.path} exists; pass overwrite=True to replace it")

    def write(self, split: str, item: Mapping[str, Any]) -> None:
        """Append ``item`` (a ``{column: value}`` mapping) to ``split``.

        The first item of a split fixes its columns; values must be None, bool, int, float,
        str, bytes or numpy scalars.

        Raises:
            SchemaMismatchError: the item's keys differ from the split's columns.
            TypeError: a value has an unsupported type.
        """
        self._ensure_open()
        row = self._counts.get(split, 0)
        values = {k: _sql_value(split, row, k, v) for k, v in item.items()}
        columns = self._columns.get(split)
        if columns is None:
            columns = self._create_table(split, values)
        elif set(values) != set(columns):
            missing = sorted(set(columns) - set(values))
            extra = sorted(set(values) - set(columns))
            raise SchemaMismatchError(
                f"split {split!r}, row {row}: missing columns {missing}, unexpected {extra}"
            )
        self._pending.setdefault(split, []).append(tuple(values[c] for c in columns))
        self._counts[split] = row + 1
        if len(self._pending[split]) >= self.batch_size:
            self._flush(split)

    def write_many(self, split: str, items: Iterable[Mapping[str, Any]]) -> None:
        """Append every item of ``items`` to ``split`` (see ``write``)."""
        for item in items:
            self.write(split, item)

    def _create_table(self, split: str, values: Mapping[str, Any]) -> list[str]:
        columns = list(values)
        cols = ", ".join(f"{_quote(c)} {_column_type(v)}".rstrip() for c, v in values.items())
        with self._conn:
            self._conn.execute(f"CREATE TABLE {_quote(split)} ({cols})")
        self._columns[split] = columns
        return columns

    def _flush(self, split: str) -> None:
        rows = self._pending.pop(split, [])
        if rows:
            marks = ", ".join("?" * len(rows[0]))
            with self._conn:
                self._conn.executemany(f"INSERT INTO {_quote(split)} VALUES ({marks})", rows)

    def finish(self) -> Path:
        """Flush, close and atomically move the file to ``path``.

        Returns:
            The final path.

        Raises:
            FileExistsError: ``path`` appeared meanwhile and ``overwrite`` is False.
        """
        self._ensure_open()
        try:
            for split in list(self._pending):
                self._flush(split)
            self._check_target()
        except BaseException:
            self.abort()
            raise
        self._conn.close()
        os.replace(self._tmp, self.path)
        self._finalizer.detach()
        return self.path

    def abort(self) -> None:
        """Discard everything written; no file is left at ``path``."""
        self._finalizer()

    def __enter__(self) -> SqliteDatasetWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.finish()
        else:
            self.abort()


def _sql_value(split: str, row: int, column: str, value: Any) -> Any:
    """``value`` as an SQLite-bindable value (numpy scalars unwrapped)."""
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        value = value.item()
    if value is not None and type(value) not in _SQL_TYPES:
        raise TypeError(
            f"split {split!r}, row {row}, column {column!r}: unsupported type "
            f"{type(value).__name__}"
        )
    return value
