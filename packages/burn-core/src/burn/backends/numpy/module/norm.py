"""Layer normalisation over [M, D] rows in few passes: float32 (and float16 / bfloat16, upcast)
in float32, float64 in float64; the row statistics are kept for the backward."""

from __future__ import annotations

import math

import numpy as np

from .._common import QUIET_RESET, QUIET_SET, QUIET_TOKEN, row_sums

Array = np.ndarray


def _rows(x: Array, num_dims: int) -> tuple[Array, int]:
    """`x` as contiguous [M, D] rows in its compute dtype (float32 below float32), and M."""
    lead = x.ndim - num_dims
    m, d = math.prod(x.shape[:lead]), math.prod(x.shape[lead:])
    dtype = np.float64 if x.dtype == np.float64 else np.float32
    return np.ascontiguousarray(x, dtype=dtype).reshape(m, d), m


def layer_norm(x: Array, weight: Array | None, bias: Array | None, num_dims: int,
               eps: float) -> tuple[Array, Array, Array]:
    """(out, mean, rstd) of the protocol's `layer_norm`.

    Args:
        x: float array with at least `num_dims` dims.
        weight, bias: arrays shaped as x's last `num_dims` dims, or None.
        num_dims: trailing dims normalised together.
        eps: added to the biased variance.
    Returns:
        out shaped as x; mean and rstd shaped as x with the last `num_dims` dims of size 1, all
        of x's dtype.
    """
    token = QUIET_SET(QUIET_TOKEN)
    try:
        rows, _ = _rows(x, num_dims)
        d, dtype = rows.shape[1], rows.dtype
        # the mean as the first element plus the mean of the differences from it: exact for a
        # constant row (its output then the bias, as torch's), no cancellation far from 0
        first = rows[:, :1] if d else np.zeros((rows.shape[0], 1), dtype)
        mean = row_sums(rows - first)
        mean *= 1 / d if d else math.nan
        mean += first
        out = np.subtract(rows, mean)
        var = row_sums(out, out)
        var *= 1 / d if d else math.nan
        var += eps
        rstd = np.sqrt(var, out=var)
        np.divide(1, rstd, out=rstd)
        out *= rstd
        if weight is not None:
            out *= weight.reshape(1, d).astype(dtype, copy=False)
        if bias is not None:
            out += bias.reshape(1, d).astype(dtype, copy=False)
    finally:
        QUIET_RESET(token)
    stats = x.shape[:x.ndim - num_dims] + (1,) * num_dims
    return tuple(a.reshape(shape).astype(x.dtype, copy=False)  # type: ignore[return-value]
                 for a, shape in ((out, x.shape), (mean, stats), (rstd, stats)))


def layer_norm_backward(x: Array, weight: Array | None, bias: Array | None, mean: Array,
                        rstd: Array, grad: Array, num_dims: int
                        ) -> tuple[Array, Array | None, Array | None]:
    """Gradients of x, weight and bias (None where absent) of the protocol's `layer_norm`:
    dx = rstd (gw - mean(gw) - xhat mean(gw xhat)), gw = grad * weight."""
    token = QUIET_SET(QUIET_TOKEN)
    try:
        rows, m = _rows(x, num_dims)
        d = rows.shape[1]
        g, _ = _rows(grad, num_dims)
        dtype = rows.dtype
        r = rstd.reshape(m, 1).astype(dtype, copy=False)
        xhat = np.subtract(rows, mean.reshape(m, 1).astype(dtype, copy=False))
        xhat *= r
        w_shape = x.shape[x.ndim - num_dims:]
        dw = None if weight is None else np.einsum("ij,ij->j", g, xhat).reshape(w_shape)
        db = None if bias is None else np.einsum("ij->j", g).reshape(w_shape)
        gw = g if weight is None else g * weight.reshape(1, d).astype(dtype, copy=False)
        inv_d = 1 / d if d else math.nan
        proj = row_sums(gw, xhat)
        proj *= inv_d
        xhat *= proj
        mean_gw = row_sums(gw)
        mean_gw *= inv_d
        dx = np.subtract(gw, mean_gw, out=None if weight is None else gw)  # gw is ours
        dx -= xhat
        dx *= r
    finally:
        QUIET_RESET(token)
    out_dtype = x.dtype
    return (dx.reshape(x.shape).astype(out_dtype, copy=False),
            None if dw is None else dw.astype(out_dtype, copy=False),
            None if db is None else db.astype(out_dtype, copy=False))
