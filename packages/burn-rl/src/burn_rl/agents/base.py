"""What every agent needs from its environment and device."""

from __future__ import annotations

import burn
from burn.errors import ValueRangeError
from burn_rl.environment import Environment


def training_device(device: burn.Device | str | None) -> burn.Device:
    """`device` (the default device when None) in its autodiff form."""
    if device is None:
        return burn.default_device().autodiff()
    return (burn.Device(device) if isinstance(device, str) else device).autodiff()


def flat_observation_shape(op: str, env: Environment) -> tuple[int]:
    """The observation shape of `env`, which must be a flat vector.

    Raises:
        ValueRangeError: naming the observation space when it is not flat.
    """
    shape = tuple(env.observation_space.shape or ())
    if len(shape) != 1:
        raise ValueRangeError(op, "the observation must be a flat vector",
                              observation_space=env.observation_space)
    return (int(shape[0]),)
