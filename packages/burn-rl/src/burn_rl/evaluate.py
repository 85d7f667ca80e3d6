"""`evaluate`: run a policy for N episodes and report the mean and std of the return."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from burn.errors import ValueRangeError
from burn_rl.environment import make
from burn_rl.metrics import EpisodeTracker
from burn_rl.policy import Policy


@dataclass(frozen=True)
class EvalResult:
    """Returns and lengths of the evaluation episodes.

    Attributes:
        returns: one return per episode.
        lengths: one length per episode.
    """

    returns: np.ndarray
    lengths: np.ndarray

    @property
    def mean(self) -> float:
        """Mean return."""
        return float(self.returns.mean())

    @property
    def std(self) -> float:
        """Standard deviation of the return (population, ddof 0)."""
        return float(self.returns.std())


def evaluate(policy: Policy, env_id: str, episodes: int = 100, *, seed: int = 10_000,
             num_envs: int = 10, deterministic: bool = True) -> EvalResult:
    """Run `episodes` episodes of `env_id` with `policy` (batched over `num_envs` environments;
    environment i runs episodes i, i + num_envs, ... so the count is exact and unbiased by
    episode length).

    Args:
        policy: the policy (its `action(obs, deterministic)` is called with [num_envs, ...]).
        env_id: a gymnasium id.
        episodes: episodes to run (>= 1).
        seed: environment i is seeded `seed + i`.
        num_envs: environments stepped together.
        deterministic: act with the most likely action.
    Returns:
        The EvalResult.
    Raises:
        ValueRangeError: for episodes < 1. UnknownEnvironmentError: for an unknown id.
    """
    if episodes < 1:
        raise ValueRangeError("evaluate", "episodes must be >= 1", episodes=episodes)
    num_envs = min(num_envs, episodes)
    quota = np.full(num_envs, episodes // num_envs)
    quota[:episodes % num_envs] += 1
    env = make(env_id, num_envs)
    tracker = EpisodeTracker(num_envs)
    returns: list[list[float]] = [[] for _ in range(num_envs)]
    lengths: list[list[int]] = [[] for _ in range(num_envs)]
    try:
        obs = env.reset(seed=seed)
        while any(len(r) < q for r, q in zip(returns, quota, strict=True)):
            result = env.step(policy.action(obs, deterministic))
            done = result.done
            for i, (ret, length) in zip(np.flatnonzero(done), tracker.step(result.reward, done),
                                        strict=True):
                if len(returns[i]) < quota[i]:
                    returns[i].append(ret)
                    lengths[i].append(length)
            obs = result.observation
    finally:
        env.close()
    return EvalResult(np.array([r for rs in returns for r in rs]),
                      np.array([n for ns in lengths for n in ns]))
