"""`MetricLogger`: rows whose metrics change between epochs keep the file a rectangular CSV
(read back by the csv module as logged), and a rewrite leaves no partial file."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from burn.train import MetricLogger


def table(path: Path) -> list[list[str]]:
    """The file as the csv module reads it, every row as long as the header."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert rows and all(len(row) == len(rows[0]) for row in rows), rows
    return rows


def test_a_metric_that_starts_later_adds_its_column(tmp_path: Path) -> None:
    log = MetricLogger(tmp_path)
    log.log("train", 1, {"return": 21.0, "exploration": 0.88})
    log.log("train", 2, {"return": 24.0, "loss": 0.04, "exploration": 0.76})
    log.log("train", 3, {"exploration": 0.64, "return": 28.0})  # the same keys, another order
    log.log("train", 4, {"loss": 0.5, "return": math.inf, "exploration": 0.5})
    assert table(tmp_path / "train.csv") == [
        ["epoch", "return", "exploration", "loss"], ["1", "21.0", "0.88", ""],
        ["2", "24.0", "0.76", "0.04"], ["3", "28.0", "0.64", ""], ["4", "inf", "0.5", "0.5"]]
    assert log.read("train") == [
        {"epoch": 1.0, "return": 21.0, "exploration": 0.88},
        {"epoch": 2.0, "return": 24.0, "exploration": 0.76, "loss": 0.04},
        {"epoch": 3.0, "return": 28.0, "exploration": 0.64},
        {"epoch": 4.0, "return": math.inf, "exploration": 0.5, "loss": 0.5}]
    log.truncate(2)
    assert [row["epoch"] for row in log.read("train")] == [1.0, 2.0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.csv"]


@pytest.mark.parametrize("log_format", ["csv", "jsonl"])
def test_truncate_keeps_the_rows_up_to_an_epoch(tmp_path: Path, log_format: str) -> None:
    log = MetricLogger(tmp_path, log_format)  # type: ignore[arg-type]
    for epoch in range(1, 5):
        log.log("valid", epoch, {"loss": 1.0 / epoch})
    log.truncate(3)
    assert log.read("valid") == [{"epoch": float(e), "loss": 1.0 / e} for e in (1, 2, 3)] \
        if log_format == "csv" else [{"epoch": e, "loss": 1.0 / e} for e in (1, 2, 3)]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"valid.{log_format}"]


def test_a_file_with_rows_longer_than_its_header_reads_and_truncates(tmp_path: Path) -> None:
    """A log written before columns were checked (a later metric's value past the header)
    reads back under the header's columns and is rewritten rectangular."""
    path = tmp_path / "train.csv"
    path.write_text("epoch,return,exploration\n1,21.0,0.88\n2,24.0,0.04,0.76\n3,28.0,0.1,0.6\n")
    log = MetricLogger(tmp_path)
    assert [sorted(row) for row in log.read("train")] == [["epoch", "exploration", "return"]] * 3
    log.truncate(2)
    assert table(path) == [["epoch", "return", "exploration"], ["1", "21.0", "0.88"],
                           ["2", "24.0", "0.04"]]
