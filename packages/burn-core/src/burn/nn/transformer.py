"""Transformer blocks (Burn's transformer module): PositionWiseFeedForward, encoder and decoder
layers and stacks, post-norm (torch's default) or pre-norm (`norm_first`), with autoregressive
caches that give, step by step, the outputs of the full pass with a causal mask.

Inputs are batch first: [batch, seq, d_model]. Masks are bool, True = masked out (see
`burn.nn.attention`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import burn.functional as F
from burn.device import Device
from burn.errors import ValueRangeError
from burn.frontend.tensor import Tensor
from burn.nn._layer import LayerConfig, check_input
from burn.nn.attention import MhaCache, MultiHeadAttention
from burn.nn.dropout import Dropout
from burn.nn.init import Initializer
from burn.nn.linear import Linear
from burn.nn.module import Module
from burn.nn.norm import LayerNorm

_DeviceLike = Device | str | None
Activation = Literal["gelu", "relu"]
_ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"gelu": F.gelu, "relu": F.relu}


def _check_sequence(layer: str, name: str, x: Tensor, d_model: int) -> None:
    check_input(layer, x, f"{name} [batch, seq, d_model={d_model}]", ranks=(3,), dim=-1,
                size=d_model)


class PositionWiseFeedForward(Module):
    """linear_outer(dropout(activation(linear_inner(x)))), as the feed-forward part of torch's
    transformer layers.

    Args:
        d_model: input and output features.
        d_ff: hidden features.
        dropout: probability of dropping hidden features in training.
        activation: "gelu" (exact) or "relu".
        device: where the params live.
        initializer: of the linear layers (Linear's default when None).
    Raises:
        ValueRangeError: for another activation.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.1,
                 activation: Activation = "gelu", device: _DeviceLike = None,
                 initializer: Initializer | None = None) -> None:
        if activation not in _ACTIVATIONS:
            raise ValueRangeError("PositionWiseFeedForward", "activation must be 'gelu' or "
                                  "'relu'", activation=activation)
        self.d_model, self.d_ff, self.activation = d_model, d_ff, activation
        self.linear_inner = Linear(d_model, d_ff, device=device, initializer=initializer)
        self.linear_outer = Linear(d_ff, d_model, device=device, initializer=initializer)
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        """Args:
            x: [..., d_model].
        Returns:
            [..., d_model].
        Raises:
            ShapeError: when the last dim is not d_model.
        """
        check_input("PositionWiseFeedForward", x, f"[..., d_model={self.d_model}]", dim=-1,
                    size=self.d_model, min_rank=1)
        hidden = _ACTIVATIONS[self.activation](self.linear_inner(x))
        return self.linear_outer(self.dropout(hidden))

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, d_ff={self.d_ff}, activation={self.activation!r}"


class _Layer(Module):
    """Shared by the encoder and decoder layers: self-attention, feed-forward, two norms and the
    residual connections (post-norm: norm(x + f(x)); pre-norm: x + f(norm(x)))."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False, activation: Activation = "gelu",
                 layer_norm_eps: float = 1e-5, device: _DeviceLike = None,
                 initializer: Initializer | None = None) -> None:
        self.d_model, self.n_heads, self.norm_first = d_model, n_heads, norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout, device=device,
                                            initializer=initializer)
        self.pwff = PositionWiseFeedForward(d_model, d_ff, dropout, activation, device,
                                            initializer)
        self.norm_1 = LayerNorm(d_model, layer_norm_eps, device=device)
        self.norm_2 = LayerNorm(d_model, layer_norm_eps, device=device)
        self.dropout = Dropout(dropout)

    def _residual(self, x: Tensor, norm: LayerNorm, sublayer: Callable[[Tensor], Tensor]
                  ) -> Tensor:
        if self.norm_first:
            return x + self.dropout(sublayer(norm(x)))
        return norm(x + self.dropout(sublayer(x)))

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}, norm_first={self.norm_first}"


class TransformerEncoderLayer(_Layer):
    """Self-attention then feed-forward, each with a residual connection and a LayerNorm, as
    torch.nn.TransformerEncoderLayer(batch_first=True).

    Args:
        d_model: features.
        n_heads: attention heads.
        d_ff: hidden features of the feed-forward part.
        dropout: probability used by every dropout (attention weights, feed-forward hidden
            features, sublayer outputs).
        norm_first: pre-norm (else post-norm, torch's default).
        activation: of the feed-forward part, "gelu" or "relu".
        layer_norm_eps: eps of the LayerNorms.
        device: where the params live.
        initializer: of the linear layers (Linear's default when None).

    Defaults that differ from torch: `activation` "gelu" (torch "relu"); inputs are always
    batch first (torch's `batch_first` False).
    """

    def forward(self, x: Tensor, mask_pad: Tensor | None = None,
                mask_attn: Tensor | None = None) -> Tensor:
        """Args:
            x: [batch, seq, d_model].
            mask_pad: bool [batch, seq], True = padding.
            mask_attn: bool [seq, seq] or [batch, seq, seq], True = masked out.
        Returns:
            [batch, seq, d_model].
        Raises:
            ShapeError: for bad input or mask shapes.
        """
        _check_sequence("TransformerEncoderLayer", "input", x, self.d_model)
        return self._block(x, lambda h: self.self_attn(h, h, h, mask_pad, mask_attn).context)

    def forward_autoregressive(self, x: Tensor, cache: MhaCache,
                               mask_pad: Tensor | None = None) -> Tensor:
        """`forward` of new positions with a causal mask, attending to the cached ones.

        Args:
            x: the new positions [batch, seq_new, d_model].
            cache: this layer's self-attention cache (updated in place).
            mask_pad: bool [batch, seq_so_far], True = padding.
        Returns:
            [batch, seq_new, d_model].
        """
        _check_sequence("TransformerEncoderLayer", "input", x, self.d_model)
        return self._block(x, lambda h: self.self_attn.forward_autoregressive(
            h, h, h, cache, mask_pad).context)

    def _block(self, x: Tensor, attend: Callable[[Tensor], Tensor]) -> Tensor:
        return self._residual(self._residual(x, self.norm_1, attend), self.norm_2, self.pwff)


@dataclass
class TransformerDecoderLayerCache:
    """The autoregressive state of one decoder layer: its self-attention keys and values, and
    the projected memory of its cross-attention."""

    self_attn: MhaCache = field(default_factory=MhaCache)
    cross_attn: MhaCache = field(default_factory=lambda: MhaCache(static=True))


class TransformerDecoderLayer(_Layer):
    """Self-attention, cross-attention to the memory, then feed-forward, each with a residual
    connection and a LayerNorm, as torch.nn.TransformerDecoderLayer(batch_first=True).

    Args:
        d_model: features.
        n_heads: attention heads.
        d_ff: hidden features of the feed-forward part.
        dropout: probability used by every dropout.
        norm_first: pre-norm (else post-norm, torch's default).
        activation: of the feed-forward part, "gelu" or "relu".
        layer_norm_eps: eps of the LayerNorms.
        device: where the params live.
        initializer: of the linear layers (Linear's default when None).

    Defaults that differ from torch: `activation` "gelu" (torch "relu"); inputs are always
    batch first (torch's `batch_first` False).
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False, activation: Activation = "gelu",
                 layer_norm_eps: float = 1e-5, device: _DeviceLike = None,
                 initializer: Initializer | None = None) -> None:
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first, activation,
                         layer_norm_eps, device, initializer)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout, device=device,
                                             initializer=initializer)
        self.norm_3 = LayerNorm(d_model, layer_norm_eps, device=device)

    def forward(self, target: Tensor, memory: Tensor, target_mask_pad: Tensor | None = None,
                target_mask_attn: Tensor | None = None, memory_mask_pad: Tensor | None = None,
                memory_mask_attn: Tensor | None = None) -> Tensor:
        """Args:
            target: [batch, seq_t, d_model].
            memory: the encoder output [batch, seq_m, d_model].
            target_mask_pad: bool [batch, seq_t], True = padding.
            target_mask_attn: bool [seq_t, seq_t] or [batch, seq_t, seq_t] (e.g. causal).
            memory_mask_pad: bool [batch, seq_m], True = padding.
            memory_mask_attn: bool [seq_t, seq_m] or [batch, seq_t, seq_m].
        Returns:
            [batch, seq_t, d_model].
        Raises:
            ShapeError: for bad input or mask shapes.
        """
        self._check(target, memory)
        return self._block(
            target,
            lambda h: self.self_attn(h, h, h, target_mask_pad, target_mask_attn).context,
            lambda h: self.cross_attn(h, memory, memory, memory_mask_pad,
                                      memory_mask_attn).context)

    def forward_autoregressive(self, target: Tensor, memory: Tensor,
                               cache: TransformerDecoderLayerCache,
                               target_mask_pad: Tensor | None = None,
                               memory_mask_pad: Tensor | None = None) -> Tensor:
        """`forward` of new target positions with a causal mask, attending to the cached ones.

        Args:
            target: the new positions [batch, seq_new, d_model].
            memory: the encoder output [batch, seq_m, d_model] (projected on the first step).
            cache: this layer's cache (updated in place).
            target_mask_pad: bool [batch, seq_so_far], True = padding.
            memory_mask_pad: bool [batch, seq_m], True = padding.
        Returns:
            [batch, seq_new, d_model].
        """
        self._check(target, memory)
        return self._block(
            target,
            lambda h: self.self_attn.forward_autoregressive(h, h, h, cache.self_attn,
                                                            target_mask_pad).context,
            lambda h: self.cross_attn.forward_autoregressive(h, memory, memory, cache.cross_attn,
                                                             memory_mask_pad).context)

    def _check(self, target: Tensor, memory: Tensor) -> None:
        _check_sequence("TransformerDecoderLayer", "target", target, self.d_model)
        _check_sequence("TransformerDecoderLayer", "memory", memory, self.d_model)

    def _block(self, x: Tensor, self_attend: Callable[[Tensor], Tensor],
               cross_attend: Callable[[Tensor], Tensor]) -> Tensor:
        x = self._residual(x, self.norm_1, self_attend)
        x = self._residual(x, self.norm_2, cross_attend)
        return self._residual(x, self.norm_3, self.pwff)


@dataclass
class TransformerEncoderCache:
    """The autoregressive state of a `TransformerEncoder`: one self-attention cache per layer."""

    layers: list[MhaCache]


@dataclass
class TransformerDecoderCache:
    """The autoregressive state of a `TransformerDecoder`: one cache per layer."""

    layers: list[TransformerDecoderLayerCache]


class _Stack(Module):
    """Shared by the encoder and decoder stacks: the layers and the optional final LayerNorm
    (torch's `norm` argument)."""

    layer_class: type[_Layer]

    def __init__(self, d_model: int, n_heads: int, d_ff: int, n_layers: int,
                 dropout: float = 0.1, norm_first: bool = False,
                 activation: Activation = "gelu", layer_norm_eps: float = 1e-5,
                 device: _DeviceLike = None, initializer: Initializer | None = None,
                 norm: bool = False) -> None:
        self.layers: list[Any] = [self.layer_class(d_model, n_heads, d_ff, dropout, norm_first,
                                                   activation, layer_norm_eps, device,
                                                   initializer)
                       for _ in range(n_layers)]
        self.norm = LayerNorm(d_model, layer_norm_eps, device=device) if norm else None

    def _final(self, x: Tensor) -> Tensor:
        return x if self.norm is None else self.norm(x)

    def extra_repr(self) -> str:
        return f"n_layers={len(self.layers)}"


class TransformerEncoder(_Stack):
    """A stack of `TransformerEncoderLayer`s (Burn's TransformerEncoder), with torch's optional
    final LayerNorm.

    Args:
        d_model, n_heads, d_ff: as `TransformerEncoderLayer`.
        n_layers: layers.
        dropout, norm_first, activation, layer_norm_eps, device, initializer: as
            `TransformerEncoderLayer`.
        norm: apply a final LayerNorm (named `norm`, as torch's `norm=LayerNorm(d_model)`;
            Burn has none). Use it with `norm_first`, whose last layer output is not normed.

    Defaults that differ from torch: `activation` "gelu" (torch "relu").
    """

    layer_class = TransformerEncoderLayer
    def forward(self, x: Tensor, mask_pad: Tensor | None = None,
                mask_attn: Tensor | None = None) -> Tensor:
        """Args and Returns: as `TransformerEncoderLayer.forward`."""
        for layer in self.layers:
            x = layer(x, mask_pad, mask_attn)
        return self._final(x)

    def new_autoregressive_cache(self) -> TransformerEncoderCache:
        """An empty cache for `forward_autoregressive`."""
        return TransformerEncoderCache([MhaCache() for _ in self.layers])

    def forward_autoregressive(self, x: Tensor, cache: TransformerEncoderCache,
                               mask_pad: Tensor | None = None) -> Tensor:
        """Args and Returns: as `TransformerEncoderLayer.forward_autoregressive`."""
        for layer, layer_cache in zip(self.layers, cache.layers, strict=True):
            x = layer.forward_autoregressive(x, layer_cache, mask_pad)
        return self._final(x)


class TransformerDecoder(_Stack):
    """A stack of `TransformerDecoderLayer`s (Burn's TransformerDecoder), with torch's optional
    final LayerNorm.

    Args:
        d_model, n_heads, d_ff: as `TransformerDecoderLayer`.
        n_layers: layers.
        dropout, norm_first, activation, layer_norm_eps, device, initializer: as
            `TransformerDecoderLayer`.
        norm: apply a final LayerNorm (named `norm`, as torch's `norm=LayerNorm(d_model)`;
            Burn has none).

    Defaults that differ from torch: `activation` "gelu" (torch "relu").
    """

    layer_class = TransformerDecoderLayer
    def forward(self, target: Tensor, memory: Tensor, target_mask_pad: Tensor | None = None,
                target_mask_attn: Tensor | None = None, memory_mask_pad: Tensor | None = None,
                memory_mask_attn: Tensor | None = None) -> Tensor:
        """Args and Returns: as `TransformerDecoderLayer.forward`."""
        for layer in self.layers:
            target = layer(target, memory, target_mask_pad, target_mask_attn, memory_mask_pad,
                           memory_mask_attn)
        return self._final(target)

    def new_autoregressive_cache(self) -> TransformerDecoderCache:
        """An empty cache for `forward_autoregressive`."""
        return TransformerDecoderCache([TransformerDecoderLayerCache() for _ in self.layers])

    def forward_autoregressive(self, target: Tensor, memory: Tensor,
                               cache: TransformerDecoderCache,
                               target_mask_pad: Tensor | None = None,
                               memory_mask_pad: Tensor | None = None) -> Tensor:
        """Args and Returns: as `TransformerDecoderLayer.forward_autoregressive`."""
        for layer, layer_cache in zip(self.layers, cache.layers, strict=True):
            target = layer.forward_autoregressive(target, memory, layer_cache, target_mask_pad,
                                                  memory_mask_pad)
        return self._final(target)


@dataclass(kw_only=True)
class _TransformerOptions(LayerConfig):
    dropout: float = 0.1
    norm_first: bool = False
    activation: Activation = "gelu"
    layer_norm_eps: float = 1e-5
    initializer: Initializer | None = None


@dataclass
class PositionWiseFeedForwardConfig(LayerConfig):
    """Config of `PositionWiseFeedForward` (same arguments)."""

    d_model: int
    d_ff: int
    dropout: float = 0.1
    activation: Activation = "gelu"
    initializer: Initializer | None = None
    module = PositionWiseFeedForward


@dataclass
class _TransformerLayerConfig(_TransformerOptions):
    d_model: int
    n_heads: int
    d_ff: int


@dataclass
class _TransformerStackConfig(_TransformerLayerConfig):
    n_layers: int
    norm: bool = False


@dataclass
class TransformerEncoderLayerConfig(_TransformerLayerConfig):
    """Config of `TransformerEncoderLayer` (same arguments; the options keyword-only)."""

    module = TransformerEncoderLayer


@dataclass
class TransformerDecoderLayerConfig(_TransformerLayerConfig):
    """Config of `TransformerDecoderLayer` (same arguments; the options keyword-only)."""

    module = TransformerDecoderLayer


@dataclass
class TransformerEncoderConfig(_TransformerStackConfig):
    """Config of `TransformerEncoder` (same arguments; the options keyword-only)."""

    module = TransformerEncoder


@dataclass
class TransformerDecoderConfig(_TransformerStackConfig):
    """Config of `TransformerDecoder` (same arguments; the options keyword-only)."""

    module = TransformerDecoder
