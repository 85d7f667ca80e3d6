"""Streaming rows kernels of GPU runtimes: layer norm and softmax / log-softmax of dense rows
too long for the register-held kernels of `layer_norm_rows` / `softmax_rows` (`serves`), one
cube per row, each unit walking its columns ``u, u + units, ...`` in steps of `unroll` loads
(adjacent units read adjacent elements), with few registers per unit.

A row is read once for its statistics and read again for the result, which is written once;
a unit holds no row data between the passes, so a row of any length fits. On the H200 at
8192 x 8192 float32 these kernels reached 67-84% of copy bandwidth against the register-held
kernels' 89% (layer norm) and 92% (softmax), so those keep the rows they can hold.

Statistics, exact for any offset of the row:
- layer norm: the row's mean is its first element plus the sum of the differences from it
  over n (as the register-held kernel's, so inf and NaN propagate alike; exact for a constant
  row); each unit also sums its elements shifted by its own first element `k`
  (``s``, ``q``: sums of ``x - k`` and ``(x - k)^2``), so its mean and sum of squared
  deviations ``q - s^2 / count`` lose no digits to the row's offset; the cube combines these
  with ``count * (mean_u - mean)^2`` (Chan's parallel variance: non-negative terms) into the
  biased variance.
- softmax: each unit keeps a running maximum and its sum of ``exp(x - max)``, rescaled when
  the maximum grows; the cube combines the maxima, then the sums rescaled to the row's maximum.
Values accumulate in float32 (float64 for float64).
"""

from __future__ import annotations

from typing import Any

from .kernel_cache import cached_kernel

#: Units per cube and loads per unit per step of the streaming kernels.
UNITS = 256
UNROLL = 4


class _Walk:
    """A unit's walk over its row's columns: steps of `unroll` loads `units` apart."""

    def __init__(self, b: Any, units: int, unroll: int, exact: bool, n: Any, start: Any
                 ) -> None:
        self.b, self.units, self.unroll, self.exact, self.n = b, units, unroll, exact, n
        self.start = start

    def columns(self, base: Any) -> list[tuple[Any, Any]]:
        """(column, valid or None) of the step at `base`; masked columns read column 0."""
        from burn_cube import bool_, u32

        b, cols = self.b, []
        for i in range(self.unroll):
            c = b.local(u32, base + b.UNIT_POS + i * self.units)
            if self.exact:
                cols.append((c, None))
            else:
                ok = b.local(bool_, c < self.n)
                b.set(c, b.select(ok, c, 0))
                cols.append((c, ok))
        return cols

    def loop(self) -> Any:
        """The step loop (yields the step's first column)."""
        return self.b.for_range(0, self.n, self.units * self.unroll)


def _masked(b: Any, ok: Any, value: Any, other: Any = 0) -> Any:
    return value if ok is None else b.select(ok, value, other)


def layer_norm_args(b: Any, dtypes: tuple[Any, Any], weight: bool, bias: bool
                    ) -> tuple[Any, ...]:
    """The layer-norm forward kernels' arguments, declared in order: x, weight and bias
    (None where absent), out, mean, rstd (rank-1 tensors of the tensors' dtype), then the
    scalars n (u32) and eps (the accumulator's dtype).

    Args:
        b: the kernel builder.
        dtypes: the burn-cube (tensor, accumulator) dtypes.
        weight, bias: whether those tensors are arguments.

    Returns:
        (x, weight, bias, out, mean, rstd, n, eps).
    """
    from burn_cube import u32

    dtype, acc = dtypes
    x = b.tensor("x", dtype, write=False)
    w = b.tensor("weight", dtype, write=False) if weight else None
    sh = b.tensor("bias", dtype, write=False) if bias else None
    out, mean, rstd = (b.tensor(name, dtype, write=True) for name in ("out", "mean", "rstd"))
    return x, w, sh, out, mean, rstd, b.scalar("n", u32), b.scalar("eps", acc)


@cached_kernel
def layer_norm_kernel(dtypes: tuple[Any, Any], units: int, unroll: int, plane: bool,
                      exact: bool, weight: bool, bias: bool) -> Any:
    """Layer norm of a dense row per cube (module docstring).

    Args:
        dtypes: burn-cube dtypes (tensors, accumulator).
        units: units per cube.
        unroll: loads per unit per step.
        plane: combine within planes first.
        exact: rows are a multiple of ``units * unroll`` long (no load is masked).
        weight: a weight tensor follows x.
        bias: a bias tensor follows (the weight).

    Returns:
        A kernel taking ``x, [weight], [bias], out, mean, rstd, n, eps``: rank-1 dense
        tensors, x and out rows of n elements, mean and rstd one element per row.
    """
    from burn_cube import KernelBuilder, bool_, u32

    from .softmax_rows import _combine

    dtype, acc = dtypes
    b = KernelBuilder("layer_norm_stream", cube_dim=units)
    x, w, sh, out, mean, rstd, n, eps = layer_norm_args(b, dtypes, weight, bias)
    u = b.UNIT_POS
    start = b.local(u32, b.CUBE_POS * n)
    walk = _Walk(b, units, unroll, exact, n, start)
    has = b.local(bool_, u < n)
    count = b.local(acc, b.select(has, b.cast((n - 1 - b.select(has, u, 0)) // units + 1, acc),
                                  0))
    shift = b.local(acc, b.cast(x[x.offset + start + b.select(has, u, 0)], acc))
    first = b.local(acc, b.cast(x[x.offset + start], acc))  # the row's (the mean's shift)
    t, s, q = b.local(acc, 0), b.local(acc, 0), b.local(acc, 0)
    with walk.loop() as base:
        cols = walk.columns(base)
        values = [b.local(acc, b.cast(x[x.offset + start + c], acc)) for c, _ in cols]
        for v, (_, ok) in zip(values, cols, strict=True):
            b.set(t, t + _masked(b, ok, v - first))
            b.set(v, v - shift)
            b.set(s, s + _masked(b, ok, v))
            b.set(q, q + _masked(b, ok, v * v))
    safe = b.local(acc, b.max(count, b.const(1, acc)))
    local_mean = b.local(acc, shift + s / safe)
    total = b.local(acc, b.cast(n, acc))
    mu = b.local(acc, first + _combine(b, "sum", t, units, plane) / total)
    dev = b.local(acc, local_mean - mu)
    m2 = b.local(acc, b.select(has, b.max(q - s * s / safe, b.const(0, acc))
                                    + count * dev * dev, 0))
    scale = b.local(acc, b.rsqrt(_combine(b, "sum", m2, units, plane) / total + eps))
    with walk.loop() as base:
        cols = walk.columns(base)
        values = [b.local(acc, (b.cast(x[x.offset + start + c], acc) - mu) * scale)
                  for c, _ in cols]
        if w is not None:
            for v, (c, _) in zip(values, cols, strict=True):
                b.set(v, v * b.cast(w[w.offset + c], acc))
        if sh is not None:
            for v, (c, _) in zip(values, cols, strict=True):
                b.set(v, v + b.cast(sh[sh.offset + c], acc))
        for v, (c, ok) in zip(values, cols, strict=True):
            if ok is None:
                out[out.offset + start + c] = b.cast(v, dtype)
            else:
                with b.if_(ok):
                    out[out.offset + start + c] = b.cast(v, dtype)
    with b.if_(u == 0):
        mean[mean.offset + b.CUBE_POS] = b.cast(mu, dtype)
        rstd[rstd.offset + b.CUBE_POS] = b.cast(scale, dtype)
    return b.kernel()


@cached_kernel
def softmax_kernel(dtypes: tuple[Any, Any], units: int, unroll: int, plane: bool,
                   exact: bool, log: bool) -> Any:
    """Softmax (log-softmax) of a dense row per cube (module docstring): ``exp(x - max) / sum``
    (``x - max - log(sum)``).

    Args:
        dtypes: burn-cube dtypes (tensors, accumulator).
        units: units per cube.
        unroll: loads per unit per step.
        plane: combine within planes first.
        exact: rows are a multiple of ``units * unroll`` long.
        log: log-softmax.

    Returns:
        A kernel taking ``x, out, n``: rank-1 dense tensors of rows of n elements.
    """
    from burn_cube import KernelBuilder, bool_, u32

    from .softmax_rows import _combine

    dtype, acc = dtypes
    b = KernelBuilder("log_softmax_stream" if log else "softmax_stream", cube_dim=units)
    x = b.tensor("x", dtype, write=False)
    out = b.tensor("out", dtype, write=True)
    n = b.scalar("n", u32)
    start = b.local(u32, b.CUBE_POS * n)
    walk = _Walk(b, units, unroll, exact, n, start)
    lowest = b.const(float("-inf"), acc)
    peak, total = b.local(acc, lowest), b.local(acc, 0)
    with walk.loop() as base:
        cols = walk.columns(base)
        values = [b.local(acc, _masked(b, ok, b.cast(x[x.offset + start + c], acc), lowest))
                  for c, ok in cols]
        step = b.local(acc, values[0])
        for v in values[1:]:
            b.set(step, b.max(step, v))
        top = b.local(acc, b.max(peak, step))
        # rescale the running sum (1 while the maximum stays, also while it is -inf)
        b.set(total, total * b.select(top == peak, b.const(1, acc), b.exp(peak - top)))
        b.set(peak, top)
        # a unit whose elements so far are all -inf (or masked) adds nothing
        empty = b.local(bool_, top == lowest)
        for v in values:
            b.set(total, total + b.select(empty, b.const(0, acc), b.exp(v - top)))
    row_peak = _combine(b, "max", peak, units, plane)
    part = b.local(acc, b.select(peak == row_peak, total, total * b.exp(peak - row_peak)))
    row_total = _combine(b, "sum", part, units, plane)
    shift = b.local(acc, row_peak + b.log(row_total)) if log else None
    scale = None if log else b.local(acc, b.const(1, acc) / row_total)
    with walk.loop() as base:
        cols = walk.columns(base)
        for c, ok in cols:
            v = b.cast(x[x.offset + start + c], acc)
            result = v - shift if log else b.exp(v - row_peak) * scale
            if ok is None:
                out[out.offset + start + c] = b.cast(result, dtype)
            else:
                with b.if_(ok):
                    out[out.offset + start + c] = b.cast(result, dtype)
    return b.kernel()


def _plane(backend: Any) -> bool:
    return bool(backend.runtime.properties.plane_size > 1)


def _flat(t: Any, size: int) -> Any:
    """A rank-1 view of `size` elements of dense `t` from its offset (its storage array)."""
    return t.view((size,), (1,)).array


def layer_norm(backend: Any, x: Any, weight: Any, bias: Any, stats: tuple[int, ...], n: int,
               eps: float, units: int = UNITS, unroll: int = UNROLL) -> tuple[Any, Any, Any]:
    """Layer norm of dense `x` as rows of `n` elements on the streaming kernel.

    Args:
        backend: the cube backend (a GPU runtime).
        x: dense float tensor; weight, bias: dense `[n]`-element tensors or None.
        stats: the shape of mean and rstd (one element per row).
        n: the row length.
        eps: added to the variance.
        units, unroll: the kernel's schedule.

    Returns:
        (out shaped as x, mean, rstd shaped `stats`).
    """
    from .layer_norm_rows import _dtypes

    rows = x.size // n
    out = backend.empty(x.shape, x.dtype)
    mean, rstd = backend.empty(stats, x.dtype), backend.empty(stats, x.dtype)
    kernel = layer_norm_kernel(_dtypes(x.dtype), units, unroll, _plane(backend),
                               n % (units * unroll) == 0, weight is not None, bias is not None)
    tensors = [_flat(t, t.size) for t in (x, weight, bias, out, mean, rstd) if t is not None]
    backend.launch_cubes_planned(kernel, (rows, 1, 1), units, *tensors, n, eps)
    return out, mean, rstd


def serves(backend: Any, rows: int, n: int) -> bool:
    """Whether the streaming kernels take `rows` rows of `n` elements on `backend`: GPU
    runtimes, rows longer than the register-held kernels hold (`softmax_rows.SHAPES`), at
    most the grid's x limit of rows."""
    from .softmax_rows import SHAPES

    props = backend.runtime.properties
    longest = max((units * most for units, most in SHAPES if units <= props.max_cube_dim),
                  default=0)
    return (backend.runtime_name != "cpu" and n > longest and 0 < rows <= props.max_cube_count[0]
            and UNITS <= props.max_cube_dim)


def dense_rows(x: Any, out: Any, n: int, steps: tuple[int, int]) -> bool:
    """Whether the row views `x` and `out` of `softmax_rows` (the softmax dim of size 1, as
    `reduction.collapse` leaves them) hold dense rows of `n` elements one after another."""
    def dense(t: Any) -> bool:
        dims = [stride for size, stride in zip(t.shape, t.strides, strict=True) if size != 1]
        return not dims or dims == [n]
    return steps == (1, 1) and dense(x) and dense(out)


def softmax(backend: Any, x: Any, out: Any, rows: int, n: int, log: bool, acc: Any,
            units: int = UNITS, unroll: int = UNROLL) -> None:
    """Softmax (log-softmax) into `out` of `rows` dense rows of `n` elements of `x` from its
    offset (row views of `softmax_rows` with `dense_rows`, or dense tensors) on the streaming
    kernel; `acc` is the accumulator's burn dtype."""
    from burn.ir.cube import cube_dtype

    kernel = softmax_kernel((cube_dtype("softmax", x.dtype), cube_dtype("softmax", acc)), units,
                            unroll, _plane(backend), n % (units * unroll) == 0, log)
    backend.launch_cubes_planned(kernel, (rows, 1, 1), units, _flat(x, rows * n),
                                 _flat(out, rows * n), n)
