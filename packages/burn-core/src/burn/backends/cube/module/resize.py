"""Interpolation (nearest, bilinear, bicubic) of the cube backends, and the separable resampling
kernel it shares with adaptive average pooling.

Both ops are, as in the NumPy backend, one linear map per spatial axis (y = Wh x Ww^T; the
backward applies the transposes). Each axis map is a sparse matrix: its nonzero entries are
computed once per (size, output size, options) on the host with the NumPy backend's own
matrices (so the weights are bit-identical), kept on the device as CSR rows (row pointers,
columns, weights), and applied by `resample_axis_kernel`: one unit per output element gathers
its row's taps (any input strides; deterministic, no atomics).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from burn.backend.options import InterpolateOptions
from burn.backends.numpy.module.interpolate import _matrix as interp_matrix
from burn.backends.numpy.module.interpolate import _taps as interp_taps
from burn.dtype import DType
from burn.errors import ShapeError, ValueRangeError
from burn.ir.cube import cube_dtype

from ..kernel_cache import cached_kernel
from ..tensor import CubeTensor

#: A CSR matrix on the device: (row pointers, columns, weights).
Csr = tuple[CubeTensor, CubeTensor, CubeTensor]
_MODES = ("nearest", "bilinear", "bicubic")


def work_dtype(dtype: DType) -> DType:
    """The dtype a kernel computes in: float64 as is, every other float in float32."""
    return DType.float64 if dtype is DType.float64 else DType.float32


def unravel(b: Any, pos: Any, t: Any) -> list[Any]:
    """i32 coordinates (locals) of logical row-major position `pos` of the kernel tensor `t`."""
    from burn_cube import i32, u32

    coords, rest = [], b.local(u32, pos)
    for dim in reversed(range(1, t.rank)):
        coords.append(b.local(i32, b.cast(rest % t.shape[dim], i32)))
        b.set(rest, rest // t.shape[dim])
    coords.append(b.local(i32, b.cast(rest, i32)))
    return coords[::-1]


def as_4d(x: CubeTensor) -> CubeTensor:
    """A [N, C, L] tensor as the view [N, C, 1, L] (4-d tensors as they are)."""
    if len(x.shape) == 4:
        return x
    n, c, length = x.shape
    sn, sc, sl = x.strides
    return x.view((n, c, 1, length), (sn, sc, 0, sl))


def planes(t: CubeTensor) -> CubeTensor:
    """A 4-d [N, C, H, W] tensor as [N*C, H, W] where its strides allow (kernels then unravel
    one index less), else as it is."""
    n, c, h, w = t.shape
    s0, s1, s2, s3 = t.strides
    if n == 1 or s0 == c * s1:
        return t.view((n * c, h, w), (s1, s2, s3))
    if c == 1:
        return t.view((n, h, w), (s0, s2, s3))
    return t


def lead(b: Any, t: Any, plane: Any) -> tuple[Any, ...]:
    """The leading indices of plane `plane` (i32) into the kernel tensor `t`: the plane itself
    (rank 3) or its (n, c) (rank 4)."""
    from burn_cube import i32

    if t.rank == 3:
        return (plane,)
    channels = b.local(i32, b.cast(t.shape[1], i32))
    return b.local(i32, plane // channels), b.local(i32, plane % channels)


@cached_kernel
def resample_axis_kernel(src: DType, out: DType, rank: int, axis: int, from_first: bool) -> Any:
    """`out[p, ..., o, ...] = sum_k wt[k] * src[p, ..., col[k], ...]` over k in
    [ptr[o], ptr[o+1]) along `axis` (-2 or -1) of the planes p of `src` (rank 3 or 4, any
    strides) into `out` (dense [planes, H, W]), computed in the work dtype of `out`. The sum
    starts from 0.0 (PyTorch's pooling sums), or `from_first` from the first product (its
    interpolation: a -0.0 stays -0.0; every row has a tap)."""
    from burn_cube import KernelBuilder, i32

    work = cube_dtype("resample", work_dtype(out))
    b = KernelBuilder(f"resample_axis{axis % 2 + 2}")
    x = b.tensor("src", cube_dtype("resample", src), rank=rank, write=False)
    ptr = b.tensor("ptr", i32, rank=1, write=False)
    col = b.tensor("col", i32, rank=1, write=False)
    wt = b.tensor("wt", work, rank=1, write=False)
    y = b.tensor("out", cube_dtype("resample", out), rank=3, write=True)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < y.len):
        plane, *coords = unravel(b, pos, y)
        index = [*lead(b, x, plane), *coords]
        start = b.local(i32, ptr[coords[axis]])
        acc = b.local(work, 0.0)
        if from_first:
            index[axis] = col[start]
            b.set(acc, wt[start] * b.cast(x[tuple(index)], work))
            b.set(start, start + 1)
        with b.for_range(start, ptr[coords[axis] + 1]) as k:
            index[axis] = col[k]
            b.set(acc, acc + wt[k] * b.cast(x[tuple(index)], work))
        y[pos] = acc
    return b.kernel()


@lru_cache(maxsize=128)
def device_csr(backend: Any, key: tuple[Any, ...], dtype: DType, transpose: bool,
               make: Callable[..., np.ndarray]) -> Csr:
    """The dense host matrix `make(*key)` ([out, size]; transposed when asked) as a device CSR
    of weights in `dtype`, cached per backend and key."""
    mat = np.asarray(make(*key))
    mat = mat.T if transpose else mat
    rows, cols = np.nonzero(mat)
    ptr = np.searchsorted(rows, np.arange(mat.shape[0] + 1)).astype(np.int32)
    return (backend.upload(ptr), backend.upload(cols.astype(np.int32)),
            backend.upload(mat[rows, cols].astype(dtype.numpy)))


@lru_cache(maxsize=128)
def device_taps(backend: Any, key: tuple[Any, ...], dtype: DType,
                make: Callable[..., tuple[np.ndarray, np.ndarray]]) -> Csr:
    """The taps `make(*key)` (indices and weights, [out, taps]) as a device CSR of weights in
    `dtype`, every tap kept in order (zero weights and repeated indices too), cached per
    backend and key."""
    index, weight = make(*key)
    ptr = np.arange(index.shape[0] + 1, dtype=np.int32) * index.shape[1]
    return (backend.upload(ptr), backend.upload(index.astype(np.int32).ravel()),
            backend.upload(weight.astype(dtype.numpy).ravel()))


def resample(backend: Any, x: CubeTensor, maps: Sequence[tuple[int, Csr, int]],
             dtype: DType, from_first: bool = False) -> CubeTensor:
    """Applies sparse axis maps in turn to a 4-d tensor (intermediates in the work dtype).

    Args:
        backend: the cube backend.
        x: input [N, C, H, W] (any strides).
        maps: (axis 2 or 3, CSR matrix [out, in], output size) per pass.
        dtype: the result's dtype.
        from_first: sums start from their first product (see `resample_axis_kernel`).

    Returns:
        The dense result.
    """
    cur, shape = planes(x), list(x.shape)
    for i, (axis, (ptr, col, wt), size) in enumerate(maps):
        step = dtype if i == len(maps) - 1 else work_dtype(dtype)
        shape[axis] = size
        out = backend.empty(tuple(shape), step)
        flat = out.view((shape[0] * shape[1], *shape[2:]), (shape[2] * shape[3], shape[3], 1))
        if out.size:
            kernel = resample_axis_kernel(cur.dtype, step, len(cur.shape), axis - 4,
                                          from_first)
            backend.launch(kernel, out.size, cur.array, ptr.array, col.array, wt.array,
                           flat.array)
        cur = flat
    return out


def _check(op: str, x: CubeTensor, output_size: tuple[int, int],
           options: InterpolateOptions) -> None:
    if len(x.shape) != 4 or len(output_size) != 2 or min(output_size) < 1:
        raise ShapeError(op, "x must be [N, C, H, W] and output_size (Ho, Wo) positive",
                         x=x.shape, output_size=output_size)
    if options.mode not in _MODES:
        raise ValueRangeError(op, "unknown mode", mode=options.mode, modes=_MODES)


def _interp_maps(backend: Any, x: CubeTensor, sizes: Sequence[int], options: InterpolateOptions,
                 transpose: bool) -> list[tuple[int, Csr, int]]:
    """The column then row taps of an interpolation, as PyTorch's kernels read them (the
    transposed row then column matrices for the backward)."""
    work = work_dtype(x.dtype)
    scales = options.scales or (None, None)
    axes = [(axis, x.shape[axis], sizes[axis - 2], scales[axis - 2]) for axis in (2, 3)]
    if transpose:
        return [(axis, device_csr(backend, (n, o, options, s, work.numpy), work, True,
                                  interp_matrix), n) for axis, n, o, s in axes]
    return [(axis, device_taps(backend, (n, o, options, s, work.numpy), work, interp_taps), o)
            for axis, n, o, s in axes[::-1]]


class CubeResizeOps:
    """interpolate and its backward as separable resampling kernels."""

    def interpolate(self, x: CubeTensor, output_size: tuple[int, int],
                    options: InterpolateOptions) -> CubeTensor:
        """Resizes [N, C, H, W] to output_size (modes and align_corners as the NumPy backend).

        Args:
            x: input [N, C, H, W].
            output_size: (Ho, Wo).
            options: mode, align_corners, scales.

        Returns:
            [N, C, Ho, Wo] of x's dtype.
        """
        _check("interpolate", x, output_size, options)
        return resample(self, x, _interp_maps(self, x, output_size, options, False), x.dtype,
                        from_first=True)

    def interpolate_backward(self, x: CubeTensor, grad: CubeTensor, output_size: tuple[int, int],
                             options: InterpolateOptions) -> CubeTensor:
        """Gradient of `interpolate` with respect to x (each input element gathers its taps).

        Args:
            x: the forward's input [N, C, H, W].
            grad: gradient of the output [N, C, Ho, Wo].
            output_size: (Ho, Wo).
            options: the forward's options.

        Returns:
            grad_x of x's shape and dtype.
        """
        op = "interpolate_backward"
        _check(op, x, output_size, options)
        if grad.shape != (*x.shape[:2], *output_size):
            raise ShapeError(op, "grad must be [N, C, Ho, Wo]", grad=grad.shape, x=x.shape,
                             output_size=output_size)
        return resample(self, grad, _interp_maps(self, x, output_size, options, True), x.dtype)
