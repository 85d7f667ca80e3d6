"""`MetricLogger`: one row of metrics per epoch, in one CSV or JSONL file per split."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any, Literal

from burn.record.files import atomic_path

LogFormat = Literal["csv", "jsonl"]
Row = dict[str, float]
#: A row as a file holds it (CSV: strings by column).
Stored = dict[Any, Any]


class MetricLogger:
    """Appends each epoch's metrics to `directory/{split}.{format}` (column "epoch" first).

    A CSV file's columns are its header's: a row is written under them by name, a metric a row
    lacks is left empty (and absent from the row `read` gives back), and a row with a metric
    the header lacks (one that starts being logged later, such as a loss after a warm-up)
    rewrites the file with that column added. Rewrites replace the file atomically.

    Args:
        directory: the log directory (created on the first write).
        format: "csv" or "jsonl".
    """

    def __init__(self, directory: str | os.PathLike[str], format: LogFormat = "csv") -> None:
        if format not in ("csv", "jsonl"):
            raise ValueError(f"MetricLogger: format must be 'csv' or 'jsonl', got {format!r}")
        self.directory = Path(directory)
        self.format = format

    def path(self, split: str) -> Path:
        """The log file of `split`."""
        return self.directory / f"{split}.{self.format}"

    def log(self, split: str, epoch: int, metrics: dict[str, float]) -> None:
        """Append the row of `epoch`."""
        self.directory.mkdir(parents=True, exist_ok=True)
        path, row = self.path(split), {"epoch": epoch, **metrics}
        if self.format == "jsonl":
            with open(path, "a") as f:
                f.write(json.dumps(row) + "\n")
            return
        header = _csv_header(path)
        columns = header + [k for k in row if k not in header]
        if header and columns == header:
            with open(path, "a", newline="") as f:
                csv.DictWriter(f, fieldnames=header).writerow(row)
        else:  # a new file, or a metric the header lacks: the file again with its column
            self._replace(path, columns, [*_csv_rows(path)[1], row])

    def read(self, split: str) -> list[Row]:
        """The rows logged for `split` (empty when none); a CSV row holds the metrics it has
        values for."""
        path = self.path(split)
        if not path.is_file():
            return []
        if self.format == "jsonl":
            with open(path) as f:
                return [json.loads(line) for line in f if line.strip()]
        return [{k: float(v) for k, v in row.items() if k is not None and v not in ("", None)}
                for row in _csv_rows(path)[1]]

    def truncate(self, epoch: int) -> None:
        """Drop the rows after `epoch` (when resuming from an earlier checkpoint)."""
        for path in self.directory.glob(f"*.{self.format}"):
            if self.format == "jsonl":
                rows: list[Stored] = list(self.read(path.stem))
                columns: list[str] = []
            else:
                columns, rows = _csv_rows(path)
            kept = [row for row in rows if float(row["epoch"]) <= epoch]
            if len(kept) < len(rows):
                self._replace(path, columns, kept)

    def _replace(self, path: Path, columns: list[str], rows: list[Stored]) -> None:
        """Write `rows` as the whole of `path` (a CSV file under `columns`), atomically."""
        with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
            if self.format == "jsonl":
                f.writelines(json.dumps(row) + "\n" for row in rows)
                return
            writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)


def _csv_header(path: Path) -> list[str]:
    """A CSV log's columns ([] where there is no file or it is empty).

    Args:
        path: the file.
    Returns:
        The header's names.
    """
    if not path.is_file():
        return []
    with open(path, newline="") as f:
        return next(csv.reader(f), [])


def _csv_rows(path: Path) -> tuple[list[str], list[Stored]]:
    """A CSV log's header and its rows as written (strings by column; a row with more
    values than the header, from a logger before columns were checked, keeps the extra ones
    under None, which `read` skips and a rewrite drops), or ([], []) where there is no
    file.

    Args:
        path: the file.
    Returns:
        (header, rows).
    """
    if not path.is_file():
        return [], []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        rows: list[Stored] = list(reader)
        return list(reader.fieldnames or []), rows
