"""Functional forms of layers: linear (Burn's weight layout), batch_norm (given statistics) and
layer_norm (the backend's `layer_norm` op)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from burn.errors import ShapeError, ValueRangeError
from burn.functional._common import float_input

if TYPE_CHECKING:
    from burn.frontend.tensor import Tensor


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """`x @ weight + bias`, as Burn: `weight` is [d_input, d_output] (torch's F.linear takes
    the transpose, [d_output, d_input]).

    Args:
        x: [..., d_input] (a 1-d x gives a 1-d result).
        weight: [d_input, d_output].
        bias: [d_output] or None.
    Returns:
        [..., d_output].
    Raises:
        DTypeError: for non-float tensors or dtypes differing from x's.
        ShapeError: for mismatched sizes.
    """
    x = float_input("linear", "x", x)
    weight = float_input("linear", "weight", weight, x)
    if not x.ndim or weight.ndim != 2 or x.shape[-1] != weight.shape[0]:
        raise ShapeError("linear", "need x [..., d_input] and weight [d_input, d_output]",
                         x=x.shape, weight=weight.shape)
    out = x @ weight
    if bias is None:
        return out
    bias = float_input("linear", "bias", bias, x)
    if bias.shape != (weight.shape[1],):
        raise ShapeError("linear", "bias must be [d_output]", weight=weight.shape,
                         bias=bias.shape)
    return out + bias


def batch_norm(x: Tensor, mean: Tensor, var: Tensor, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise channel dim 1 of x [N, C, *] with the given statistics:
    `(x - mean) / sqrt(var + eps) * weight + bias` (Burn's batch_norm; torch's F.batch_norm
    with training=False). Nothing is computed from or stored for the batch.

    Args:
        x: [N, C, *].
        mean, var: [C] statistics.
        weight, bias: [C] scale and shift (none when None).
        eps: added to the variance.
    Returns:
        Same shape as x.
    Raises:
        DTypeError: for non-float tensors or dtypes differing from x's.
        ShapeError: for fewer than 2 dims or statistics that are not [C].
        ValueRangeError: for a negative or non-finite eps.
    """
    x = float_input("batch_norm", "x", x)
    if x.ndim < 2:
        raise ShapeError("batch_norm", "x must be [N, C, *]", x=x.shape)
    if not eps >= 0 or eps == float("inf"):
        raise ValueRangeError("batch_norm", "eps must be finite and non-negative", eps=eps)
    channels = (x.shape[1],)
    view = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    per_channel: dict[str, Tensor] = {}
    for name, t in (("mean", mean), ("var", var), ("weight", weight), ("bias", bias)):
        if t is None:
            continue
        t = float_input("batch_norm", name, t, x)
        if t.shape != channels:
            raise ShapeError("batch_norm", f"{name} must be [C]", x=x.shape, **{name: t.shape})
        per_channel[name] = t.reshape(view)
    out = (x - per_channel["mean"]) / (per_channel["var"] + float(eps)).sqrt()
    if "weight" in per_channel:
        out = out * per_channel["weight"]
    if "bias" in per_channel:
        out = out + per_channel["bias"]
    return out


def layer_norm(input: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing `normalized_shape` dims: `(x - mean) / sqrt(var + eps) *
    weight + bias` with the biased variance (torch.nn.functional.layer_norm), one backend op.

    Args:
        input: [..., *normalized_shape].
        normalized_shape: the trailing shape (an int for the last dim), at least one dim.
        weight, bias: scale and shift shaped `normalized_shape`, or None.
        eps: added to the variance.
    Returns:
        Same shape as input.
    Raises:
        DTypeError: for non-float tensors or dtypes differing from input's.
        ShapeError: when the trailing dims, weight or bias differ from normalized_shape.
        ValueRangeError: for a negative or non-finite eps.
    """
    op = "layer_norm"
    x = float_input(op, "input", input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if not k or x.ndim < k or x.shape[x.ndim - k:] != shape:
        raise ShapeError(op, "input must be [..., *normalized_shape] with at least one "
                         "normalised dim", input=x.shape, normalized_shape=shape)
    if not eps >= 0 or eps == float("inf"):
        raise ValueRangeError(op, "eps must be finite and non-negative", eps=eps)
    prims = []
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None:
            t = float_input(op, name, t, x)
            if t.shape != shape:
                raise ShapeError(op, f"{name} must be shaped normalized_shape",
                                 normalized_shape=shape, **{name: t.shape})
        prims.append(None if t is None else t._prim)
    return x._wrap(x._bk.layer_norm(x._prim, prims[0], prims[1], k, float(eps))[0])
