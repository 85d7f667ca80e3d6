"""Cross entropy of [M, C] logits and class indices as one log-softmax + NLL pass, and its
backward as one softmax pass (softmax - target) * grad: float32 (and float16 / bfloat16,
upcast) in float32, float64 in float64. Targets arrive checked, ignored ones set to class 0
(`safe`), with the float keep mask (None when every sample is kept: the masks and weights
of 1 are skipped, which leaves every value as it was, x * 1 being x)."""

from __future__ import annotations

import numpy as np

from .._common import QUIET_RESET, QUIET_SET, QUIET_TOKEN

Array = np.ndarray


def _shifted(logits: Array) -> Array:
    """logits - max per row (a new array of the compute dtype)."""
    x = logits.astype(np.float64 if logits.dtype == np.float64 else np.float32, copy=False)
    return np.subtract(x, x.max(axis=1, keepdims=True, initial=-np.inf))


def _target_weights(keep: Array | None, safe: Array, weight: Array | None) -> Array | None:
    """Each sample's weight: its class weight where kept, 0 where ignored; None when every
    weight is 1."""
    if weight is None:
        return keep
    picked = weight[safe]
    return picked if keep is None else picked * keep


def _mean_weights(w_target: Array | None, m: int, label_smoothing: float) -> Array | float:
    """The mean's denominator: the sum of the samples' weights (`m` when each is 1), NaN where
    it is 0 with smoothing (as the protocol's `_mean_weights`)."""
    total = m if w_target is None else w_target.sum()
    return np.nan if label_smoothing > 0 and total == 0 else total


def cross_entropy(logits: Array, safe: Array, keep: Array | None, weight: Array | None,
                  label_smoothing: float, reduction: str) -> Array:
    """The protocol's `cross_entropy` (see there) from checked targets.

    Args:
        logits: float [M, C].
        safe: int [M] targets in [0, C) (ignored samples at 0).
        keep: [M] 1 for kept samples, 0 for ignored ones, in the compute dtype; None when
            every sample is kept.
        weight: float [C] or None.
        label_smoothing: in [0, 1].
        reduction: "mean", "sum" or "none".
    Returns:
        [M] or 0-d loss of logits' dtype.
    """
    token = QUIET_SET(QUIET_TOKEN)
    try:
        m, c = logits.shape
        sh = _shifted(logits)
        rows = np.arange(m)
        picked = sh[rows, safe]
        w = None if weight is None else weight.astype(sh.dtype, copy=False)
        if label_smoothing > 0:  # sum_c w_c logp_c = sum_c w_c sh_c - lse sum_c w_c
            spread = sh.sum(axis=1) if w is None else sh @ w
            spread_mass = c if w is None else w.sum()
        np.exp(sh, out=sh)
        lse = np.log(sh.sum(axis=1))
        w_target = _target_weights(keep, safe, w)
        loss = lse - picked
        if w_target is not None:
            loss *= w_target
        if label_smoothing > 0:
            smooth = lse * spread_mass - spread
            if keep is not None:
                smooth *= keep
            loss *= 1 - label_smoothing
            loss += smooth * (label_smoothing / c)
        if keep is not None:
            loss[keep == 0] = 0  # ignored samples are skipped (as torch), whatever their logits
        if reduction != "none":
            total = loss.sum()
            loss = np.asarray(total / _mean_weights(w_target, m, label_smoothing)
                              if reduction == "mean" else total)
    finally:
        QUIET_RESET(token)
    return loss.astype(logits.dtype, copy=False)


def cross_entropy_backward(logits: Array, safe: Array, keep: Array | None, weight: Array | None,
                           grad: Array, label_smoothing: float, reduction: str) -> Array:
    """Gradient of the logits of `cross_entropy` for the output gradient `grad` ([M] or 0-d):
    g (mass softmax - q), q each sample's weighted, smoothed target distribution; g is 0 for
    ignored samples whatever `grad` (NaN / inf included, as torch), and the mean's is grad over
    `_mean_weights` for kept ones (inf / NaN where the weights sum to 0, as torch)."""
    token = QUIET_SET(QUIET_TOKEN)
    try:
        m, c = logits.shape
        p = _shifted(logits)
        np.exp(p, out=p)
        w = None if weight is None else weight.astype(p.dtype, copy=False)
        w_target = _target_weights(keep, safe, w)
        g = grad.astype(p.dtype, copy=False)
        if reduction == "mean":
            g = g / _mean_weights(w_target, m, label_smoothing)
        if keep is not None:
            g = np.where(keep == 0, 0, g)
        eps = label_smoothing  # g, hit, scale and spread: 0-d or [M], broadcast per row
        hit = g if w_target is None else g * w_target
        scale = hit * (1 - eps)
        if eps > 0:
            spread = ((g if keep is None else g * keep) * (eps / c)).reshape(-1, 1)
            scale = scale + spread[:, 0] * (c if w is None else w.sum())
        # softmax's normaliser folded into the row scale
        p *= (scale / p.sum(axis=1)).reshape(-1, 1)
        p[np.arange(m), safe] -= hit * (1 - eps)
        if eps > 0:
            p -= spread if w is None else spread * w
    finally:
        QUIET_RESET(token)
    return p.astype(logits.dtype, copy=False)
