"""Convolutions of the cube backends: conv and conv_transpose (1-d, 2-d, 3-d) with backward, and
unfold4d, as burn-cube kernels around the backend's batched `float_matmul`.

The NumPy backend's formulation (`burn.backends.numpy.module.conv`), on device buffers: an
im2col kernel reads x in place (any strides, zero padding by bounds) into columns
`[G, C/G*K, N*L]`, one matmul per op multiplies them with the weight `[G, C_out/G, C/G*K]`, and a
converting copy puts channels back in `[N, C, *S]` order (adding the bias). Input gradients and
transposed convolutions go back through col2im, a gather (each input element sums the columns
that read it: deterministic, no atomics). float16/bfloat16 compute in float32, as NumPy does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from burn.backend.options import ConvOptions, ConvTransposeOptions
from burn.backends.numpy.module.conv import _check, _check_grad, _conv_out, _transpose_out
from burn.dtype import DType
from burn.errors import ShapeError

from ..tensor import CubeTensor, Shape, dense_strides
from .im2col import col2im_kernel, convert_kernel, im2col_kernel

Geometry = ConvOptions | ConvTransposeOptions


def _work(dtype: DType) -> DType:
    """The dtype to compute in: float64 as is, every other float as float32."""
    return DType.float64 if dtype is DType.float64 else DType.float32


def _shaped(t: CubeTensor | None) -> Any:
    """A memory-less numpy stand-in of `t`'s shape, for the NumPy backend's shape checks."""
    return None if t is None else np.broadcast_to(np.zeros((), np.bool_), t.shape)


def _reshape(t: CubeTensor, shape: Shape) -> CubeTensor:
    """A view of contiguous `t` with `shape`."""
    return t.view(shape, dense_strides(shape))


def _grouped(cols: CubeTensor, groups: int) -> CubeTensor:
    """Dense columns `[C*K, N, L]` as `[G, C/G*K, N*L]` matrices."""
    rows, n, length = cols.shape
    return _reshape(cols, (groups, rows // groups, n * length))


def _swap(t: CubeTensor) -> CubeTensor:
    """A view of `t` with its last two dimensions exchanged (matrix transpose)."""
    return t.view((*t.shape[:-2], t.shape[-1], t.shape[-2]),
                  (*t.strides[:-2], t.strides[-1], t.strides[-2]))


class CubeConvOps:
    """Convolution ops of `CubeBackend` (mixin: `self` is the backend)."""

    # --- kernels ----------------------------------------------------------------------------
    def _convert(self: Any, t: CubeTensor, dtype: DType, bias: CubeTensor | None = None,
                 inner: int = 1) -> CubeTensor:
        """`t` as a dense tensor of `dtype` (itself when it already is one and no bias), with
        `bias[(i / inner) % len(bias)]` added to flat element i when given."""
        if bias is None and t.dtype is dtype and t.is_contiguous:
            return t
        out = self.empty(t.shape, dtype)
        if out.size:
            flat = out.view((out.size,), (1,))
            extra = () if bias is None else (bias.array, inner, bias.shape[0])
            kernel = convert_kernel(t.dtype, dtype, max(len(t.shape), 1),
                                    None if bias is None else bias.dtype)
            self.launch(kernel, out.size, t.array, flat.array, *extra)
        return out

    def _launch_windows(self: Any, kernel: Any, rows: int, last: int, *args: Any) -> None:
        """Launch im2col/col2im over `rows` rows of `last` elements: one unit per row on the cpu,
        one per element elsewhere (the `chunk` and `chunks` scalars close `args`)."""
        chunk = last if self.runtime_name == "cpu" else 1
        chunks = -(-last // chunk) if chunk else 0
        if rows and chunks:
            self.launch(kernel, rows * chunks, *args, chunk, chunks)

    def _im2col(self: Any, x: CubeTensor, kernel: Sequence[int], options: Geometry,
                out: Sequence[int], dtype: DType, cols: CubeTensor | None = None) -> CubeTensor:
        """Columns `[C*K, N, L]` of x's zero-padded windows (`cols`, a view, or a new dense
        tensor of `dtype`)."""
        n, c = x.shape[:2]
        if cols is None:
            cols = self.empty((c * math.prod(kernel), n, math.prod(out)), dtype)
        self._launch_windows(
            im2col_kernel(x.dtype, cols.dtype, len(kernel)),
            c * math.prod(kernel) * n * math.prod(out[:-1]), out[-1], x.array, cols.array,
            *_geometry(kernel, options, out))
        return cols

    def _col2im(self: Any, cols: CubeTensor, shape: Shape, windows: Sequence[int],
                kernel: Sequence[int], options: Geometry, dtype: DType,
                bias: CubeTensor | None) -> CubeTensor:
        """The adjoint of `_im2col`: columns `[C*K, N, L]` summed into a new `shape` tensor of
        `dtype` (+ bias per channel)."""
        out = self.empty(shape, dtype)
        extra = () if bias is None else (bias.array,)
        self._launch_windows(
            col2im_kernel(cols.dtype, dtype, len(kernel), None if bias is None else bias.dtype),
            math.prod(shape[:-1]), shape[-1], cols.array, out.array, *extra,
            *_geometry(kernel, options, windows))
        return out

    # --- layouts ----------------------------------------------------------------------------
    def _rows(self: Any, t: CubeTensor, groups: int, dtype: DType) -> CubeTensor:
        """`[N, C, *S]` -> dense `[G, C/G, N*prod(S)]` of `dtype` (channels as rows, grouped)."""
        n, c, *spatial = t.shape
        cg = c // groups
        grouped = t.view((groups, cg, n, *spatial),
                         (t.strides[1] * cg, t.strides[1], t.strides[0], *t.strides[2:]))
        return _reshape(self._convert(grouped, dtype), (groups, cg, n * math.prod(spatial)))

    def _unrows(self: Any, r: CubeTensor, shape: Shape, dtype: DType,
                bias: CubeTensor | None) -> CubeTensor:
        """Inverse of `_rows`: `[G, C/G, N*L]` (any strides) -> dense `shape` `[N, C, *S]` of
        `dtype`, + bias per channel."""
        g, cg, _ = r.shape
        n, length = shape[0], math.prod(shape[2:])
        s0, s1, s2 = r.strides
        view = r.view((n, g, cg, length), (s2 * length, s0, s1, s2))
        return _reshape(self._convert(view, dtype, bias, length), shape)

    def _columns(self: Any, t: CubeTensor, n: int, length: int) -> CubeTensor:
        """Matrices `[G, R, N*L]` (a matmul result) as columns `[G*R, N, L]` (a view where the
        strides allow, else a dense copy)."""
        g, r, _ = t.shape
        if g > 1 and r > 1 and t.strides[0] != t.strides[1] * r:
            t = self._convert(t, t.dtype)  # not contiguous: copied
        s0, s1, s2 = t.strides
        return t.view((g * r, n, length), (s1 if r > 1 else s0, s2 * length, s2))

    def _matrix(self: Any, t: CubeTensor, shape: Shape, dtype: DType) -> CubeTensor:
        """`t` as a dense `dtype` tensor viewed with `shape` (a weight as grouped matrices)."""
        return _reshape(self._convert(t, dtype), shape)

    def _bias_grad(self: Any, go_rows: CubeTensor, bias: CubeTensor | None) -> CubeTensor | None:
        """Sum of the grad rows `[G, C/G, N*L]` per channel, as bias's dtype; None without bias."""
        if bias is None:
            return None
        g, cg, length = go_rows.shape
        total = self.float_sum_dim(_reshape(go_rows, (g * cg, length)), 1)
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
        g, kernel = options.groups, weight.shape[2:]
        c_out = _check("conv", _shaped(x), _shaped(weight), _shaped(bias), options)
        out = _conv_out("conv", _shaped(x), kernel, options)
        work = _work(x.dtype)
        cols = self._im2col(x, kernel, options, out, work)
        w = self._matrix(weight, (g, c_out // g, math.prod(weight.shape[1:])), work)
        y = self.float_matmul(w, _grouped(cols, g))
        return self._unrows(y, (x.shape[0], c_out, *out), x.dtype, bias)

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
        c_out = _check(op, _shaped(x), _shaped(weight), _shaped(bias), options)
        out = _conv_out(op, _shaped(x), kernel, options)
        _check_grad(op, _shaped(grad), (x.shape[0], c_out, *out))
        work = _work(x.dtype)
        cols = _grouped(self._im2col(x, kernel, options, out, work), g)
        go = self._rows(grad, g, work)
        w = self._matrix(weight, (g, c_out // g, math.prod(weight.shape[1:])), work)
        gw = self._convert(self.float_matmul(go, _swap(cols)), weight.dtype)
        gcols = self._columns(self.float_matmul(_swap(w), go), x.shape[0], math.prod(out))
        gx = self._col2im(gcols, x.shape, out, kernel, options, x.dtype, None)
        return gx, _reshape(gw, weight.shape), self._bias_grad(go, bias)

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
        w = self._matrix(weight, (g, x.shape[1] // g, math.prod(weight.shape[1:])), work)
        cols = self._columns(self.float_matmul(_swap(w), self._rows(x, g, work)), x.shape[0],
                             math.prod(x.shape[2:]))
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
        cols = _grouped(self._im2col(grad, kernel, options, x.shape[2:], work), g)
        w = self._matrix(weight, (g, x.shape[1] // g, math.prod(weight.shape[1:])), work)
        gw = self._convert(self.float_matmul(self._rows(x, g, work), _swap(cols)), weight.dtype)
        gx = self._unrows(self.float_matmul(w, cols), x.shape, x.dtype, None)
        go = None if bias is None else self._rows(grad, 1, work)
        return gx, _reshape(gw, weight.shape), None if go is None else self._bias_grad(go, bias)

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
        n, rows, length = x.shape[0], x.shape[1] * math.prod(kernel_size), math.prod(out)
        result = self.empty((n, rows, length), x.dtype)
        cols = result.view((rows, n, length), (length, rows * length, 1))
        self._im2col(x, kernel_size, options, out, x.dtype, cols)
        return result


def _geometry(kernel: Sequence[int], options: Geometry, out: Sequence[int]) -> list[int]:
    """The kernels' per-dim scalars: kernel size, stride, padding, dilation, window count."""
    return [v for dims in zip(kernel, options.stride, options.padding, options.dilation, out,
                              strict=True) for v in dims]
