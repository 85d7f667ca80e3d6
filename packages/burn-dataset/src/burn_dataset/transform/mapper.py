"""`MapperDataset`: apply a function to every item, lazily."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from burn_dataset.dataset import Dataset

I = TypeVar("I")  # noqa: E741
O = TypeVar("O")  # noqa: E741


class MapperDataset(Dataset[O], Generic[I, O]):
    """Items of ``dataset`` passed through ``fn`` on access.

    Args:
        dataset: the source dataset.
        fn: the function applied to each item.
    """

    def __init__(self, dataset: Dataset[I], fn: Callable[[I], O]) -> None:
        self.dataset = dataset
        self.fn = fn

    def __len__(self) -> int:
        return len(self.dataset)

    def _get(self, index: int) -> O:
        return self.fn(self.dataset[index])

    def _get_many(self, indices: list[int]) -> list[O]:
        return [self.fn(item) for item in self.dataset.get_many(indices)]
