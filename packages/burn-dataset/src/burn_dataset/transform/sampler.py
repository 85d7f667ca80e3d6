"""`SamplerDataset`: a fixed number of seeded random draws from a dataset."""

from __future__ import annotations

from typing import TypeVar

import numpy as np

from burn_dataset.dataset import Dataset
from burn_dataset.transform.selection import SelectionDataset

T = TypeVar("T")


def sample_indices(length: int, size: int, replacement: bool, seed: int) -> np.ndarray:
    """Draw ``size`` indices from ``range(length)``.

    Without replacement, indices come from successive permutations, so every index appears
    once before any appears twice (Burn's behaviour when ``size > length``).

    Args:
        length: number of items to draw from.
        size: number of draws.
        replacement: draw independently (True) or from successive permutations (False).
        seed: RNG seed.

    Returns:
        An int64 array of ``size`` indices.
    """
    if size < 0:
        raise ValueError(f"size must be non-negative, got {size}")
    if length == 0 and size > 0:
        raise ValueError("cannot sample from an empty dataset")
    rng = np.random.default_rng(seed)
    if replacement:
        return rng.integers(0, length, size=size, dtype=np.int64)
    rounds = -(-size // length) if length else 0
    perms = [rng.permutation(length) for _ in range(rounds)]
    return np.concatenate(perms)[:size] if perms else np.empty(0, dtype=np.int64)


class SamplerDataset(SelectionDataset[T]):
    """``size`` items drawn from ``dataset``, with or without replacement, fixed by ``seed``.

    Args:
        dataset: the source dataset.
        size: number of items of the sampled dataset.
        replacement: sample with replacement (default) or without.
        seed: RNG seed.
    """

    def __init__(
        self, dataset: Dataset[T], size: int, *, replacement: bool = True, seed: int = 0
    ) -> None:
        super().__init__(dataset, sample_indices(len(dataset), size, replacement, seed))
