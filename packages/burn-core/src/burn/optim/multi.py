"""Multi-tensor updates on the NumPy backend: small params updated together.

A model's small params (biases, norms, small layers) cost an optimizer more in per-call overhead
than in arithmetic: each stage of an update is one ufunc call per param. Like torch's foreach
(multi-tensor apply), `SmallParams` updates every small NumPy param of one dtype and one state
layout with one call per stage, over flat buffers: the gradients and params are concatenated,
the state of the group lives in one flat buffer per state key (each param's state entry is a
view of it, so `state_dict` and the tensor-op path see per-param tensors), and the new param
values are views of one flat result. The arithmetic is elementwise, so each value is computed by
the same float operations as one param at a time: trajectories are identical bit for bit.

A group is kept while its members and their state stay the same objects; anything else (a param
joins or leaves, a loaded state, a state entry the update replaced) builds it again, copying the
current state into new flat buffers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from burn.frontend.tensor import Tensor

#: Params of at most this many elements are updated in groups (larger ones alone: their
#: arithmetic outweighs the per-call overhead, and concatenating them would cost a pass).
SMALL_PARAM = 1 << 15

#: One member: (param id, its inner value, its gradient array, its state).
Member = tuple[int, Tensor, np.ndarray, dict[str, Any]]
#: The update of flat arrays: (param, grad, state arrays and counters) -> new param.
Update = Callable[[np.ndarray, np.ndarray, dict[str, Any]], np.ndarray]


@dataclass
class _Group:
    """The flat state buffers of one group and the per-param views handed out."""

    flat: dict[str, np.ndarray]
    views: dict[str, list[np.ndarray]]


def layout(state: dict[str, Any]) -> tuple[Any, ...]:
    """What params must share (with their dtype) to be updated together: their state's array
    keys and counter values."""
    return tuple((k, None if isinstance(v, Tensor) else v) for k, v in state.items())


class SmallParams:
    """The groups of one optimizer, by member ids; those of the last step are kept."""

    def __init__(self) -> None:
        self._groups: dict[tuple[int, ...], _Group] = {}
        self._last: dict[tuple[int, ...], _Group] = {}

    def begin(self) -> None:
        """Start a step: the groups of the last step may be reused, older ones are dropped."""
        self._last, self._groups = self._groups, {}

    def update(self, members: list[Member], update: Update) -> list[np.ndarray]:
        """Run `update` once over the concatenated `members` (one dtype, one state `layout`)
        and write their state back.

        Args:
            members: the params of the group, in a stable order.
            update: the optimizer's update of flat arrays (state arrays overwritten in place or
                replaced, counters advanced in the dict).
        Returns:
            The new values of each member, views of one flat array.
        """
        states = [m[3] for m in members]
        keys = [k for k, v in states[0].items() if isinstance(v, Tensor)]
        ids = tuple(m[0] for m in members)
        group = self._last.get(ids)
        if group is None or set(group.views) != set(keys) or any(
                states[i][k]._prim is not group.views[k][i]
                for k in keys for i in range(len(members))):
            group = _build(members, keys)
        self._groups[ids] = group
        arrays: dict[str, Any] = {k: v for k, v in states[0].items() if not isinstance(v, Tensor)}
        arrays.update(group.flat)
        new = update(_concat([m[1]._prim for m in members]), _concat([m[2] for m in members]),
                     arrays)
        for key, value in arrays.items():
            if not isinstance(value, np.ndarray):
                for state in states:
                    state[key] = value
            elif value is not group.flat.get(key):  # a buffer the update made: views of it
                group.flat[key] = value
                group.views[key] = _split(value, members)
                for state, view, m in zip(states, group.views[key], members, strict=True):
                    state[key] = m[1]._wrap(view)
        return _split(new, members)


def _build(members: list[Member], keys: list[str]) -> _Group:
    """New flat buffers holding the members' current state, and the members' state entries
    made views of them."""
    group = _Group({}, {})
    for key in keys:
        flat = _concat([m[3][key]._prim for m in members])
        group.flat[key] = flat
        group.views[key] = _split(flat, members)
        for m, view in zip(members, group.views[key], strict=True):
            m[3][key] = m[1]._wrap(view)
    return group


def _concat(arrays: list[np.ndarray]) -> np.ndarray:
    """The arrays' values, flattened one after another into a new array."""
    return np.concatenate([a.reshape(-1) for a in arrays])


def _split(flat: np.ndarray, members: list[Member]) -> list[np.ndarray]:
    """Views of `flat` shaped as each member's param."""
    out, start = [], 0
    for m in members:
        size = m[2].size
        out.append(flat[start:start + size].reshape(m[2].shape))
        start += size
    return out
