"""Identity."""

from __future__ import annotations

from dataclasses import dataclass

from burn.frontend.tensor import Tensor
from burn.nn._layer import LayerConfig
from burn.nn.module import Module


class Identity(Module):
    """Returns its input (a placeholder layer)."""

    def forward(self, x: Tensor) -> Tensor:
        """Returns `x` unchanged."""
        return x


@dataclass
class IdentityConfig(LayerConfig):
    """Config of `Identity`."""

    module = Identity
    takes_device = False
