"""The `Environment` protocol (after Burn's `Environment` trait) and the gymnasium adapter.

Environments here are always batched: `reset()` returns `[num_envs, *obs_shape]` and `step()`
takes `[num_envs, *action_shape]`. A sub-environment whose episode ends is reset in the same
step (gymnasium's "same step" autoreset): the step result's `observation` is the first one of
its next episode and `next_observation` the last one of the finished episode, which is what
bootstrapping needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from burn_rl.errors import ActionSpaceError, UnknownEnvironmentError


@dataclass(frozen=True)
class StepResult:
    """What one step of every sub-environment returns (arrays with a leading `num_envs` dim).

    Attributes:
        observation: the observation to act on next (after an autoreset where an episode
            ended).
        next_observation: the observation the action led to (differs from `observation` only
            where an episode ended).
        reward: float rewards, [num_envs].
        terminated: the episode reached a terminal state, [num_envs] bool.
        truncated: the episode was cut (time limit), [num_envs] bool.
    """

    observation: np.ndarray
    next_observation: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray

    @property
    def done(self) -> np.ndarray:
        """Where an episode ended (terminated or truncated)."""
        return self.terminated | self.truncated


@runtime_checkable
class Environment(Protocol):
    """A batch of `num_envs` environments of one kind.

    Attributes:
        num_envs: sub-environments stepped together.
        observation_space: the space of one sub-environment's observation.
        action_space: the space of one sub-environment's action.
    """

    num_envs: int
    observation_space: spaces.Space[Any]
    action_space: spaces.Space[Any]

    def reset(self, seed: int | None = None) -> np.ndarray:
        """Start new episodes everywhere; returns the observations [num_envs, *obs_shape]."""
        ...

    def step(self, action: np.ndarray) -> StepResult:
        """Apply one action per sub-environment."""
        ...

    def close(self) -> None:
        """Release the environments."""
        ...


def check_action(op: str, action: np.ndarray, space: spaces.Space[Any], num_envs: int) -> None:
    """Raise unless `action` holds one valid action of `space` per sub-environment.

    Raises:
        ActionSpaceError: naming the action, its shape and dtype, and the space.
    """
    if isinstance(space, spaces.Discrete):
        ok = (action.shape == (num_envs,) and action.dtype.kind in "iu"
              and bool(np.all((action >= space.start) & (action < space.start + space.n))))
    elif isinstance(space, spaces.Box):
        ok = (action.shape == (num_envs, *space.shape) and action.dtype.kind == "f"
              and bool(np.all((action >= space.low) & (action <= space.high))))
    else:
        ok = action.shape[:1] == (num_envs,) and all(space.contains(a) for a in action)
    if not ok:
        shown = action.tolist() if action.size <= 16 else f"array of {action.size} values"
        raise ActionSpaceError(op, "action outside the action space", action=shown,
                               shape=action.shape, dtype=action.dtype,
                               expected=f"{num_envs} action(s) of {space}")


class GymEnvironment:
    """Any registered gymnasium id (or a list of env factories) as a batched `Environment`.

    Args:
        env_id: a registered gymnasium id, e.g. "CartPole-v1".
        num_envs: sub-environments, stepped in this thread (gymnasium's SyncVectorEnv).
        validate: check every action against the action space (a typed error instead of
            gymnasium's assertion or silent clipping).
        **kwargs: passed to `gymnasium.make` for every sub-environment.
    Raises:
        UnknownEnvironmentError: when `env_id` is not registered.
        ValueError: when `num_envs` < 1.
    """

    def __init__(self, env_id: str, num_envs: int = 1, *, validate: bool = True,
                 **kwargs: Any) -> None:
        if num_envs < 1:
            raise ValueError(f"GymEnvironment: num_envs must be >= 1, got {num_envs}")
        if env_id not in gym.registry:
            close = [name for name in gym.registry if name.split("-")[0].lower()
                     == env_id.split("-")[0].lower()]
            raise UnknownEnvironmentError("GymEnvironment", "gymnasium id is not registered",
                                          id=env_id, similar=close[:5] or "none")
        self.env_id = env_id
        self.num_envs = num_envs
        self.validate = validate
        self._env = gym.vector.SyncVectorEnv(
            [lambda: gym.make(env_id, **kwargs) for _ in range(num_envs)],
            autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
        self.observation_space = self._env.single_observation_space
        self.action_space = self._env.single_action_space

    def reset(self, seed: int | None = None) -> np.ndarray:
        """Start new episodes; sub-environment i is seeded `seed + i` (when a seed is given)."""
        observation, _ = self._env.reset(seed=seed)
        return observation

    def step(self, action: np.ndarray) -> StepResult:
        """Step every sub-environment with its action.

        Raises:
            ActionSpaceError: an action outside the action space (when `validate`).
        """
        action = np.asarray(action)
        if self.validate:
            check_action(f"{self.env_id}.step", action, self.action_space, self.num_envs)
        observation, reward, terminated, truncated, info = self._env.step(action)
        next_observation = observation
        ended = info.get("_final_obs")
        if ended is not None and ended.any():
            next_observation = observation.copy()
            for i in np.flatnonzero(ended):
                next_observation[i] = info["final_obs"][i]
        return StepResult(observation, next_observation, np.asarray(reward, np.float32),
                          np.asarray(terminated, bool), np.asarray(truncated, bool))

    def close(self) -> None:
        """Close the sub-environments."""
        self._env.close()

    def __repr__(self) -> str:
        return f"GymEnvironment({self.env_id!r}, num_envs={self.num_envs})"


def make(env_id: str, num_envs: int = 1, **kwargs: Any) -> GymEnvironment:
    """`GymEnvironment(env_id, num_envs, **kwargs)`: a batched environment for a gymnasium id."""
    return GymEnvironment(env_id, num_envs, **kwargs)
