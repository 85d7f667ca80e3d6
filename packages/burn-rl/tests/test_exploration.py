"""Exploration schedules and action choices."""

from __future__ import annotations

import math

import numpy as np
import pytest

from burn.errors import ValueRangeError
from burn_rl.exploration import (
    ExponentialSchedule,
    LinearSchedule,
    boltzmann,
    epsilon_greedy,
)


def test_linear_schedule_values() -> None:
    s = LinearSchedule(1.0, 0.1, 100)
    got = [s.value(t) for t in (0, 25, 50, 100, 1000)]
    np.testing.assert_allclose(got, [1.0, 0.775, 0.55, 0.1, 0.1])


def test_exponential_schedule_values() -> None:
    s = ExponentialSchedule(1.0, 0.05, 200.0)
    for t in (0, 200, 1000):
        assert s.value(t) == pytest.approx(0.05 + 0.95 * math.exp(-t / 200.0))
    assert s.value(10**6) == pytest.approx(0.05)


def test_schedule_bad_input() -> None:
    with pytest.raises(ValueRangeError, match="duration"):
        LinearSchedule(duration=0)
    with pytest.raises(ValueRangeError, match="decay"):
        ExponentialSchedule(decay=0)


def test_epsilon_greedy_frequencies() -> None:
    rng = np.random.default_rng(0)
    q = np.array([0.0, 3.0, 1.0, 2.0])
    asked: list[int] = []

    def q_values(obs: np.ndarray) -> np.ndarray:
        asked.append(len(obs))
        return np.tile(q, (len(obs), 1)) + obs[:, :1]

    obs = np.zeros((20_000, 2), np.float32)
    actions = epsilon_greedy(obs, q_values, 4, 0.2, rng)
    assert actions.shape == (20_000,) and actions.dtype == np.int64
    freq = np.bincount(actions, minlength=4) / len(actions)
    np.testing.assert_allclose(freq, [0.05, 0.85, 0.05, 0.05], atol=0.01)
    # only the greedy rows are evaluated: about 80% of them, and none when all explore
    assert abs(asked[0] - 16_000) < 400
    np.testing.assert_array_equal(epsilon_greedy(obs[:5], q_values, 4, 0.0, rng), [1] * 5)
    epsilon_greedy(obs[:50], q_values, 4, 1.0, rng)
    assert asked == [asked[0], 5]


def test_boltzmann_matches_softmax() -> None:
    rng = np.random.default_rng(1)
    q = np.tile(np.array([[1.0, 2.0, 0.0]]), (30_000, 1))
    freq = np.bincount(boltzmann(q, 0.5, rng), minlength=3) / len(q)
    p = np.exp(q[0] / 0.5) / np.exp(q[0] / 0.5).sum()
    np.testing.assert_allclose(freq, p, atol=0.01)
    with pytest.raises(ValueRangeError, match="temperature"):
        boltzmann(q, 0.0, rng)
