"""DataframeDataset over polars frames and lazily scanned CSV / Parquet from pandas and polars."""

import math
import pickle

import numpy as np
import pandas as pd
import polars as pl
import pytest

from burn_dataset import (
    CorruptFileError,
    DataframeDataset,
    DatasetUnavailableError,
    MissingColumnError,
    SchemaMismatchError,
)


def _frame(n: int, offset: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(offset)
    return pd.DataFrame({
        "id": np.arange(offset, offset + n, dtype=np.int64),
        "x": rng.normal(size=n),
        "label": [f"c{i % 3}" for i in range(n)],
    })


def _same(rows: list[dict], ref: pd.DataFrame) -> None:
    expected = ref.to_dict("records")
    assert len(rows) == len(expected)
    for got, exp in zip(rows, expected, strict=True):
        assert got.keys() == exp.keys()
        for k in exp:
            assert got[k] == exp[k] or math.isclose(got[k], exp[k], rel_tol=1e-12)


def test_eager_polars_frame():
    df = pl.DataFrame({"a": [1, 2, 3, 4, 5], "b": list("vwxyz")})
    ds = DataframeDataset(df, chunk_size=2)
    assert len(ds) == 5 and ds.columns == ["a", "b"]
    assert ds[-1] == {"a": 5, "b": "z"} and ds.get_many([3, 0]) == [{"a": 4, "b": "y"},
                                                                     {"a": 1, "b": "v"}]
    assert list(ds) == df.to_dicts()
    assert list(DataframeDataset(df.lazy(), columns=["b"])) == [{"b": c} for c in "vwxyz"]


def test_parquet_written_by_pandas_and_polars(tmp_path):
    a, b = _frame(300, 0), _frame(200, 300)
    a.to_parquet(tmp_path / "a.parquet", row_group_size=64)  # pyarrow writer
    pl.from_pandas(b).write_parquet(tmp_path / "b.parquet", row_group_size=50)
    ds = DataframeDataset.from_parquet([tmp_path / "a.parquet", tmp_path / "b.parquet"],
                                       chunk_size=64)
    ref = pd.concat([pd.read_parquet(tmp_path / "a.parquet"),
                     pd.read_parquet(tmp_path / "b.parquet")], ignore_index=True)
    assert len(ds) == 500
    _same(list(ds), ref)
    _same([ds[299], ds[300], ds[-1]], ref.iloc[[299, 300, 499]])
    assert sum(len(rows) for rows in ds._cache.values()) <= 4 * 64  # bounded, chunked reads


def test_csv_written_by_pandas_and_polars(tmp_path):
    a, b = _frame(40, 0), _frame(30, 40)
    a.to_csv(tmp_path / "a.csv", index=False)
    pl.from_pandas(b).write_csv(tmp_path / "b.csv")
    ds = DataframeDataset.from_csv([str(tmp_path / "a.csv"), str(tmp_path / "b.csv")],
                                   chunk_size=16, columns=["id", "x"])
    ref = pd.concat([pd.read_csv(tmp_path / "a.csv"), pd.read_csv(tmp_path / "b.csv")],
                    ignore_index=True)[["id", "x"]]
    _same(list(ds), ref)
    assert ds.get_many([69, 0])[0]["id"] == 69


def test_schema_mismatch_between_files(tmp_path):
    pl.DataFrame({"a": [1, 2], "b": ["x", "y"]}).write_parquet(tmp_path / "one.parquet")
    pl.DataFrame({"a": [1.5], "b": ["z"]}).write_parquet(tmp_path / "two.parquet")
    with pytest.raises(SchemaMismatchError, match=r"two\.parquet and .*one\.parquet have "
                                                  r"different schemas.*'a', Float64"):
        DataframeDataset.from_parquet([tmp_path / "one.parquet", tmp_path / "two.parquet"])


def test_missing_column_missing_file_corrupt_file(tmp_path):
    pl.DataFrame({"a": [1]}).write_csv(tmp_path / "d.csv")
    with pytest.raises(MissingColumnError, match=r"d\.csv: no column\(s\) \['z'\]; columns are"):
        DataframeDataset.from_csv(tmp_path / "d.csv", columns=["a", "z"])
    with pytest.raises(DatasetUnavailableError, match=r"files not found: .*nope\.parquet"):
        DataframeDataset.from_parquet(tmp_path / "nope.parquet")
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 definitely not parquet")
    with pytest.raises(CorruptFileError, match=r"bad\.parquet: cannot"):
        DataframeDataset.from_parquet(tmp_path / "bad.parquet")
    with pytest.raises(MissingColumnError, match=r"<dataframe>: no column"):
        DataframeDataset(pl.DataFrame({"a": [1]}), columns=["b"])


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_get_many_reads_each_chunk_once(tmp_path, fmt):
    a, b = _frame(300, 0), _frame(300, 300)
    paths = [tmp_path / f"a.{fmt}", tmp_path / f"b.{fmt}"]
    for frame, path in zip((a, b), paths, strict=True):
        getattr(pl.from_pandas(frame), f"write_{fmt}")(path)
    ref = pd.concat([a, b], ignore_index=True)
    opener = getattr(DataframeDataset, f"from_{fmt}")

    ds = opener(paths, chunk_size=50)  # 6 chunks per file
    for start in range(0, 600, 40):  # sequential batches: one scan per chunk
        _same(ds.get_many(range(start, start + 40)), ref.iloc[start:start + 40])
    assert ds.scans == 12

    ds = opener(paths, chunk_size=50)
    picks = [299, 0, 120, 121, 0, 340]  # 3 chunks of a, 1 of b, a row twice
    _same(ds.get_many(picks), ref.iloc[picks])
    assert ds.scans == 4
    _same([ds[i] for i in (1, 122, 301)], ref.iloc[[1, 122, 301]])
    assert ds.scans == 4  # cached chunks

    ds = opener(paths, chunk_size=50)
    order = np.random.default_rng(0).permutation(600)
    for batch in np.array_split(order, 5):  # shuffled: spread over > 4 chunks of each file
        _same(ds.get_many(batch.tolist()), ref.iloc[batch])
    assert ds.scans == 5 * 2  # one scan per file per batch


def test_eager_frame_rows_need_no_scan():
    df = pl.from_pandas(_frame(3000))
    ds = DataframeDataset(df, chunk_size=1024)
    picks = [2999, 5, 1500, 5]
    _same(ds.get_many(picks), _frame(3000).iloc[picks])
    assert ds[-1] == df.row(2999, named=True) and ds.scans == 0 and not ds._cache


def test_pickle_in_memory_and_lazy_csv(tmp_path):
    """Process workers started with "spawn" get the dataset pickled: lock and cache are
    recreated, the rows are the same."""
    ref = _frame(100)
    ref.to_csv(tmp_path / "a.csv", index=False)
    for ds in (DataframeDataset(pl.from_pandas(ref), chunk_size=16),
               DataframeDataset.from_csv(tmp_path / "a.csv", chunk_size=16)):
        before = [ds[i] for i in (0, 17, 99)]  # fills the cache of the lazy one
        copy = pickle.loads(pickle.dumps(ds))
        assert not copy._cache and copy._lock is not ds._lock
        assert [copy[i] for i in (0, 17, 99)] == before
        _same(list(copy), ref)
        _same(copy.get_many([99, 3, 50]), ref.iloc[[99, 3, 50]])
