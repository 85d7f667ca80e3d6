"""Module ops: each differentiated by the inner backend's `*_backward` method."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from burn.autodiff.graph import _MODE
from burn.autodiff.ops.common import OpsBase, record, save, tracked
from burn.autodiff.tensor import AutodiffTensor
from burn.backend.options import (
    ConvOptions,
    ConvTransposeOptions,
    DeformConvOptions,
    GridSampleOptions,
    InterpolateOptions,
    PoolOptions,
)
from burn.errors import AutodiffError

P = Any
T = AutodiffTensor
Shape = tuple[int, ...]


def _prim(x: T | None) -> P | None:
    return None if x is None else x.primitive


def _conv_input_grad(inner: Any, g: P, weight: P, x_shape: Shape, options: ConvOptions) -> P:
    """Input gradient of a conv: the transposed conv of `g` with the same weight, its output
    padded to x's spatial size."""
    kernel = inner.shape(weight)[2:]
    padding_out = tuple(
        size - ((o - 1) * st - 2 * p + d * (k - 1) + 1) for size, o, k, st, p, d in zip(
            x_shape[2:], inner.shape(g)[2:], kernel, options.stride, options.padding,
            options.dilation, strict=True))
    t_options = ConvTransposeOptions(options.stride, options.padding, padding_out,
                                     options.dilation, options.groups)
    return inner.conv_transpose(g, weight, None, t_options)


def _conv_weight_grad(inner: Any, x: P, g: P, kernel: Shape, options: ConvOptions) -> P:
    """Weight gradient of an ungrouped 1d / 2d conv: the unfolded input [N, C*K, L] times the
    output gradient [N, O, L], summed over the batch (a 1d conv runs as a 2d one of height 1)."""
    n, c, *spatial = inner.shape(x)
    o, out = inner.shape(g)[1], inner.shape(g)[2:]
    weight_shape = (o, c, *kernel)
    if len(kernel) == 1:
        x = inner.float_reshape(x, (n, c, 1, spatial[0]))
        options = ConvOptions((1, *options.stride), (0, *options.padding),
                              (1, *options.dilation), 1)
        kernel = (1, kernel[0])
    cols = inner.unfold4d(x, (kernel[0], kernel[1]), options)
    per_sample = inner.float_matmul(inner.float_reshape(g, (n, o, math.prod(out))),
                                    inner.float_swap_dims(cols, 1, 2))
    return inner.float_reshape(inner.float_sum_dim(per_sample, 0), weight_shape)


def _conv_bias_grad(inner: Any, g: P) -> P:
    """Bias gradient of a conv: g [N, O, *out] summed over the batch and spatial dims."""
    n, o, *spatial = inner.shape(g)
    flat = inner.float_reshape(g, (n, o, math.prod(spatial)))
    return inner.float_reshape(inner.float_sum_dim(inner.float_sum_dim(flat, 2), 0), (o,))


class ModuleOpsMixin(OpsBase):
    """Module ops of `Autodiff` (embedding and attention are the protocol's defaults)."""

    def conv(self, x: T, weight: T, bias: T | None, options: ConvOptions) -> T:
        """The inner conv; backward computes only the gradients of tracked inputs: all three
        through `conv_backward`, the input's alone as a transposed conv, the weight's and bias's
        alone (ungrouped 1d / 2d) from the unfolded input. An inner backend with
        `conv_saving_columns` (NumPy) keeps the forward's im2col columns for the weight's and
        bias's gradients (and the input's where tracked) instead of unfolding x again."""
        inner = self.inner
        need_x, need_w = x.node is not None, weight.node is not None
        need_b = bias is not None and bias.node is not None
        saving = getattr(inner, "conv_saving_columns", None)
        backward = getattr(inner, "conv_backward_from_columns", None)
        if saving and backward and (need_w or need_b) and tracked(x, weight, bias):
            out, cols = saving(x.primitive, weight.primitive, _prim(bias), options)
            if cols is not None:  # the forward's im2col columns serve the backward
                x_shape, x_dtype = inner.shape(x.primitive), x.primitive.dtype
                return record(out, (x, weight, bias), lambda g, s: backward(
                    cols, x_shape, x_dtype, s[0], s[1], g, options, need_x),
                    (save(weight), save(bias)))
        else:
            out = inner.conv(x.primitive, weight.primitive, _prim(bias), options)
        if not tracked(x, weight, bias):
            return AutodiffTensor(out)
        if need_x and (need_w or need_b):
            return record(out, (x, weight, bias), lambda g, s: inner.conv_backward(
                s[0], s[1], s[2], g, options), (save(x), save(weight), save(bias)))
        x_shape, w_shape = inner.shape(x.primitive), inner.shape(weight.primitive)
        if need_x:
            return record(out, (x, weight, bias), lambda g, s: (
                _conv_input_grad(inner, g, s[0], x_shape, options), None, None), (save(weight),))
        if options.groups != 1 or len(w_shape) > 4:
            return record(out, (x, weight, bias), lambda g, s: (None, *inner.conv_backward(
                s[0], s[1], s[2], g, options)[1:]), (save(x), save(weight), save(bias)))
        return record(out, (x, weight, bias), lambda g, s: (
            None, _conv_weight_grad(inner, s[0], g, w_shape[2:], options) if need_w else None,
            _conv_bias_grad(inner, g) if need_b else None), (save(x),))

    def layer_norm(self, x: T, weight: T | None, bias: T | None, num_dims: int,
                   eps: float) -> tuple[T, T, T]:
        """The inner layer_norm; backward through the inner `layer_norm_backward` with the
        forward's mean and rstd (the mean and rstd results carry no gradient)."""
        inner = self.inner
        out, mean, rstd = inner.layer_norm(x.primitive, _prim(weight), _prim(bias), num_dims, eps)
        stats = AutodiffTensor(mean), AutodiffTensor(rstd)
        if not tracked(x, weight, bias):
            return AutodiffTensor(out), *stats
        bias_p = _prim(bias)  # its presence asks for its gradient; its values are not read
        return record(out, (x, weight, bias), lambda g, s: inner.layer_norm_backward(
            s[0], s[1], bias_p, s[2], s[3], g, num_dims),
            (save(x), save(weight), mean, rstd)), *stats

    def cross_entropy(self, logits: T, target: P, weight: T | None, ignore_index: int,
                      label_smoothing: float, reduction: str) -> T:
        """The inner cross_entropy; backward through the inner `cross_entropy_backward` (the
        logits' gradient only).

        Raises:
            AutodiffError: for class weights that require grad (as torch, which has no
                derivative for them).
        """
        inner = self.inner
        if weight is not None and tracked(weight):
            raise AutodiffError("cross_entropy", "class weights have no gradient; detach them",
                                weight=inner.shape(weight.primitive))
        w = _prim(weight)
        out = inner.cross_entropy(logits.primitive, target, w, ignore_index, label_smoothing,
                                  reduction)
        if logits.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        return record(out, (logits,), lambda g, s: (inner.cross_entropy_backward(
            s[0], target, w, g, ignore_index, label_smoothing, reduction),), (save(logits),))

    def conv_transpose(self, x: T, weight: T, bias: T | None,
                       options: ConvTransposeOptions) -> T:
        """The inner conv_transpose; backward computes only the gradients of tracked inputs:
        all three through `conv_transpose_backward`, the input's alone as a conv of the output
        gradient with the same weight (its adjoint), the weight's and bias's alone (ungrouped 1d
        / 2d) from the unfolded output gradient."""
        inner = self.inner
        out = inner.conv_transpose(x.primitive, weight.primitive, _prim(bias), options)
        if not tracked(x, weight, bias):
            return AutodiffTensor(out)
        need_x, need_w = x.node is not None, weight.node is not None
        need_b = bias is not None and bias.node is not None
        adjoint = ConvOptions(options.stride, options.padding, options.dilation, options.groups)
        w_shape = inner.shape(weight.primitive)
        # the adjoint conv gives x's size back while output padding stays below the stride
        fits = all(po < st for po, st in zip(options.padding_out, options.stride, strict=True))
        if fits and need_x and not (need_w or need_b):
            return record(out, (x, weight, bias), lambda g, s: (
                inner.conv(g, s[0], None, adjoint), None, None), (save(weight),))
        if fits and not need_x and options.groups == 1 and len(w_shape) <= 4:
            return record(out, (x, weight, bias), lambda g, s: (
                None, _conv_weight_grad(inner, g, s[0], w_shape[2:], adjoint) if need_w else None,
                _conv_bias_grad(inner, g) if need_b else None), (save(x),))
        return record(out, (x, weight, bias), lambda g, s: inner.conv_transpose_backward(
            s[0], s[1], s[2], g, options), (save(x), save(weight), save(bias)))

    def deform_conv2d(self, x: T, offset: T, weight: T, mask: T | None, bias: T | None,
                      options: DeformConvOptions) -> T:
        """The inner deform_conv2d; backward through `deform_conv2d_backward`, or only for the
        tracked inputs where the inner backend has `deform_conv2d_backward_needed` (NumPy: no
        scatter into x for an untracked input, no offset gathers for untracked offsets)."""
        inner = self.inner
        inputs = (x, offset, weight, mask, bias)
        out = inner.deform_conv2d(x.primitive, offset.primitive, weight.primitive, _prim(mask),
                                  _prim(bias), options)
        if not tracked(*inputs):
            return AutodiffTensor(out)
        needs = tuple(t is not None and t.node is not None for t in inputs)
        needed = getattr(inner, "deform_conv2d_backward_needed", None)
        if needed is not None and not all(needs):
            return record(out, inputs, lambda g, s: needed(
                s[0], s[1], s[2], s[3], s[4], g, options, needs), tuple(map(save, inputs)))
        return record(out, inputs, lambda g, s: inner.deform_conv2d_backward(
            s[0], s[1], s[2], s[3], s[4], g, options), tuple(map(save, inputs)))

    def unfold4d(self, x: T, kernel_size: tuple[int, int], options: ConvOptions) -> T:
        inner = self.inner
        out = inner.unfold4d(x.primitive, kernel_size, options)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        n, c, *spatial = inner.shape(x.primitive)

        def fn(g: P, _: tuple[()]) -> tuple[P]:
            # unfold4d is a grouped conv with one-hot kernels; its input grad is the transposed
            # conv of the grad with those kernels
            kh, kw = kernel_size
            eye = np.eye(kh * kw, dtype=inner.dtype(g).numpy).reshape(kh * kw, 1, kh, kw)
            weight = inner.float_from_data(np.tile(eye, (c, 1, 1, 1)), inner.device_of(g))
            outs = [(size + 2 * p - d * (k - 1) - 1) // s + 1 for size, k, s, p, d in zip(
                spatial, kernel_size, options.stride, options.padding, options.dilation,
                strict=True)]
            covered = [(o - 1) * s - 2 * p + d * (k - 1) + 1 for o, k, s, p, d in zip(
                outs, kernel_size, options.stride, options.padding, options.dilation,
                strict=True)]
            t_options = ConvTransposeOptions(
                options.stride, options.padding,
                tuple(size - cov for size, cov in zip(spatial, covered, strict=True)),
                options.dilation, c)
            g = inner.float_reshape(g, (n, c * kh * kw, *outs))
            return (inner.conv_transpose(g, weight, None, t_options),)
        return record(out, (x,), fn)

    def avg_pool(self, x: T, options: PoolOptions) -> T:
        inner = self.inner
        out = inner.avg_pool(x.primitive, options)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        return record(out, (x,), lambda g, s: (inner.avg_pool_backward(s[0], g, options),),
                      (save(x),))

    def max_pool_with_indices(self, x: T, options: PoolOptions) -> tuple[T, P]:
        inner = self.inner
        out, indices = inner.max_pool_with_indices(x.primitive, options)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out), indices
        return record(out, (x,), lambda g, s: (inner.max_pool_backward(s[0], s[1], g, options),),
                      (save(x), indices)), indices

    def adaptive_avg_pool(self, x: T, output_size: Shape) -> T:
        inner = self.inner
        out = inner.adaptive_avg_pool(x.primitive, output_size)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        return record(out, (x,), lambda g, s: (inner.adaptive_avg_pool_backward(s[0], g),),
                      (save(x),))

    def interpolate(self, x: T, output_size: tuple[int, int],
                    options: InterpolateOptions) -> T:
        inner = self.inner
        out = inner.interpolate(x.primitive, output_size, options)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        return record(out, (x,), lambda g, s: (
            inner.interpolate_backward(s[0], g, output_size, options),), (save(x),))

    def grid_sample_2d(self, x: T, grid: T, options: GridSampleOptions) -> T:
        """The inner grid_sample_2d; backward through `grid_sample_2d_backward`, or only for the
        tracked input where the inner backend has `grid_sample_2d_backward_needed` (NumPy)."""
        inner = self.inner
        out = inner.grid_sample_2d(x.primitive, grid.primitive, options)
        if not tracked(x, grid):
            return AutodiffTensor(out)
        need_x, need_grid = x.node is not None, grid.node is not None
        needed = getattr(inner, "grid_sample_2d_backward_needed", None)
        if needed is not None and not (need_x and need_grid):
            return record(out, (x, grid), lambda g, s: needed(
                s[0], s[1], g, options, need_x, need_grid), (save(x), save(grid)))
        return record(out, (x, grid), lambda g, s: inner.grid_sample_2d_backward(
            s[0], s[1], g, options), (save(x), save(grid)))
