"""`FakeDataset`: seeded random arrays, for tests."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import DTypeLike

from burn_dataset.dataset import Dataset


class FakeDataset(Dataset[np.ndarray]):
    """``size`` random arrays of ``shape``; item ``i`` depends only on ``(seed, i)``.

    Floating dtypes are uniform in ``[0, 1)``, integer dtypes uniform over their range, bool
    dtypes fair coin flips.

    Args:
        size: number of items.
        shape: shape of each item.
        dtype: numpy dtype of each item.
        seed: RNG seed.
    """

    def __init__(
        self, size: int, shape: Sequence[int], dtype: DTypeLike = np.float32, seed: int = 0
    ) -> None:
        if size < 0:
            raise ValueError(f"size must be non-negative, got {size}")
        self.size = size
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.seed = seed

    def __len__(self) -> int:
        return self.size

    def _get(self, index: int) -> np.ndarray:
        rng = np.random.default_rng([self.seed, index])
        if self.dtype == np.bool_:
            return rng.integers(0, 2, size=self.shape).astype(np.bool_)
        if np.issubdtype(self.dtype, np.integer):
            info = np.iinfo(self.dtype)
            return rng.integers(info.min, info.max, size=self.shape, dtype=self.dtype,
                                endpoint=True)
        return rng.random(size=self.shape).astype(self.dtype)
