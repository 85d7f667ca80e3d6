"""SqliteDataset over plain sqlite3 tables, and SqliteDatasetWriter's atomic behaviour."""

import pickle
import sqlite3
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from burn_dataset import (
    DatasetUnavailableError,
    MissingSplitError,
    SchemaMismatchError,
    SqliteDataset,
    SqliteDatasetWriter,
)
from burn_dataset.source import list_splits


@pytest.fixture
def plain_db(tmp_path):
    """A table made with plain sqlite3, with a deleted row (a rowid gap)."""
    path = tmp_path / "plain data #1?.db"  # URI-special characters
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE train (id INTEGER, text TEXT, score REAL, raw BLOB)")
    conn.executemany("INSERT INTO train VALUES (?, ?, ?, ?)",
                     [(i, f"t{i}", i / 2, bytes([i, 255])) for i in range(6)])
    conn.execute("DELETE FROM train WHERE id = 2")
    conn.execute("CREATE TABLE test (id INTEGER)")
    conn.commit()
    conn.close()
    return path


def test_reads_plain_table_with_rowid_gap(plain_db):
    ds = SqliteDataset(plain_db, "train")
    assert len(ds) == 5 and ds.columns == ["id", "text", "score", "raw"]
    assert ds[0] == {"id": 0, "text": "t0", "score": 0.0, "raw": b"\x00\xff"}
    assert [r["id"] for r in ds] == [0, 1, 3, 4, 5]
    assert ds[-1]["raw"] == bytes([5, 255]) and isinstance(ds[-1]["raw"], bytes)
    assert [r["id"] for r in ds.get_many([4, 0, 4])] == [5, 0, 5]
    with sqlite3.connect(plain_db) as conn:
        ref = conn.execute("SELECT id, text, score, raw FROM train ORDER BY rowid").fetchall()
    assert [tuple(r.values()) for r in ds] == ref
    assert len(SqliteDataset(plain_db, "test")) == 0
    assert list_splits(plain_db) == ["test", "train"]


def test_threads_and_pickle(plain_db):
    ds = SqliteDataset(plain_db, "train")
    with ThreadPoolExecutor(3) as pool:
        assert [r["id"] for r in pool.map(ds.__getitem__, range(5))] == [0, 1, 3, 4, 5]
    assert list(pickle.loads(pickle.dumps(ds))) == list(ds)


def test_open_errors(plain_db, tmp_path):
    msg = r"no split 'valid'; splits are \['test', 'train'\]"
    with pytest.raises(MissingSplitError, match=msg):
        SqliteDataset(plain_db, "valid")
    with pytest.raises(DatasetUnavailableError, match="nope.db"):
        SqliteDataset(tmp_path / "nope.db", "train")


def test_writer_round_trip_several_splits(tmp_path):
    path = tmp_path / "out" / "data.db"
    items = [{"x": i, "y": np.float32(i) / 4, "name": f"n{i}", "img": bytes(3) + bytes([i]),
              "ok": i % 2 == 0, "none": None} for i in range(25)]
    with SqliteDatasetWriter(path, batch_size=7) as w:
        w.write_many("train", items[:20])
        w.write_many("valid", items[20:])
    assert path.is_file() and list(path.parent.iterdir()) == [path]
    train, valid = SqliteDataset(path, "train"), SqliteDataset(path, "valid")
    assert len(train) == 20 and len(valid) == 5
    expected = [{**it, "y": float(it["y"]), "ok": int(it["ok"])} for it in items]
    assert list(train) + list(valid) == expected


def test_writer_exception_leaves_no_file(tmp_path):
    path = tmp_path / "data.db"
    with pytest.raises(RuntimeError, match="boom"), SqliteDatasetWriter(path, batch_size=2) as w:
        w.write_many("train", ({"x": i} for i in range(5)))
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_unfinished_writer_leaves_no_file(tmp_path):
    path = tmp_path / "data.db"
    w = SqliteDatasetWriter(path, batch_size=2)
    w.write_many("train", ({"x": i} for i in range(5)))
    assert not path.exists()
    del w
    assert list(tmp_path.iterdir()) == []


def test_writer_schema_and_type_errors(tmp_path):
    w = SqliteDatasetWriter(tmp_path / "d.db")
    w.write("train", {"a": 1, "b": 2})
    with pytest.raises(SchemaMismatchError,
                       match=r"split 'train', row 1: missing columns \['b'\], unexpected \['c'\]"):
        w.write("train", {"a": 1, "c": 3})
    with pytest.raises(TypeError, match=r"split 'train', row 1, column 'b': unsupported type list"):
        w.write("train", {"a": 1, "b": [1]})
    w.abort()
    assert not (tmp_path / "d.db").exists()
    with pytest.raises(RuntimeError, match="already finished or aborted"):
        w.write("train", {"a": 1, "b": 2})


def test_writer_overwrite(tmp_path):
    path = tmp_path / "d.db"
    path.write_bytes(b"old")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        SqliteDatasetWriter(path)
    with SqliteDatasetWriter(path, overwrite=True) as w:
        w.write("s", {"v": "new"})
    assert list(SqliteDataset(path, "s")) == [{"v": "new"}]
