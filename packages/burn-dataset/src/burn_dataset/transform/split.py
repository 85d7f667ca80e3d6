"""`train_valid_split`: a seeded random split into train and validation views."""

from __future__ import annotations

from typing import TypeVar

import numpy as np

from burn_dataset.dataset import Dataset
from burn_dataset.transform.selection import SelectionDataset

T = TypeVar("T")


def train_valid_split(
    dataset: Dataset[T], valid_fraction: float, seed: int = 0
) -> tuple[SelectionDataset[T], SelectionDataset[T]]:
    """Shuffle ``dataset`` with ``seed`` and cut it into disjoint train and validation views.

    Args:
        dataset: the dataset to split.
        valid_fraction: share of items in the validation view, in ``[0, 1]``; rounded.
        seed: seed of the shuffle.

    Returns:
        ``(train, valid)``; together they hold every item exactly once.
    """
    if not 0.0 <= valid_fraction <= 1.0:
        raise ValueError(f"valid_fraction must be in [0, 1], got {valid_fraction}")
    perm = np.random.default_rng(seed).permutation(len(dataset))
    n_valid = round(len(dataset) * valid_fraction)
    cut = len(dataset) - n_valid
    return SelectionDataset(dataset, perm[:cut]), SelectionDataset(dataset, perm[cut:])
