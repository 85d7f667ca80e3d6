"""Cross entropy and its backward on the cube runtimes: one unit per row of the `[M, C]` logits.

Forward: a unit reads its target (an out-of-range one that is not `ignore_index` flags a
`check_indices`-style slot, raised as `BurnIndexError` at the next sync point, and reads as
class 0), walks its row for the max, then the sum of exponentials, and writes the sample's
loss ``-logp[t] * w_t`` (``w_t``: the target's class weight, 0 for an ignored sample), mixed
with ``-sum(w * logp)`` when smoothing (an ignored sample's loss is 0 even for NaN / inf
logits, as torch), and ``w_t`` (the mean's denominator terms); "sum" and "mean" then add them
with the backend's float sums (the mean's denominator: the summed ``w_t``, NaN where that is 0
with smoothing, as the protocol's `_mean_weights`).
Backward: ``dx = softmax * g * mass - onehot * g * w_t * (1 - eps) - g * keep * eps / C * w``
with `g` the sample's output gradient (the mean's: over that denominator, inf / NaN where the
``w_t`` sum to 0, as torch), 0 for an ignored sample whatever its output gradient, and
``mass = w_t * (1 - eps) + keep * eps / C * sum(w)``, as the protocol's default.
Logits of at most `LOOPED_ELEMENTS` elements ("sum" and "mean") take one launch each way
instead: a single unit walks every row, adding up the total (and the mean backward's ``w_t``
sum first) itself; below that size the rows kernels' units run on one thread anyway. On GPU
runtimes a "sum" / "mean" over at most `GPU_CUBE_ROWS` rows (a classification batch, whose
step is bound by the host's launches) takes one launch each way too, but of one cube: unit
`u` walks rows ``u, u + units, ...`` (at most `GPU_CLASSES` logits), the totals combined in
the cube (one GPU thread walking the rows of a [64, 10] batch took 72 us forward and 107 us
backward on the H200, the GPU time of the whole rest of an MLP step). Where a unit's rows
would hold more, the rows kernels run, and on GPUs one cube adds up their per-row values
(the forward's losses, the mean backward's ``w_t``), so no GPU thread walks every row.
Values accumulate in float32 (float64 for float64). As in the cpu softmax, the exponentials go
to a scratch row in one loop and are summed in another (`norm_rows_cpu.LANES` partial sums),
so every inner loop vectorizes. On GPU runtimes the rows kernels take a classification head's
larger batches of small rows (at most `GPU_CLASSES` classes, and for "sum" / "mean" at most
`GPU_TOTAL_ROWS` rows, which one cube adds up): a step there is bound by the host's launches,
which the composite's many small kernels multiply. Longer rows on GPUs (their cube-per-row
softmax suits them), empty inputs and targets whose dtype cannot hold `ignore_index` take the
protocol's composite default.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from burn.backend.protocol import Backend
from burn.dtype import DType
from burn.errors import BurnError, BurnIndexError
from burn.ir.cube import cube_dtype

from .checks import pending
from .elementwise import CUBE_DIM
from .kernel_cache import cached_kernel
from .layout import dense_from_start
from .norm_rows_cpu import _lane_fold, _lane_sums
from .rows_gpu import _plane
from .softmax_rows import _combine
from .tensor import CubeTensor, host_array

#: Logits up to this many elements ("sum" and "mean") are walked by one unit, one launch each
#: way (the rows kernels' units run on one thread below the cpu runtime's OpenMP threshold).
LOOPED_ELEMENTS = 1 << 15
#: On GPU runtimes, a "sum" / "mean" over up to this many rows runs in one cube (one launch
#: each way, not two: ~8 us of host time on cuda), its units walking rows ``u, u + units, ...``,
#: where a unit's rows hold at most `GPU_CLASSES` logits. Was 256 (a unit per row); 1024 (all
#: of `GPU_TOTAL_ROWS`) is argued from the work per unit, not measured (no GPU where it was
#: written): a unit walks no more logits than a rows kernel's unit (one row of at most
#: `GPU_CLASSES`), and the cube no more than the measured 256 rows of 256 classes (at most
#: `GPU_CUBE_UNITS` units of `GPU_CLASSES` logits), while the rows kernel's path adds a launch
#: each way and its totals' combine. Longer rows there (300 rows of 200 classes: two rows
#: of 200 a unit) take the rows kernels, their totals a cube (`_total_units`).
GPU_CUBE_ROWS = 1024
#: The fewest units of that cube (a cuda warp), and the most: 256, the largest these kernels
#: were measured with on the H200 and WebGPU's default limit of units per cube; 1024 units (a
#: row each up to 1024 rows) would put four times the logits on the cube's one SM, and a cuda
#: cube of 1024 units caps a unit at 64 registers.
GPU_CUBE_MIN_UNITS, GPU_CUBE_UNITS = 32, 256
#: On GPU runtimes: the most classes a unit's row walk takes, and the most rows of a "sum" /
#: "mean" (past it the composite's parallel reductions; the rows kernel's totals, a cube's
#: units adding ``m / 256`` values each, could take more, which was not measured).
GPU_CLASSES = 256
GPU_TOTAL_ROWS = 1024


def _acc(dtype: DType) -> DType:
    """The accumulator of `dtype`: float64 for float64, else float32."""
    return DType.float64 if dtype is DType.float64 else DType.float32


class _Sample:
    """A unit's row of the logits and its target: the checked class and the target weight."""

    def __init__(self, b: Any, logits: Any, target: Any, weight: Any, flags: Any, acc: Any,
                 classes: Any, ignore: Any, slot: Any, r: Any = None) -> None:
        from burn_cube import bool_, u32

        self.b, self.logits, self.weight, self.acc = b, logits, weight, acc
        self.r = b.ABSOLUTE_POS if r is None else r
        self.start = b.local(u32, self.r * classes)
        t = b.local(target.dtype, target[self.r])
        ignored = b.local(bool_, t == ignore)
        with b.if_(b.and_(b.not_(ignored), b.or_(t < 0, t >= b.cast(classes, target.dtype)))):
            flags[slot] = 1
            b.set(t, 0)
        self.safe = b.local(u32, b.cast(b.select(ignored, 0, t), u32))
        self.keep = b.local(acc, b.select(ignored, 0.0, 1.0))
        picked = self.keep if weight is None else self.keep * self.w(self.safe)
        self.w_target = b.local(acc, picked)

    def x(self, k: Any) -> Any:
        """Logit `k` of the row in the accumulator dtype."""
        return self.b.cast(self.logits[self.start + k], self.acc)

    def w(self, k: Any) -> Any:
        """Class weight `k` in the accumulator dtype."""
        return self.b.cast(self.weight[k], self.acc)

    def stats(self, classes: Any, exps: Any) -> tuple[Any, Any]:
        """(max, sum of exp(x - max)) of the row, the exponentials kept in the row of `exps`:
        the max in `norm_rows_cpu.LANES` independent chains (a NaN makes the sum NaN, so the
        max may skip it; in one chain the forward over [256, 1000] float32 logits took 2.3x
        as long), then two loops that vectorize."""
        b = self.b
        peak = _lane_fold(b, self.acc, classes, lambda k: (self.x(k),), self.x(0),
                          lambda part, value: b.select(value > part, value, part))[0]
        with b.for_range(0, classes) as k:
            exps[self.start + k] = b.exp(self.x(k) - peak)
        return peak, _lane_sums(b, self.acc, classes, lambda k: (exps[self.start + k],))[0]


def _inputs(b: Any, dtypes: tuple[Any, Any, Any], weight: bool) -> tuple[Any, ...]:
    """The kernels' leading arguments: logits, target, [weight], flags, exps (the rows'
    exponentials, accumulator dtype)."""
    from burn_cube import i32

    dtype, _, target_dtype = dtypes
    logits = b.tensor("logits", dtype, write=False)
    target = b.tensor("target", target_dtype, write=False)
    w = b.tensor("weight", dtype, write=False) if weight else None
    return (logits, target, w, b.tensor("flags", i32, write=True),
            b.tensor("exps", dtypes[1], write=True))


def _scalars(b: Any, target_dtype: Any, acc: Any) -> tuple[Any, ...]:
    """The kernels' trailing scalars: m, classes, ignore_index, slot, eps."""
    from burn_cube import u32

    return (b.scalar("m", u32), b.scalar("classes", u32), b.scalar("ignore", target_dtype),
            b.scalar("slot", u32), b.scalar("eps", acc))


@cached_kernel
def forward_kernel(dtypes: tuple[Any, Any, Any], weight: bool, smoothing: bool) -> Any:
    """Per-sample losses and target weights, a unit per row (module docstring).

    Args:
        dtypes: burn-cube dtypes (logits, accumulator, target).
        weight: a class-weight tensor follows the target.
        smoothing: label smoothing is on (``eps > 0``).

    Returns:
        A kernel taking ``logits, target, [weight], flags, exps, loss, w_target, m, classes,
        ignore, slot, eps``: rank-1 tensors, logits dense ``[m, classes]``.
    """
    from burn_cube import KernelBuilder

    dtype, acc, target_dtype = dtypes
    b = KernelBuilder("cross_entropy_rows", unit_work="classes")
    logits, target, w, flags, exps = _inputs(b, dtypes, weight)
    loss = b.tensor("loss", dtype, write=True)
    w_target = b.tensor("w_target", dtype, write=True)
    m, classes, ignore, slot, eps = _scalars(b, target_dtype, acc)
    with b.if_(b.ABSOLUTE_POS < m):
        row = _Sample(b, logits, target, w, flags, acc, classes, ignore, slot)
        w_target[row.r] = b.cast(row.w_target, dtype)
        loss[row.r] = b.cast(_loss(row, classes, exps, eps, smoothing), dtype)
    return b.kernel()


def _loss(row: _Sample, classes: Any, exps: Any, eps: Any, smoothing: bool) -> Any:
    """The sample's loss in the accumulator dtype (module docstring)."""
    b, acc = row.b, row.acc
    peak, total = row.stats(classes, exps)
    # log p_k = (x_k - max) - log(sum): the max is not added back first (1e8 - (1e8 + log 2)
    # is 0 in float32, as logits far larger than the loss would lose it)
    log_total = b.local(acc, b.log(total))
    value = b.local(acc, (log_total - (row.x(row.safe) - peak)) * row.w_target)
    if smoothing:
        def term(k: Any) -> tuple[Any]:
            logp = (row.x(k) - peak) - log_total
            return (logp if row.weight is None else logp * row.w(k),)

        spread = _lane_sums(b, acc, classes, term)[0]
        b.set(value, value * (1 - eps) + -spread * row.keep * (eps / b.cast(classes, acc)))
    # an ignored sample is skipped (as torch): 0, not its logits' nan times 0
    return b.select(row.keep == 0, b.cast(0, acc), value)


@contextmanager
def _unit_rows(b: Any, m: Any, units: int) -> Iterator[Any]:
    """The rows this unit walks: every row in unit 0 of a launch (`units` 1), else rows
    ``u, u + units, ...`` of one cube's units."""
    if units == 1:
        with b.if_(b.ABSOLUTE_POS == 0), b.for_range(0, m) as r:
            yield r
    else:
        with b.for_range(b.UNIT_POS, m, units) as r:
            yield r


def _unit_sums(b: Any, acc: Any, m: Any, units: int, plane: bool,
               terms: Callable[[Any], tuple[Any, ...]], count: int) -> list[Any]:
    """The sums over rows ``0..m`` of the `count` values `terms(r)`, in the accumulator dtype.

    Args:
        b: the kernel builder.
        acc: the accumulator dtype.
        m: the rows.
        units: 1 (unit 0 walks every row and holds the sums), or a cube's units: each adds
            its rows (`_unit_rows`), the cube combines them (`softmax_rows._combine`) and
            every unit holds the sums.
        plane: the cube combines within planes first.
        terms: a row's values (builds the row's code).
        count: how many values `terms` gives.

    Returns:
        The sums, locals.
    """
    sums = [b.local(acc, 0) for _ in range(count)]
    with _unit_rows(b, m, units) as r:
        for part, value in zip(sums, terms(r), strict=True):
            b.set(part, part + value)
    return sums if units == 1 else [_combine(b, "sum", part, units, plane) for part in sums]


def _mean_weights(b: Any, total: Any, smoothing: bool) -> Any:
    """The mean's denominator from the target weights' sum `total`: NaN where that is 0 with
    smoothing (module docstring)."""
    return b.select(total == 0, math.nan, total) if smoothing else total


def _reduced(b: Any, sums: list[Any], mean: bool, smoothing: bool) -> Any:
    """The losses' sum, over the target weights' sum (`sums`' second) for the mean."""
    return sums[0] / _mean_weights(b, sums[1], smoothing) if mean else sums[0]


def _builder(name: str, units: int) -> Any:
    """A kernel builder for cubes of `units` units where `units` is 1 or more (one cube:
    `_launch`), else of `CUBE_DIM` (the rows kernels)."""
    from burn_cube import KernelBuilder

    return KernelBuilder(name, cube_dim=units or CUBE_DIM)


@cached_kernel
def looped_kernel(dtypes: tuple[Any, Any, Any], weight: bool, smoothing: bool,
                  mean: bool, units: int = 1, plane: bool = False) -> Any:
    """The "sum" (or "mean") loss in one launch: one unit walking every row (`units` 1), or
    one cube of `units` units, each walking rows ``u, u + units, ...`` (module docstring).

    Args:
        dtypes, weight, smoothing: as `forward_kernel`.
        mean: divide by the summed target weights.
        units: 1, or the units of the one cube (a power of two).
        plane: the cube combines within planes first (`softmax_rows._combine`).

    Returns:
        A kernel taking ``logits, target, [weight], flags, exps, out, m, classes, ignore, slot,
        eps``: rank-1 tensors, logits dense ``[m, classes]``, `out` of one element.
    """
    dtype, acc, target_dtype = dtypes
    b = _builder("cross_entropy_looped" if units == 1 else "cross_entropy_cube", units)
    logits, target, w, flags, exps = _inputs(b, dtypes, weight)
    out = b.tensor("out", dtype, write=True)
    m, classes, ignore, slot, eps = _scalars(b, target_dtype, acc)

    def terms(r: Any) -> tuple[Any, ...]:
        row = _Sample(b, logits, target, w, flags, acc, classes, ignore, slot, r)
        return (_loss(row, classes, exps, eps, smoothing), row.w_target)[:1 + mean]

    sums = _unit_sums(b, acc, m, units, plane, terms, 1 + mean)
    with b.if_(b.ABSOLUTE_POS == 0):
        out[0] = b.cast(_reduced(b, sums, mean, smoothing), dtype)
    return b.kernel()


@cached_kernel
def total_kernel(dtypes: tuple[Any, Any, Any], mean: bool, smoothing: bool, units: int = 1,
                 plane: bool = False) -> Any:
    """The "sum" (or "mean") reduction of the per-sample losses: the losses' sum (over the
    target weights' sum) in the accumulator dtype, by one unit (`LANES` partial sums) or by
    one cube.

    Args:
        dtypes: as `forward_kernel`.
        mean: divide by the summed target weights.
        smoothing: the losses are smoothed (`_reduced`).
        units: 1, or the units of the one cube (a power of two; `_unit_sums`).
        plane: the cube combines within planes first.

    Returns:
        A kernel taking ``loss, w_target, out, m``: rank-1 tensors, `out` of one element.
    """
    from burn_cube import u32

    dtype, acc, _ = dtypes
    b = _builder("cross_entropy_mean" if mean else "cross_entropy_sum", units)
    loss = b.tensor("loss", dtype, write=False)
    w_target = b.tensor("w_target", dtype, write=False)
    out = b.tensor("out", dtype, write=True)
    m = b.scalar("m", u32)

    def terms(k: Any) -> tuple[Any, ...]:
        return (b.cast(loss[k], acc), b.cast(w_target[k], acc))[:1 + mean]

    sums = _unit_sums(b, acc, m, units, plane, terms, 1 + mean) if units > 1 else None
    with b.if_(b.ABSOLUTE_POS == 0):
        if sums is None:
            sums = _lane_sums(b, acc, m, terms)
        out[0] = b.cast(_reduced(b, sums, mean, smoothing), dtype)
    return b.kernel()


@cached_kernel
def weights_kernel(dtypes: tuple[Any, Any, Any], weight: bool, units: int = 1,
                   plane: bool = False) -> Any:
    """The sum of the samples' target weights (the "mean" backward's denominator), by one
    unit or one cube walking the targets (checked as the rows kernels do).

    Args:
        dtypes, weight: as `forward_kernel`.
        units, plane: as `total_kernel`'s.

    Returns:
        A kernel taking ``target, [weight], flags, total, m, classes, ignore, slot``: rank-1
        tensors, `total` of one element.
    """
    from burn_cube import i32, u32

    dtype, acc, target_dtype = dtypes
    b = _builder("cross_entropy_weights", units)
    target = b.tensor("target", target_dtype, write=False)
    w = b.tensor("weight", dtype, write=False) if weight else None
    flags = b.tensor("flags", i32, write=True)
    total = b.tensor("total", dtype, write=True)
    m, classes = b.scalar("m", u32), b.scalar("classes", u32)
    ignore, slot = b.scalar("ignore", target_dtype), b.scalar("slot", u32)
    sums = _unit_sums(b, acc, m, units, plane, lambda r: (
        _Sample(b, None, target, w, flags, acc, classes, ignore, slot, r).w_target,), 1)
    with b.if_(b.ABSOLUTE_POS == 0):
        total[0] = b.cast(sums[0], dtype)
    return b.kernel()


@cached_kernel
def backward_kernel(dtypes: tuple[Any, Any, Any], weight: bool, smoothing: bool,
                    mode: str, looped: int, plane: bool = False) -> Any:
    """Logit gradients, a unit per row, or with `looped` in one launch as `looped_kernel`
    (one unit walking every row, or one cube of `looped` units; module docstring).

    Args:
        dtypes, weight, smoothing: as `forward_kernel`.
        mode: ``none`` (grad has a value per row), ``sum`` (one value) or ``mean`` (one value,
            divided by the summed target weights: the ``total`` tensor's, or the looped units'
            own sum; 0 for ignored samples).
        looped: 0 (a unit per row), or `looped_kernel`'s `units`.
        plane: as `looped_kernel`'s.

    Returns:
        A kernel taking ``logits, target, [weight], flags, exps, grad, [total], dx, m, classes,
        ignore, slot, eps`` (``total`` for a "mean" of rows): rank-1 tensors, logits and dx
        dense ``[m, classes]``.
    """
    dtype, acc, target_dtype = dtypes
    name = "rows" if not looped else "looped" if looped == 1 else "cube"
    b = _builder(f"cross_entropy_{name}_backward", looped)
    logits, target, w, flags, exps = _inputs(b, dtypes, weight)
    grad = b.tensor("grad", dtype, write=False)
    total_w = b.tensor("total", dtype, write=False) if mode == "mean" and not looped else None
    dx = b.tensor("dx", dtype, write=True)
    m, classes, ignore, slot, eps = _scalars(b, target_dtype, acc)

    def sample(r: Any = None) -> _Sample:
        return _Sample(b, logits, target, w, flags, acc, classes, ignore, slot, r)

    if not looped:
        with b.if_(b.ABSOLUTE_POS < m):
            row = sample()
            denominator = None if total_w is None else b.cast(total_w[0], acc)
            _row_backward(row, grad, denominator, dx, mode, classes, exps, eps, smoothing)
        return b.kernel()
    weights = None
    if mode == "mean":
        weights = _unit_sums(b, acc, m, looped, plane, lambda r: (sample(r).w_target,), 1)[0]
    with _unit_rows(b, m, looped) as r:
        _row_backward(sample(r), grad, weights, dx, mode, classes, exps, eps, smoothing)
    return b.kernel()


def _row_backward(row: _Sample, grad: Any, denominator: Any | None, dx: Any, mode: str,
                  classes: Any, exps: Any, eps: Any, smoothing: bool) -> None:
    """Write the gradient of the sample's logits (module docstring); `denominator`: the
    mean's summed target weights (a kept sample's g over 0 is inf / NaN). An ignored sample's
    g is 0, whatever its output gradient (NaN / inf included, as torch)."""
    b, acc, w = row.b, row.acc, row.weight
    g = b.local(acc, b.cast(grad[row.r if mode == "none" else 0], acc))
    if denominator is not None:
        b.set(g, g / _mean_weights(b, denominator, smoothing))
    b.set(g, b.select(row.keep == 0, b.cast(0, acc), g))
    per_class = b.local(acc, row.keep * (eps / b.cast(classes, acc)))
    smooth_mass = b.local(acc, b.cast(classes, acc))
    if w is not None and smoothing:
        b.set(smooth_mass, _lane_sums(b, acc, classes, lambda k: (row.w(k),))[0])
    mass = b.local(acc, row.w_target * (1 - eps))
    if smoothing:
        b.set(mass, mass + per_class * smooth_mass)
    scale = b.local(acc, g * mass)
    hit = b.local(acc, -(g * row.w_target * (1 - eps)))
    spread = b.local(acc, g * per_class)
    peak, total = row.stats(classes, exps)
    with b.for_range(0, classes) as k:
        value = b.local(acc, exps[row.start + k] / total * scale)
        b.set(value, value + b.select(k == row.safe, hit, b.cast(0, acc)))
        if smoothing:
            b.set(value, value - (spread if w is None else spread * row.w(k)))
        dx[row.start + k] = b.cast(value, dx.dtype)


def _serves(backend: Any, logits: CubeTensor, target: CubeTensor, ignore_index: int,
            reduction: str) -> bool:
    """Whether the rows kernels take these arguments (non-empty rows, on GPU runtimes short
    and, reduced, few, and an `ignore_index` the target dtype holds)."""
    if len(logits.shape) != 2 or 0 in logits.shape:
        return False
    m, c = logits.shape
    if backend.runtime_name != "cpu" and (
            c > GPU_CLASSES or (reduction != "none" and m > GPU_TOTAL_ROWS)):
        return False
    low, high = _RANGES.get(target.dtype) or _range(target.dtype)
    return low <= ignore_index <= high


def _range(dtype: DType) -> tuple[int, int]:
    """The values an integer `dtype` holds (kept in `_RANGES`)."""
    info = np.iinfo(dtype.numpy)
    _RANGES[dtype] = int(info.min), int(info.max)
    return _RANGES[dtype]


_RANGES: dict[DType, tuple[int, int]] = {}


def _prologue(backend: Any, logits: CubeTensor, target: CubeTensor, weight: CubeTensor | None,
              ignore_index: int) -> tuple[tuple[DType, DType], list[Any], list[Any]]:
    """((logits, target) dtypes, leading array arguments, trailing scalars) of a rows launch,
    with a check slot whose failure names the first out-of-range target."""
    m, c = logits.shape
    shape = target.shape

    def error() -> BurnError:
        data = host_array(target)
        bad = data[(data != ignore_index) & ((data < 0) | (data >= c))]
        return BurnIndexError("cross_entropy", f"index {int(bad.flat[0])} out of range [0, {c})",
                              size=c, indices_shape=shape)

    flags, slot = pending(backend).slot(error)
    arrays = [dense_from_start(backend, t).array for t in (logits, target, weight) if t is not None]
    exps = backend.empty((m * c,), _acc(logits.dtype))
    return (logits.dtype, target.dtype), [*arrays, flags.array, exps.array], [
        m, c, ignore_index, slot]


def _kernel(make: Any, dtypes: tuple[DType, DType], *flags: Any) -> Any:
    """`make(kernel dtypes, *flags)` for the (logits, target) `dtypes`, kept in `_KERNELS`
    (keys of burn dtypes and flags hash in C; the kernels' burn-cube dtypes do not)."""
    key = (make, *dtypes, *flags)
    kernel = _KERNELS.get(key)
    if kernel is None:
        logits, target = dtypes
        kernel = _KERNELS[key] = make((cube_dtype("cross_entropy", logits),
                                       cube_dtype("cross_entropy", _acc(logits)),
                                       cube_dtype("cross_entropy", target)), *flags)
    return kernel


_KERNELS: dict[tuple[Any, ...], Any] = {}


def cross_entropy(backend: Any, logits: CubeTensor, target: CubeTensor,
                  weight: CubeTensor | None, ignore_index: int, label_smoothing: float,
                  reduction: str) -> CubeTensor:
    """`Backend.cross_entropy` (same arguments and result) on the rows kernels or, for a
    small "sum" / "mean", one launch (`_looped`) where `_serves` takes the arguments, else
    the protocol's composite default."""
    if not _serves(backend, logits, target, ignore_index, reduction):
        return Backend.cross_entropy(backend, logits, target, weight, ignore_index,
                                     label_smoothing, reduction)
    m = logits.shape[0]
    dtypes, arrays, scalars = _prologue(backend, logits, target, weight, ignore_index)
    smoothing, mean = label_smoothing > 0, reduction == "mean"
    out = backend.empty((1,), logits.dtype)
    units = _looped(backend, logits, reduction)
    if units:
        _launch(backend, _kernel(looped_kernel, dtypes, weight is not None, smoothing, mean,
                                 units, _planes(backend, units)), units, m,
                *arrays, out.array, *scalars, label_smoothing)
        return out.derived((), ())
    loss, w_target = (backend.empty((m,), logits.dtype) for _ in range(2))
    kernel = _kernel(forward_kernel, dtypes, weight is not None, smoothing)
    backend.launch_planned(kernel, m, *arrays, loss.array, w_target.array, *scalars,
                           label_smoothing)
    if reduction == "none":
        return loss
    units = _total_units(backend, m)
    _launch(backend, _kernel(total_kernel, dtypes, mean, smoothing, units,
                             _planes(backend, units)), units, m, loss.array, w_target.array,
            out.array, m)
    return out.derived((), ())


def cross_entropy_backward(backend: Any, logits: CubeTensor, target: CubeTensor,
                           weight: CubeTensor | None, grad: CubeTensor, ignore_index: int,
                           label_smoothing: float, reduction: str) -> CubeTensor:
    """`Backend.cross_entropy_backward` (same arguments and result) on the rows kernels or, for a
    small "sum" / "mean", one launch (`_looped`) where `_serves` takes the arguments, else
    the protocol's composite default."""
    if not _serves(backend, logits, target, ignore_index, reduction):
        return Backend.cross_entropy_backward(backend, logits, target, weight, grad,
                                              ignore_index, label_smoothing, reduction)
    m = logits.shape[0]
    dtypes, arrays, scalars = _prologue(backend, logits, target, weight, ignore_index)
    looped = _looped(backend, logits, reduction)
    extra: list[Any] = []
    if reduction == "mean" and not looped:
        total = backend.empty((1,), logits.dtype)
        units = _total_units(backend, m)
        _launch(backend, _kernel(weights_kernel, dtypes, weight is not None, units,
                                 _planes(backend, units)), units, m,
                *arrays[1:-1], total.array, *scalars)
        extra = [total.array]
    dx = backend.empty(logits.shape, logits.dtype)
    kernel = _kernel(backward_kernel, dtypes, weight is not None, label_smoothing > 0,
                     reduction, looped, _planes(backend, looped))
    _launch(backend, kernel, looped, m, *arrays, dense_from_start(backend, grad).array, *extra,
            dx.flat().array, *scalars, label_smoothing)
    return dx


def _looped(backend: Any, logits: CubeTensor, reduction: str) -> int:
    """How a "sum" or "mean" runs in one launch: 1 (one unit walks every row: at most
    `LOOPED_ELEMENTS` logits on the cpu runtime), the units of one cube (`_cube_units`; on
    the others at most `GPU_CUBE_ROWS` rows, a unit's rows at most `GPU_CLASSES` logits),
    else 0 (the rows kernels)."""
    if reduction == "none":
        return 0
    if backend.runtime_name == "cpu":
        return int(logits.size <= LOOPED_ELEMENTS)
    m, c = logits.shape
    units = _cube_units(m)
    return units if m <= GPU_CUBE_ROWS and -(-m // units) * c <= GPU_CLASSES else 0


def _cube_units(m: int) -> int:
    """The units of one cube over `m` rows: the smallest power of two from
    `GPU_CUBE_MIN_UNITS` holding every row, at most `GPU_CUBE_UNITS` (each then walks rows
    ``u, u + units, ...``)."""
    return max(GPU_CUBE_MIN_UNITS, min(GPU_CUBE_UNITS, 1 << (m - 1).bit_length()))


def _total_units(backend: Any, m: int) -> int:
    """The units adding up the rows kernel's `m` per-row values ("sum" / "mean" losses, the
    mean backward's target weights): 1 on the cpu runtime, else one cube (`_cube_units`)."""
    return 1 if backend.runtime_name == "cpu" else _cube_units(m)


def _planes(backend: Any, units: int) -> bool:
    """Whether a launch of `units` (`_launch`'s `looped`) combines within planes first: a
    cube of more than one unit on a runtime with planes."""
    return units > 1 and _plane(backend)


def _launch(backend: Any, kernel: Any, looped: int, m: int, *args: Any) -> None:
    """A planned launch of a rows kernel (`looped` 0: a unit per row of the `m`), or of one
    cube of `looped` units (1: a cube of one unit, not `CUBE_DIM` units of which all but
    the first idle: ~5 us less a launch on the cpu runtime)."""
    if looped:
        backend.launch_cubes_planned(kernel, (1, 1, 1), looped, *args)
    else:
        backend.launch_planned(kernel, m, *args)
