"""The generator and the critic: MLPs with LeakyReLU (Burn's wgan layout, smaller)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import burn
from burn.nn import LeakyRelu, Linear, Module, Tanh


def _linears(widths: Sequence[int], device: burn.Device | None) -> list[Linear]:
    """Linear layers chaining `widths` (first input to last output)."""
    return [Linear(a, b, device=device) for a, b in pairwise(widths)]


def _hidden(layers: list[Linear], activation: Module, x: burn.Tensor) -> burn.Tensor:
    """`x` through every layer but the last, each followed by `activation`."""
    for layer in layers[:-1]:
        x = activation(layer(x))
    return x


class Generator(Module):
    """Latent noise [n, d_latent] -> images [n, side, side] in [-1, 1] (tanh).

    Args:
        d_latent: noise features.
        side: image height and width.
        hidden: widths of the hidden layers.
        device: where the params live (the default device when None).
    """

    def __init__(self, d_latent: int, side: int, hidden: tuple[int, ...] = (128, 256),
                 device: burn.Device | None = None) -> None:
        self.side = side
        self.layers = _linears((d_latent, *hidden, side * side), device)
        self.activation = LeakyRelu(0.2)
        self.output = Tanh()

    def forward(self, z: burn.Tensor) -> burn.Tensor:
        """[n, d_latent] -> [n, side, side]."""
        x = self.layers[-1](_hidden(self.layers, self.activation, z))
        return self.output(x).reshape((z.shape[0], self.side, self.side))


class Critic(Module):
    """Images [n, side, side] -> unbounded scores [n] (higher: more like the data).

    Args:
        side: image height and width.
        hidden: widths of the hidden layers.
        device: where the params live (the default device when None).
    """

    def __init__(self, side: int, hidden: tuple[int, ...] = (256, 128),
                 device: burn.Device | None = None) -> None:
        self.layers = _linears((side * side, *hidden, 1), device)
        self.activation = LeakyRelu(0.2)

    def forward(self, images: burn.Tensor) -> burn.Tensor:
        """[n, side, side] -> [n]."""
        return self.layers[-1](_hidden(self.layers, self.activation, images.flatten(1))).flatten(0)
