"""Kernels of the cube deform_conv2d (torchvision's semantics: bilinear sampling, zeros outside).

Every kernel recomputes its sampling points from the offsets: window tap
`(o*s - p + k*d) + offset[n, og, k]` per dim, sampled only when inside `(-1, H) x (-1, W)`, each
of the four corners only when in the image. Forward: deformable columns (times the mask).
Backward: the offset and mask gradients per point (a sum over the offset group's channels), and
the input gradient per image plane, one unit scattering into its own plane in point order
(deterministic, no float atomics).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from burn.dtype import DType
from burn.ir.cube import cube_dtype

from ..kernel_cache import cached_kernel
from .im2col import declare_geometry, product, split_index

OP = "deform_conv2d"


def _tensor(b: Any, name: str, dtype: DType | None, write: bool = False) -> Any:
    """A rank-4 tensor parameter of `dtype` (None: no parameter)."""
    if dtype is None:
        return None
    return b.tensor(name, cube_dtype(OP, dtype), rank=4, write=write)


def _at(t: Any, n: Any, channel: Any, oy: Any, ox: Any) -> Any:
    """Storage index of `t[n, channel, oy, ox]` (any strides)."""
    return (t.offset + n * t.stride[0] + channel * t.stride[1] + oy * t.stride[2]
            + ox * t.stride[3])


class _Point:
    """The sampling point of one window tap: coordinates, inside flag, corner weights.

    Args:
        b: the kernel builder.
        off: the offset tensor [N, 2*og*K, Ho, Wo].
        geo: the per-dim geometry scalars.
        n, channel: batch and offset channel (og*K + tap).
        taps, outs: the tap (ky, kx) and the output position (oy, ox).
        h, w: image height and width (u32).
        work: the compute dtype.
    """

    def __init__(self, b: Any, off: Any, geo: list[dict[str, Any]], n: Any, channel: Any,
                 taps: tuple[Any, Any], outs: tuple[Any, Any], h: Any, w: Any,
                 work: Any) -> None:
        self.b, self.h, self.w, self.work = b, h, w, work
        coords = []
        for dim in range(2):
            g = geo[dim]
            moved = off[_at(off, n, channel * 2 + dim, *outs)]
            coords.append(b.local(work, b.cast(outs[dim] * g["s"] + taps[dim] * g["d"], work)
                                  - b.cast(g["p"], work) + b.cast(moved, work)))
        self.py, self.px = coords
        self.inside = ((self.py > -1.0) & (self.py < b.cast(h, work)) & (self.px > -1.0)
                       & (self.px < b.cast(w, work)))

    @contextmanager
    def corners(self) -> Iterator[list[tuple[Any, Any, Any, Any, Any, Any]]]:
        """Within `if inside`: (in-image flag, row, column, weight, d weight/d py, d weight/d px)
        per corner, rows and columns as u32 (valid where the flag holds)."""
        from burn_cube import i32, u32

        b = self.b
        with b.if_(self.inside):
            y0, x0 = b.floor(self.py), b.floor(self.px)
            ly, lx = b.local(self.work, self.py - y0), b.local(self.work, self.px - x0)
            hy, hx = b.local(self.work, 1.0 - ly), b.local(self.work, 1.0 - lx)
            yi, xi = b.local(i32, b.cast(y0, i32)), b.local(i32, b.cast(x0, i32))
            out = []
            for dy, dx, weight, wy, wx in ((0, 0, hy * hx, -hx, -hy), (0, 1, hy * lx, -lx, hy),
                                           (1, 0, ly * hx, hx, -ly), (1, 1, ly * lx, lx, ly)):
                yy, xx = yi + dy, xi + dx
                ok = ((yy >= 0) & (yy < b.cast(self.h, i32)) & (xx >= 0)
                      & (xx < b.cast(self.w, i32)))
                out.append((ok, b.cast(yy, u32), b.cast(xx, u32), weight, wy, wx))
            yield out


def _scalars(b: Any) -> tuple[Any, list[dict[str, Any]]]:
    """`group_channels` (channels per offset group) and the 2-d geometry scalars."""
    from burn_cube import u32

    return b.scalar("group_channels", u32), declare_geometry(b, 2)


def _pixel(x: Any, n: Any, c: Any, yy: Any, xx: Any) -> Any:
    return x[x.offset + n * x.stride[0] + c * x.stride[1] + yy * x.stride[2] + xx * x.stride[3]]


@cached_kernel
def deform_im2col_kernel(src: DType, offset: DType, mask: DType | None, work: DType) -> Any:
    """Deformable columns: `cols[n, r + (r / group_rows) * skip, l]` with r = c*K + k is x[n, c]
    sampled at its tap's point (times `mask[n, og*K + k]`), og = c / group_channels.

    Launch args: x, offset, mask if any (rank 4, any strides), cols (`[N, rows, L]` of `work`,
    any strides), `group_rows`, `skip`, `group_channels`, per dim `k s p d o`.
    """
    from burn_cube import KernelBuilder, u32

    b = KernelBuilder("deform_im2col")
    x, off, m = _tensor(b, "x", src), _tensor(b, "offset", offset), _tensor(b, "mask", mask)
    cols = b.tensor("cols", cube_dtype(OP, work), rank=3, write=True)
    group_rows, skip = b.scalar("group_rows", u32), b.scalar("skip", u32)
    group_channels, geo = _scalars(b)
    sizes = [x.shape[0], x.shape[1], geo[0]["k"], geo[1]["k"], geo[0]["o"], geo[1]["o"]]
    pos = b.ABSOLUTE_POS
    with b.if_(pos < product(sizes)):
        n, c, ky, kx, oy, ox = split_index(b, pos, sizes)
        tap = ky * geo[1]["k"] + kx
        channel = c // group_channels * geo[0]["k"] * geo[1]["k"] + tap
        point = _Point(b, off, geo, n, channel, (ky, kx), (oy, ox), x.shape[2], x.shape[3],
                       cols.dtype)
        acc = b.local(cols.dtype, 0)
        with point.corners() as corners:
            for ok, yy, xx, weight, _, _ in corners:
                with b.if_(ok):
                    b.set(acc, acc + b.cast(_pixel(x, n, c, yy, xx), cols.dtype) * weight)
        if m is not None:
            b.set(acc, acc * b.cast(m[_at(m, n, channel, oy, ox)], cols.dtype))
        row = c * geo[0]["k"] * geo[1]["k"] + tap
        row = row + row // group_rows * skip
        cols[cols.offset + n * cols.stride[0] + row * cols.stride[1]
             + (oy * geo[1]["o"] + ox) * cols.stride[2]] = acc
    return b.kernel()


@cached_kernel
def deform_point_grads_kernel(src: DType, offset: DType, mask: DType | None,
                              work: DType) -> Any:
    """Offset and mask gradients of every sampling point: with g = gcols[n, c*K + k, l] summed
    over the offset group's channels c, `gmask = sum g * sample` and `goffset = sum g * mask *
    d sample / d (py, px)` (zero outside).

    Launch args: x, offset, mask if any, gcols (rank 3, any strides), goffset (dense, like
    offset), gmask if mask (dense, like mask), `offset_groups`, `group_channels`, per dim
    `k s p d o`.
    """
    from burn_cube import KernelBuilder, u32

    b = KernelBuilder("deform_point_grads")
    x, off, m = _tensor(b, "x", src), _tensor(b, "offset", offset), _tensor(b, "mask", mask)
    wt = cube_dtype(OP, work)
    gcols = b.tensor("gcols", wt, rank=3, write=False)
    goff = b.tensor("goffset", wt, rank=4, write=True)
    gmask = None if m is None else b.tensor("gmask", wt, rank=4, write=True)
    groups = b.scalar("offset_groups", u32)
    group_channels, geo = _scalars(b)
    sizes = [x.shape[0], groups, geo[0]["k"], geo[1]["k"], geo[0]["o"], geo[1]["o"]]
    pos = b.ABSOLUTE_POS
    with b.if_(pos < product(sizes)):
        n, og, ky, kx, oy, ox = split_index(b, pos, sizes)
        tap = ky * geo[1]["k"] + kx
        channel = og * geo[0]["k"] * geo[1]["k"] + tap
        point = _Point(b, off, geo, n, channel, (ky, kx), (oy, ox), x.shape[2], x.shape[3], wt)
        scale = b.local(wt, 1.0 if m is None else b.cast(m[_at(m, n, channel, oy, ox)], wt))
        sums = [b.local(wt, 0) for _ in range(3)]  # mask, py, px gradients
        column = oy * geo[1]["o"] + ox
        with point.corners() as corners, b.for_range(group_channels) as cl:
            c = og * group_channels + cl
            row = c * geo[0]["k"] * geo[1]["k"] + tap
            g = b.local(wt, gcols[gcols.offset + n * gcols.stride[0] + row * gcols.stride[1]
                                  + column * gcols.stride[2]])
            parts = [b.local(wt, 0) for _ in range(3)]  # sample, d/d py, d/d px
            for ok, yy, xx, weight, wy, wx in corners:
                with b.if_(ok):
                    value = b.local(wt, b.cast(_pixel(x, n, c, yy, xx), wt))
                    for part, factor in zip(parts, (weight, wy, wx), strict=True):
                        b.set(part, part + value * factor)
            b.set(sums[0], sums[0] + g * parts[0])
            for total, part in zip(sums[1:], parts[1:], strict=True):
                b.set(total, total + g * scale * part)
        for dim in range(2):
            goff[(((n * groups * geo[0]["k"] * geo[1]["k"] + channel) * 2 + dim) * geo[0]["o"]
                  + oy) * geo[1]["o"] + ox] = sums[1 + dim]
        if gmask is not None:
            gmask[((n * groups * geo[0]["k"] * geo[1]["k"] + channel) * geo[0]["o"] + oy)
                  * geo[1]["o"] + ox] = sums[0]
    return b.kernel()


@cached_kernel
def deform_input_grad_kernel(src: DType, offset: DType, mask: DType | None,
                             work: DType) -> Any:
    """Input gradient: one unit per image plane (n, c) zeroes it, then adds `gcols[n, c*K + k,
    l] * mask * corner weight` at the corners of every point of its taps, in point order.

    Launch args: x, offset, mask if any, gcols (rank 3, any strides), gx (dense `[N, C, H, W]`
    of `work`), `group_channels`, per dim `k s p d o`.
    """
    from burn_cube import KernelBuilder

    b = KernelBuilder("deform_input_grad")
    x, off, m = _tensor(b, "x", src), _tensor(b, "offset", offset), _tensor(b, "mask", mask)
    wt = cube_dtype(OP, work)
    gcols = b.tensor("gcols", wt, rank=3, write=False)
    gx = b.tensor("gx", wt, rank=4, write=True)
    group_channels, geo = _scalars(b)
    h, w = x.shape[2], x.shape[3]
    pos = b.ABSOLUTE_POS
    with b.if_(pos < x.shape[0] * x.shape[1]):
        n, c = split_index(b, pos, [x.shape[0], x.shape[1]])
        plane = pos * h * w
        with b.for_range(h * w) as i:
            gx[plane + i] = 0.0
        og = c // group_channels
        taps = geo[0]["k"] * geo[1]["k"]
        with b.for_range(geo[0]["k"]) as ky, b.for_range(geo[1]["k"]) as kx, \
                b.for_range(geo[0]["o"]) as oy, b.for_range(geo[1]["o"]) as ox:
            tap = ky * geo[1]["k"] + kx
            channel = og * taps + tap
            point = _Point(b, off, geo, n, channel, (ky, kx), (oy, ox), h, w, wt)
            g = b.local(wt, gcols[gcols.offset + n * gcols.stride[0]
                                  + (c * taps + tap) * gcols.stride[1]
                                  + (oy * geo[1]["o"] + ox) * gcols.stride[2]])
            if m is not None:
                b.set(g, g * b.cast(m[_at(m, n, channel, oy, ox)], wt))
            with point.corners() as corners:
                for ok, yy, xx, weight, _, _ in corners:
                    with b.if_(ok):
                        index = plane + yy * w + xx
                        gx[index] = gx[index] + g * weight
    return b.kernel()
