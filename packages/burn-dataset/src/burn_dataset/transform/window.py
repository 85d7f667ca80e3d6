"""`WindowsDataset`: overlapping sliding windows over a dataset."""

from __future__ import annotations

from typing import TypeVar

from burn_dataset.dataset import Dataset

T = TypeVar("T")


class WindowsDataset(Dataset[list[T]]):
    """Item ``i`` is ``[dataset[i], ..., dataset[i + size - 1]]``.

    Args:
        dataset: the source dataset.
        size: window length, at least 1.
    """

    def __init__(self, dataset: Dataset[T], size: int) -> None:
        if size < 1:
            raise ValueError(f"window size must be at least 1, got {size}")
        self.dataset = dataset
        self.size = size

    def __len__(self) -> int:
        return max(0, len(self.dataset) - self.size + 1)

    def _get(self, index: int) -> list[T]:
        return self.dataset.get_many(range(index, index + self.size))
