"""`ShuffledDataset`: a seeded permutation of a dataset."""

from __future__ import annotations

from typing import TypeVar

import numpy as np

from burn_dataset.dataset import Dataset
from burn_dataset.transform.selection import SelectionDataset

T = TypeVar("T")


class ShuffledDataset(SelectionDataset[T]):
    """Every item of ``dataset`` exactly once, in an order fixed by ``seed``.

    Args:
        dataset: the source dataset.
        seed: seed of the permutation; the same seed gives the same order.
    """

    def __init__(self, dataset: Dataset[T], seed: int) -> None:
        super().__init__(dataset, np.random.default_rng(seed).permutation(len(dataset)))
