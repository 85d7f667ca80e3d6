"""Transforms: mapper, partial, shuffled, sampler, selection, windows, composed, split."""

import numpy as np
import pytest

from burn_dataset import (
    ComposedDataset,
    InMemoryDataset,
    MapperDataset,
    PartialDataset,
    SamplerDataset,
    SelectionDataset,
    ShuffledDataset,
    WindowsDataset,
    train_valid_split,
)

DS = InMemoryDataset(range(10))


def test_mapper():
    ds = MapperDataset(DS, lambda x: x * 10)
    assert len(ds) == 10 and ds[3] == 30 and ds[-1] == 90
    assert ds.get_many([1, 2]) == [10, 20]


def test_partial():
    ds = PartialDataset(DS, 2, 5)
    assert list(ds) == [2, 3, 4] and ds[-1] == 4 and ds.get_many([0, 2]) == [2, 4]
    with pytest.raises(IndexError):
        ds[3]
    assert list(PartialDataset(DS, 7)) == [7, 8, 9]
    with pytest.raises(ValueError, match=r"invalid range \[5, 11\) for dataset of length 10"):
        PartialDataset(DS, 5, 11)
    parts = PartialDataset.split(DS, 3)
    assert [list(p) for p in parts] == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]


def test_shuffled_is_seeded_permutation():
    a, b, c = (ShuffledDataset(DS, seed=s) for s in (1, 1, 2))
    assert list(a) == list(b) and list(a) != list(c)
    assert sorted(a) == list(range(10))
    assert list(a) == np.random.default_rng(1).permutation(10).tolist()


def test_sampler_with_and_without_replacement():
    with_rep = SamplerDataset(DS, 50, replacement=True, seed=3)
    assert len(with_rep) == 50 and list(with_rep) == list(SamplerDataset(DS, 50, seed=3))
    assert set(with_rep) <= set(range(10))
    without = list(SamplerDataset(DS, 25, replacement=False, seed=3))
    assert sorted(without[:10]) == list(range(10)) and sorted(without[10:20]) == list(range(10))
    assert len(without) == 25
    assert len(SamplerDataset(DS, 0)) == 0
    with pytest.raises(ValueError, match="empty dataset"):
        SamplerDataset(InMemoryDataset([]), 3)


def test_selection():
    ds = SelectionDataset(DS, [9, 0, -1, 3])
    assert list(ds) == [9, 0, 9, 3] and ds.get_many([-1, 0]) == [3, 9]
    with pytest.raises(IndexError, match="index 10 out of range"):
        SelectionDataset(DS, [10])


def test_windows():
    ds = WindowsDataset(InMemoryDataset("abcde"), 3)
    assert len(ds) == 3 and list(ds) == [list("abc"), list("bcd"), list("cde")]
    assert len(WindowsDataset(InMemoryDataset("ab"), 3)) == 0
    with pytest.raises(ValueError, match="at least 1"):
        WindowsDataset(DS, 0)


def test_composed():
    ds = ComposedDataset([InMemoryDataset("ab"), InMemoryDataset(""), InMemoryDataset("cde")])
    assert len(ds) == 5 and list(ds) == list("abcde") and ds[-1] == "e" and ds[2] == "c"
    assert ds.get_many([4, 0]) == ["e", "a"]
    assert len(ComposedDataset([])) == 0


def test_train_valid_split():
    train, valid = train_valid_split(DS, 0.3, seed=7)
    assert len(train) == 7 and len(valid) == 3
    assert sorted(list(train) + list(valid)) == list(range(10))
    again = train_valid_split(DS, 0.3, seed=7)
    assert list(again[0]) == list(train) and list(again[1]) == list(valid)
    with pytest.raises(ValueError, match="valid_fraction must be in"):
        train_valid_split(DS, 1.5)
