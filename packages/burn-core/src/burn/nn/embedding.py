"""Embedding table."""

from __future__ import annotations

from dataclasses import dataclass

from burn import functional as F
from burn.device import Device
from burn.frontend.tensor import Tensor
from burn.nn._layer import LayerConfig
from burn.nn.init import Initializer, Normal
from burn.nn.module import Module
from burn.nn.param import Param


class Embedding(Module):
    """A lookup table of `n_embedding` vectors of size `d_model` (torch's N(0, 1) init).

    Args:
        n_embedding: table size (number of indices).
        d_model: vector size.
        device: where the table lives.
        initializer: of the table (N(0, 1) when None).
    """

    def __init__(self, n_embedding: int, d_model: int, device: Device | str | None = None,
                 initializer: Initializer | None = None) -> None:
        self.n_embedding, self.d_model = n_embedding, d_model
        self.weight = Param((initializer or Normal(0.0, 1.0)).init((n_embedding, d_model), device))

    def forward(self, indices: Tensor) -> Tensor:
        """Args:
            indices: int tensor of any shape, values in [0, n_embedding).
        Returns:
            [*indices.shape, d_model].
        Raises:
            DTypeError: for non-int indices. BurnIndexError: for out-of-range indices.
        """
        return F.embedding(self.weight, indices)

    def extra_repr(self) -> str:
        return f"n_embedding={self.n_embedding}, d_model={self.d_model}"


@dataclass
class EmbeddingConfig(LayerConfig):
    """Config of `Embedding` (same arguments)."""

    n_embedding: int
    d_model: int
    initializer: Initializer = Normal(0.0, 1.0)
    module = Embedding
