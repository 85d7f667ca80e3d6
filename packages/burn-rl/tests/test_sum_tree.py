"""SumTree against numpy prefix sums."""

from __future__ import annotations

import numpy as np
import pytest

from burn.errors import ValueRangeError
from burn_rl.sum_tree import SumTree


@pytest.mark.parametrize("capacity", [1, 5, 8, 13])
def test_find_matches_searchsorted(capacity: int) -> None:
    rng = np.random.default_rng(capacity)
    priorities = rng.random(capacity) * 3
    priorities[rng.random(capacity) < 0.3] = 0.0  # empty slots are never found
    priorities[0] = max(priorities[0], 0.5)
    tree = SumTree(capacity)
    tree.update(np.arange(capacity), priorities)
    np.testing.assert_allclose(tree.total, priorities.sum())
    np.testing.assert_allclose(tree[np.arange(capacity)], priorities)
    mass = rng.random(200) * priorities.sum()
    found = tree.find(mass)
    assert found.shape == mass.shape and found.dtype == np.int64
    expected = np.searchsorted(np.cumsum(priorities), mass, side="right")
    np.testing.assert_array_equal(found, expected)
    assert np.all(priorities[found] > 0)


def test_updates_keep_sums_and_last_duplicate_wins() -> None:
    tree = SumTree(6)
    tree.update([0, 1, 2, 3, 4, 5], 1.0)
    tree.update([2, 2, 4], [5.0, 7.0, 0.0])
    np.testing.assert_allclose(tree[np.arange(6)], [1, 1, 7, 1, 0, 1])
    assert tree.total == pytest.approx(11.0)


def test_bad_input() -> None:
    with pytest.raises(ValueRangeError, match="capacity"):
        SumTree(0)
    tree = SumTree(4)
    with pytest.raises(ValueRangeError, match="slot out of range"):
        tree.update([4], 1.0)
    with pytest.raises(ValueRangeError, match="finite and >= 0"):
        tree.update([1], -1.0)
