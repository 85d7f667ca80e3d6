"""Layer norm and its backward on the cpu runtime: a unit per row of the `[M, D]` groups, each
pass over a row one contiguous inner loop.

Forward: the row's sum gives the mean, the sum of squared deviations the biased variance (two
exact passes, no cancellation of a one-pass sum of squares); a third loop writes
`out = (x - mean) * rstd * w + b`, and the unit writes the row's mean and
`rstd = 1 / sqrt(var + eps)`.
Backward (from the forward's mean and rstd): with `xhat = (x - mean) * rstd` and `gw = grad *
w`, a unit per row sums `gw` and `gw * xhat`, then writes
`dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat))`; a second kernel, a unit per column,
sums `grad * xhat` (the weight's gradient) and `grad` (the bias's) down the rows.
Values accumulate in float32 (float64 for float64). GPU runtimes use `layer_norm_rows`.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from .layer_norm_rows import _dtypes, _flat
from .tensor import CubeTensor, Shape


def _rows(shape: Shape, num_dims: int) -> tuple[int, int]:
    """(rows M, row length D) of a layer norm over the last `num_dims` dims of `shape`."""
    lead = len(shape) - num_dims
    m, d = 1, 1
    for size in shape[:lead]:
        m *= size
    for size in shape[lead:]:
        d *= size
    return m, d


def serves(backend: Any, shape: Shape, num_dims: int) -> bool:
    """Whether the rows kernels take a layer norm of `shape`: the cpu runtime, non-empty rows."""
    return backend.runtime_name == "cpu" and 0 not in _rows(shape, num_dims)


@cache
def forward_kernel(dtypes: tuple[Any, Any], weight: bool, bias: bool) -> Any:
    """Layer norm of a row per unit (module docstring).

    Args:
        dtypes: burn-cube dtypes (tensors, accumulator).
        weight: a weight tensor follows x.
        bias: a bias tensor follows (the weight).

    Returns:
        A kernel taking ``x, [weight], [bias], out, mean, rstd, m, n, eps``: rank-1 tensors, x
        and out m dense rows of n elements, mean and rstd one element per row.
    """
    from burn_cube import KernelBuilder, u32

    dtype, acc = dtypes
    b = KernelBuilder("layer_norm_rows_cpu")
    x = b.tensor("x", dtype, write=False)
    w = b.tensor("weight", dtype, write=False) if weight else None
    sh = b.tensor("bias", dtype, write=False) if bias else None
    out, mean, rstd = (b.tensor(name, dtype, write=True) for name in ("out", "mean", "rstd"))
    m, n, eps = b.scalar("m", u32), b.scalar("n", u32), b.scalar("eps", acc)
    r = b.ABSOLUTE_POS
    with b.if_(r < m):
        start = b.local(u32, r * n)
        count = b.local(acc, b.cast(n, acc))
        total = b.local(acc, 0)
        with b.for_range(0, n) as k:
            b.set(total, total + b.cast(x[start + k], acc))
        mu = b.local(acc, total / count)
        squares = b.local(acc, 0)
        with b.for_range(0, n) as k:
            dev = b.local(acc, b.cast(x[start + k], acc) - mu)
            b.set(squares, squares + dev * dev)
        scale = b.local(acc, b.rsqrt(squares / count + eps))
        with b.for_range(0, n) as k:
            value = b.local(acc, (b.cast(x[start + k], acc) - mu) * scale)
            if w is not None:
                b.set(value, value * b.cast(w[k], acc))
            if sh is not None:
                b.set(value, value + b.cast(sh[k], acc))
            out[start + k] = b.cast(value, dtype)
        mean[r] = b.cast(mu, dtype)
        rstd[r] = b.cast(scale, dtype)
    return b.kernel()


@cache
def backward_kernel(dtypes: tuple[Any, Any], weight: bool) -> Any:
    """Input gradients of a row per unit (module docstring).

    Returns:
        A kernel taking ``x, [weight], mean, rstd, grad, dx, m, n``: rank-1 tensors, m dense
        rows of n elements.
    """
    from burn_cube import KernelBuilder, u32

    dtype, acc = dtypes
    b = KernelBuilder("layer_norm_rows_cpu_backward")
    x = b.tensor("x", dtype, write=False)
    w = b.tensor("weight", dtype, write=False) if weight else None
    mean, rstd, grad = (b.tensor(name, dtype, write=False) for name in ("mean", "rstd", "grad"))
    dx = b.tensor("dx", dtype, write=True)
    m, n = b.scalar("m", u32), b.scalar("n", u32)
    r = b.ABSOLUTE_POS
    with b.if_(r < m):
        start = b.local(u32, r * n)
        mu = b.local(acc, b.cast(mean[r], acc))
        scale = b.local(acc, b.cast(rstd[r], acc))

        def terms(k: Any) -> tuple[Any, Any]:
            """(gw, xhat) of element k."""
            g = b.cast(grad[start + k], acc)
            gw = g if w is None else g * b.cast(w[k], acc)
            return b.local(acc, gw), b.local(acc, (b.cast(x[start + k], acc) - mu) * scale)

        sum_gw, sum_gwx = b.local(acc, 0), b.local(acc, 0)
        with b.for_range(0, n) as k:
            gw, xhat = terms(k)
            b.set(sum_gw, sum_gw + gw)
            b.set(sum_gwx, sum_gwx + gw * xhat)
        count = b.local(acc, b.cast(n, acc))
        mean_gw = b.local(acc, sum_gw / count)
        mean_gwx = b.local(acc, sum_gwx / count)
        with b.for_range(0, n) as k:
            gw, xhat = terms(k)
            dx[start + k] = b.cast(scale * (gw - mean_gw - xhat * mean_gwx), dtype)
    return b.kernel()


@cache
def column_kernel(dtypes: tuple[Any, Any], weight: bool, bias: bool) -> Any:
    """The weight's and bias's gradients, a unit per column (module docstring).

    Returns:
        A kernel taking ``x, mean, rstd, grad, [dweight], [dbias], m, n``: rank-1 tensors, m
        dense rows of n elements; the gradients n elements each.
    """
    from burn_cube import KernelBuilder, u32

    dtype, acc = dtypes
    b = KernelBuilder("layer_norm_cpu_columns")
    x, mean, rstd, grad = (b.tensor(name, dtype, write=False)
                           for name in ("x", "mean", "rstd", "grad"))
    dw = b.tensor("dweight", dtype, write=True) if weight else None
    db = b.tensor("dbias", dtype, write=True) if bias else None
    m, n = b.scalar("m", u32), b.scalar("n", u32)
    j = b.ABSOLUTE_POS
    with b.if_(j < n):
        sum_w, sum_b = b.local(acc, 0), b.local(acc, 0)
        with b.for_range(0, m) as r:
            at = b.local(u32, r * n + j)
            g = b.local(acc, b.cast(grad[at], acc))
            if dw is not None:
                xhat = (b.cast(x[at], acc) - b.cast(mean[r], acc)) * b.cast(rstd[r], acc)
                b.set(sum_w, sum_w + g * xhat)
            if db is not None:
                b.set(sum_b, sum_b + g)
        if dw is not None:
            dw[j] = b.cast(sum_w, dtype)
        if db is not None:
            db[j] = b.cast(sum_b, dtype)
    return b.kernel()


def layer_norm(backend: Any, x: CubeTensor, weight: CubeTensor | None, bias: CubeTensor | None,
               num_dims: int, eps: float) -> tuple[CubeTensor, CubeTensor, CubeTensor]:
    """`Backend.layer_norm` (same arguments and results) on the cpu rows kernel; x has at least
    one row of at least one element."""
    m, d = _rows(x.shape, num_dims)
    stats = (*x.shape[:len(x.shape) - num_dims], *(1,) * num_dims)
    out, mean, rstd = (backend.empty(s, x.dtype) for s in (x.shape, stats, stats))
    kernel = forward_kernel(_dtypes(x.dtype), weight is not None, bias is not None)
    params = [_flat(backend, t).array for t in (x, weight, bias) if t is not None]
    backend.launch(kernel, m, *params, *(_flat(backend, t).array for t in (out, mean, rstd)),
                   m, d, eps)
    return out, mean, rstd


def layer_norm_backward(backend: Any, x: CubeTensor, weight: CubeTensor | None,
                        bias: CubeTensor | None, mean: CubeTensor, rstd: CubeTensor,
                        grad: CubeTensor, num_dims: int
                        ) -> tuple[CubeTensor, CubeTensor | None, CubeTensor | None]:
    """`Backend.layer_norm_backward` (same arguments and results) on the cpu rows kernels; x has
    at least one row of at least one element."""
    m, d = _rows(x.shape, num_dims)
    dtypes = _dtypes(x.dtype)
    dx = backend.empty(x.shape, x.dtype)
    stats = [_flat(backend, t).array for t in (mean, rstd, grad)]
    xs = _flat(backend, x).array
    ws = [] if weight is None else [_flat(backend, weight).array]
    backend.launch(backward_kernel(dtypes, weight is not None), m, xs, *ws, *stats,
                   _flat(backend, dx).array, m, d)
    shape = x.shape[len(x.shape) - num_dims:]
    grads = [None if t is None else backend.empty(shape, x.dtype) for t in (weight, bias)]
    if weight is not None or bias is not None:
        backend.launch(column_kernel(dtypes, weight is not None, bias is not None), d, xs,
                       *stats, *(_flat(backend, t).array for t in grads if t is not None), m, d)
    return dx, grads[0], grads[1]
