"""Convolutions of the cube backends: conv and conv_transpose (1-d, 2-d, 3-d), deform_conv2d,
each with its backward, and unfold4d, as burn-cube kernels around the backend's `float_matmul`.

The NumPy backend's formulation (`burn.backends.numpy.module.conv`) on device buffers: an im2col
kernel reads x in place (any strides, zero padding by bounds) into batch-inner columns, i.e.
matrices `[G, C/G*K, N*L]`, so each gradient is one matmul per group (one large BLAS call on
the cpu whatever the batch); converting copies put channels back in `[N, C, *S]` order (adding
the bias, rounding to float16/bfloat16). An ungrouped float32/float64 forward is instead one
product per sample writing `[N, C_out, L]` in place; its bias is the weight's last column
(`weight_bias_kernel`) times a row of ones after the columns (written by the im2col kernel),
which the saved columns keep, so the weight gradient's product gives the bias gradient too
(one launch splits them, `weight_grad_split_kernel`). Input gradients and
transposed convolutions go back through col2im (each input element sums the columns that read
it: deterministic, no atomics). The cpu runtime has its own im2col (a unit per column row) and
col2im (a unit per plane) kernels, whose inner loops are contiguous runs where the last strides
are 1; where the output rows are short (`BATCH_LAST_WIDTH`) its columns are batch-last instead
(`[C*K, L*N]` matrices, x transposed to `[C, *S, N]`), so those kernels copy and add runs of N
samples, and one product over the batch is transposed back to `[N, C_out, L]` by tiles.
float16/bfloat16 compute in float32, as NumPy does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from burn.backend.options import ConvOptions, ConvTransposeOptions, DeformConvOptions
from burn.backends.numpy.module.conv import (
    SAVED_COLUMNS_MAX,
    _check,
    _check_deform,
    _check_grad,
    _conv_out,
    _transpose_out,
)
from burn.dtype import DType
from burn.errors import ShapeError
from burn.ir.cube import unit_work

from ..creation import full
from ..layout import copy_into
from ..tensor import CubeTensor, Shape, dense_strides
from .deform import deform_im2col_kernel, deform_input_grad_kernel, deform_point_grads_kernel
from .im2col import (
    col2im_batch_last_kernel,
    col2im_kernel,
    col2im_planes_kernel,
    convert_kernel,
    im2col_batch_last_kernel,
    im2col_kernel,
    im2col_rows_kernel,
    weight_bias_kernel,
    weight_grad_split_kernel,
)

Geometry = ConvOptions | ConvTransposeOptions | DeformConvOptions
#: Runtimes on which conv's weight gradient is one product over k = N*L (BLAS on the cpu,
#: cuBLAS on cuda: both split a long k; on the H200 a batch-64 3->64 56x56 step took 0.76 ms
#: this way against 0.81 ms per sample); wgpu multiplies per sample and group, then sums over
#: the batch (its tiled kernels give one cube per output tile: a long-k product of few
#: outputs would leave the GPU idle).
SINGLE_PRODUCT_RUNTIMES = ("cpu", "cuda")
#: On the cpu, convolutions of one group whose output rows are shorter than this keep their
#: columns batch-last (`im2col_batch_last_kernel`): the im2col and col2im copy runs of N
#: samples instead of rows of a few windows (LeNet's 6->16 5x5 conv, rows of 8: im2col
#: 245 -> 41 us, col2im 225 -> 40 us), for a transposing copy of x and of the output.
BATCH_LAST_WIDTH = 16


def _work(dtype: DType) -> DType:
    """The dtype to compute in: float64 as is, every other float as float32."""
    return DType.float64 if dtype is DType.float64 else DType.float32


#: The one read-only element every `_shaped` stand-in repeats.
_STAND_IN = np.zeros(1, np.bool_)
_STAND_IN.flags.writeable = False


def _shaped(t: CubeTensor | None) -> Any:
    """A memory-less read-only numpy stand-in of `t`'s shape (all strides 0), for the NumPy
    backend's shape checks (built directly: np.broadcast_to took ~9 us a call)."""
    if t is None:
        return None
    return np.ndarray(t.shape, np.bool_, _STAND_IN, 0, (0,) * len(t.shape))


def _reshape(t: CubeTensor, shape: Shape) -> CubeTensor:
    """A view of contiguous `t` with `shape` (a tuple of ints of t's size)."""
    return t.derived(shape, dense_strides(shape))


def _swap(t: CubeTensor) -> CubeTensor:
    """A view of `t` with its last two dimensions exchanged (matrix transpose)."""
    return t.derived((*t.shape[:-2], t.shape[-1], t.shape[-2]),
                     (*t.strides[:-2], t.strides[-1], t.strides[-2]))


def _matrices(cols: CubeTensor, groups: int) -> CubeTensor:
    """Batch-inner columns `[N, R, L]` (strides `(L*s, r, s)`) as matrices `[G, R/G, N*L]`;
    batch-last ones (strides `(s, r, N*s)`) as matrices `[G, R/G, L*N]`."""
    (n, rows, length), (s0, s1, s2) = cols.shape, cols.strides
    return cols.derived((groups, rows // groups, n * length),
                        (s1 * (rows // groups), s1, min(s0, s2)))


def _is_batch_last(cols: CubeTensor) -> bool:
    """Whether columns `[N, R, L]` are batch-last (the samples of a window adjacent)."""
    return cols.shape[0] > 1 and cols.strides[0] < cols.strides[2]


class CubeConvOps:
    """Convolution ops of `CubeBackend` (mixin: `self` is the backend)."""

    # --- kernels ----------------------------------------------------------------------------
    def _convert(self: Any, t: CubeTensor, dtype: DType,
                 bias: CubeTensor | None = None) -> CubeTensor:
        """`t` (rank >= 2) as a dense tensor of `dtype` (itself when it already is one and no
        bias), with `bias` added along dim 1 when given."""
        if bias is None and t.dtype is dtype and t.is_contiguous:
            return t
        out = self.empty(t.shape, dtype)
        flat = out.flat()
        extra = () if bias is None else (bias.array,)
        kernel = convert_kernel(t.dtype, dtype, len(t.shape), None if bias is None else bias.dtype)
        self._launch_windows(kernel, math.prod(t.shape[:-1]), t.shape[-1], t.array, flat.array,
                             *extra)
        return out

    def _launch_windows(self: Any, kernel: Any, rows: int, last: int, *args: Any) -> None:
        """Launch a row kernel over `rows` rows of `last` elements: one unit per row on the cpu,
        one per element elsewhere (the `chunk` and `chunks` scalars close `args`)."""
        chunk = last if self.runtime_name == "cpu" else 1
        chunks = -(-last // chunk) if chunk else 0
        if rows and chunks:
            self.launch_planned(kernel, rows * chunks, *args, chunk, chunks)

    def _column_buffer(self: Any, n: int, rows: int, length: int, dtype: DType,
                       groups: int = 0, for_im2col: bool = False
                       ) -> tuple[CubeTensor, int, int]:
        """New batch-inner columns `[N, rows, L]` of `dtype`; with `groups`, each group's rows
        are followed by a row of ones (the matrices are `[G, rows/G + 1, N*L]`), left to
        `_im2col` when `for_im2col` (on the cpu: for one group).

        Returns:
            (columns, rows per group, rows skipped after each group): the kernels' scalars.
        """
        buffer = self.empty((rows + groups, n, length), dtype)
        per_group = rows // max(groups, 1)
        if groups and not (for_im2col and (groups == 1 or self.runtime_name != "cpu")):
            one = full(self, (1, 1, 1, 1), 1, dtype)  # a fill: an upload would sync on cuda
            ones = buffer.view((n, groups, 1, length),
                               (length, (per_group + 1) * n * length, n * length, 1),
                               buffer.offset + per_group * n * length)
            copy_into(self, one.view(ones.shape, (0, 0, 0, 0)), ones)
        cols = buffer.derived((n, rows + groups, length), (length, n * length, 1))
        return cols, max(per_group, 1), 1 if groups else 0

    def _im2col(self: Any, x: CubeTensor, kernel: Sequence[int], options: Geometry,
                out: Sequence[int], cols: CubeTensor, spacing: Sequence[int] = (1, 0)
                ) -> CubeTensor:
        """Fills the columns view `cols` `[N, rows, L]` with x's zero-padded windows (`spacing`:
        rows per group and rows skipped after each, see `_column_buffer`), and the rows of
        ones of columns `[N, rows + G, L]` (on the cpu: of one group's, `[N, rows + 1, L]`)."""
        n, c = x.shape[:2]
        rows = c * math.prod(kernel)
        geometry = _geometry(kernel, options, out)
        if self.runtime_name == "cpu":
            unit = x.strides[-1] == 1 and options.stride[-1] == 1 and cols.strides[2] == 1
            ones = cols.shape[1] == rows + 1
            if n * rows and math.prod(out):
                rows_kernel = im2col_rows_kernel(x.dtype, cols.dtype, len(kernel), unit,
                                                 any(options.padding), ones)
                self.launch_planned(rows_kernel, n * (rows + ones), x.array, cols.array,
                                    *spacing, *geometry, unit_work(math.prod(out)))
            return cols
        groups = cols.shape[1] - rows  # rows of ones
        units = n * (rows + groups) * math.prod(out)
        if units:
            self.launch_planned(im2col_kernel(x.dtype, cols.dtype, len(kernel), groups > 0),
                                units, x.array, cols.array, *spacing, *geometry, 1, out[-1])
        return cols

    def _col2im(self: Any, cols: CubeTensor, shape: Shape, windows: Sequence[int],
                kernel: Sequence[int], options: Geometry, dtype: DType,
                bias: CubeTensor | None) -> CubeTensor:
        """The adjoint of `_im2col`: columns `[N, C*K, L]` (any strides) summed into a new
        `shape` tensor of `dtype` (+ bias per channel), in the columns' dtype."""
        out = self.empty(shape, cols.dtype)
        extra = () if bias is None else (bias.array,)
        geometry = _geometry(kernel, options, windows)
        bias_dtype = None if bias is None else bias.dtype
        if self.runtime_name == "cpu":
            unit = options.stride[-1] == 1 and cols.strides[2] == 1
            if out.size:
                planes_kernel = col2im_planes_kernel(cols.dtype, len(kernel), bias_dtype, unit,
                                                     any(options.padding))
                self.launch_planned(planes_kernel, shape[0] * shape[1], cols.array, out.array,
                                    *extra, *geometry)
        else:
            self._launch_windows(col2im_kernel(cols.dtype, len(kernel), bias_dtype),
                                 math.prod(shape[:-1]), shape[-1], cols.array, out.array,
                                 *extra, *geometry)
        return self._convert(out, dtype)

    def _product(self: Any, lhs: CubeTensor, rhs: CubeTensor) -> CubeTensor:
        """Matrices `[G, m, k] @ [G, k, n]`; one group multiplies as rank-2 views (a batched
        product copies a transposed rhs first; BLAS reads both layouts in place)."""
        if lhs.shape[0] != 1:
            return self.float_matmul(lhs, rhs)
        y = self.float_matmul(lhs.derived(lhs.shape[1:], lhs.strides[1:]),
                              rhs.derived(rhs.shape[1:], rhs.strides[1:]))
        return y.derived((1, *y.shape), (y.shape[0] * y.strides[0], *y.strides))

    # --- layouts ----------------------------------------------------------------------------
    def _columns(self: Any, m: CubeTensor, n: int) -> CubeTensor:
        """Matrices `[G, R, N*L]` (a matmul result, any strides) as columns `[N, G*R, L]`: a
        view where the strides allow, else a dense copy."""
        g, r, nl = m.shape
        if g > 1 and r > 1 and m.strides[0] != m.strides[1] * r:
            m = self._convert(m, m.dtype)
        s0, s1, s2 = m.strides
        length = nl // n if n else 0
        return m.derived((n, g * r, length), (s2 * length, s1 if r > 1 else s0, s2))

    def _rows(self: Any, t: CubeTensor, groups: int, dtype: DType,
              batch_last: bool = False) -> CubeTensor:
        """`[N, C, *S]` -> dense matrices `[G, C/G, N*prod(S)]` of `dtype`, their columns in
        (sample, position) order, or (position, sample) order when `batch_last`."""
        n, c, *spatial = t.shape
        cg = c // groups
        step = _merged_stride(t.shape[2:], t.strides[2:])
        inner = ((math.prod(spatial),), (step,)) if step is not None else (spatial, t.strides[2:])
        shape, strides = ((*inner[0], n), (*inner[1], t.strides[0])) if batch_last else (
            (n, *inner[0]), (t.strides[0], *inner[1]))
        grouped = t.derived((groups, cg, *shape), (t.strides[1] * cg, t.strides[1], *strides))
        dense = self._transposed(grouped, dtype) if batch_last else self._convert(grouped, dtype)
        return _reshape(dense, (groups, cg, n * math.prod(spatial)))

    def _unrows(self: Any, m: CubeTensor, shape: Shape, dtype: DType,
                bias: CubeTensor | None) -> CubeTensor:
        """Inverse of `_rows`: matrices `[G, C/G, N*L]` -> a dense `shape` `[N, C, *S]` tensor of
        `dtype`, + bias per channel."""
        return _reshape(self._convert(self._columns(m, shape[0]), dtype, bias), shape)

    def _weight(self: Any, weight: CubeTensor, groups: int, dtype: DType) -> CubeTensor:
        """A weight `[G*R, ...]` as matrices `[G, R, prod(...)]` of `dtype`."""
        rows, *rest = weight.shape
        return _reshape(self._convert(weight, dtype), (groups, rows // groups, math.prod(rest)))

    def _weight_grad(self: Any, total: CubeTensor, weight: CubeTensor,
                     bias: CubeTensor | None = None) -> tuple[CubeTensor, CubeTensor | None]:
        """Weight gradient matrices `[G, R, S]` as weight's shape and dtype; with `bias`, a last
        column (the ones rows of the columns) is the bias gradient, both written by one
        launch."""
        if bias is None:
            shape = (*total.shape[:2], math.prod(weight.shape[1:]))
            return _reshape(self._convert(total.derived(shape, total.strides), weight.dtype),
                            weight.shape), None
        gw, gb = self.empty(weight.shape, weight.dtype), self.empty(bias.shape, bias.dtype)
        if total.size:
            self.launch_planned(weight_grad_split_kernel(total.dtype, weight.dtype, bias.dtype),
                                total.size, total.array, gw.flat().array, gb.flat().array)
        return gw, gb

    def _samples(self: Any, t: CubeTensor, groups: int, dtype: DType) -> CubeTensor:
        """`[N, C, *S]` as `[N, G, C/G, prod(S)]` of `dtype`: a view of `t` where its spatial
        dims merge (any strides, stride 0 too), else of a dense copy."""
        n, c, *spatial = t.shape
        step = _merged_stride(t.shape[2:], t.strides[2:])
        if t.dtype is not dtype or step is None:
            t = self._convert(t, dtype)
            step = 1
        cg = c // groups
        return t.derived((n, groups, cg, math.prod(spatial)),
                         (t.strides[0], t.strides[1] * cg, t.strides[1], step))

    def _per_sample_total(self: Any, cols: CubeTensor, grad: CubeTensor, groups: int,
                          dtype: DType) -> CubeTensor:
        """Weight gradient matrices `[G, O/G, R/G]` as a product per sample and group (grad read
        in place where its layout allows) summed over the batch."""
        n, rows, length = cols.shape
        per = cols.derived((n, groups, rows // groups, length),
                           (cols.strides[0], cols.strides[1] * (rows // groups),
                            cols.strides[1], cols.strides[2]))
        products = self.float_matmul(self._samples(grad, groups, dtype), _swap(per))
        total = self.float_sum_dim(products, 0)
        return total.derived(total.shape[1:], total.strides[1:])

    def _bias_grad(self: Any, grad: CubeTensor, bias: CubeTensor | None,
                   dtype: DType) -> CubeTensor | None:
        """Sum of grad `[N, C, *S]` per channel (in `dtype`, grad read in place where its
        layout allows), as bias's shape and dtype; None without bias."""
        if bias is None:
            return None
        total = self.float_sum_dim(self.float_sum_dim(self._samples(grad, 1, dtype), 3), 0)
        return _reshape(self._convert(total, bias.dtype), bias.shape)

    # --- ops --------------------------------------------------------------------------------
    def conv(self: Any, x: CubeTensor, weight: CubeTensor, bias: CubeTensor | None,
             options: ConvOptions) -> CubeTensor:
        """N-d convolution (1d, 2d, 3d), PyTorch's semantics (see the NumPy backend).

        Args:
            x: input [N, C_in, *spatial].
            weight: kernel [C_out, C_in/groups, *kernel].
            bias: [C_out] or None.
            options: stride, padding, dilation, groups.

        Returns:
            Output [N, C_out, *out_spatial] of x's dtype.
        """
        return self._conv(x, weight, bias, options)[0]

    def conv_saving_columns(self: Any, x: CubeTensor, weight: CubeTensor,
                            bias: CubeTensor | None, options: ConvOptions
                            ) -> tuple[CubeTensor, CubeTensor | None]:
        """`conv`, and its im2col columns for `conv_backward_from_columns` while they have at
        most `SAVED_COLUMNS_MAX` elements (else None). Not a protocol op: Autodiff keeps the
        columns for the backward instead of unfolding x again.

        Returns:
            (output [N, C_out, *out_spatial] of x's dtype, columns [N, C_in*K, L] or None;
            where the forward multiplied its bias in, the columns end with its row of ones:
            [N, C_in*K + 1, L]).
        """
        out, cols = self._conv(x, weight, bias, options)
        return out, cols if cols.size <= SAVED_COLUMNS_MAX else None

    def _conv(self: Any, x: CubeTensor, weight: CubeTensor, bias: CubeTensor | None,
              options: ConvOptions) -> tuple[CubeTensor, CubeTensor]:
        """`conv`'s output and its im2col columns `[N, C_in*K, L]` (`_conv_columns`)."""
        g, kernel = options.groups, weight.shape[2:]
        c_out, out = _checked("conv", x, weight, bias, options)
        work = _work(x.dtype)
        n = x.shape[0]
        last = self._batch_last(x, g, out)
        batched = g == 1 and x.dtype is work
        cols = self._conv_columns(x, kernel, options, out, work,
                                  int((batched or last) and bias is not None))
        if last:
            # one product over the batch, [C_out, L*N], then [N, C_out, L] by tiles
            w = self._weight(weight, 1, work)
            if bias is not None:
                w = self._with_bias(w.derived(w.shape[1:], w.strides[1:]), bias)
                w = w.derived((1, *w.shape), (0, *w.strides))
            y = self._product(w, _matrices(cols, 1))
            return self._from_batch_last(y, (n, c_out, *out), x.dtype), cols
        if batched:
            # one product per sample (weight broadcast over N; BLAS and cuBLAS read each
            # sample's columns in place) writes [N, C_out, L] without a converting copy; a
            # bias is the weight's last column, times the columns' row of ones
            w = self._weight(weight, 1, work)
            if bias is not None:
                w = self._with_bias(w.derived(w.shape[1:], w.strides[1:]), bias)
            y = self.float_matmul(w, cols)
            return _reshape(y, (n, c_out, *out)), cols
        y = self._product(self._weight(weight, g, work), _matrices(cols, g))
        return self._unrows(y, (n, c_out, *out), x.dtype, bias), cols

    def _batch_last(self: Any, x: CubeTensor, groups: int, out: Sequence[int]) -> bool:
        """Whether conv's columns are batch-last (`im2col_batch_last_kernel`): on the cpu, for
        one group, a batch and window rows shorter than `BATCH_LAST_WIDTH`."""
        return (self.runtime_name == "cpu" and groups == 1 and x.shape[0] > 1
                and out[-1] < BATCH_LAST_WIDTH)

    def _conv_columns(self: Any, x: CubeTensor, kernel: Sequence[int], options: ConvOptions,
                      out: Sequence[int], work: DType, ones: int) -> CubeTensor:
        """x's columns `[N, C*K, L]` of `work` for conv, each group's rows followed by a row of
        ones when `ones` (the group count, or 0): batch-last where `_batch_last`, else
        batch-inner (`_column_buffer`)."""
        if not self._batch_last(x, options.groups, out):
            cols, *spacing = self._column_buffer(x.shape[0], x.shape[1] * math.prod(kernel),
                                                 math.prod(out), work, ones, True)
            return self._im2col(x, kernel, options, out, cols, spacing)
        n, c, *spatial = x.shape
        rows, length = c * math.prod(kernel), math.prod(out)
        xt = self._transposed(x.view((c, *spatial, n), (*x.strides[1:], x.strides[0])), work)
        buffer = self.empty(((rows + ones) * length * n,), work)
        if buffer.size:
            im2col = im2col_batch_last_kernel(work, len(kernel), options.stride[-1] == 1,
                                              any(options.padding), bool(ones))
            self.launch_cubes_planned(im2col, (rows + ones, 1, 1), 1, xt.array, buffer.array,
                                      *_geometry(kernel, options, out),
                                      unit_work(length * n))
        return buffer.view((n, rows + ones, length), (1, length * n, n))

    def _col2im_batch_last(self: Any, m: CubeTensor, shape: Shape, windows: Sequence[int],
                           kernel: Sequence[int], options: Geometry, dtype: DType
                           ) -> CubeTensor:
        """The adjoint of batch-last columns: matrices `[1, C*K, L*N]` summed into a new
        `shape` `[N, C, *S]` tensor of `dtype`."""
        n, c, *spatial = shape
        m = self._convert(m, m.dtype)
        out = self.empty((c, *spatial, n), m.dtype)
        if out.size:
            col2im = col2im_batch_last_kernel(m.dtype, len(kernel), options.stride[-1] == 1,
                                              any(options.padding))
            self.launch_cubes_planned(col2im, (c, 1, 1), 1, m.view((m.size,), (1,)).array,
                                      out.array, *_geometry(kernel, options, windows),
                                      unit_work(math.prod(kernel) * math.prod(windows) * n))
        return self._from_batch_last(out, shape, dtype)

    def _from_batch_last(self: Any, t: CubeTensor, shape: Shape, dtype: DType) -> CubeTensor:
        """A tensor whose memory is `[C, prod(S), N]` as a new dense `shape` `[N, C, *S]`
        tensor of `dtype`."""
        n, c = shape[:2]
        t = self._convert(t, t.dtype)
        area = math.prod(shape[2:])
        view = t.view((n, c, area), (1, area * n, n))
        return _reshape(self._transposed(view, dtype), shape)

    def _transposed(self: Any, t: CubeTensor, dtype: DType) -> CubeTensor:
        """`t` as a new dense tensor of `dtype`: copied by tiles (`copy_into`, for transposing
        views) where the dtype stays, else by the converting copy."""
        if t.dtype is not dtype:
            return self._convert(t, dtype)
        out = self.empty(t.shape, dtype)
        copy_into(self, t, out)
        return out

    def _with_bias(self: Any, w: CubeTensor, bias: CubeTensor) -> CubeTensor:
        """A weight matrix `[O, R]` and its bias `[O]` as one dense matrix `[O, R + 1]` of
        w's dtype (one launch)."""
        rows, width = w.shape
        both = self.empty((rows, width + 1), w.dtype)
        if both.size:
            self.launch_planned(weight_bias_kernel(w.dtype, bias.dtype, w.dtype), both.size,
                                w.array, bias.array, both.flat().array)
        return both

    def conv_backward(self: Any, x: CubeTensor, weight: CubeTensor, bias: CubeTensor | None,
                      grad: CubeTensor, options: ConvOptions
                      ) -> tuple[CubeTensor, CubeTensor, CubeTensor | None]:
        """Gradients of `conv`.

        Args:
            x, weight, bias, options: the forward's arguments.
            grad: gradient of the output [N, C_out, *out_spatial].

        Returns:
            (grad_x, grad_weight, grad_bias or None), each of its input's shape and dtype.
        """
        op, g, kernel = "conv_backward", options.groups, weight.shape[2:]
        c_out, out = _checked(op, x, weight, bias, options)
        _check_grad(op, _shaped(grad), (x.shape[0], c_out, *out))
        work = _work(x.dtype)
        cols = self._conv_columns(x, kernel, options, out, work, 0 if bias is None else g)
        gx, gw, gb = self._conv_grads(cols, x.shape, x.dtype, weight, bias, grad, options, True,
                                      bias is not None)
        assert gx is not None
        return gx, gw, gb

    def conv_backward_from_columns(self: Any, cols: CubeTensor, x_shape: Shape,
                                   x_dtype: DType, weight: CubeTensor, bias: CubeTensor | None,
                                   grad: CubeTensor, options: ConvOptions, need_x: bool
                                   ) -> tuple[CubeTensor | None, CubeTensor, CubeTensor | None]:
        """Gradients of `conv` from the forward's columns (`conv_saving_columns`), the input's
        only when `need_x`.

        Args:
            cols: the forward's columns [N, C_in*K, L] (or [N, C_in*K + 1, L], ending with
                the row of ones of a forward with one group and a bias).
            x_shape, x_dtype: the forward input's shape and dtype.
            weight, bias, options: the forward's.
            grad: gradient of the output [N, C_out, *out_spatial].
            need_x: whether to compute the input's gradient.

        Returns:
            (grad_x or None, grad_weight, grad_bias or None), each of its input's shape and
            dtype.

        Raises:
            ShapeError: columns, grad and weight that do not fit `x_shape`.
        """
        n, c_out = grad.shape[:2]
        expected = (x_shape[0], x_shape[1] * math.prod(weight.shape[2:]),
                    math.prod(grad.shape[2:]))
        ones = bias is not None and options.groups == 1 and cols.shape[1] == expected[1] + 1
        if (cols.shape != (expected[0], expected[1] + ones, expected[2])
                or c_out != weight.shape[0] or n != x_shape[0]):
            raise ShapeError("conv_backward", "columns, grad and weight do not fit x",
                             cols=cols.shape, expected=expected, grad=grad.shape,
                             weight=weight.shape)
        return self._conv_grads(cols, x_shape, x_dtype, weight, bias, grad, options, need_x,
                                ones)

    def _conv_grads(self: Any, cols: CubeTensor, x_shape: Shape, x_dtype: DType,
                    weight: CubeTensor, bias: CubeTensor | None, grad: CubeTensor,
                    options: ConvOptions, need_x: bool, ones: bool
                    ) -> tuple[CubeTensor | None, CubeTensor, CubeTensor | None]:
        """conv's gradients from x's batch-inner columns `cols` (`_column_buffer`'s, with a
        row of ones per group after its rows when `ones`, which then gives the bias gradient
        in the weight's product); the input's only when `need_x`."""
        g, kernel, n = options.groups, weight.shape[2:], x_shape[0]
        work = _work(x_dtype)
        single = self.runtime_name in SINGLE_PRODUCT_RUNTIMES
        last = _is_batch_last(cols)
        go = self._rows(grad, g, work, last) if need_x or single else None
        total = (self._product(go, _swap(_matrices(cols, g))) if single
                 else self._per_sample_total(cols, grad, g, work))
        gw, gb = self._weight_grad(total, weight, bias if ones else None)
        if not ones:
            gb = self._bias_grad(grad, bias, work)
        if not need_x:
            return None, gw, gb
        gcols = self._product(_swap(self._weight(weight, g, work)), go)
        if last:
            return (self._col2im_batch_last(gcols, x_shape, grad.shape[2:], kernel, options,
                                            x_dtype), gw, gb)
        gx = self._col2im(self._columns(gcols, n), x_shape, grad.shape[2:], kernel, options,
                          x_dtype, None)
        return gx, gw, gb

    def conv_transpose(self: Any, x: CubeTensor, weight: CubeTensor, bias: CubeTensor | None,
                       options: ConvTransposeOptions) -> CubeTensor:
        """N-d transposed convolution (1d, 2d, 3d), PyTorch's semantics.

        Args:
            x: input [N, C_in, *spatial].
            weight: kernel [C_in, C_out/groups, *kernel].
            bias: [C_out] or None.
            options: stride, padding, padding_out, dilation, groups.

        Returns:
            Output [N, C_out, *out_spatial] of x's dtype.
        """
        op, g, kernel = "conv_transpose", options.groups, weight.shape[2:]
        c_out = _check(op, _shaped(x), _shaped(weight), _shaped(bias), options)
        out = _transpose_out(op, _shaped(x), kernel, options)
        work = _work(x.dtype)
        w = self._weight(weight, g, work)
        cols = self._columns(self._product(_swap(w), self._rows(x, g, work)), x.shape[0])
        return self._col2im(cols, (x.shape[0], c_out, *out), x.shape[2:], kernel, options,
                            x.dtype, bias)

    def conv_transpose_backward(self: Any, x: CubeTensor, weight: CubeTensor,
                                bias: CubeTensor | None, grad: CubeTensor,
                                options: ConvTransposeOptions
                                ) -> tuple[CubeTensor, CubeTensor, CubeTensor | None]:
        """Gradients of `conv_transpose` (its input gradient is a convolution of grad).

        Args:
            x, weight, bias, options: the forward's arguments.
            grad: gradient of the output [N, C_out, *out_spatial].

        Returns:
            (grad_x, grad_weight, grad_bias or None), each of its input's shape and dtype.
        """
        op, g, kernel = "conv_transpose_backward", options.groups, weight.shape[2:]
        c_out = _check(op, _shaped(x), _shaped(weight), _shaped(bias), options)
        _check_grad(op, _shaped(grad),
                    (x.shape[0], c_out, *_transpose_out(op, _shaped(x), kernel, options)))
        work = _work(x.dtype)
        n, length = x.shape[0], math.prod(x.shape[2:])
        cols, *spacing = self._column_buffer(n, c_out * math.prod(kernel), length, work)
        cols = _matrices(self._im2col(grad, kernel, options, x.shape[2:], cols, spacing), g)
        gw, _ = self._weight_grad(self._product(self._rows(x, g, work), _swap(cols)), weight)
        gx = self._unrows(self._product(self._weight(weight, g, work), cols), x.shape,
                          x.dtype, None)
        return gx, gw, self._bias_grad(grad, bias, work)

    def _deform_columns(self: Any, x: CubeTensor, offset: CubeTensor, weight: CubeTensor,
                        mask: CubeTensor | None, options: DeformConvOptions, out: Sequence[int],
                        dtype: DType, groups: int) -> CubeTensor:
        """Deformable columns `[N, C*K, L]` of `dtype` (ones rows with `groups`, as
        `_column_buffer`)."""
        n, c = x.shape[:2]
        rows = c * math.prod(weight.shape[2:])
        cols, *spacing = self._column_buffer(n, rows, math.prod(out), dtype, groups)
        if n * rows * math.prod(out):
            kernel = deform_im2col_kernel(x.dtype, offset.dtype, _dtype_of(mask), dtype)
            self.launch(kernel, n * rows * math.prod(out), *_deform_inputs(x, offset, mask),
                        cols.array, *spacing, c // options.offset_groups,
                        *_geometry(weight.shape[2:], options, out))
        return cols

    def deform_conv2d(self: Any, x: CubeTensor, offset: CubeTensor, weight: CubeTensor,
                      mask: CubeTensor | None, bias: CubeTensor | None,
                      options: DeformConvOptions) -> CubeTensor:
        """Deformable 2d convolution (torchvision.ops.deform_conv2d semantics, zeros outside):
        bilinear deformable columns, then the grouped matmul of `conv`.

        Args:
            x: input [N, C_in, H, W].
            offset: [N, 2*offset_groups*kh*kw, Ho, Wo], (dy, dx) pairs per kernel position.
            weight: kernel [C_out, C_in/weight_groups, kh, kw].
            mask: modulation [N, offset_groups*kh*kw, Ho, Wo] or None (all ones).
            bias: [C_out] or None.
            options: stride, padding, dilation, weight_groups, offset_groups.

        Returns:
            Output [N, C_out, Ho, Wo] of x's dtype.
        """
        g = options.weight_groups
        out = _check_deform("deform_conv2d", _shaped(x), _shaped(offset), _shaped(weight),
                            _shaped(mask), _shaped(bias), options)
        work = _work(x.dtype)
        cols = self._deform_columns(x, offset, weight, mask, options, out, work, 0)
        y = self._product(self._weight(weight, g, work), _matrices(cols, g))
        return self._unrows(y, (x.shape[0], weight.shape[0], *out), x.dtype, bias)

    def deform_conv2d_backward(self: Any, x: CubeTensor, offset: CubeTensor,
                               weight: CubeTensor, mask: CubeTensor | None,
                               bias: CubeTensor | None, grad: CubeTensor,
                               options: DeformConvOptions) -> tuple[
                                   CubeTensor, CubeTensor, CubeTensor, CubeTensor | None,
                                   CubeTensor | None]:
        """Gradients of `deform_conv2d` (offset gradients vanish outside (-1, H) x (-1, W)).

        Args:
            x, offset, weight, mask, bias, options: the forward's arguments.
            grad: gradient of the output [N, C_out, Ho, Wo].

        Returns:
            (grad_x, grad_offset, grad_weight, grad_mask or None, grad_bias or None), each of
            its input's shape and dtype.
        """
        op, g = "deform_conv2d_backward", options.weight_groups
        out = _check_deform(op, _shaped(x), _shaped(offset), _shaped(weight), _shaped(mask),
                            _shaped(bias), options)
        _check_grad(op, _shaped(grad), (x.shape[0], weight.shape[0], *out))
        work = _work(x.dtype)
        cols = self._deform_columns(x, offset, weight, mask, options, out, work,
                                    0 if bias is None else g)
        go = self._rows(grad, g, work)
        gw, gb = self._weight_grad(self._product(go, _swap(_matrices(cols, g))), weight,
                                   bias)
        gcols = self._columns(self._product(_swap(self._weight(weight, g, work)), go),
                              x.shape[0])
        inputs = (*_deform_inputs(x, offset, mask), gcols.array)
        scalars = (x.shape[1] // options.offset_groups, *_geometry(weight.shape[2:], options,
                                                                   out))
        goffset = self.empty(offset.shape, work)
        gmask = None if mask is None else self.empty(mask.shape, work)
        points = goffset.size // 2
        if points:
            kernel = deform_point_grads_kernel(x.dtype, offset.dtype, _dtype_of(mask), work)
            self.launch(kernel, points, *inputs, goffset.array,
                        *(() if gmask is None else (gmask.array,)), options.offset_groups,
                        *scalars)
        gx = self.empty(x.shape, work)
        if x.shape[0] * x.shape[1]:
            kernel = deform_input_grad_kernel(x.dtype, offset.dtype, _dtype_of(mask), work)
            self.launch(kernel, x.shape[0] * x.shape[1], *inputs, gx.array, *scalars)
        return (self._convert(gx, x.dtype), self._convert(goffset, offset.dtype), gw,
                None if gmask is None or mask is None else self._convert(gmask, mask.dtype), gb)

    def unfold4d(self: Any, x: CubeTensor, kernel_size: tuple[int, int],
                 options: ConvOptions) -> CubeTensor:
        """Sliding-window patches (torch.nn.functional.unfold); groups is ignored.

        Args:
            x: input [N, C, H, W].
            kernel_size: (kh, kw).
            options: stride, padding, dilation.

        Returns:
            Patches [N, C*kh*kw, L] of x's dtype.
        """
        if len(x.shape) != 4:
            raise ShapeError("unfold4d", "x must be [N, C, H, W]", x=x.shape)
        out = _conv_out("unfold4d", _shaped(x), kernel_size, options)
        cols = self.empty((x.shape[0], x.shape[1] * math.prod(kernel_size), math.prod(out)),
                          x.dtype)
        return self._im2col(x, kernel_size, options, out, cols)


#: `_checked`'s results by op, shapes and options.
_CHECKED: dict[tuple[Any, ...], tuple[int, tuple[int, ...]]] = {}


def _checked(op: str, x: CubeTensor, weight: CubeTensor, bias: CubeTensor | None,
             options: ConvOptions) -> tuple[int, tuple[int, ...]]:
    """The NumPy backend's shape checks of a convolution (its errors raise each call), and its
    output channels and spatial sizes, kept per op, shapes and options."""
    key = (op, x.shape, weight.shape, None if bias is None else bias.shape, options)
    found = _CHECKED.get(key)
    if found is None:
        c_out = _check(op, _shaped(x), _shaped(weight), _shaped(bias), options)
        out = tuple(_conv_out(op, _shaped(x), weight.shape[2:], options))
        if len(_CHECKED) >= 1024:
            _CHECKED.clear()
        found = _CHECKED[key] = (c_out, out)
    return found


def _dtype_of(t: CubeTensor | None) -> DType | None:
    return None if t is None else t.dtype


def _deform_inputs(x: CubeTensor, offset: CubeTensor, mask: CubeTensor | None) -> list[Any]:
    """The arrays x, offset and mask (when given), the deform kernels' first arguments."""
    return [t.array for t in (x, offset, mask) if t is not None]


def _merged_stride(shape: Sequence[int], strides: Sequence[int]) -> int | None:
    """The one stride that walks dims `shape` (row-major) as a single dim, None when their
    strides do not allow it (1 for no dims or all of size 1)."""
    dims = [(size, stride) for size, stride in zip(shape, strides, strict=True) if size != 1]
    for (_, outer), (size, inner) in zip(dims, dims[1:], strict=False):
        if outer != inner * size:
            return None
    return dims[-1][1] if dims else 1


def _geometry(kernel: Sequence[int], options: Geometry, out: Sequence[int]) -> list[int]:
    """The kernels' per-dim scalars: kernel size, stride, padding, dilation, window count."""
    return [v for dims in zip(kernel, options.stride, options.padding, options.dilation, out,
                              strict=True) for v in dims]
