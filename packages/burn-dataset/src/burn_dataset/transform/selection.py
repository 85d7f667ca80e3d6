"""`SelectionDataset`: the items of a dataset at explicit indices."""

from __future__ import annotations

from collections.abc import Iterable
from typing import SupportsIndex, TypeVar

import numpy as np

from burn_dataset.dataset import Dataset, normalize_index

T = TypeVar("T")


class SelectionDataset(Dataset[T]):
    """A view of ``dataset`` through a list of indices (repeats allowed).

    Args:
        dataset: the source dataset.
        indices: indices into ``dataset``; negative values count from the end.

    Raises:
        IndexError: when an index is out of range of ``dataset``.
    """

    def __init__(self, dataset: Dataset[T], indices: Iterable[SupportsIndex]) -> None:
        n = len(dataset)
        self.dataset = dataset
        self.indices = np.array([normalize_index(i, n) for i in indices], dtype=np.int64)

    def __len__(self) -> int:
        return len(self.indices)

    def _get(self, index: int) -> T:
        return self.dataset[int(self.indices[index])]

    def _get_many(self, indices: list[int]) -> list[T]:
        return self.dataset.get_many(self.indices[indices].tolist())
