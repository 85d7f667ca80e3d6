"""Malformed CSV rows (a missing field, a value of the wrong type, deep in the file) raise
`MalformedRowError` naming the file, the data row, the line and the column, on the lazy and the
eager path; empty cells are nulls, as pandas reads them."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pandas as pd
import pytest

from burn_dataset import CorruptFileError, DataframeDataset, MalformedRowError

HEADER = ["id", "x", "label"]


def _write(path: Path, rows: list[list[str]]) -> Path:
    """A CSV file with `HEADER` and ``rows`` (fields are written as given, so a short list is
    a row with missing fields); labels with a comma or a newline are quoted by the writer."""
    with open(path, "w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(HEADER)
        writer.writerows(rows)
    return path


def _rows(n: int) -> list[list[str]]:
    return [[str(i), f"{i * 0.25}", f"c{i % 3}" if i % 7 else f"multi\nline, {i}"]
            for i in range(n)]


def _start_line(path: Path, row: int) -> int:
    """The 1-based line where data row ``row`` starts, by Python's csv reader (reference)."""
    with open(path, newline="") as f:
        reader = csv.reader(f)
        next(reader)
        for _ in range(row):
            next(reader)
        return reader.line_num + 1


def _raises_at(path: Path, row: int, column: str, read) -> MalformedRowError:
    with pytest.raises(MalformedRowError) as info:
        read()
    err = info.value
    assert isinstance(err, CorruptFileError)
    assert (err.file, err.row, err.line, err.column) == (str(path), row, _start_line(path, row),
                                                        column)
    assert f"row {row} (line {err.line})" in str(err) and path.name in str(err)
    return err


@pytest.mark.parametrize("lazy", [True, False])
def test_bad_value_deep_in_the_file(tmp_path, lazy):
    rows = _rows(5000)
    rows[3001][1] = "notanumber"
    path = _write(tmp_path / "deep.csv", rows)
    if not lazy:
        _raises_at(path, 3001, "x",
                   lambda: DataframeDataset.from_csv(path, lazy=False, infer_schema_length=100))
        return
    ds = DataframeDataset.from_csv(path, chunk_size=1024)
    assert len(ds) == 5000
    good = pd.read_csv(path, nrows=2048)
    head = ds.get_many(list(range(0, 2048, 97)))
    assert [r["id"] for r in head] == good["id"].iloc[::97].tolist()
    assert all(math.isclose(r["x"], x) for r, x in zip(head, good["x"].iloc[::97], strict=True))
    err = _raises_at(path, 3001, "x", lambda: ds[3500])  # the chunk 3072..4096 reads past it
    assert "notanumber" in str(err) and "Float64" in str(err)
    fresh = DataframeDataset.from_csv(path, chunk_size=1024)
    _raises_at(path, 3001, "x", lambda: fresh.get_many([4000, 10, 2500, 3001, 4999, 7, 1]))


@pytest.mark.parametrize("lazy", [True, False])
def test_missing_field(tmp_path, lazy):
    rows = _rows(3100)
    rows[3001] = rows[3001][:2]  # "3001,750.25" without its label
    path = _write(tmp_path / "missing.csv", rows)
    assert _start_line(path, 3001) != 3001 + 2  # quoted newlines before it shift the lines
    if not lazy:
        _raises_at(path, 3001, "label", lambda: DataframeDataset.from_csv(path, lazy=False))
        return
    ds = DataframeDataset.from_csv(path)
    assert ds[2047]["label"] == rows[2047][2] and ds[3080]["id"] == 3080  # other chunks read
    err = _raises_at(path, 3001, "label", lambda: ds[3001])
    assert "missing field (found 2 of 3)" in str(err)
    _raises_at(path, 3001, "label", lambda: list(DataframeDataset.from_csv(path)))


def test_extra_field(tmp_path):
    rows = _rows(300)
    rows[250] = [*rows[250], "surplus"]
    path = _write(tmp_path / "extra.csv", rows)
    ds = DataframeDataset.from_csv(path, chunk_size=100)
    err = _raises_at(path, 250, "label", lambda: ds[10])  # polars parses past row 100
    assert "extra fields (found 4 of 3)" in str(err)


def test_invalid_utf8_is_a_corrupt_file(tmp_path):
    """Bytes that are not UTF-8 in a text column: a CorruptFileError naming the file, as
    pandas' read_csv refuses it (UnicodeDecodeError); the diagnosis of the failed read,
    which reads the lines as text too, raised polars' ComputeError before."""
    path = tmp_path / "latin1.csv"
    path.write_bytes(b"a,b,c\n1,0.5,s1\n2,0.7,caf\xe9\n3,0.1,s3\n")
    with pytest.raises(UnicodeDecodeError):
        pd.read_csv(path)
    ds = DataframeDataset.from_csv(path)
    with pytest.raises(CorruptFileError, match=r"latin1\.csv: cannot read rows .*utf-8"):
        [ds[i] for i in range(len(ds))]


@pytest.mark.parametrize("lazy", [True, False])
def test_empty_cells_are_nulls_as_in_pandas(tmp_path, lazy):
    rows = _rows(50)
    rows[8][1] = ""
    rows[9][2] = ""  # an empty last cell is still a field
    path = _write(tmp_path / "empty.csv", rows)
    ds = DataframeDataset.from_csv(path, lazy=lazy)
    ref = pd.read_csv(path)
    assert len(ds) == len(ref) and ds.columns == list(ref.columns)
    got = list(ds)
    assert got[8]["x"] is None and math.isnan(ref["x"][8])
    assert got[9]["label"] is None and isinstance(ref["label"][9], float)  # NaN
    assert [r["id"] for r in got] == ref["id"].tolist()
    assert got[10] == {"id": 10, "x": 2.5, "label": ref["label"][10]}


def test_selected_columns_still_name_the_file_column(tmp_path):
    rows = _rows(40)
    rows[33] = rows[33][:1]
    path = _write(tmp_path / "sel.csv", rows)
    ds = DataframeDataset.from_csv(path, columns=["id"], chunk_size=16)
    assert ds[3] == {"id": 3}
    _raises_at(path, 33, "x", lambda: ds[35])
