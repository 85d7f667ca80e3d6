"""`MetricLogger`: one row of metrics per epoch, in one CSV or JSONL file per split."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Literal

LogFormat = Literal["csv", "jsonl"]
Row = dict[str, float]


class MetricLogger:
    """Appends each epoch's metrics to `directory/{split}.{format}` (column "epoch" first).

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
        self._write(self.path(split), [{"epoch": epoch, **metrics}], append=True)

    def read(self, split: str) -> list[Row]:
        """The rows logged for `split` (empty when none)."""
        path = self.path(split)
        if not path.is_file():
            return []
        with open(path, newline="") as f:
            if self.format == "jsonl":
                return [json.loads(line) for line in f if line.strip()]
            return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]

    def truncate(self, epoch: int) -> None:
        """Drop the rows after `epoch` (when resuming from an earlier checkpoint)."""
        for path in self.directory.glob(f"*.{self.format}"):
            rows = self.read(path.stem)
            kept = [row for row in rows if row["epoch"] <= epoch]
            if len(kept) < len(rows):
                self._write(path, kept, append=False)

    def _write(self, path: Path, rows: list[Row], append: bool) -> None:
        fresh = not append or not path.is_file() or path.stat().st_size == 0
        with open(path, "a" if append else "w", newline="") as f:
            if self.format == "jsonl":
                f.writelines(json.dumps(row) + "\n" for row in rows)
            elif rows:
                writer = csv.DictWriter(f, fieldnames=list(rows[0]))
                if fresh:
                    writer.writeheader()
                writer.writerows(rows)
