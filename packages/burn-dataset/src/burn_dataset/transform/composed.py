"""`ComposedDataset`: several datasets concatenated end to end."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from typing import TypeVar

from burn_dataset.dataset import Dataset

T = TypeVar("T")


class ComposedDataset(Dataset[T]):
    """The items of ``datasets[0]``, then of ``datasets[1]``, and so on.

    Args:
        datasets: the datasets to concatenate.
    """

    def __init__(self, datasets: Sequence[Dataset[T]]) -> None:
        self.datasets = list(datasets)
        self._ends = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def _get(self, index: int) -> T:
        k = bisect.bisect_right(self._ends, index)
        start = self._ends[k - 1] if k else 0
        return self.datasets[k][index - start]
