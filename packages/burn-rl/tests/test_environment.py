"""The gymnasium adapter and its typed errors."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from burn_rl.environment import Environment, GymEnvironment, make
from burn_rl.errors import ActionSpaceError, UnknownEnvironmentError


def test_vector_steps_and_autoreset_match_gymnasium() -> None:
    env = make("CartPole-v1", num_envs=3)
    assert isinstance(env, Environment)
    reference = [gym.make("CartPole-v1") for _ in range(3)]
    obs = env.reset(seed=7)
    assert obs.shape == (3, 4) and obs.dtype == np.float32
    ref_obs = np.stack([e.reset(seed=7 + i)[0] for i, e in enumerate(reference)])
    np.testing.assert_array_equal(obs, ref_obs)
    ended = 0
    for _ in range(60):
        action = np.zeros(3, np.int64)  # always left: episodes end quickly
        result = env.step(action)
        assert result.reward.shape == (3,) and result.terminated.dtype == bool
        for i, e in enumerate(reference):
            nxt, reward, term, trunc, _ = e.step(0)
            np.testing.assert_array_equal(result.next_observation[i], nxt)
            assert result.terminated[i] == term and result.truncated[i] == trunc
            if term or trunc:
                ended += 1
                assert not np.array_equal(result.observation[i], nxt)  # reset in the same step
                e.reset(seed=None)
                reference[i] = e
    assert ended >= 3
    env.close()


def test_action_outside_the_space() -> None:
    env = make("CartPole-v1", num_envs=2)
    env.reset(seed=0)
    with pytest.raises(ActionSpaceError, match=r"action=\[0, 2\].*Discrete\(2\)"):
        env.step(np.array([0, 2]))
    with pytest.raises(ActionSpaceError, match=r"shape=\(3,\)"):
        env.step(np.array([0, 1, 1]))
    pendulum = GymEnvironment("Pendulum-v1")
    pendulum.reset(seed=0)
    with pytest.raises(ActionSpaceError, match=r"action=\[\[3.5\]\]"):
        pendulum.step(np.array([[3.5]], np.float32))


def test_unknown_gymnasium_id() -> None:
    with pytest.raises(UnknownEnvironmentError, match=r"id=CartPol-v9"):
        make("CartPol-v9")
    with pytest.raises(ValueError, match="num_envs"):
        make("CartPole-v1", num_envs=0)
