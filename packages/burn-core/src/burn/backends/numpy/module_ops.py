"""ModuleOps of the NumPy backend: thin delegations to the numpy kernels in `module/`.

The kernels take and return numpy arrays in the protocol's argument order; embedding and
attention keep the protocol's defaults (written with primitives, so Autodiff differentiates them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from burn.backend.protocol import Shape

if TYPE_CHECKING:
    from burn.backend.options import (
        ConvOptions,
        ConvTransposeOptions,
        DeformConvOptions,
        GridSampleOptions,
        InterpolateOptions,
        PoolOptions,
    )

    from . import module as k
else:

    class _Kernels:
        """The kernels of `module/`, imported on the first module op (the first tensor of the
        backend needs none of them)."""

        def __getattr__(self, name: str) -> Any:
            from . import module

            value = getattr(module, name)
            setattr(self, name, value)
            return value

    k = _Kernels()

Array = np.ndarray
Grads3 = tuple[Array, Array, Array | None]


class NumpyModuleOps:
    """conv / pooling / interpolation / grid sampling / layer norm / cross entropy and their
    backward."""

    if TYPE_CHECKING:  # the Backend hook (the default: a host check)
        def check_indices(self, op: str, indices: Array, size: int,
                          wrap_negative: bool = True) -> Array: ...

    def conv(self, x: Array, weight: Array, bias: Array | None, options: ConvOptions) -> Array:
        return k.conv(x, weight, bias, options)

    def conv_backward(self, x: Array, weight: Array, bias: Array | None, grad: Array,
                      options: ConvOptions) -> Grads3:
        return k.conv_backward(x, weight, bias, grad, options)

    # Not protocol ops: Autodiff keeps a conv's im2col columns for its backward through these
    # where the inner backend has them.
    def conv_saving_columns(self, x: Array, weight: Array, bias: Array | None,
                            options: ConvOptions) -> tuple[Array, Array | None]:
        return k.conv_saving_columns(x, weight, bias, options)

    def conv_backward_from_columns(self, cols: Array, x_shape: Shape, x_dtype: np.dtype,
                                   weight: Array, bias: Array | None, grad: Array,
                                   options: ConvOptions, need_x: bool
                                   ) -> tuple[Array | None, Array, Array | None]:
        return k.conv_backward_from_columns(cols, x_shape, x_dtype, weight, bias, grad, options,
                                            need_x)

    def layer_norm(self, x: Array, weight: Array | None, bias: Array | None, num_dims: int,
                   eps: float) -> tuple[Array, Array, Array]:
        return k.layer_norm(x, weight, bias, num_dims, eps)

    def layer_norm_backward(self, x: Array, weight: Array | None, bias: Array | None,
                            mean: Array, rstd: Array, grad: Array, num_dims: int
                            ) -> tuple[Array, Array | None, Array | None]:
        return k.layer_norm_backward(x, weight, bias, mean, rstd, grad, num_dims)

    def cross_entropy(self, logits: Array, target: Array, weight: Array | None,
                      ignore_index: int, label_smoothing: float, reduction: str) -> Array:
        safe, keep = self._checked_classes(logits, target, ignore_index, check=True)
        return k.cross_entropy(logits, safe, keep, weight, label_smoothing, reduction)

    def cross_entropy_backward(self, logits: Array, target: Array, weight: Array | None,
                               grad: Array, ignore_index: int, label_smoothing: float,
                               reduction: str) -> Array:
        """The targets were checked by the forward."""
        safe, keep = self._checked_classes(logits, target, ignore_index, check=False)
        return k.cross_entropy_backward(logits, safe, keep, weight, grad, label_smoothing,
                                        reduction)

    def _checked_classes(self, logits: Array, target: Array, ignore_index: int, check: bool
                         ) -> tuple[Array, Array | None]:
        """(targets with ignored ones at class 0, range-checked when `check`; the float keep
        mask in the compute dtype of `logits`, None when no target is ignored)."""
        ignored = target == ignore_index
        any_ignored = bool(ignored.any())
        safe = np.where(ignored, 0, target) if any_ignored else target
        if check and safe.size and (safe.min() < 0 or safe.max() >= logits.shape[1]):
            self.check_indices("cross_entropy", safe, logits.shape[1], False)  # raises
        if not any_ignored:
            return safe, None
        dtype = np.float64 if logits.dtype == np.float64 else np.float32
        return safe, np.logical_not(ignored).astype(dtype)

    def conv_transpose(self, x: Array, weight: Array, bias: Array | None,
                       options: ConvTransposeOptions) -> Array:
        return k.conv_transpose(x, weight, bias, options)

    def conv_transpose_backward(self, x: Array, weight: Array, bias: Array | None, grad: Array,
                                options: ConvTransposeOptions) -> Grads3:
        return k.conv_transpose_backward(x, weight, bias, grad, options)

    def deform_conv2d(self, x: Array, offset: Array, weight: Array, mask: Array | None,
                      bias: Array | None, options: DeformConvOptions) -> Array:
        return k.deform_conv2d(x, offset, weight, mask, bias, options)

    def deform_conv2d_backward(
        self, x: Array, offset: Array, weight: Array, mask: Array | None, bias: Array | None,
        grad: Array, options: DeformConvOptions,
    ) -> tuple[Array, Array, Array, Array | None, Array | None]:
        return k.deform_conv2d_backward(  # type: ignore[return-value]  # all needed: no None
            x, offset, weight, mask, bias, grad, options)

    # Not protocol ops: Autodiff computes only the gradients of tracked inputs through these
    # where the inner backend has them.
    def deform_conv2d_backward_needed(
        self, x: Array, offset: Array, weight: Array, mask: Array | None, bias: Array | None,
        grad: Array, options: DeformConvOptions, needs: tuple[bool, bool, bool, bool, bool],
    ) -> tuple[Array | None, Array | None, Array | None, Array | None, Array | None]:
        """`deform_conv2d_backward` computing only the gradients `needs` names (x, offset,
        weight, mask, bias); the others are None."""
        return k.deform_conv2d_backward(x, offset, weight, mask, bias, grad, options, needs)

    def grid_sample_2d_backward_needed(
        self, x: Array, grid: Array, grad: Array, options: GridSampleOptions, need_x: bool,
        need_grid: bool,
    ) -> tuple[Array | None, Array | None]:
        """`grid_sample_2d_backward` computing only the needed gradients (the other is None):
        without x's, no scatter-add; without the grid's, no gathers of the taps."""
        return k.grid_sample_2d_backward(x, grid, grad, options, need_x, need_grid)

    def unfold4d(self, x: Array, kernel_size: tuple[int, int], options: ConvOptions) -> Array:
        return k.unfold4d(x, kernel_size, options)

    def avg_pool(self, x: Array, options: PoolOptions) -> Array:
        return k.avg_pool(x, options)

    def avg_pool_backward(self, x: Array, grad: Array, options: PoolOptions) -> Array:
        return k.avg_pool_backward(x, grad, options)

    def max_pool_with_indices(self, x: Array, options: PoolOptions) -> tuple[Array, Array]:
        return k.max_pool_with_indices(x, options)

    def max_pool_backward(self, x: Array, indices: Array, grad: Array,
                          options: PoolOptions) -> Array:
        return k.max_pool_backward(x, indices, grad, options)

    def adaptive_avg_pool(self, x: Array, output_size: Shape) -> Array:
        return k.adaptive_avg_pool(x, output_size)

    def adaptive_avg_pool_backward(self, x: Array, grad: Array) -> Array:
        return k.adaptive_avg_pool_backward(x, grad)

    def interpolate(self, x: Array, output_size: tuple[int, int],
                    options: InterpolateOptions) -> Array:
        return k.interpolate(x, output_size, options)

    def interpolate_backward(self, x: Array, grad: Array, output_size: tuple[int, int],
                             options: InterpolateOptions) -> Array:
        return k.interpolate_backward(x, grad, output_size, options)

    def grid_sample_2d(self, x: Array, grid: Array, options: GridSampleOptions) -> Array:
        return k.grid_sample_2d(x, grid, options)

    def grid_sample_2d_backward(self, x: Array, grid: Array, grad: Array,
                                options: GridSampleOptions) -> tuple[Array, Array]:
        return k.grid_sample_2d_backward(x, grid, grad, options)  # type: ignore[return-value]


__all__ = ["NumpyModuleOps"]
