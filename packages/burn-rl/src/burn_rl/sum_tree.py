"""`SumTree`: a binary tree over a fixed array of priorities whose every node holds the sum of
its children, for O(log n) updates and prefix-sum searches (prioritised replay)."""

from __future__ import annotations

import numpy as np

from burn.errors import ValueRangeError


class SumTree:
    """Priorities of `capacity` slots, stored as a flat array tree (leaves at the end).

    Args:
        capacity: number of slots (>= 1).
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueRangeError("SumTree", "capacity must be >= 1", capacity=capacity)
        self.capacity = capacity
        self._leaves = 1 << (capacity - 1).bit_length()
        self._tree = np.zeros(2 * self._leaves, np.float64)

    @property
    def total(self) -> float:
        """The sum of every priority."""
        return float(self._tree[1])

    def __getitem__(self, index: np.ndarray | int) -> np.ndarray:
        """The priorities of slots `index`."""
        return self._tree[self._leaves + np.asarray(index)]

    def update(self, index: np.ndarray | int, priority: np.ndarray | float) -> None:
        """Set the priorities of slots `index` (later duplicates win), then fix the sums.

        Raises:
            ValueRangeError: for a slot out of range or a negative / non-finite priority.
        """
        index = np.atleast_1d(np.asarray(index, np.int64))
        priority = np.broadcast_to(np.asarray(priority, np.float64), index.shape)
        if index.size and (index.min() < 0 or index.max() >= self.capacity):
            raise ValueRangeError("SumTree.update", "slot out of range", index=index.tolist(),
                                  capacity=self.capacity)
        if not np.all(np.isfinite(priority) & (priority >= 0)):
            raise ValueRangeError("SumTree.update", "priorities must be finite and >= 0",
                                  priority=priority.tolist())
        nodes = index + self._leaves
        self._tree[nodes] = priority
        nodes = np.unique(nodes // 2)
        while nodes[0] >= 1:
            self._tree[nodes] = self._tree[2 * nodes] + self._tree[2 * nodes + 1]
            if nodes[0] == 1:
                break
            nodes = np.unique(nodes // 2)

    def find(self, mass: np.ndarray) -> np.ndarray:
        """For each value in `mass` (in [0, total)), the slot whose prefix-sum interval holds
        it: the smallest i with sum(priorities[:i + 1]) > mass.

        Returns:
            int64 slot indices, shaped as `mass`.
        """
        mass = np.array(mass, np.float64)
        node = np.ones(mass.shape, np.int64)
        while node[0] < self._leaves if node.size else False:
            left = 2 * node
            left_sum = self._tree[left]
            go_right = mass >= left_sum
            mass = np.where(go_right, mass - left_sum, mass)
            node = np.where(go_right, left + 1, left)
        # float rounding can walk into an empty leaf past the last filled slot
        return np.minimum(node - self._leaves, self.capacity - 1)
