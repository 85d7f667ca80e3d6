"""Pooling of the cube backends (avg, max with indices, adaptive avg; 1d and 2d) and backward.

1d inputs run as 2d ones with a height of 1. The window geometry (kernel, stride, padding,
dilation) goes to the kernels as runtime scalars, so one kernel per dtype serves every shape
(but for the cpu max pool's unrolled windows, compiled per kernel size). The backward kernels
gather: each input element sums the output gradients of the windows that read it
(deterministic, no atomics); non-overlapping windows scatter instead. The cpu runtime runs max
pooling and its scatter with a unit per plane. Adaptive pooling is a separable resampling
(`resize.resample`) with the NumPy backend's averaging matrices.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from burn.backend.options import PoolOptions, window_out
from burn.backends.numpy.module.pool import _adaptive_matrix as adaptive_matrix
from burn.dtype import DType
from burn.errors import ShapeError
from burn.ir.cube import cube_dtype

from ..kernel_cache import cached_kernel
from ..kernels import fill_kernel
from ..layout import dense_from_start
from ..tensor import CubeTensor, Shape
from .resize import as_4d, device_csr, lead, planes, resample, unravel, work_dtype

#: Names of the window scalars, per axis (h, w): kernel, stride, padding, dilation.
_WINDOW = ("k", "s", "p", "d")
#: The cpu max-pool forward kernels' last scalar: each plane's taps read, which weighs their
#: OpenMP threshold (`KernelBuilder`'s `unit_work`), so a few hundred planes use every thread
#: (LeNet's first pool at 2 threads: 112 -> 87 us; the memory-bound conv copies and the pool
#: backward's scatter measured no gain and stay below the threshold).
WORK = "work"
#: Most taps a cpu max-pool window may have to be compiled in and unrolled
#: (`_max_windows_kernel`); larger windows, or windows reaching outside x, sweep tap by tap.
UNROLLED_TAPS = 16


def _geometry(op: str, x: CubeTensor, options: PoolOptions) -> tuple[list[int], list[int]]:
    """Checks the options against x; returns the output spatial shape and the window scalars
    (kh, kw, sh, sw, ph, pw, dh, dw; height 1 for 1d)."""
    nd = len(options.kernel_size)
    params = (options.stride, options.padding, options.dilation)
    if nd not in (1, 2) or len(x.shape) != nd + 2 or any(len(p) != nd for p in params):
        raise ShapeError(op, "x must be [N, C, *spatial] with 1 or 2 spatial dims matching "
                         "the options", x=x.shape, kernel_size=options.kernel_size)
    out = window_out(x.shape[2:], options.kernel_size, *params, options.ceil_mode)
    if min(out) < 1:
        raise ShapeError(op, "kernel larger than the padded input", x=x.shape,
                         kernel_size=options.kernel_size)
    lead = {"k": 1, "s": 1, "p": 0, "d": 1} if nd == 1 else {}
    values = dict(zip(_WINDOW, (options.kernel_size, *params), strict=True))
    scalars = [v for name in _WINDOW for v in ([lead[name]] if lead else []) + list(values[name])]
    return out, scalars


def _window_scalars(b: Any) -> dict[str, Any]:
    """Declares the window scalars (i32) in `_geometry`'s order."""
    from burn_cube import i32

    return {f"{name}{axis}": b.scalar(f"{name}{axis}", i32) for name in _WINDOW
            for axis in "hw"}


def _count(b: Any, start: Any, k: Any, d: Any, low: Any, high: Any) -> Any:
    """Number of taps start + i*d (i < k) inside [low, high), as an f32 local."""
    from burn_cube import f32

    n = b.local(f32, 0.0)
    with b.for_range(k) as i:
        tap = start + i * d
        b.set(n, n + b.cast(b.and_(tap >= low, tap < high), f32))
    return n


def _divisor(b: Any, w: dict[str, Any], oh: Any, ow: Any, size: tuple[Any, Any],
             include_pad: Any) -> Any:
    """Element count of window (oh, ow): padded taps count with count_include_pad only."""
    qh, qw = w["ph"] * include_pad, w["pw"] * include_pad
    rows = _count(b, oh * w["sh"] - w["ph"], w["kh"], w["dh"], -qh, size[0] + qh)
    cols = _count(b, ow * w["sw"] - w["pw"], w["kw"], w["dw"], -qw, size[1] + qw)
    return rows * cols


def _inside(b: Any, v: Any, size: Any) -> Any:
    return b.and_(v >= 0, v < size)


@cached_kernel
def _avg_kernel(dtype: DType, rank: int) -> Any:
    """Average pooling: one unit per output element (x: planes of rank 3 or 4)."""
    from burn_cube import KernelBuilder, i32

    work = cube_dtype("avg_pool", work_dtype(dtype))
    b = KernelBuilder("avg_pool")
    x = b.tensor("x", cube_dtype("avg_pool", dtype), rank=rank, write=False)
    w = _window_scalars(b)
    include_pad = b.scalar("include_pad", i32)
    y = b.tensor("out", cube_dtype("avg_pool", dtype), rank=3, write=True)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < y.len):
        plane, oh, ow = unravel(b, pos, y)
        xl = lead(b, x, plane)
        size = (b.local(i32, b.cast(x.shape[-2], i32)), b.local(i32, b.cast(x.shape[-1], i32)))
        acc = b.local(work, 0.0)
        with b.for_range(w["kh"]) as i:
            h = b.local(i32, oh * w["sh"] - w["ph"] + i * w["dh"])
            with b.if_(_inside(b, h, size[0])), b.for_range(w["kw"]) as j:
                col = b.local(i32, ow * w["sw"] - w["pw"] + j * w["dw"])
                with b.if_(_inside(b, col, size[1])):
                    b.set(acc, acc + b.cast(x[(*xl, h, col)], work))
        y[pos] = acc / b.cast(_divisor(b, w, oh, ow, size, include_pad), work)
    return b.kernel()


@cached_kernel
def _max_kernel(dtype: DType, rank: int) -> Any:
    """Max pooling over the taps inside x; the last NaN wins, ties go to the first tap, a
    window of -inf only names its first tap inside x (as torch)."""
    from burn_cube import KernelBuilder, bool_, i32, i64

    b = KernelBuilder("max_pool")
    work, x, w, y, idx = _max_args(b, dtype, rank)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < y.len):
        plane, oh, ow = unravel(b, pos, y)
        xl = lead(b, x, plane)
        size = (b.local(i32, b.cast(x.shape[-2], i32)), b.local(i32, b.cast(x.shape[-1], i32)))
        best = b.local(work, float("-inf"))
        arg = b.local(i32, -1)
        with b.for_range(w["kh"]) as i:
            h = b.local(i32, oh * w["sh"] - w["ph"] + i * w["dh"])
            row_in = b.local(bool_, _inside(b, h, size[0]))
            with b.for_range(w["kw"]) as j:
                col = b.local(i32, ow * w["sw"] - w["pw"] + j * w["dw"])
                with b.if_(b.and_(row_in, _inside(b, col, size[1]))):
                    value = b.local(work, b.cast(x[(*xl, h, col)], work))
                    with b.if_(b.or_(arg < 0, _better(b, value, best))):
                        b.set(best, value)
                        b.set(arg, i * w["kw"] + j)
        y[pos] = best
        h = oh * w["sh"] - w["ph"] + (arg // w["kw"]) * w["dh"]
        col = ow * w["sw"] - w["pw"] + (arg % w["kw"]) * w["dw"]
        idx[pos] = b.cast(h * size[1] + col, i64)
    return b.kernel()


@cached_kernel
def _max_planes_kernel(dtype: DType, rank: int, inside: bool) -> Any:
    """`_max_kernel` for the cpu runtime: one unit per plane, which sets its outputs to
    (-inf, no index) and then sweeps tap by tap (in `_max_kernel`'s order, so its ties and
    NaN rules hold, and a window's first tap inside x is the first one it sees) over the rows
    of windows whose tap is inside x, with branch-free updates the C compiler vectorises; a
    tap's window range is worked out once per plane, or not at all when every window is
    `inside` x."""
    from burn_cube import KernelBuilder, i32, i64

    b = KernelBuilder("max_pool_planes", unit_work=WORK)
    work, x, w, y, idx = _max_args(b, dtype, rank)
    b.scalar(WORK, i32)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < y.shape[0]):
        plane = b.local(i32, b.cast(pos, i32))
        xl = lead(b, x, plane)
        size = (b.local(i32, b.cast(x.shape[-2], i32)), b.local(i32, b.cast(x.shape[-1], i32)))
        height = b.local(i32, b.cast(y.shape[1], i32))
        width = b.local(i32, b.cast(y.shape[2], i32))
        base = b.local(i32, plane * height * width)
        with b.for_range(height * width) as o:
            y[base + o] = float("-inf")
            idx[base + o] = -1
        with b.for_range(w["kh"]) as i, b.for_range(w["kw"]) as j:
            shift = b.local(i32, j * w["dw"] - w["pw"])
            lo: Any = 0
            hi: Any = width
            if not inside:
                lo = b.local(i32, b.select(shift < 0, (w["sw"] - 1 - shift) // w["sw"], 0))
                hi = b.local(i32, b.min(b.max(size[1] - shift + w["sw"] - 1, 0) // w["sw"],
                                        width))
            with b.for_range(height) as oh:
                h = b.local(i32, oh * w["sh"] - w["ph"] + i * w["dh"])
                row = b.local(i32, base + oh * width)
                guard = nullcontext() if inside else b.if_(_inside(b, h, size[0]))
                with guard, b.for_range(lo, hi) as ow:
                    col = ow * w["sw"] + shift
                    value = b.local(work, b.cast(x[(*xl, h, col)], work))
                    best = b.local(work, b.cast(y[row + ow], work))
                    better = b.local(cube_dtype("max_pool", DType.bool), b.or_(
                        idx[row + ow] < 0, _better(b, value, best)))
                    y[row + ow] = b.cast(b.select(better, value, best), y.dtype)
                    idx[row + ow] = b.select(better, b.cast(h * size[1] + col, i64),
                                             idx[row + ow])
    return b.kernel()


@cached_kernel
def _max_windows_kernel(dtype: DType, rank: int, kh: int, kw: int) -> Any:
    """`_max_kernel` for the cpu runtime where every window lies inside x, with the kernel
    size compiled in: one unit per plane walks its outputs row by row, each window's taps
    unrolled (in `_max_kernel`'s order, so its ties and NaN rules hold) into registers, and
    writes each value and index once."""
    from burn_cube import KernelBuilder, i32, i64

    b = KernelBuilder("max_pool_windows", unit_work=WORK)
    work, x, w, y, idx = _max_args(b, dtype, rank)
    b.scalar(WORK, i32)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < y.shape[0]):
        plane = b.local(i32, b.cast(pos, i32))
        xl = lead(b, x, plane)
        size = b.local(i32, b.cast(x.shape[-1], i32))
        height = b.local(i32, b.cast(y.shape[1], i32))
        width = b.local(i32, b.cast(y.shape[2], i32))
        base = b.local(i32, plane * height * width)
        with b.for_range(height) as oh:
            top = b.local(i32, oh * w["sh"] - w["ph"])
            hs = [b.local(i32, top + i * w["dh"]) for i in range(kh)]
            row = b.local(i32, base + oh * width)
            with b.for_range(width) as ow:
                best = b.local(work)
                arg = b.local(i32)
                for i, h in enumerate(hs):
                    for j in range(kw):
                        # no locals inside the loop: reads affine in ow get their bounds
                        # checks hoisted out of it
                        col = ow * w["sw"] + (j * w["dw"] - w["pw"])
                        value = b.local(work, b.cast(x[(*xl, h, col)], work))
                        if i == j == 0:
                            b.set(best, value)
                            b.set(arg, h * size + col)
                            continue
                        better = _better(b, value, best)
                        b.set(arg, b.select(better, h * size + col, arg))
                        b.set(best, b.select(better, value, best))
                y[row + ow] = b.cast(best, y.dtype)
                idx[row + ow] = b.cast(arg, i64)
    return b.kernel()


def _max_args(b: Any, dtype: DType, rank: int) -> tuple[Any, Any, dict[str, Any], Any, Any]:
    """The max-pool kernels' arguments, declared in order: x, the window scalars, out and the
    int64 indices.

    Returns:
        (the work dtype in burn-cube, x, window scalars, out, indices).
    """
    from burn_cube import i64

    cube = cube_dtype("max_pool", dtype)
    x = b.tensor("x", cube, rank=rank, write=False)
    w = _window_scalars(b)
    y = b.tensor("out", cube, rank=3, write=True)
    idx = b.tensor("indices", i64, rank=3, write=True)
    return cube_dtype("max_pool", work_dtype(dtype)), x, w, y, idx


def _better(b: Any, value: Any, best: Any) -> Any:
    """Whether `value` replaces `best` as a window's max: larger, or NaN (the last NaN of a
    window names it, as torch's max pooling)."""
    return b.or_(value > best, b.isnan(value))


@contextmanager
def _windows_reading(b: Any, w: dict[str, Any], at: Any, axis: str, size: Any) -> Iterator[Any]:
    """Loops (ascending) over the output indices along `axis` whose window reads input index
    `at`: the few in [ceil((at + p - d(k-1)) / s), (at + p) / s] that hit a tap."""
    from burn_cube import i32

    k, s, p, d = (w[f"{name}{axis}"] for name in _WINDOW)
    t = b.local(i32, at + p)
    first = b.local(i32, b.max(t - (k - 1) * d + s - 1, 0) // s)
    last = b.local(i32, b.min(t // s, size - 1))
    with b.for_range(first, last + 1) as o, b.if_(b.or_(d == 1, (t - o * s) % d == 0)):
        yield o


@cached_kernel
def _avg_backward_kernel(dtype: DType, grad_dtype: DType, rank: int) -> Any:
    """grad_x of average pooling: each input element sums grad / divisor of its windows."""
    from burn_cube import KernelBuilder, i32

    work = cube_dtype("avg_pool_backward", work_dtype(dtype))
    b = KernelBuilder("avg_pool_backward")
    g = b.tensor("grad", cube_dtype("avg_pool_backward", grad_dtype), rank=rank, write=False)
    w = _window_scalars(b)
    include_pad = b.scalar("include_pad", i32)
    gx = b.tensor("grad_x", cube_dtype("avg_pool_backward", dtype), rank=3, write=True)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < gx.len):
        plane, h, col = unravel(b, pos, gx)
        gl = lead(b, g, plane)
        size = (b.local(i32, b.cast(gx.shape[1], i32)), b.local(i32, b.cast(gx.shape[2], i32)))
        acc = b.local(work, 0.0)
        with _windows_reading(b, w, h, "h", b.cast(g.shape[-2], i32)) as oh, \
                _windows_reading(b, w, col, "w", b.cast(g.shape[-1], i32)) as ow:
            div = b.cast(_divisor(b, w, oh, ow, size, include_pad), work)
            b.set(acc, acc + b.cast(g[(*gl, oh, ow)], work) / div)
        gx[pos] = acc
    return b.kernel()


@cached_kernel
def _max_backward_kernel(dtype: DType, grad_dtype: DType, index_dtype: DType,
                         ranks: tuple[int, int]) -> Any:
    """grad_x of max pooling: each input element sums the grads of the windows whose index
    names it, in output order (as the NumPy backend's scatter)."""
    from burn_cube import KernelBuilder, i32

    work = cube_dtype("max_pool_backward", work_dtype(dtype))
    b = KernelBuilder("max_pool_backward")
    idx = b.tensor("indices", cube_dtype("max_pool_backward", index_dtype), rank=ranks[0],
                   write=False)
    g = b.tensor("grad", cube_dtype("max_pool_backward", grad_dtype), rank=ranks[1],
                 write=False)
    w = _window_scalars(b)
    gx = b.tensor("grad_x", cube_dtype("max_pool_backward", dtype), rank=3, write=True)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < gx.len):
        plane, h, col = unravel(b, pos, gx)
        il, gl = lead(b, idx, plane), lead(b, g, plane)
        flat = h * b.cast(gx.shape[2], i32) + col
        acc = b.local(work, 0.0)
        with _windows_reading(b, w, h, "h", b.cast(g.shape[-2], i32)) as oh, \
                _windows_reading(b, w, col, "w", b.cast(g.shape[-1], i32)) as ow, \
                b.if_(idx[(*il, oh, ow)] == flat):
            b.set(acc, acc + b.cast(g[(*gl, oh, ow)], work))
        gx[pos] = acc
    return b.kernel()


@cached_kernel
def _max_scatter_kernel(dtype: DType, grad_dtype: DType, index_dtype: DType) -> Any:
    """grad_x of max pooling with non-overlapping windows (zero-filled first): each output
    writes its grad at its index (each input is named by at most one window)."""
    from burn_cube import KernelBuilder, u32

    b = KernelBuilder("max_pool_backward_scatter")
    idx = b.tensor("indices", cube_dtype("max_pool_backward", index_dtype), rank=4, write=False)
    g = b.tensor("grad", cube_dtype("max_pool_backward", grad_dtype), rank=4, write=False)
    gx = b.tensor("grad_x", cube_dtype("max_pool_backward", dtype), rank=4, write=True)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < idx.len):
        n, c, oh, ow = unravel(b, pos, idx)
        plane = b.local(u32, gx.shape[2] * gx.shape[3])
        flat = b.local(idx.dtype, idx[n, c, oh, ow])
        with b.if_(b.and_(flat >= 0, flat < b.cast(plane, idx.dtype))):
            base = (b.cast(n, u32) * gx.shape[1] + b.cast(c, u32)) * plane
            gx[base + b.cast(flat, u32)] = g[n, c, oh, ow]
    return b.kernel()


@cached_kernel
def _max_scatter_planes_kernel(dtype: DType, grad_dtype: DType, index_dtype: DType,
                               ranks: tuple[int, int]) -> Any:
    """`_max_scatter_kernel` for the cpu runtime, zero fill included: one unit per plane
    zeroes its grad_x plane, then writes each output's grad at its index. `ranks` (1, 1):
    indices and grad are dense, given flat, and each plane's outputs are one loop."""
    from burn_cube import KernelBuilder, i32

    b = KernelBuilder("max_pool_backward_planes")
    idx = b.tensor("indices", cube_dtype("max_pool_backward", index_dtype), rank=ranks[0],
                   write=False)
    g = b.tensor("grad", cube_dtype("max_pool_backward", grad_dtype), rank=ranks[1],
                 write=False)
    gx = b.tensor("grad_x", cube_dtype("max_pool_backward", dtype), rank=3, write=True)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < gx.shape[0]):
        plane = b.local(i32, b.cast(pos, i32))
        area = b.local(i32, b.cast(gx.shape[1] * gx.shape[2], i32))
        base = b.local(i32, plane * area)
        with b.for_range(area) as i:
            gx[base + i] = 0

        def scatter(at: Any, read: Any) -> None:
            flat = b.local(idx.dtype, idx[at])
            with b.if_(b.and_(flat >= 0, flat < b.cast(area, idx.dtype))):
                gx[base + b.cast(flat, i32)] = g[read]

        if ranks == (1, 1):
            count = b.local(i32, b.cast(idx.len // gx.shape[0], i32))
            start = b.local(i32, plane * count)
            with b.for_range(count) as o:
                scatter(start + o, start + o)
        else:
            il, gl = lead(b, idx, plane), lead(b, g, plane)
            with b.for_range(b.cast(g.shape[-2], i32)) as oh, \
                    b.for_range(b.cast(g.shape[-1], i32)) as ow:
                scatter((*il, oh, ow), (*gl, oh, ow))
    return b.kernel()


def _all_inside(x: CubeTensor, out: list[int], options: PoolOptions) -> bool:
    """Whether every tap of every window of `out` windows lies inside x (no padding, and
    ceil_mode adds no window reaching past x)."""
    return not any(options.padding) and all(
        (o - 1) * s + (k - 1) * d < size for o, s, k, d, size in zip(
            out, options.stride, options.kernel_size, options.dilation, x.shape[2:],
            strict=True))


def _check_grad(op: str, x: CubeTensor, grad: CubeTensor, out: list[int],
                indices: CubeTensor | None = None) -> None:
    expected = (*x.shape[:2], *out)
    if grad.shape != expected or (indices is not None and indices.shape != expected):
        raise ShapeError(op, "grad (and indices) must have the output's shape", grad=grad.shape,
                         x=x.shape, indices=None if indices is None else indices.shape)


def _back_to(t: CubeTensor, shape: Shape) -> CubeTensor:
    """A dense 4-d result viewed with `shape` (drops the height of 1 of 1d pooling)."""
    if len(shape) == 4:
        return t
    return t.view(shape, (t.strides[0], t.strides[1], t.strides[3]))


def _empty4(backend: Any, x: CubeTensor, spatial: list[int], dtype: DType) -> CubeTensor:
    """A dense 4-d result [N, C, *spatial] (height 1 for 1d)."""
    return backend.empty((*x.shape[:2], *([1] * (4 - len(x.shape))), *spatial), dtype)


def _adaptive_maps(backend: Any, op: str, x: CubeTensor, sizes: Shape, transpose: bool
                   ) -> list[tuple[int, Any, int]]:
    nd = len(sizes)
    if nd not in (1, 2) or len(x.shape) != nd + 2 or min(sizes) < 1:
        raise ShapeError(op, "x must be [N, C, *spatial] with 1 or 2 spatial dims, output "
                         "sizes >= 1", x=x.shape, output_size=sizes)
    work = work_dtype(x.dtype)
    return [(axis, device_csr(backend, (n, o), work, transpose, adaptive_matrix),
             n if transpose else o)
            for axis, n, o in zip((2, 3)[-nd:], x.shape[2:], sizes, strict=True)]


class CubePoolOps:
    """Pooling kernels of the cube backends."""

    def avg_pool(self: Any, x: CubeTensor, options: PoolOptions) -> CubeTensor:
        """Average pooling 1d/2d (count_include_pad, ceil_mode as PyTorch).

        Args:
            x: input [N, C, *spatial] (any strides).
            options: kernel_size, stride, padding, dilation, ceil_mode, count_include_pad.

        Returns:
            [N, C, *out] of x's dtype.
        """
        out, scalars = _geometry("avg_pool", x, options)
        y = _empty4(self, x, out, x.dtype)
        if y.size:
            xp = planes(as_4d(x))
            self.launch(_avg_kernel(x.dtype, len(xp.shape)), y.size, xp.array, *scalars,
                        int(options.count_include_pad), planes(y).array)
        return _back_to(y, (*x.shape[:2], *out))

    def avg_pool_backward(self: Any, x: CubeTensor, grad: CubeTensor,
                          options: PoolOptions) -> CubeTensor:
        """Gradient of `avg_pool` with respect to x.

        Args:
            x: the forward's input [N, C, *spatial].
            grad: gradient of the output [N, C, *out].
            options: the forward's options.

        Returns:
            grad_x of x's shape and dtype.
        """
        out, scalars = _geometry("avg_pool_backward", x, options)
        _check_grad("avg_pool_backward", x, grad, out)
        gx = _empty4(self, x, list(x.shape[2:]), x.dtype)
        if gx.size:
            gp = planes(as_4d(grad))
            self.launch(_avg_backward_kernel(x.dtype, grad.dtype, len(gp.shape)), gx.size,
                        gp.array, *scalars, int(options.count_include_pad), planes(gx).array)
        return _back_to(gx, x.shape)

    def max_pool_with_indices(self: Any, x: CubeTensor, options: PoolOptions
                              ) -> tuple[CubeTensor, CubeTensor]:
        """Max pooling 1d/2d; the last NaN wins, ties go to the first window element (a window
        of -inf only names its first element inside x), as torch.

        Args:
            x: input [N, C, *spatial] (any strides).
            options: kernel_size, stride, padding, dilation, ceil_mode.

        Returns:
            (values [N, C, *out] of x's dtype, int64 flat indices into each input plane).
        """
        out, scalars = _geometry("max_pool", x, options)
        y = _empty4(self, x, out, x.dtype)
        idx = _empty4(self, x, out, DType.int64)
        if y.size:
            xp, yp = planes(as_4d(x)), planes(y)
            inside = _all_inside(x, out, options)
            taps = (1,) * (2 - len(options.kernel_size)) + tuple(options.kernel_size)
            work: tuple[int, ...] = (math.prod(out) * math.prod(taps),)
            if self.runtime_name == "cpu" and inside and math.prod(taps) <= UNROLLED_TAPS:
                kernel, units = _max_windows_kernel(x.dtype, len(xp.shape), *taps), yp.shape[0]
            elif self.runtime_name == "cpu":
                kernel, units = _max_planes_kernel(x.dtype, len(xp.shape), inside), yp.shape[0]
            else:
                kernel, units, work = _max_kernel(x.dtype, len(xp.shape)), y.size, ()
            self.launch(kernel, units, xp.array, *scalars, yp.array, planes(idx).array, *work)
        shape = (*x.shape[:2], *out)
        return _back_to(y, shape), _back_to(idx, shape)

    def max_pool_backward(self: Any, x: CubeTensor, indices: CubeTensor, grad: CubeTensor,
                          options: PoolOptions) -> CubeTensor:
        """Gradient of max pooling: each input element gathers the grads of the windows whose
        index (from `max_pool_with_indices`) names it; with non-overlapping windows, each
        window writes its grad at its index instead.

        Args:
            x: the forward's input [N, C, *spatial].
            indices: the forward's indices.
            grad: gradient of the output, indices' shape.
            options: the forward's options.

        Returns:
            grad_x of x's shape and dtype.
        """
        out, scalars = _geometry("max_pool_backward", x, options)
        _check_grad("max_pool_backward", x, grad, out, indices)
        gx = _empty4(self, x, list(x.shape[2:]), x.dtype)
        if not gx.size:
            return _back_to(gx, x.shape)
        dtypes = (x.dtype, grad.dtype, indices.dtype)
        spans = (d * (k - 1) + 1 for k, d in zip(options.kernel_size, options.dilation,
                                                 strict=True))
        scatter = all(s >= span for s, span in zip(options.stride, spans, strict=True))
        if scatter and self.runtime_name == "cpu":
            if indices.is_contiguous and grad.is_contiguous:  # (the kernel's rank-1 reads
                # index the storage from its start: `dense_from_start`)
                ip, gp = (dense_from_start(self, t) for t in (indices, grad))
            else:
                ip, gp = planes(as_4d(indices)), planes(as_4d(grad))
            kernel = _max_scatter_planes_kernel(*dtypes, (len(ip.shape), len(gp.shape)))
            units = gx.shape[0] * gx.shape[1]
            self.launch(kernel, units, ip.array, gp.array,
                        gx.view((units, *gx.shape[2:]), gx.strides[1:]).array)
        elif scatter:
            self.launch(fill_kernel(x.dtype), gx.size, 0.0, gx.view((gx.size,), (1,)).array)
            if indices.size:
                self.launch(_max_scatter_kernel(*dtypes), indices.size, as_4d(indices).array,
                            as_4d(grad).array, gx.array)
        else:
            ip, gp = planes(as_4d(indices)), planes(as_4d(grad))
            kernel = _max_backward_kernel(*dtypes, (len(ip.shape), len(gp.shape)))
            self.launch(kernel, gx.size, ip.array, gp.array, *scalars, planes(gx).array)
        return _back_to(gx, x.shape)

    def adaptive_avg_pool(self: Any, x: CubeTensor, output_size: Shape) -> CubeTensor:
        """Adaptive average pooling 1d/2d (PyTorch's window bounds).

        Args:
            x: input [N, C, *spatial] (any strides).
            output_size: output spatial shape.

        Returns:
            [N, C, *output_size] of x's dtype.
        """
        maps = _adaptive_maps(self, "adaptive_avg_pool", x, tuple(output_size), False)
        y = resample(self, as_4d(x), maps, x.dtype)
        return _back_to(y, (*x.shape[:2], *output_size))

    def adaptive_avg_pool_backward(self: Any, x: CubeTensor, grad: CubeTensor) -> CubeTensor:
        """Gradient of `adaptive_avg_pool` with respect to x.

        Args:
            x: the forward's input [N, C, *spatial].
            grad: gradient of the output [N, C, *output_size].

        Returns:
            grad_x of x's shape and dtype.
        """
        op = "adaptive_avg_pool_backward"
        if len(grad.shape) != len(x.shape) or grad.shape[:2] != x.shape[:2]:
            raise ShapeError(op, "grad must be [N, C, *output_size]", grad=grad.shape,
                             x=x.shape)
        maps = _adaptive_maps(self, op, x, grad.shape[2:], True)
        return _back_to(resample(self, as_4d(grad), maps, x.dtype), x.shape)
