"""`PartialDataset`: a contiguous range view of a dataset."""

from __future__ import annotations

from typing import TypeVar

from burn_dataset.dataset import Dataset

T = TypeVar("T")


class PartialDataset(Dataset[T]):
    """Items ``start`` (inclusive) to ``end`` (exclusive) of ``dataset``, without copying.

    Args:
        dataset: the source dataset.
        start: first index of the view.
        end: one past the last index; defaults to ``len(dataset)``.

    Raises:
        ValueError: unless ``0 <= start <= end <= len(dataset)``.
    """

    def __init__(self, dataset: Dataset[T], start: int, end: int | None = None) -> None:
        end = len(dataset) if end is None else end
        if not 0 <= start <= end <= len(dataset):
            raise ValueError(
                f"invalid range [{start}, {end}) for dataset of length {len(dataset)}"
            )
        self.dataset = dataset
        self.start = start
        self.end = end

    @classmethod
    def split(cls, dataset: Dataset[T], num: int) -> list[PartialDataset[T]]:
        """Cut ``dataset`` into ``num`` contiguous parts of near-equal size (the last absorbs
        the remainder), like Burn's ``PartialDataset::split``.

        Args:
            dataset: the dataset to cut.
            num: number of parts, at least 1.

        Returns:
            The parts, in order.
        """
        if num < 1:
            raise ValueError(f"num must be at least 1, got {num}")
        step = len(dataset) // num
        bounds = [i * step for i in range(num)] + [len(dataset)]
        return [cls(dataset, bounds[i], bounds[i + 1]) for i in range(num)]

    def __len__(self) -> int:
        return self.end - self.start

    def _get(self, index: int) -> T:
        return self.dataset[self.start + index]

    def _get_many(self, indices: list[int]) -> list[T]:
        return self.dataset.get_many([self.start + i for i in indices])
