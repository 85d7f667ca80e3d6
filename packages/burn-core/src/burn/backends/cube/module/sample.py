"""2d grid sampling of the cube backends (PyTorch's F.grid_sample: bilinear/nearest,
zeros/border/reflection padding, align_corners) and its backward.

Kernels are built per (dtypes, options); every unit recomputes its point's source coordinates
(as the NumPy backend: normalised -> pixel, padding fold, clip) in the work dtype. The forward
runs one unit per output element; the grid gradient one unit per grid point (summing over
channels); the image gradient one unit per block of rows of an (n, c) plane (the whole plane on
the cpu, about `_GRAD_UNITS` blocks in all elsewhere) that zeroes its rows, then scans every
point and adds the taps that fall in them, in point order: deterministic without float atomics
(the same sums on every device), at the price of each unit scanning all the points.
"""

from __future__ import annotations

import math
from typing import Any

from burn.backend.options import GridSampleOptions
from burn.dtype import DType
from burn.errors import ShapeError, ValueRangeError
from burn.ir.cube import cube_dtype

from ..kernel_cache import cached_kernel
from ..tensor import CubeTensor
from .resize import unravel, work_dtype

_MODES = ("bilinear", "nearest")
_PADDINGS = ("zeros", "border", "reflection")
#: Units the image gradient aims at on parallel devices (rows of a plane split into blocks).
_GRAD_UNITS = 8192


def _clip(b: Any, src: Any, size: Any) -> tuple[Any, Any]:
    """Clamps to [0, size-1]; the derivative is 1 strictly inside, else 0."""
    inside = b.select(b.and_(src > 0, src < size - 1), 1.0, 0.0)
    return b.min(b.max(src, 0.0), size - 1), inside


def _reflect(b: Any, src: Any, size: Any, align: bool) -> tuple[Any, Any]:
    """Reflects into the image's span; returns (coordinate, derivative in {-1, 0, 1}).

    As PyTorch's CPU kernel (and the NumPy backend), whole double spans come off by the
    truncated quotient, so a huge coordinate lands where torch's does (0 or past the image,
    clipped to its border)."""
    low = 0.0 if align else -0.5
    twice_span = 2 * (size - 1) if align else 2 * size
    rel = src - low
    folded = b.abs(rel)
    extra = folded - b.trunc(folded / twice_span) * twice_span
    reflected = twice_span - extra
    flip = extra > reflected
    flat = twice_span == 0  # align_corners on a size of 1: everything maps to 0
    coord = b.select(flat, 0.0, b.select(flip, reflected, extra) + low)
    sign = b.select(flip, -1.0, 1.0) * b.select(rel < 0, -1.0, 1.0)
    return coord, b.select(flat, 0.0, sign)


def _source(b: Any, coord: Any, size: Any, options: GridSampleOptions) -> tuple[Any, Any]:
    """Pixel coordinate of a normalised grid value and its derivative wrt the value."""
    if options.align_corners:
        src, scale = (coord + 1) / 2 * (size - 1), (size - 1) / 2
    else:
        src, scale = ((coord + 1) * size - 1) / 2, size / 2
    if options.padding_mode == "border":
        src, d_clip = _clip(b, src, size)
        return src, scale * d_clip
    if options.padding_mode == "reflection":
        src, d_reflect = _reflect(b, src, size, options.align_corners)
        src, d_clip = _clip(b, src, size)
        return src, scale * d_reflect * d_clip
    return src, scale


class _Point:
    """A grid point's pixel coordinates (py, px), their derivatives and the image size."""

    def __init__(self, b: Any, grid: Any, n: Any, oh: Any, ow: Any, x: Any, work: Any,
                 options: GridSampleOptions) -> None:
        from burn_cube import i32

        self.b, self.options = b, options
        self.h, self.w = b.cast(x.shape[2], i32), b.cast(x.shape[3], i32)
        gx, gy = (b.local(work, b.cast(grid[n, oh, ow, k], work)) for k in (0, 1))
        px, self.dpx = _source(b, gx, b.cast(self.w, work), options)
        py, self.dpy = _source(b, gy, b.cast(self.h, work), options)
        self.px, self.py = b.local(work, px), b.local(work, py)

    def taps(self) -> list[tuple[Any, Any, Any, Any, Any]]:
        """The taps as (row, col, weight, d weight/d py, d weight/d px); a tap outside the
        image (`inside`) reads zero."""
        from burn_cube import i32

        b = self.b
        if self.options.mode == "nearest":
            return [(b.local(i32, b.cast(b.round(self.py), i32)),
                     b.local(i32, b.cast(b.round(self.px), i32)), 1.0, 0.0, 0.0)]
        y0, x0 = b.floor(self.py), b.floor(self.px)
        ly, lx = self.py - y0, self.px - x0
        hy, hx = 1 - ly, 1 - lx
        r0, c0 = b.local(i32, b.cast(y0, i32)), b.local(i32, b.cast(x0, i32))
        return [(r0, c0, hy * hx, -hx, -hy), (r0, c0 + 1, hy * lx, -lx, hy),
                (r0 + 1, c0, ly * hx, hx, -ly), (r0 + 1, c0 + 1, ly * lx, lx, ly)]

    def inside(self, row: Any, col: Any) -> Any:
        """Whether pixel (row, col) is in the image."""
        b = self.b
        return b.and_(b.and_(row >= 0, row < self.h), b.and_(col >= 0, col < self.w))


def _tensors(b: Any, dtypes: tuple[DType, DType], names: tuple[str, ...]) -> list[Any]:
    """Declares rank-4 read-only tensors: `x` of dtypes[0], the others of dtypes[1]."""
    return [b.tensor(name, cube_dtype("grid_sample_2d", dtypes[0] if name == "x" else dtypes[1]),
                     rank=4, write=False) for name in names]


@cached_kernel
def _forward_kernel(dtype: DType, grid_dtype: DType, options: GridSampleOptions) -> Any:
    """out[n, c, oh, ow]: the taps of grid point (n, oh, ow) on plane (n, c), zeros outside."""
    from burn_cube import KernelBuilder

    work = cube_dtype("grid_sample_2d", work_dtype(dtype))
    b = KernelBuilder("grid_sample_2d")
    x, grid = _tensors(b, (dtype, grid_dtype), ("x", "grid"))
    y = b.tensor("out", cube_dtype("grid_sample_2d", dtype), rank=4, write=True)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < y.len):
        n, c, oh, ow = unravel(b, pos, y)
        point = _Point(b, grid, n, oh, ow, x, work, options)
        acc = b.local(work, 0.0)
        for row, col, weight, _, _ in point.taps():
            with b.if_(point.inside(row, col)):
                b.set(acc, acc + b.cast(x[n, c, row, col], work) * weight)
        if options.mode == "bilinear" and options.padding_mode == "zeros":
            # a NaN or infinite grid point gives NaN, as torch (its weights are NaN; every tap
            # is outside, so the sum was 0)
            bad = b.or_(b.or_(b.isnan(point.px), b.isinf(point.px)),
                        b.or_(b.isnan(point.py), b.isinf(point.py)))
            b.set(acc, b.select(bad, math.nan, acc))
        y[pos] = acc
    return b.kernel()


@cached_kernel
def _grid_grad_kernel(dtype: DType, grid_dtype: DType, options: GridSampleOptions) -> Any:
    """grad_grid[n, oh, ow, :]: per tap, sum_c grad * x times the weight's derivatives."""
    from burn_cube import KernelBuilder, i32

    work = cube_dtype("grid_sample_2d_backward", work_dtype(dtype))
    b = KernelBuilder("grid_sample_2d_grad_grid")
    x, grid, grad = _tensors(b, (dtype, grid_dtype), ("x", "grid", "grad"))
    gg = b.tensor("grad_grid", cube_dtype("grid_sample_2d", grid_dtype), rank=4, write=True)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < gg.len // 2):
        ho, wo = b.cast(grid.shape[1], i32), b.cast(grid.shape[2], i32)
        ow, rest = b.cast(pos, i32) % wo, b.cast(pos, i32) // wo
        oh, n = rest % ho, rest // ho
        gpy, gpx = b.local(work, 0.0), b.local(work, 0.0)
        if options.mode == "bilinear":
            point = _Point(b, grid, n, oh, ow, x, work, options)
            for row, col, _, wy, wx in point.taps():
                with b.if_(point.inside(row, col)):
                    dot = b.local(work, 0.0)
                    with b.for_range(b.cast(x.shape[1], i32)) as c:
                        b.set(dot, dot + b.cast(grad[n, c, oh, ow], work)
                              * b.cast(x[n, c, row, col], work))
                    b.set(gpy, gpy + dot * wy)
                    b.set(gpx, gpx + dot * wx)
            b.set(gpx, gpx * point.dpx)
            b.set(gpy, gpy * point.dpy)
        gg[n, oh, ow, 0] = gpx
        gg[n, oh, ow, 1] = gpy
    return b.kernel()


@cached_kernel
def _image_grad_kernel(dtype: DType, grid_dtype: DType, options: GridSampleOptions) -> Any:
    """grad_x (dense [N, C, H, W], work dtype): one unit per block of `rows` rows of a plane
    zeroes them, then adds every point's taps that fall in them, in point order."""
    from burn_cube import KernelBuilder, i32, u32

    work = cube_dtype("grid_sample_2d_backward", work_dtype(dtype))
    b = KernelBuilder("grid_sample_2d_grad_x")
    x, grid, grad = _tensors(b, (dtype, grid_dtype), ("x", "grid", "grad"))
    rows = b.scalar("rows", i32)
    gx = b.tensor("grad_x", work, rank=4, write=True)
    pos = b.cast(b.ABSOLUTE_POS, i32)
    height, width = b.cast(gx.shape[2], i32), b.cast(gx.shape[3], i32)
    blocks = b.local(i32, (height + rows - 1) // rows)
    with b.if_(pos < b.cast(gx.shape[0] * gx.shape[1], i32) * blocks):
        plane, first = b.local(i32, pos // blocks), b.local(i32, pos % blocks * rows)
        end = b.local(i32, b.min(first + rows, height))
        n, c = plane // b.cast(gx.shape[1], i32), plane % b.cast(gx.shape[1], i32)
        base = b.local(u32, b.cast(plane, u32) * gx.shape[2] * gx.shape[3])
        with b.for_range(first * width, end * width) as i:
            gx[base + b.cast(i, u32)] = 0.0
        wo = b.cast(grid.shape[2], i32)
        with b.for_range(b.cast(grid.shape[1], i32) * wo) as p:
            oh, ow = b.local(i32, p // wo), b.local(i32, p % wo)
            py = b.local(work, _source(b, b.cast(grid[n, oh, ow, 1], work),
                                       b.cast(height, work), options)[0])
            with b.if_(b.and_(py >= b.cast(first - 1, work), py < b.cast(end, work))):
                point = _Point(b, grid, n, oh, ow, x, work, options)  # taps may reach the block
                g = b.local(work, b.cast(grad[n, c, oh, ow], work))
                for row, col, weight, _, _ in point.taps():
                    mine = b.and_(row >= first, row < end)
                    with b.if_(b.and_(mine, point.inside(row, col))):
                        index = base + b.cast(row * point.w + col, u32)
                        gx[index] = gx[index] + g * weight
    return b.kernel()


def _check(op: str, x: CubeTensor, grid: CubeTensor, options: GridSampleOptions) -> None:
    if len(x.shape) != 4 or len(grid.shape) != 4 or grid.shape[0] != x.shape[0] \
            or grid.shape[3] != 2:
        raise ShapeError(op, "x must be [N, C, H, W] and grid [N, Ho, Wo, 2]", x=x.shape,
                         grid=grid.shape)
    if options.mode not in _MODES or options.padding_mode not in _PADDINGS:
        raise ValueRangeError(op, "unknown mode or padding mode", mode=options.mode,
                              padding_mode=options.padding_mode)


class CubeSampleOps:
    """grid_sample_2d and its backward as burn-cube kernels."""

    def grid_sample_2d(self: Any, x: CubeTensor, grid: CubeTensor,
                       options: GridSampleOptions) -> CubeTensor:
        """Samples x at normalised grid points (x, y) in [-1, 1].

        Args:
            x: input [N, C, H, W] (any strides).
            grid: points [N, Ho, Wo, 2] (any strides), last dim (x, y).
            options: mode, padding_mode, align_corners.

        Returns:
            [N, C, Ho, Wo] of x's dtype.
        """
        _check("grid_sample_2d", x, grid, options)
        y = self.empty((*x.shape[:2], *grid.shape[1:3]), x.dtype)
        if y.size:
            self.launch(_forward_kernel(x.dtype, grid.dtype, options), y.size, x.array,
                        grid.array, y.array)
        return y

    def grid_sample_2d_backward(self: Any, x: CubeTensor, grid: CubeTensor, grad: CubeTensor,
                                options: GridSampleOptions) -> tuple[CubeTensor, CubeTensor]:
        """Gradients of `grid_sample_2d` (the grid's is zero for nearest, as in PyTorch).

        Args:
            x: the forward's input [N, C, H, W].
            grid: the forward's points [N, Ho, Wo, 2].
            grad: gradient of the output [N, C, Ho, Wo].
            options: the forward's options.

        Returns:
            (grad_x of x's shape and dtype, grad_grid of grid's shape and dtype).
        """
        op = "grid_sample_2d_backward"
        _check(op, x, grid, options)
        if grad.shape != (*x.shape[:2], *grid.shape[1:3]):
            raise ShapeError(op, "grad must be [N, C, Ho, Wo]", grad=grad.shape, x=x.shape,
                             grid=grid.shape)
        if grad.dtype is not grid.dtype:
            grad = self.float_cast(grad, grid.dtype)
        work = work_dtype(x.dtype)
        gx = self.empty(x.shape, work)
        gg = self.empty(grid.shape, grid.dtype)
        dtypes = (x.dtype, grid.dtype)
        if x.size:
            planes, height = x.shape[0] * x.shape[1], x.shape[2]
            parallel = 1 if self.runtime_name == "cpu" else _GRAD_UNITS // planes
            rows = math.ceil(height / max(1, min(height, parallel)))
            self.launch(_image_grad_kernel(*dtypes, options), planes * math.ceil(height / rows),
                        x.array, grid.array, grad.array, rows, gx.array)
        if gg.size:
            self.launch(_grid_grad_kernel(*dtypes, options), gg.size // 2, x.array,
                        grid.array, grad.array, gg.array)
        return (gx if work is x.dtype else self.float_cast(gx, x.dtype)), gg
