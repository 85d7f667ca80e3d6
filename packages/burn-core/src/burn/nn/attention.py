"""Multi-head attention (Burn's MultiHeadAttention) with an autoregressive key/value cache.

Masks are bool tensors where True = masked out (as torch's bool masks): a key padding mask
`mask_pad` [batch, seq_k] and an attention mask `mask_attn` [seq_q, seq_k] or
[batch, seq_q, seq_k]. A masked score is set to the dtype's lowest finite value, so a query
whose keys are all masked attends uniformly instead of giving NaN (torch gives NaN).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

import burn
import burn.functional as F
from burn.device import Device
from burn.dtype import DType
from burn.errors import DTypeError, ShapeError, ValueRangeError
from burn.frontend.tensor import Tensor
from burn.nn._layer import LayerConfig, check_float_input
from burn.nn.dropout import Dropout
from burn.nn.init import Initializer
from burn.nn.linear import Linear
from burn.nn.module import Module

_DeviceLike = Device | str | None


class MhaOutput(NamedTuple):
    """What `MultiHeadAttention` returns; unpacks as torch's `(output, weights)`.

    Attributes:
        context: [batch, seq_q, d_model].
        weights: the attention weights (after dropout) [batch, n_heads, seq_q, seq_k].
    """

    context: Tensor
    weights: Tensor


@dataclass
class MhaCache:
    """The projected keys and values seen so far, for `forward_autoregressive`.

    Attributes:
        key, value: [batch, n_heads, seq, d_k] (None before the first step).
        static: keys and values come from a fixed memory (cross-attention): they are projected
            on the first step and reused, and no causal mask applies.
    """

    key: Tensor | None = None
    value: Tensor | None = None
    static: bool = False

    def __len__(self) -> int:
        """The number of cached positions."""
        return 0 if self.key is None else self.key.shape[2]


def generate_autoregressive_mask(batch_size: int, seq_length: int,
                                 device: _DeviceLike = None) -> Tensor:
    """The causal mask: query i may not see keys after i.

    Args:
        batch_size, seq_length: of the mask.
        device: where it lives.
    Returns:
        bool [batch_size, seq_length, seq_length], True above the diagonal (masked out).
    """
    return _causal(seq_length, seq_length, device).unsqueeze(0).repeat_dim(0, batch_size)


def _lowest(dtype: DType) -> float:
    """The lowest finite value of float `dtype` (ml_dtypes, loaded only for bfloat16)."""
    if dtype is DType.bfloat16:
        import ml_dtypes

        return float(ml_dtypes.finfo(ml_dtypes.bfloat16).min)
    return float(np.finfo(dtype.numpy).min)


def _causal(seq_q: int, seq_k: int, device: _DeviceLike) -> Tensor:
    """bool [seq_q, seq_k]: the last `seq_q` of `seq_k` positions, each seeing keys up to itself."""
    return burn.tensor(np.triu(np.ones((seq_q, seq_k), bool), k=seq_k - seq_q + 1), device=device)


class MultiHeadAttention(Module):
    """Multi-head attention, as torch.nn.MultiheadAttention(batch_first=True):
    softmax(q k^T / sqrt(d_k), masked) v per head, then the output projection.

    Args:
        d_model: features of queries, keys, values and the output.
        n_heads: heads; d_k = d_model / n_heads each.
        dropout: probability of dropping attention weights in training.
        bias: whether the four projections have biases.
        device: where the params live.
        initializer: of the projections' weights and biases (Linear's default when None).

    Defaults that differ from torch: `dropout` 0.1 (torch 0.0); inputs are always batch first
    (torch's `batch_first` False); `initializer` Linear's U(-1/sqrt(d_model), 1/sqrt(d_model))
    (torch: xavier_uniform for the packed in-projection, zero biases).
    Raises:
        ValueRangeError: when n_heads does not divide d_model.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.1, bias: bool = True,
                 device: _DeviceLike = None, initializer: Initializer | None = None) -> None:
        if n_heads <= 0 or d_model % n_heads:
            raise ValueRangeError("MultiHeadAttention", "n_heads must divide d_model",
                                  d_model=d_model, n_heads=n_heads)
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.query = Linear(d_model, d_model, bias, device, initializer)
        self.key = Linear(d_model, d_model, bias, device, initializer)
        self.value = Linear(d_model, d_model, bias, device, initializer)
        self.output = Linear(d_model, d_model, bias, device, initializer)
        self.dropout = Dropout(dropout)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, mask_pad: Tensor | None = None,
                mask_attn: Tensor | None = None) -> MhaOutput:
        """Args:
            query: [batch, seq_q, d_model].
            key, value: [batch, seq_k, d_model].
            mask_pad: bool [batch, seq_k], True = padding (never attended).
            mask_attn: bool [seq_q, seq_k] or [batch, seq_q, seq_k], True = masked out.
        Returns:
            MhaOutput(context [batch, seq_q, d_model], weights [batch, n_heads, seq_q, seq_k]).
        Raises:
            ShapeError: for bad input or mask shapes. DTypeError: for non-bool masks.
        """
        self._check_inputs(query, key, value)
        q, k, v = (self._heads(proj(x)) for proj, x in
                   ((self.query, query), (self.key, key), (self.value, value)))
        return self._attend(q, k, v, self._mask(mask_pad, mask_attn, q, k))

    def forward_autoregressive(self, query: Tensor, key: Tensor, value: Tensor, cache: MhaCache,
                               mask_pad: Tensor | None = None) -> MhaOutput:
        """Attend the new positions to every position so far, appending the new keys and values
        to `cache` (in place). Step by step, this gives the outputs of `forward` with a causal
        `mask_attn` (or, for a static cache, of `forward` over the whole memory).

        Args:
            query: the new positions [batch, seq_new, d_model].
            key, value: their keys and values [batch, seq_new, d_model] (a static cache: the
                memory [batch, seq_mem, d_model], used on the first step only).
            cache: the keys and values so far (start with an empty `MhaCache()`).
            mask_pad: bool [batch, seq_k] over all keys so far (a static cache: the memory's).
        Returns:
            MhaOutput for the new positions (weights over all cached keys).
        Raises:
            ShapeError: for bad input or mask shapes. DTypeError: for a non-bool mask.
        """
        self._check_inputs(query, key, value)
        q = self._heads(self.query(query))
        if cache.key is None or cache.value is None or not cache.static:
            k, v = self._heads(self.key(key)), self._heads(self.value(value))
            if cache.key is not None and cache.value is not None:
                if cache.key.shape[:2] != k.shape[:2]:
                    raise ShapeError("MultiHeadAttention", "the batch changed between steps",
                                     cache=cache.key.shape, key=key.shape)
                k, v = burn.cat([cache.key, k], dim=2), burn.cat([cache.value, v], dim=2)
        else:
            k, v = cache.key, cache.value
        cache.key, cache.value = k, v
        causal = None if cache.static else _causal(q.shape[2], k.shape[2], q.device)
        return self._attend(q, k, v, self._mask(mask_pad, causal, q, k))

    def _check_inputs(self, query: Tensor, key: Tensor, value: Tensor) -> None:
        d = self.d_model
        ok = all(t.ndim == 3 and t.shape[-1] == d for t in (query, key, value))
        if not ok or key.shape != value.shape or query.shape[0] != key.shape[0]:
            raise ShapeError("MultiHeadAttention", f"expected query [batch, seq_q, d_model={d}], "
                             f"key and value [batch, seq_k, d_model={d}]", query=query.shape,
                             key=key.shape, value=value.shape)
        for x in (query, key, value):
            check_float_input("MultiHeadAttention", x, self.query.weight)

    def _mask(self, mask_pad: Tensor | None, mask_attn: Tensor | None, q: Tensor, k: Tensor
              ) -> Tensor | None:
        """The masks combined, broadcastable to the scores [batch, n_heads, seq_q, seq_k]."""
        batch, _, seq_q, seq_k = *q.shape[:3], k.shape[2]
        mask = None
        for name, m, shapes in (("mask_pad", mask_pad, ((batch, seq_k),)),
                                ("mask_attn", mask_attn, ((seq_q, seq_k), (batch, seq_q, seq_k)))):
            if m is None:
                continue
            if m.kind != burn.Kind.BOOL:
                raise DTypeError("MultiHeadAttention", f"{name} must be bool (True = masked out)",
                                 **{name: m.dtype})
            if m.shape not in shapes:
                raise ShapeError("MultiHeadAttention", f"expected {name} of shape "
                                 + " or ".join(map(str, shapes)), **{name: m.shape})
            m = m.reshape(batch, 1, 1, seq_k) if name == "mask_pad" else m.unsqueeze(-3)
            mask = m if mask is None else mask | m
        return mask

    def _heads(self, x: Tensor) -> Tensor:
        """[batch, seq, d_model] -> [batch, n_heads, seq, d_k]."""
        return x.reshape(x.shape[0], x.shape[1], self.n_heads, self.d_k).swap_dims(1, 2)

    def _attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> MhaOutput:
        factor = 1.0 / math.sqrt(self.d_k)
        if q.dtype in (DType.float16, DType.bfloat16):  # (q k^T itself overflows float16)
            scores = (q * factor) @ k.swap_dims(-1, -2)
        else:
            scores = (q @ k.swap_dims(-1, -2)) * factor
        if mask is not None:
            scores = scores.mask_fill(mask, _lowest(scores.dtype))
        weights = self.dropout(F.softmax(scores, dim=-1))
        context = (weights @ v).swap_dims(1, 2).reshape(q.shape[0], q.shape[2], self.d_model)
        return MhaOutput(self.output(context), weights)

    def extra_repr(self) -> str:
        return (f"d_model={self.d_model}, n_heads={self.n_heads}, "
                f"bias={self.query.bias is not None}")


@dataclass
class MultiHeadAttentionConfig(LayerConfig):
    """Config of `MultiHeadAttention` (same arguments)."""

    d_model: int
    n_heads: int
    dropout: float = 0.1
    bias: bool = True
    initializer: Initializer | None = None
    module = MultiHeadAttention
