"""The `Policy` protocol (after Burn's `Policy`): batched observations in, batched actions out."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from burn_rl.errors import ObservationShapeError


@runtime_checkable
class Policy(Protocol):
    """Chooses actions for a batch of observations.

    `forward` gives the raw outputs (Q-values, logits or Gaussian means), `action` the actions;
    both take and return numpy arrays with a leading batch dim, so a policy can serve many
    environments (or actor threads, through `AsyncPolicy`) in one pass.
    """

    def forward(self, observation: np.ndarray) -> np.ndarray:
        """The network's output for observations [n, *obs_shape]."""
        ...

    def action(self, observation: np.ndarray, deterministic: bool = False) -> np.ndarray:
        """Actions [n, *action_shape]; `deterministic` picks the most likely one."""
        ...


def check_observation(op: str, observation: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """`observation` as float32 [n, *shape].

    Raises:
        ObservationShapeError: naming the observation's shape and the one expected.
    """
    observation = np.asarray(observation, np.float32)
    if observation.shape[1:] != shape or observation.ndim != len(shape) + 1:
        raise ObservationShapeError(op, "observation does not fit the network",
                                    got=observation.shape, expected=("n", *shape))
    return observation
