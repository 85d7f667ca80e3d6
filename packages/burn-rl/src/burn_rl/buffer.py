"""Transitions and transition buffers (after Burn's `TransitionBuffer`): preallocated arrays,
written as a ring, sampled as batched tensors on a device. Uniform and prioritised replay."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

import burn
from burn.errors import ValueRangeError
from burn_rl.errors import BufferNotReadyError, CheckpointError, ObservationShapeError
from burn_rl.sum_tree import SumTree


@dataclass(frozen=True)
class Transition:
    """A batch of steps (leading dim: the steps), as stored in a buffer.

    Attributes:
        observation: [n, *obs_shape].
        action: [n, *action_shape].
        reward: [n] float32: the (n-step discounted) reward.
        next_observation: [n, *obs_shape], the observation to bootstrap from.
        discount: [n] float32: the factor of the bootstrapped value (gamma^k, 0 at a terminal
            state).
    """

    observation: np.ndarray
    action: np.ndarray
    reward: np.ndarray
    next_observation: np.ndarray
    discount: np.ndarray


@dataclass(frozen=True)
class TransitionBatch:
    """A sampled batch as tensors on one device.

    Attributes:
        observation, action, reward, next_observation, discount: as in `Transition` (actions
            as int64 for discrete spaces, float32 otherwise).
        weight: [n] importance-sampling weights (ones for uniform sampling).
        index: the sampled slots (numpy int64), for `update_priorities`.
    """

    observation: burn.Tensor
    action: burn.Tensor
    reward: burn.Tensor
    next_observation: burn.Tensor
    discount: burn.Tensor
    weight: burn.Tensor
    index: np.ndarray


_FIELDS = [f.name for f in fields(Transition)]


class ReplayBuffer:
    """A ring buffer of `capacity` transitions, sampled uniformly.

    Args:
        capacity: transitions kept (the oldest are overwritten).
        observation_shape: the shape of one observation.
        action_shape: the shape of one action (() for discrete actions).
        observation_dtype: the stored observation dtype.
        action_dtype: the stored action dtype (int64 for discrete actions).
        seed: seed of the sampling generator.
    """

    def __init__(self, capacity: int, observation_shape: tuple[int, ...],
                 action_shape: tuple[int, ...] = (), *,
                 observation_dtype: np.dtype[Any] | type = np.float32,
                 action_dtype: np.dtype[Any] | type = np.int64, seed: int | None = None) -> None:
        if capacity < 1:
            raise ValueRangeError(type(self).__name__, "capacity must be >= 1", capacity=capacity)
        self.capacity = capacity
        self._arrays = {
            "observation": np.zeros((capacity, *observation_shape), observation_dtype),
            "action": np.zeros((capacity, *action_shape), action_dtype),
            "reward": np.zeros(capacity, np.float32),
            "next_observation": np.zeros((capacity, *observation_shape), observation_dtype),
            "discount": np.zeros(capacity, np.float32),
        }
        self._next = 0
        self._size = 0
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self._size

    def add(self, transition: Transition) -> np.ndarray:
        """Store a batch of transitions (overwriting the oldest when full).

        Returns:
            The slots written.
        Raises:
            ObservationShapeError: when a field's shape does not fit the buffer.
        """
        n = len(transition.reward)
        for name in _FIELDS:
            value, store = getattr(transition, name), self._arrays[name]
            if np.shape(value) != (n, *store.shape[1:]):
                raise ObservationShapeError(f"{type(self).__name__}.add",
                                            f"{name} does not fit the buffer",
                                            got=np.shape(value), expected=(n, *store.shape[1:]))
        slots = (self._next + np.arange(n)) % self.capacity
        for name in _FIELDS:
            self._arrays[name][slots] = getattr(transition, name)
        self._next = int((self._next + n) % self.capacity)
        self._size = min(self._size + n, self.capacity)
        return slots

    def _check_ready(self, batch_size: int) -> None:
        if batch_size < 1 or self._size < batch_size:
            raise BufferNotReadyError(f"{type(self).__name__}.sample",
                                      "the buffer holds fewer transitions than a batch",
                                      batch_size=batch_size, stored=self._size)

    def _indices(self, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
        """The sampled slots and their importance weights."""
        return (self.rng.integers(0, self._size, batch_size),
                np.ones(batch_size, np.float32))

    def sample(self, batch_size: int, device: burn.Device | str | None = None
               ) -> TransitionBatch:
        """A batch of `batch_size` transitions as tensors on `device`.

        Raises:
            BufferNotReadyError: when fewer than `batch_size` transitions are stored.
        """
        self._check_ready(batch_size)
        index, weight = self._indices(batch_size)
        a = self._arrays
        tensors = {name: burn.tensor(a[name][index], device=device) for name in _FIELDS}
        return TransitionBatch(**tensors, weight=burn.tensor(weight, device=device), index=index)

    # --- checkpoints ---
    def state_dict(self) -> dict[str, Any]:
        """The stored transitions, the write position and the sampling RNG state."""
        return {"class": type(self).__name__, "next": self._next, "size": self._size,
                "rng": self.rng.bit_generator.state,
                "arrays": {k: v[:self._size].copy() for k, v in self._arrays.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore `state_dict()`'s result.

        Raises:
            CheckpointError: when it comes from another buffer class or does not fit.
        """
        if state.get("class") != type(self).__name__:
            raise CheckpointError(f"{type(self).__name__}.load_state_dict",
                                  "state of another buffer", got=state.get("class"))
        size = int(state["size"])
        for name, store in self._arrays.items():
            saved = np.asarray(state["arrays"][name])
            if size > self.capacity or saved.shape != (size, *store.shape[1:]):
                raise CheckpointError(f"{type(self).__name__}.load_state_dict",
                                      f"saved {name} does not fit the buffer",
                                      saved=saved.shape, buffer=store.shape)
        for name, store in self._arrays.items():
            store[:size] = state["arrays"][name]
        self._next, self._size = int(state["next"]), size
        self.rng.bit_generator.state = state["rng"]


class PrioritizedReplayBuffer(ReplayBuffer):
    """Proportional prioritised replay (Schaul et al. 2016) over a `SumTree`: slot i is
    sampled with probability p_i^alpha / sum p^alpha and weighted by
    (N * P(i))^-beta / max weight. New transitions get the highest priority seen so far.

    Args:
        capacity, observation_shape, action_shape, observation_dtype, action_dtype, seed:
            as `ReplayBuffer`.
        alpha: how much prioritisation is used (0: uniform).
        beta: importance-sampling correction exponent (1: full correction).
        epsilon: added to |TD error| so no priority is zero.
    """

    def __init__(self, capacity: int, observation_shape: tuple[int, ...],
                 action_shape: tuple[int, ...] = (), *, alpha: float = 0.6, beta: float = 0.4,
                 epsilon: float = 1e-6, **kwargs: Any) -> None:
        super().__init__(capacity, observation_shape, action_shape, **kwargs)
        if alpha < 0 or not 0 <= beta <= 1:
            raise ValueRangeError("PrioritizedReplayBuffer", "need alpha >= 0, 0 <= beta <= 1",
                                  alpha=alpha, beta=beta)
        self.alpha, self.beta, self.epsilon = alpha, beta, epsilon
        self.tree = SumTree(capacity)
        self._max_priority = 1.0

    def add(self, transition: Transition) -> np.ndarray:
        slots = super().add(transition)
        self.tree.update(slots, self._max_priority ** self.alpha)
        return slots

    def _indices(self, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
        total = self.tree.total
        # stratified: one draw in each of batch_size equal segments of the total mass
        edges = np.arange(batch_size) * (total / batch_size)
        mass = edges + self.rng.random(batch_size) * (total / batch_size)
        index = np.minimum(self.tree.find(np.minimum(mass, np.nextafter(total, 0))),
                           self._size - 1)
        probability = self.tree[index] / total
        weight = (self._size * probability) ** -self.beta
        return index, (weight / weight.max()).astype(np.float32)

    def update_priorities(self, index: np.ndarray, td_error: np.ndarray) -> None:
        """Set the priorities of sampled slots from their new TD errors.

        Raises:
            ObservationShapeError: when `index` and `td_error` differ in shape.
        """
        td_error = np.abs(np.asarray(td_error, np.float64)) + self.epsilon
        if td_error.shape != np.shape(index):
            raise ObservationShapeError("PrioritizedReplayBuffer.update_priorities",
                                        "one TD error per sampled slot", index=np.shape(index),
                                        td_error=td_error.shape)
        self._max_priority = max(self._max_priority, float(td_error.max(initial=0.0)))
        self.tree.update(index, td_error ** self.alpha)

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["priorities"] = self.tree[np.arange(self._size)]
        state["max_priority"] = self._max_priority
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.tree = SumTree(self.capacity)
        self.tree.update(np.arange(self._size), np.asarray(state["priorities"]))
        self._max_priority = float(state["max_priority"])


class NStepAccumulator:
    """Turns the 1-step transitions of `num_envs` environments into n-step ones:
    reward = sum_k gamma^k r_{t+k}, discount = gamma^n (0 when the episode terminated within
    the n steps; an episode cut by truncation bootstraps from its last observation).

    Args:
        n: steps (1 passes transitions through with discount gamma * (1 - terminated)).
        gamma: the discount factor.
        num_envs: environments pushed together.
    """

    def __init__(self, n: int, gamma: float, num_envs: int) -> None:
        if n < 1:
            raise ValueRangeError("NStepAccumulator", "n must be >= 1", n=n)
        self.n, self.gamma, self.num_envs = n, gamma, num_envs
        self._pending: list[list[tuple[Any, ...]]] = [[] for _ in range(num_envs)]

    def push(self, observation: np.ndarray, action: np.ndarray, reward: np.ndarray,
             next_observation: np.ndarray, terminated: np.ndarray,
             truncated: np.ndarray) -> Transition | None:
        """Add one step of every environment; returns the transitions completed by it."""
        if self.n == 1:
            return Transition(observation, action, np.asarray(reward, np.float32),
                              next_observation,
                              (self.gamma * (1.0 - terminated)).astype(np.float32))
        out: list[tuple[Any, ...]] = []
        for i in range(self.num_envs):
            queue = self._pending[i]
            queue.append((observation[i], action[i], float(reward[i])))
            ended = bool(terminated[i] or truncated[i])
            while queue and (len(queue) == self.n or ended):
                rewards = [step[2] for step in queue]
                ret = sum(r * self.gamma ** k for k, r in enumerate(rewards))
                discount = 0.0 if terminated[i] else self.gamma ** len(rewards)
                out.append((queue[0][0], queue[0][1], ret, next_observation[i], discount))
                queue.pop(0)
                if not ended:
                    break
        if not out:
            return None
        obs, act, ret, nxt, disc = zip(*out, strict=True)
        return Transition(np.stack(obs), np.stack(act), np.asarray(ret, np.float32),
                          np.stack(nxt), np.asarray(disc, np.float32))
