"""Position encodings: sinusoidal `PositionalEncoding` and rotary `RotaryEncoding` (RoPE).

Both hold their tables as constants (NumPy, float64): they are not module state, are not
saved, and are cast to each input's dtype and device.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import burn
from burn.errors import ShapeError, ValueRangeError
from burn.frontend.tensor import Tensor
from burn.nn._layer import LayerConfig, check_input
from burn.nn.module import Module


def _check_even(layer: str, d_model: int) -> None:
    if d_model <= 0 or d_model % 2:
        raise ValueRangeError(layer, "d_model must be positive and even", d_model=d_model)


def _constant(table: np.ndarray, like: Tensor) -> Tensor:
    return burn.tensor(table, dtype=like.dtype, device=like.device)


class PositionalEncoding(Module):
    """Adds the sinusoids of "Attention Is All You Need" to the input (Burn's
    PositionalEncoding): pe[pos, 2i] = sin(pos / max_timescale^(2i / d_model)) and
    pe[pos, 2i + 1] = cos(pos / max_timescale^(2i / d_model)).

    Args:
        d_model: features (even).
        max_sequence_size: the longest sequence accepted.
        max_timescale: the base of the wavelengths.
    Raises:
        ValueRangeError: for an odd d_model.
    """

    def __init__(self, d_model: int, max_sequence_size: int = 5000,
                 max_timescale: float = 10_000.0) -> None:
        _check_even("PositionalEncoding", d_model)
        self.d_model, self.max_sequence_size = d_model, max_sequence_size
        self.max_timescale = max_timescale
        self._sinusoids = generate_sinusoids(max_sequence_size, d_model, max_timescale)

    def forward(self, x: Tensor) -> Tensor:
        """Args:
            x: [batch, seq, d_model], seq <= max_sequence_size.
        Returns:
            x plus the encodings of positions 0..seq-1, same shape.
        Raises:
            ShapeError: for another shape or a longer sequence.
        """
        expected = f"[batch, seq <= {self.max_sequence_size}, d_model={self.d_model}]"
        check_input("PositionalEncoding", x, expected, ranks=(3,), dim=-1, size=self.d_model)
        if x.shape[1] > self.max_sequence_size:
            raise ShapeError("PositionalEncoding", f"expected input {expected}", x=x.shape)
        return x + _constant(self._sinusoids[: x.shape[1]], x)

    def extra_repr(self) -> str:
        return (f"d_model={self.d_model}, max_sequence_size={self.max_sequence_size}, "
                f"max_timescale={self.max_timescale}")


def generate_sinusoids(length: int, d_model: int, max_timescale: float = 10_000.0) -> np.ndarray:
    """The sinusoid table of `PositionalEncoding`.

    Args:
        length: positions.
        d_model: features (even).
        max_timescale: the base of the wavelengths.
    Returns:
        float64 [length, d_model], sin on even features and cos on odd ones.
    """
    _check_even("generate_sinusoids", d_model)
    angles = np.arange(length)[:, None] * max_timescale ** (-np.arange(0, d_model, 2) / d_model)
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(length, d_model)


class RotaryEncoding(Module):
    """Rotary position embedding (RoPE) as Burn's RotaryEncoding and llama: the feature pairs
    (x[2i], x[2i + 1]) at position m are rotated by the angle m * theta^(-2i / d_model).

    Args:
        d_model: features rotated (the head size; even).
        max_sequence_length: the last position + 1 accepted.
        theta: the base of the frequencies.
    Raises:
        ValueRangeError: for an odd d_model.
    """

    def __init__(self, d_model: int, max_sequence_length: int, theta: float = 10_000.0) -> None:
        _check_even("RotaryEncoding", d_model)
        self.d_model, self.max_sequence_length, self.theta = d_model, max_sequence_length, theta
        freqs = theta ** (-np.arange(0, d_model, 2) / d_model)
        angles = np.arange(max_sequence_length)[:, None] * freqs
        self._cos, self._sin = np.cos(angles), np.sin(angles)

    def forward(self, x: Tensor, start: int = 0) -> Tensor:
        """Args:
            x: [..., seq, d_model], e.g. [batch, heads, seq, d_head].
            start: position of the first element (the cache length when decoding step by step);
                start + seq <= max_sequence_length.
        Returns:
            The rotated x, same shape.
        Raises:
            ShapeError: for another shape or positions past max_sequence_length.
        """
        expected = f"[..., seq, d_model={self.d_model}] with start + seq <= " \
                   f"{self.max_sequence_length}"
        check_input("RotaryEncoding", x, expected, dim=-1, size=self.d_model, min_rank=2)
        if start < 0 or start + x.shape[-2] > self.max_sequence_length:
            raise ShapeError("RotaryEncoding", f"expected input {expected}", x=x.shape,
                             start=start)
        positions = slice(start, start + x.shape[-2])
        cos, sin = _constant(self._cos[positions], x), _constant(self._sin[positions], x)
        pairs = x.reshape(*x.shape[:-1], self.d_model // 2, 2)
        even, odd = pairs[..., 0], pairs[..., 1]
        rotated = burn.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)
        return rotated.reshape(x.shape)

    def extra_repr(self) -> str:
        return (f"d_model={self.d_model}, max_sequence_length={self.max_sequence_length}, "
                f"theta={self.theta}")


@dataclass
class PositionalEncodingConfig(LayerConfig):
    """Config of `PositionalEncoding` (same arguments; `init` ignores the device)."""

    d_model: int
    max_sequence_size: int = 5000
    max_timescale: float = 10_000.0
    module = PositionalEncoding
    takes_device = False


@dataclass
class RotaryEncodingConfig(LayerConfig):
    """Config of `RotaryEncoding` (same arguments; `init` ignores the device)."""

    d_model: int
    max_sequence_length: int
    theta: float = 10_000.0
    module = RotaryEncoding
    takes_device = False
