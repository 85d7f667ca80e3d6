"""The `Dataset` abstract base class: a sized, indexable, iterable collection of items."""

from __future__ import annotations

import operator
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from typing import Generic, SupportsIndex, TypeVar

T_co = TypeVar("T_co", covariant=True)


def normalize_index(index: SupportsIndex, length: int) -> int:
    """Map a possibly negative index into ``[0, length)``.

    Args:
        index: an integer-like index; negative values count from the end.
        length: the length of the indexed collection.

    Returns:
        The non-negative index.

    Raises:
        IndexError: when the index is out of range.
        TypeError: when the index is not integer-like.
    """
    i = operator.index(index)
    j = i + length if i < 0 else i
    if not 0 <= j < length:
        raise IndexError(f"index {i} out of range for dataset of length {length}")
    return j


class Dataset(ABC, Generic[T_co]):
    """A random-access collection of items, after Burn's ``Dataset`` trait.

    Subclasses implement ``__len__`` and ``_get`` (which receives an index already checked and
    made non-negative); they may override ``_get_many`` to fetch several items at once.
    """

    @abstractmethod
    def __len__(self) -> int:
        """Number of items."""

    @abstractmethod
    def _get(self, index: int) -> T_co:
        """Item at ``index``, where ``0 <= index < len(self)``."""

    def _get_many(self, indices: list[int]) -> list[T_co]:
        """Items at already-normalized ``indices``; override to batch or parallelize."""
        return [self._get(i) for i in indices]

    def __getitem__(self, index: SupportsIndex) -> T_co:
        """Item at ``index`` (negative counts from the end); IndexError past either end."""
        return self._get(normalize_index(index, len(self)))

    def get(self, index: SupportsIndex) -> T_co | None:
        """Item at ``index``, or None when out of range (Burn's ``Dataset::get``)."""
        try:
            i = normalize_index(index, len(self))
        except IndexError:
            return None
        return self._get(i)

    def get_many(self, indices: Iterable[SupportsIndex]) -> list[T_co]:
        """Items at ``indices``, in order.

        Args:
            indices: integer-like indices; negative values count from the end.

        Returns:
            The list of items.
        """
        n = len(self)
        return self._get_many([normalize_index(i, n) for i in indices])

    def __iter__(self) -> Iterator[T_co]:
        for i in range(len(self)):
            yield self._get(i)

    def is_empty(self) -> bool:
        """True when the dataset holds no item."""
        return len(self) == 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(len={len(self)})"
