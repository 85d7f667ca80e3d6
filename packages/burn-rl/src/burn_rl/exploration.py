"""Exploration: epsilon schedules (linear, exponential) and the epsilon-greedy and Boltzmann
action choices over Q-values."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from burn.errors import ValueRangeError


class Schedule(Protocol):
    """A value (epsilon, temperature) as a function of the environment step."""

    def value(self, step: int) -> float:
        """The value at `step`."""
        ...


@dataclass(frozen=True)
class LinearSchedule:
    """Goes linearly from `start` to `end` over `duration` steps, then stays at `end`
    (CleanRL's `linear_schedule`).

    Args:
        start: the value at step 0.
        end: the value from step `duration` on.
        duration: steps of the ramp (>= 1).
    """

    start: float = 1.0
    end: float = 0.05
    duration: int = 10_000

    def __post_init__(self) -> None:
        if self.duration < 1:
            raise ValueRangeError("LinearSchedule", "duration must be >= 1",
                                  duration=self.duration)

    def value(self, step: int) -> float:
        return self.start + (self.end - self.start) * min(1.0, step / self.duration)


@dataclass(frozen=True)
class ExponentialSchedule:
    """`end + (start - end) * exp(-step / decay)`.

    Args:
        start: the value at step 0.
        end: the limit.
        decay: steps per e-fold of the gap to `end` (> 0).
    """

    start: float = 1.0
    end: float = 0.05
    decay: float = 2_000.0

    def __post_init__(self) -> None:
        if self.decay <= 0:
            raise ValueRangeError("ExponentialSchedule", "decay must be > 0", decay=self.decay)

    def value(self, step: int) -> float:
        return self.end + (self.start - self.end) * math.exp(-step / self.decay)


def epsilon_greedy(observation: np.ndarray, q_values: Callable[[np.ndarray], np.ndarray],
                   n_actions: int, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Per observation, a uniform random action with probability `epsilon`, else the argmax of
    its Q-values (the first one on ties, as torch's argmax). `q_values` is only called on the
    rows that act greedily (not at all when every row explores), as CleanRL's loop.

    Args:
        observation: [n, *obs_shape].
        q_values: observations [m, *obs_shape] -> Q-values [m, n_actions].
        n_actions: the number of actions.
        epsilon: the exploration rate.
        rng: the generator of the exploration draws.
    Returns:
        int64 actions, [n].
    """
    n = len(observation)
    explore = rng.random(n) < epsilon
    actions = rng.integers(0, n_actions, n).astype(np.int64)
    if not explore.all():
        greedy = ~explore
        actions[greedy] = np.argmax(q_values(observation[greedy]), axis=1)
    return actions


def boltzmann(q_values: np.ndarray, temperature: float, rng: np.random.Generator) -> np.ndarray:
    """Per row of `q_values` [n, actions], an action drawn with probability
    softmax(q / temperature).

    Raises:
        ValueRangeError: for a temperature <= 0.
    """
    if temperature <= 0:
        raise ValueRangeError("boltzmann", "temperature must be > 0", temperature=temperature)
    z = q_values / temperature
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    u = rng.random((len(p), 1))
    return np.minimum((p.cumsum(axis=1) < u).sum(axis=1), p.shape[1] - 1).astype(np.int64)
