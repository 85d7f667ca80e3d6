"""Embedding table."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import burn
from burn import functional as F
from burn.device import Device
from burn.errors import DTypeError, ValueRangeError
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
        padding_idx: a row initialised to zeros that never gets a gradient (torch's
            `padding_idx`; negative counts from the end and is stored non-negative).
    Raises:
        ValueRangeError: for a padding_idx outside [-n_embedding, n_embedding).
    """

    def __init__(self, n_embedding: int, d_model: int, device: Device | str | None = None,
                 initializer: Initializer | None = None, padding_idx: int | None = None) -> None:
        if padding_idx is not None:
            if not -n_embedding <= padding_idx < n_embedding:
                raise ValueRangeError("Embedding", "padding_idx must be within n_embedding",
                                      padding_idx=padding_idx, n_embedding=n_embedding)
            padding_idx %= n_embedding
        self.n_embedding, self.d_model, self.padding_idx = n_embedding, d_model, padding_idx
        table = (initializer or Normal(0.0, 1.0)).init((n_embedding, d_model), device)
        if padding_idx is not None:
            table = table.mask_fill(self._padding_row(table), 0.0)
        self.weight = Param(table)

    def _padding_row(self, like: Tensor) -> Tensor:
        """bool [n_embedding, 1], True on the padding row, on `like`'s device."""
        return burn.tensor(np.arange(self.n_embedding)[:, None] == self.padding_idx,
                           device=like.device)

    def forward(self, indices: Tensor) -> Tensor:
        """Args:
            indices: int tensor of any shape, values in [0, n_embedding).
        Returns:
            [*indices.shape, d_model].
        Raises:
            DTypeError: for non-int indices (naming the layer). BurnIndexError: for
                out-of-range indices.
        """
        if indices.kind != burn.Kind.INT:
            raise DTypeError("Embedding", "indices must be an int tensor", indices=indices.dtype,
                             layer=self.weight.dtype)
        weight: Tensor = self.weight
        if self.padding_idx is not None:  # the padding row's values, without a gradient
            weight = burn.where(self._padding_row(weight), weight.detach(), weight)
        return F.embedding(weight, indices)

    def extra_repr(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"n_embedding={self.n_embedding}, d_model={self.d_model}{pad}"


@dataclass
class EmbeddingConfig(LayerConfig):
    """Config of `Embedding` (same arguments)."""

    n_embedding: int
    d_model: int
    initializer: Initializer = Normal(0.0, 1.0)
    padding_idx: int | None = None
    module = Embedding
