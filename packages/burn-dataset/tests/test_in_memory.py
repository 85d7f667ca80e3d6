"""InMemoryDataset from rows, JSON lines and CSV (checked against pandas)."""

import json

import pandas as pd
import pytest

from burn_dataset import CorruptFileError, InMemoryDataset, MissingColumnError


def test_from_rows():
    rows = [{"a": 1}, {"a": 2}]
    ds = InMemoryDataset.from_rows(rows)
    assert list(ds) == rows and ds[-1] == {"a": 2}


def test_from_json_rows(tmp_path):
    rows = [{"x": i, "y": [i, i * 2], "s": f"r{i}"} for i in range(4)]
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    assert list(InMemoryDataset.from_json_rows(path)) == rows
    # pandas writes JSON lines too
    pd.DataFrame({"x": [1, 2], "s": ["a", "b"]}).to_json(path, orient="records", lines=True)
    assert list(InMemoryDataset.from_json_rows(path)) == [{"x": 1, "s": "a"}, {"x": 2, "s": "b"}]


def test_from_json_rows_bad_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(CorruptFileError, match=r"bad\.jsonl: line 2 is not valid JSON"):
        InMemoryDataset.from_json_rows(path)


def test_from_csv_matches_pandas(tmp_path):
    path = tmp_path / "d.csv"
    ref = pd.DataFrame({"name": ["a", "b,c", 'q"d'], "age": [3, 40, 5], "w": [1.5, 2.0, -3.25]})
    ref.to_csv(path, index=False)
    ds = InMemoryDataset.from_csv(path, types={"age": int, "w": float})
    assert list(ds) == pd.read_csv(path).to_dict("records")
    untyped = InMemoryDataset.from_csv(path)
    assert untyped[0] == {"name": "a", "age": "3", "w": "1.5"}


def test_from_csv_errors(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("a,b\n1,2\nx,3\n4\n")
    with pytest.raises(MissingColumnError, match=r"no column\(s\) \['c'\]; header is \['a', 'b'\]"):
        InMemoryDataset.from_csv(path, types={"c": int})
    with pytest.raises(CorruptFileError, match=r"d\.csv: line 3, column 'a': cannot convert 'x'"):
        InMemoryDataset.from_csv(path, types={"a": int})
    with pytest.raises(CorruptFileError, match=r"line 4 has 1 fields, header has 2"):
        InMemoryDataset.from_csv(path)
