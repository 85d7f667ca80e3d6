"""SqliteDataset on foreign, truncated or damaged files: typed errors naming the file."""

import sqlite3

import pytest

from burn_dataset import SqliteDataset
from burn_dataset.errors import CorruptFileError


def _database(path, rows: int) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE train (x INTEGER, text TEXT)")
        conn.executemany("INSERT INTO train VALUES (?, ?)",
                         [(i, f"row {i} " * 40) for i in range(rows)])
    conn.close()


def test_not_sqlite(tmp_path):
    path = tmp_path / "data.db"
    path.write_bytes(b"this is a CSV file, not SQLite\n" * 100)
    with pytest.raises(CorruptFileError, match="data.db") as info:
        SqliteDataset(path, "train")
    assert str(path) in str(info.value)


@pytest.mark.parametrize("keep", [0.1, 0.5])
def test_truncated_sqlite(tmp_path, keep):
    path = tmp_path / "data.db"
    _database(path, 2000)
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * keep)])
    with pytest.raises(CorruptFileError, match=str(path)):
        dataset = SqliteDataset(path, "train")
        dataset.get_many(list(range(len(dataset))))


def test_intact_file_still_reads(tmp_path):
    path = tmp_path / "data.db"
    _database(path, 20)
    dataset = SqliteDataset(path, "train")
    assert len(dataset) == 20
    assert [item["x"] for item in dataset.get_many([3, 19])] == [3, 19]
