"""The Dataset base class: indexing, iteration, get_many."""

import numpy as np
import pytest

from burn_dataset import Dataset, InMemoryDataset


def test_indexing_negative_and_out_of_range():
    ds = InMemoryDataset(range(5))
    assert ds[0] == 0 and ds[-1] == 4 and ds[-5] == 0
    assert ds[np.int64(2)] == 2
    with pytest.raises(IndexError, match="index 5 out of range for dataset of length 5"):
        ds[5]
    with pytest.raises(IndexError, match="index -6"):
        ds[-6]
    with pytest.raises(TypeError):
        ds["1"]
    assert ds.get(5) is None and ds.get(-1) == 4


def test_iteration_and_get_many():
    ds = InMemoryDataset("abcde")
    assert list(ds) == list("abcde")
    assert ds.get_many([4, -5, 2, 2]) == ["e", "a", "c", "c"]
    with pytest.raises(IndexError):
        ds.get_many([0, 9])
    assert not ds.is_empty() and InMemoryDataset([]).is_empty()
    assert repr(ds) == "InMemoryDataset(len=5)"


def test_custom_subclass_only_needs_len_and_get():
    class Squares(Dataset[int]):
        def __len__(self) -> int:
            return 4

        def _get(self, index: int) -> int:
            return index * index

    assert list(Squares()) == [0, 1, 4, 9]
    assert Squares()[-1] == 9
    with pytest.raises(TypeError):
        Dataset()  # abstract
