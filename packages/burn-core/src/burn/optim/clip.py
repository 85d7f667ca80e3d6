"""Gradient clipping on `GradientsParams`, with torch's `clip_grad_*_` semantics."""

from __future__ import annotations

import math

from burn.frontend import stack
from burn.frontend.tensor import Tensor
from burn.optim.grads import GradientsParams


def clip_grad_value_(grads: GradientsParams, clip_value: float) -> GradientsParams:
    """Clamp every gradient to [-clip_value, clip_value], in place.

    Args:
        grads: the per-param gradients (modified).
        clip_value: the largest magnitude kept.
    Returns:
        `grads`.
    """
    for pid, grad in grads.items():
        grads[pid] = grad.clamp(-clip_value, clip_value)
    return grads


def clip_grad_norm_(grads: GradientsParams, max_norm: float, norm_type: float = 2.0) -> float:
    """Scale all gradients together so their global norm is at most `max_norm`, in place, as
    `torch.nn.utils.clip_grad_norm_` (scale `max_norm / (total + 1e-6)`, capped at 1).

    Args:
        grads: the per-param gradients (modified).
        max_norm: the largest global norm kept.
        norm_type: the p of the p-norm (`math.inf` for the max norm).
    Returns:
        The global norm before clipping.
    """
    if not grads:
        return 0.0
    total = _norm(stack([_norm(g, norm_type) for g in grads.values()]), norm_type).item()
    scale = min(max_norm / (total + 1e-6), 1.0)
    for pid, grad in grads.items():
        grads[pid] = grad * scale
    return float(total)


def _norm(t: Tensor, p: float) -> Tensor:
    """The p-norm of all values of `t`, as a 0-d tensor."""
    if p == math.inf:
        return t.abs().max()
    return t.abs().powf(p).sum().powf(1.0 / p)
