"""Small networks for agents: an MLP, and the actor-critic of PPO."""

from __future__ import annotations

from collections.abc import Sequence

import burn
import burn.functional as F
from burn.errors import ValueRangeError
from burn.nn import Linear, Module

_ACTIVATIONS = {"relu": F.relu, "tanh": F.tanh}


class Mlp(Module):
    """Linear layers of `sizes` with an activation between them (none after the last).

    Args:
        sizes: input size, hidden sizes..., output size (at least 2 entries).
        activation: "relu" or "tanh".
        device: where the params live (the default device when None).
    Raises:
        ValueRangeError: for fewer than 2 sizes or an unknown activation.
    """

    def __init__(self, sizes: Sequence[int], activation: str = "relu",
                 device: burn.Device | str | None = None) -> None:
        if len(sizes) < 2 or activation not in _ACTIVATIONS:
            raise ValueRangeError("Mlp", "need >= 2 sizes and a known activation",
                                  sizes=list(sizes), activation=activation,
                                  known=sorted(_ACTIVATIONS))
        self.sizes = tuple(sizes)
        self.activation = activation
        self.layers = [Linear(a, b, device=device) for a, b in zip(sizes, sizes[1:], strict=False)]

    def forward(self, x: burn.Tensor) -> burn.Tensor:
        """Args:
            x: [n, sizes[0]].
        Returns:
            [n, sizes[-1]].
        """
        act = _ACTIVATIONS[self.activation]
        for layer in self.layers[:-1]:
            x = act(layer(x))
        return self.layers[-1](x)
