"""Layer norm and its backward on the cpu runtime: a unit per row of the `[M, D]` groups, each
pass over a row one contiguous inner loop.

Forward: the row's sum of differences from its first element gives the mean (exact for a
constant row), the sum of squared deviations the biased variance (two exact passes, no
cancellation of a one-pass sum of squares); a third loop writes
`out = (x - mean) * rstd * w + b`, and the unit writes the row's mean and
`rstd = 1 / sqrt(var + eps)`.
Backward (from the forward's mean and rstd): with `xhat = (x - mean) * rstd` and `gw = grad *
w`, a unit per row sums `gw` and `gw * xhat`, then writes
`dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat))` and, with a weight, `grad * xhat`; the
backend's (vectorized) `float_sum_dim` sums that (the weight's gradient) and `grad` (the
bias's) down the rows. Row sums use `LANES` partial sums, so the C compiler vectorizes their
inner loops.
Values accumulate in float32 (float64 for float64). GPU runtimes use `layer_norm_rows`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .kernel_cache import cached_kernel
from .layer_norm_rows import _dtypes, _rows
from .layout import dense_from_start
from .tensor import CubeTensor, Shape, dense_strides

#: Plain partial sums of a row's adjacent elements (vector lanes on a CPU: the sums' inner
#: loops vectorize), merged pairwise at the end.
LANES = 16


def _lane_fold(b: Any, acc: Any, n: Any, terms: Callable[[Any], tuple[Any, ...]], init: Any,
               combine: Callable[[Any, Any], Any]) -> list[Any]:
    """Locals holding the folds over ``k < n`` of each value `terms(k)` returns: `LANES`
    partials (each from `init`, ``partial = combine(partial, value)``) over whole blocks of
    `LANES` elements, then the rest one by one, the partials combined pairwise at the end.

    The blocks' loop counts blocks (step 1), so gcc sees each load's step (a u32 index
    stepping by `LANES` may wrap) and adds a block as one vector: a [1024, 128] layer norm
    ran 3x faster than with the stepped loop. One sum per call vectorizes best: two sums of
    one loop are vectorized across blocks, their lanes reduced at the end of every row. A
    max stays scalar (gcc vectorizes no NaN-aware select), but its partials are `LANES`
    independent chains instead of one."""
    from burn_cube import u32

    count = len(terms(b.const(0, u32)))
    parts = [[b.local(acc, init) for _ in range(LANES)] for _ in range(count)]
    blocks = b.local(u32, n // LANES)
    with b.for_range(0, blocks) as block:  # step 1: the C compiler sees the index's step
        for j in range(LANES):
            for part, value in zip(parts, terms(block * LANES + j), strict=True):
                b.set(part[j], combine(part[j], value))
    with b.for_range(blocks * LANES, n) as k:
        for part, value in zip(parts, terms(k), strict=True):
            b.set(part[0], combine(part[0], value))
    folds = []
    for part in parts:
        while len(part) > 1:  # pairwise
            half = len(part) // 2
            part = [b.local(acc, combine(part[j], part[j + half])) for j in range(half)]
        folds.append(part[0])
    return folds


def _lane_sums(b: Any, acc: Any, n: Any, terms: Callable[[Any], tuple[Any, ...]]) -> list[Any]:
    """`_lane_fold`'s sums (partials from 0)."""
    return _lane_fold(b, acc, n, terms, 0, lambda part, value: part + value)


def serves(backend: Any, shape: Shape, num_dims: int) -> bool:
    """Whether the rows kernels take a layer norm of `shape`: the cpu runtime, non-empty rows."""
    return backend.runtime_name == "cpu" and 0 not in _rows(shape, num_dims)


@cached_kernel
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
    b = KernelBuilder("layer_norm_rows_cpu", unit_work="n")
    x = b.tensor("x", dtype, write=False)
    w = b.tensor("weight", dtype, write=False) if weight else None
    sh = b.tensor("bias", dtype, write=False) if bias else None
    out, mean, rstd = (b.tensor(name, dtype, write=True) for name in ("out", "mean", "rstd"))
    m, n, eps = b.scalar("m", u32), b.scalar("n", u32), b.scalar("eps", acc)
    r = b.ABSOLUTE_POS
    with b.if_(r < m):
        start = b.local(u32, r * n)
        count = b.local(acc, b.cast(n, acc))
        # the mean as the first element plus the mean of the differences: exact for a
        # constant row (whose output is then the bias, as torch's), and no cancellation
        # for rows far from 0
        first = b.local(acc, b.cast(x[start], acc))
        total = _lane_sums(b, acc, n, lambda k: (b.cast(x[start + k], acc) - first,))[0]
        mu = b.local(acc, first + total / count)

        def square(k: Any) -> tuple[Any]:
            dev = b.cast(x[start + k], acc) - mu
            return (dev * dev,)

        squares = _lane_sums(b, acc, n, square)[0]
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


@cached_kernel
def backward_kernel(dtypes: tuple[Any, Any], weight: bool) -> Any:
    """Input gradients of a row per unit (module docstring), and with `weight` the terms
    ``grad * xhat`` of the weight's gradient.

    Returns:
        A kernel taking ``x, [weight], mean, rstd, grad, dx, [gx], m, n``: rank-1 tensors, m
        dense rows of n elements.
    """
    from burn_cube import KernelBuilder, u32

    dtype, acc = dtypes
    b = KernelBuilder("layer_norm_rows_cpu_backward", unit_work="n")
    x = b.tensor("x", dtype, write=False)
    w = b.tensor("weight", dtype, write=False) if weight else None
    mean, rstd, grad = (b.tensor(name, dtype, write=False) for name in ("mean", "rstd", "grad"))
    dx = b.tensor("dx", dtype, write=True)
    gx = b.tensor("gx", dtype, write=True) if weight else None
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

        def gw_xhat(k: Any) -> tuple[Any]:
            gw, xhat = terms(k)
            return (gw * xhat,)

        # one sum per pass: gcc vectorizes two sums of one loop across its blocks instead,
        # and their lanes' reductions then cost more than a row's few blocks (3x slower)
        sum_gw = _lane_sums(b, acc, n, lambda k: terms(k)[:1])[0]
        sum_gwx = _lane_sums(b, acc, n, gw_xhat)[0]
        count = b.local(acc, b.cast(n, acc))
        mean_gw = b.local(acc, sum_gw / count)
        mean_gwx = b.local(acc, sum_gwx / count)
        with b.for_range(0, n) as k:
            gw, xhat = terms(k)
            dx[start + k] = b.cast(scale * (gw - mean_gw - xhat * mean_gwx), dtype)
            if gx is not None:
                gx[start + k] = b.cast(b.cast(grad[start + k], acc) * xhat, dtype)
    return b.kernel()


def layer_norm(backend: Any, x: CubeTensor, weight: CubeTensor | None, bias: CubeTensor | None,
               num_dims: int, eps: float) -> tuple[CubeTensor, CubeTensor, CubeTensor]:
    """`Backend.layer_norm` (same arguments and results) on the cpu rows kernel; x has at least
    one row of at least one element."""
    m, d = _rows(x.shape, num_dims)
    stats = (*x.shape[:len(x.shape) - num_dims], *(1,) * num_dims)
    out, mean, rstd = (backend.empty(s, x.dtype) for s in (x.shape, stats, stats))
    kernel = forward_kernel(_dtypes(x.dtype), weight is not None, bias is not None)
    params = [dense_from_start(backend, t).array for t in (x, weight, bias) if t is not None]
    backend.launch_planned(kernel, m, *params, out.flat().array, mean.flat().array,
                           rstd.flat().array, m, d, eps)
    return out, mean, rstd


def layer_norm_backward(backend: Any, x: CubeTensor, weight: CubeTensor | None,
                        bias: CubeTensor | None, mean: CubeTensor, rstd: CubeTensor,
                        grad: CubeTensor, num_dims: int
                        ) -> tuple[CubeTensor, CubeTensor | None, CubeTensor | None]:
    """`Backend.layer_norm_backward` (same arguments and results) on the cpu rows kernels; x has
    at least one row of at least one element."""
    m, d = _rows(x.shape, num_dims)
    dx = backend.empty(x.shape, x.dtype)
    gx = None if weight is None else backend.empty((m, d), x.dtype)
    g = dense_from_start(backend, grad)  # (read again by the bias's column sum)
    inputs = [*(dense_from_start(backend, t).array for t in (x, weight, mean, rstd)
                if t is not None), g.array]
    outputs = [t.flat().array for t in (dx, gx) if t is not None]
    backend.launch_planned(backward_kernel(_dtypes(x.dtype), weight is not None), m, *inputs,
                           *outputs, m, d)
    shape = x.shape[len(x.shape) - num_dims:]

    def column_sum(t: CubeTensor | None) -> CubeTensor | None:
        if t is None:
            return None
        return backend.float_sum_dim(t.view((m, d), (d, 1)), 0).view(shape, dense_strides(shape))

    return dx, column_sum(gx), column_sum(None if bias is None else g)
