"""The backend protocol: Burn's op groups as abstract classes.

A backend is one object implementing every group. Tensors handed to and returned by a backend are
opaque *primitives* (a numpy array for the NumPy backend, a tracked wrapper for Autodiff, a device
buffer for the cube backends); only the backend looks inside them. The frontend (`burn.Tensor`)
validates shapes, dtypes and devices before it calls a backend, so backends may assume:

- binary ops get two primitives of one dtype whose shapes broadcast (NumPy rules);
- dims are non-negative and in range; indices tensors are int primitives;
- shapes are tuples of non-negative ints; dtypes are `DType`s of the right kind.

Composite ops (stack, narrow, var, topk, tril, softmax, ...) live in the frontend or as defaults
here (ActivationOps, `ModuleOps.attention`, `ModuleOps.embedding`), written with the primitives, so
that a decorator like Autodiff differentiates them without a rule of its own. A backend may
override a default for speed.

Reductions over a dim keep that dim with size 1 (as Burn); full reductions return a 0-d primitive.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from burn.backend.distribution import Distribution  # re-exported: the random ops take it
from burn.dtype import DType

if TYPE_CHECKING:
    from burn.backend.options import (
        ConvOptions,
        ConvTransposeOptions,
        DeformConvOptions,
        GridSampleOptions,
        InterpolateOptions,
        PoolOptions,
    )
    from burn.device import Device

P = Any  # an opaque backend primitive
Shape = tuple[int, ...]
Scalar = int | float | bool
ScatterReduce = Literal["assign", "add"]


class FloatOps(ABC):
    """Ops on float primitives (Burn's FloatTensorOps)."""

    # --- creation, I/O, casts ---
    @abstractmethod
    def float_from_data(self, data: np.ndarray, device: Device) -> P:
        """A primitive holding a copy of `data` (already of a float dtype burn supports)."""

    @abstractmethod
    def float_into_data(self, x: P) -> np.ndarray:
        """The values of `x` as a numpy array (C-contiguous, a copy the caller owns)."""

    @abstractmethod
    def float_to_device(self, x: P, device: Device) -> P:
        """`x` moved to another device of this backend."""

    @abstractmethod
    def float_empty(self, shape: Shape, dtype: DType, device: Device) -> P:
        """An uninitialised primitive."""

    @abstractmethod
    def float_full(self, shape: Shape, value: float, dtype: DType, device: Device) -> P:
        """A primitive filled with `value`."""

    @abstractmethod
    def float_random(self, shape: Shape, dist: Distribution, dtype: DType, device: Device) -> P:
        """Random values from the backend's seeded generator (see `seed`)."""

    @abstractmethod
    def float_cast(self, x: P, dtype: DType) -> P:
        """`x` converted to another float dtype."""

    @abstractmethod
    def float_into_int(self, x: P, dtype: DType) -> P:
        """`x` truncated toward zero into an int primitive of `dtype`."""

    # --- arithmetic ---
    @abstractmethod
    def float_add(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def float_sub(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def float_mul(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def float_div(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def float_remainder(self, lhs: P, rhs: P) -> P:
        """Remainder with the sign of the divisor (Python / PyTorch `%`)."""
    @abstractmethod
    def float_fmod(self, lhs: P, rhs: P) -> P:
        """C's fmod: the exact remainder of truncated division, with the dividend's sign."""

    @abstractmethod
    def float_add_scalar(self, lhs: P, rhs: float) -> P: ...
    @abstractmethod
    def float_sub_scalar(self, lhs: P, rhs: float) -> P: ...
    @abstractmethod
    def float_mul_scalar(self, lhs: P, rhs: float) -> P: ...
    @abstractmethod
    def float_div_scalar(self, lhs: P, rhs: float) -> P: ...
    @abstractmethod
    def float_remainder_scalar(self, lhs: P, rhs: float) -> P: ...
    @abstractmethod
    def float_fmod_scalar(self, lhs: P, rhs: float) -> P: ...
    @abstractmethod
    def float_neg(self, x: P) -> P: ...
    @abstractmethod
    def float_recip(self, x: P) -> P: ...
    @abstractmethod
    def float_matmul(self, lhs: P, rhs: P) -> P:
        """Batched matmul of [..., m, k] @ [..., k, n]; batch dims broadcast; both >= 2-d."""

    @abstractmethod
    def float_clamp(self, x: P, min: float | None, max: float | None) -> P:
        """Clamp to [min, max]; a None bound is open. NaN stays NaN."""

    @abstractmethod
    def float_powf(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def float_powf_scalar(self, lhs: P, rhs: float) -> P: ...

    # --- math (elementwise) ---
    @abstractmethod
    def float_exp(self, x: P) -> P: ...
    @abstractmethod
    def float_log(self, x: P) -> P: ...
    @abstractmethod
    def float_log1p(self, x: P) -> P: ...
    @abstractmethod
    def float_sqrt(self, x: P) -> P: ...
    @abstractmethod
    def float_abs(self, x: P) -> P: ...
    @abstractmethod
    def float_sign(self, x: P) -> P: ...
    @abstractmethod
    def float_sin(self, x: P) -> P: ...
    @abstractmethod
    def float_cos(self, x: P) -> P: ...
    @abstractmethod
    def float_tan(self, x: P) -> P: ...
    @abstractmethod
    def float_sinh(self, x: P) -> P: ...
    @abstractmethod
    def float_cosh(self, x: P) -> P: ...
    @abstractmethod
    def float_tanh(self, x: P) -> P: ...
    @abstractmethod
    def float_asin(self, x: P) -> P: ...
    @abstractmethod
    def float_acos(self, x: P) -> P: ...
    @abstractmethod
    def float_atan(self, x: P) -> P: ...
    @abstractmethod
    def float_asinh(self, x: P) -> P: ...
    @abstractmethod
    def float_acosh(self, x: P) -> P: ...
    @abstractmethod
    def float_atanh(self, x: P) -> P: ...
    @abstractmethod
    def float_atan2(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def float_erf(self, x: P) -> P: ...
    @abstractmethod
    def float_round(self, x: P) -> P:
        """Round half to even (as PyTorch)."""

    @abstractmethod
    def float_floor(self, x: P) -> P: ...
    @abstractmethod
    def float_ceil(self, x: P) -> P: ...
    @abstractmethod
    def float_trunc(self, x: P) -> P: ...
    @abstractmethod
    def float_is_nan(self, x: P) -> P:
        """Bool primitive."""

    @abstractmethod
    def float_is_inf(self, x: P) -> P:
        """Bool primitive."""

    # --- layout ---
    @abstractmethod
    def float_reshape(self, x: P, shape: Shape) -> P: ...
    @abstractmethod
    def float_swap_dims(self, x: P, dim1: int, dim2: int) -> P: ...
    @abstractmethod
    def float_permute(self, x: P, axes: Shape) -> P: ...
    @abstractmethod
    def float_flip(self, x: P, axes: Shape) -> P: ...
    @abstractmethod
    def float_expand(self, x: P, shape: Shape) -> P:
        """Broadcast `x` to `shape` (NumPy rules, new dims on the left)."""

    @abstractmethod
    def float_repeat_dim(self, x: P, dim: int, times: int) -> P:
        """Tile `x` `times` times along `dim` (like torch's repeat on one dim)."""

    @abstractmethod
    def float_cat(self, xs: Sequence[P], dim: int) -> P: ...
    @abstractmethod
    def float_unfold(self, x: P, dim: int, size: int, step: int) -> P:
        """Windows of `size` every `step` along `dim`, appended as a last dim (torch.unfold)."""

    # --- indexing ---
    @abstractmethod
    def float_slice(self, x: P, slices: Sequence[slice]) -> P:
        """Basic slicing. One builtin slice per leading dim with int start/step, start >= 0, and
        stop an int >= 0 or None (None only with a negative step: through index 0)."""

    @abstractmethod
    def float_slice_assign(self, x: P, slices: Sequence[slice], value: P) -> P:
        """A copy of `x` whose sliced region is replaced by `value` (its exact shape)."""

    @abstractmethod
    def float_select(self, x: P, dim: int, indices: P) -> P:
        """Rows `indices` (1-d int) of `x` along `dim` (torch.index_select)."""

    @abstractmethod
    def float_select_assign(self, x: P, dim: int, indices: P, values: P) -> P:
        """A copy of `x` with `values` *added* at `indices` along `dim` (torch.index_add)."""

    @abstractmethod
    def float_gather(self, dim: int, x: P, indices: P) -> P:
        """torch.gather: out[i][j] = x[indices[i][j]][j] for dim 0; indices has x's ndim."""

    @abstractmethod
    def float_scatter(self, dim: int, x: P, indices: P, values: P, reduce: ScatterReduce) -> P:
        """torch.scatter / scatter_add on a copy of `x`."""

    @abstractmethod
    def float_mask_where(self, x: P, mask: P, value: P) -> P:
        """Where `mask` (bool, broadcasts) is true take `value` (broadcasts), else `x`."""

    @abstractmethod
    def float_mask_fill(self, x: P, mask: P, value: float) -> P: ...

    # --- comparison (bool results) ---
    @abstractmethod
    def float_equal(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def float_greater(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def float_greater_equal(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def float_lower(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def float_lower_equal(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def float_equal_elem(self, lhs: P, rhs: float) -> P: ...
    @abstractmethod
    def float_greater_elem(self, lhs: P, rhs: float) -> P: ...
    @abstractmethod
    def float_greater_equal_elem(self, lhs: P, rhs: float) -> P: ...
    @abstractmethod
    def float_lower_elem(self, lhs: P, rhs: float) -> P: ...
    @abstractmethod
    def float_lower_equal_elem(self, lhs: P, rhs: float) -> P: ...

    # --- reductions ---
    @abstractmethod
    def float_sum(self, x: P) -> P: ...
    @abstractmethod
    def float_sum_dim(self, x: P, dim: int) -> P: ...
    @abstractmethod
    def float_prod(self, x: P) -> P: ...
    @abstractmethod
    def float_prod_dim(self, x: P, dim: int) -> P: ...
    @abstractmethod
    def float_mean_dim(self, x: P, dim: int) -> P: ...
    @abstractmethod
    def float_max(self, x: P) -> P: ...
    @abstractmethod
    def float_max_dim_with_indices(self, x: P, dim: int) -> tuple[P, P]:
        """Max along `dim` (kept) and the int64 index of its first occurrence."""

    @abstractmethod
    def float_min(self, x: P) -> P: ...
    @abstractmethod
    def float_min_dim_with_indices(self, x: P, dim: int) -> tuple[P, P]: ...
    @abstractmethod
    def float_argmax(self, x: P, dim: int) -> P:
        """int64 index of the first max along `dim` (kept)."""

    @abstractmethod
    def float_argmin(self, x: P, dim: int) -> P: ...
    @abstractmethod
    def float_cumsum(self, x: P, dim: int) -> P: ...
    @abstractmethod
    def float_cumprod(self, x: P, dim: int) -> P: ...
    @abstractmethod
    def float_cummax(self, x: P, dim: int) -> tuple[P, P]:
        """Running max and the int64 index where it was reached (the last on ties, as torch)."""

    @abstractmethod
    def float_cummin(self, x: P, dim: int) -> tuple[P, P]: ...
    @abstractmethod
    def float_sort_with_indices(self, x: P, dim: int, descending: bool) -> tuple[P, P]:
        """Stable sort along `dim`; NaN sorts as the largest value (as torch)."""


class IntOps(ABC):
    """Ops on int primitives (Burn's IntTensorOps); semantics as the float op of the same name."""

    @abstractmethod
    def int_from_data(self, data: np.ndarray, device: Device) -> P: ...
    @abstractmethod
    def int_into_data(self, x: P) -> np.ndarray: ...
    @abstractmethod
    def int_to_device(self, x: P, device: Device) -> P: ...
    @abstractmethod
    def int_empty(self, shape: Shape, dtype: DType, device: Device) -> P: ...
    @abstractmethod
    def int_full(self, shape: Shape, value: int, dtype: DType, device: Device) -> P: ...
    @abstractmethod
    def int_random(self, shape: Shape, low: int, high: int, dtype: DType, device: Device) -> P:
        """Uniform integers in [low, high)."""

    @abstractmethod
    def int_arange(self, start: int, end: int, step: int, dtype: DType, device: Device) -> P: ...
    @abstractmethod
    def int_cast(self, x: P, dtype: DType) -> P:
        """`x` converted to another int dtype (wrapping, as numpy)."""

    @abstractmethod
    def int_into_float(self, x: P, dtype: DType) -> P: ...

    @abstractmethod
    def int_add(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def int_sub(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def int_mul(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def int_div(self, lhs: P, rhs: P) -> P:
        """Floor division (Python `//`, torch.floor_divide)."""

    @abstractmethod
    def int_remainder(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def int_add_scalar(self, lhs: P, rhs: int) -> P: ...
    @abstractmethod
    def int_sub_scalar(self, lhs: P, rhs: int) -> P: ...
    @abstractmethod
    def int_mul_scalar(self, lhs: P, rhs: int) -> P: ...
    @abstractmethod
    def int_div_scalar(self, lhs: P, rhs: int) -> P: ...
    @abstractmethod
    def int_remainder_scalar(self, lhs: P, rhs: int) -> P: ...
    @abstractmethod
    def int_neg(self, x: P) -> P: ...
    @abstractmethod
    def int_matmul(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def int_clamp(self, x: P, min: int | None, max: int | None) -> P: ...
    @abstractmethod
    def int_powi(self, lhs: P, rhs: P) -> P:
        """Integer power (non-negative exponents)."""

    @abstractmethod
    def int_powi_scalar(self, lhs: P, rhs: int) -> P: ...
    @abstractmethod
    def int_abs(self, x: P) -> P: ...
    @abstractmethod
    def int_sign(self, x: P) -> P: ...

    @abstractmethod
    def int_bitwise_and(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def int_bitwise_or(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def int_bitwise_xor(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def int_bitwise_not(self, x: P) -> P: ...
    @abstractmethod
    def int_bitwise_left_shift(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def int_bitwise_right_shift(self, lhs: P, rhs: P) -> P:
        """Arithmetic shift for signed dtypes."""

    @abstractmethod
    def int_reshape(self, x: P, shape: Shape) -> P: ...
    @abstractmethod
    def int_swap_dims(self, x: P, dim1: int, dim2: int) -> P: ...
    @abstractmethod
    def int_permute(self, x: P, axes: Shape) -> P: ...
    @abstractmethod
    def int_flip(self, x: P, axes: Shape) -> P: ...
    @abstractmethod
    def int_expand(self, x: P, shape: Shape) -> P: ...
    @abstractmethod
    def int_repeat_dim(self, x: P, dim: int, times: int) -> P: ...
    @abstractmethod
    def int_cat(self, xs: Sequence[P], dim: int) -> P: ...
    @abstractmethod
    def int_unfold(self, x: P, dim: int, size: int, step: int) -> P: ...

    @abstractmethod
    def int_slice(self, x: P, slices: Sequence[slice]) -> P: ...
    @abstractmethod
    def int_slice_assign(self, x: P, slices: Sequence[slice], value: P) -> P: ...
    @abstractmethod
    def int_select(self, x: P, dim: int, indices: P) -> P: ...
    @abstractmethod
    def int_select_assign(self, x: P, dim: int, indices: P, values: P) -> P: ...
    @abstractmethod
    def int_gather(self, dim: int, x: P, indices: P) -> P: ...
    @abstractmethod
    def int_scatter(self, dim: int, x: P, indices: P, values: P, reduce: ScatterReduce) -> P: ...
    @abstractmethod
    def int_mask_where(self, x: P, mask: P, value: P) -> P: ...
    @abstractmethod
    def int_mask_fill(self, x: P, mask: P, value: int) -> P: ...

    @abstractmethod
    def int_equal(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def int_greater(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def int_greater_equal(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def int_lower(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def int_lower_equal(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def int_equal_elem(self, lhs: P, rhs: int) -> P: ...
    @abstractmethod
    def int_greater_elem(self, lhs: P, rhs: int) -> P: ...
    @abstractmethod
    def int_greater_equal_elem(self, lhs: P, rhs: int) -> P: ...
    @abstractmethod
    def int_lower_elem(self, lhs: P, rhs: int) -> P: ...
    @abstractmethod
    def int_lower_equal_elem(self, lhs: P, rhs: int) -> P: ...

    @abstractmethod
    def int_sum(self, x: P) -> P: ...
    @abstractmethod
    def int_sum_dim(self, x: P, dim: int) -> P: ...
    @abstractmethod
    def int_prod(self, x: P) -> P: ...
    @abstractmethod
    def int_prod_dim(self, x: P, dim: int) -> P: ...
    @abstractmethod
    def int_max(self, x: P) -> P: ...
    @abstractmethod
    def int_max_dim_with_indices(self, x: P, dim: int) -> tuple[P, P]: ...
    @abstractmethod
    def int_min(self, x: P) -> P: ...
    @abstractmethod
    def int_min_dim_with_indices(self, x: P, dim: int) -> tuple[P, P]: ...
    @abstractmethod
    def int_argmax(self, x: P, dim: int) -> P: ...
    @abstractmethod
    def int_argmin(self, x: P, dim: int) -> P: ...
    @abstractmethod
    def int_cumsum(self, x: P, dim: int) -> P: ...
    @abstractmethod
    def int_cumprod(self, x: P, dim: int) -> P: ...
    @abstractmethod
    def int_cummax(self, x: P, dim: int) -> tuple[P, P]: ...
    @abstractmethod
    def int_cummin(self, x: P, dim: int) -> tuple[P, P]: ...
    @abstractmethod
    def int_sort_with_indices(self, x: P, dim: int, descending: bool) -> tuple[P, P]: ...


class BoolOps(ABC):
    """Ops on bool primitives (Burn's BoolTensorOps)."""

    @abstractmethod
    def bool_from_data(self, data: np.ndarray, device: Device) -> P: ...
    @abstractmethod
    def bool_into_data(self, x: P) -> np.ndarray: ...
    @abstractmethod
    def bool_to_device(self, x: P, device: Device) -> P: ...
    @abstractmethod
    def bool_full(self, shape: Shape, value: bool, device: Device) -> P: ...
    @abstractmethod
    def bool_into_int(self, x: P, dtype: DType) -> P: ...
    @abstractmethod
    def bool_into_float(self, x: P, dtype: DType) -> P: ...

    @abstractmethod
    def bool_not(self, x: P) -> P: ...
    @abstractmethod
    def bool_and(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def bool_or(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def bool_xor(self, lhs: P, rhs: P) -> P: ...
    @abstractmethod
    def bool_equal(self, lhs: P, rhs: P) -> P: ...

    @abstractmethod
    def bool_reshape(self, x: P, shape: Shape) -> P: ...
    @abstractmethod
    def bool_swap_dims(self, x: P, dim1: int, dim2: int) -> P: ...
    @abstractmethod
    def bool_permute(self, x: P, axes: Shape) -> P: ...
    @abstractmethod
    def bool_flip(self, x: P, axes: Shape) -> P: ...
    @abstractmethod
    def bool_expand(self, x: P, shape: Shape) -> P: ...
    @abstractmethod
    def bool_repeat_dim(self, x: P, dim: int, times: int) -> P: ...
    @abstractmethod
    def bool_cat(self, xs: Sequence[P], dim: int) -> P: ...
    @abstractmethod
    def bool_unfold(self, x: P, dim: int, size: int, step: int) -> P: ...
    @abstractmethod
    def bool_slice(self, x: P, slices: Sequence[slice]) -> P: ...
    @abstractmethod
    def bool_slice_assign(self, x: P, slices: Sequence[slice], value: P) -> P: ...
    @abstractmethod
    def bool_select(self, x: P, dim: int, indices: P) -> P: ...
    @abstractmethod
    def bool_gather(self, dim: int, x: P, indices: P) -> P: ...
    @abstractmethod
    def bool_scatter(self, dim: int, x: P, indices: P, values: P) -> P:
        """Assign-scatter of bool values."""

    @abstractmethod
    def bool_mask_where(self, x: P, mask: P, value: P) -> P: ...

    @abstractmethod
    def bool_any(self, x: P) -> P: ...
    @abstractmethod
    def bool_any_dim(self, x: P, dim: int) -> P: ...
    @abstractmethod
    def bool_all(self, x: P) -> P: ...
    @abstractmethod
    def bool_all_dim(self, x: P, dim: int) -> P: ...
    @abstractmethod
    def bool_argwhere(self, x: P) -> P:
        """int64 [n, ndim] coordinates of the true elements, row-major order."""


class TensorOps(FloatOps, IntOps, BoolOps):
    """The float, int and bool op groups and the introspection of primitives: what the default
    activations and module ops below are written with."""

    # --- introspection ---
    @abstractmethod
    def shape(self, x: P) -> Shape:
        """Shape of a primitive of any kind."""

    @abstractmethod
    def dtype(self, x: P) -> DType:
        """DType of a primitive of any kind."""

    @abstractmethod
    def device_of(self, x: P) -> Device:
        """Device a primitive of any kind lives on."""

    def detach_values(self, x: P) -> P:
        """`x` cut from any gradient graph (identity outside Autodiff)."""
        return x


class ActivationOps(TensorOps):
    """Activations (Burn's ActivationOps), written with float ops; override for speed."""

    def relu(self, x: P) -> P:
        return self.float_clamp(x, 0.0, None)

    def relu_backward(self, output: P, grad: P) -> P:
        """ReLU's input gradient from its output (Burn's `relu_backward`): `grad` where
        `output > 0`, else +0.0; a NaN output passes `grad` (torch's threshold_backward)."""
        return self.float_mask_fill(grad, self.float_lower_equal_elem(output, 0.0), 0.0)

    def leaky_relu(self, x: P, negative_slope: float) -> P:
        """x where x > 0, else negative_slope * x (torch's: the slope is the gradient at 0)."""
        neg = self.float_lower_equal_elem(x, 0.0)
        return self.float_mask_where(x, neg, self.float_mul_scalar(x, negative_slope))

    def prelu(self, x: P, weight: P) -> P:
        """`weight` broadcasts against x (the frontend reshapes per-channel weights); x where
        x > 0, else weight * x (as leaky_relu)."""
        neg = self.float_lower_equal_elem(x, 0.0)
        return self.float_mask_where(x, neg, self.float_mul(x, weight))

    def gelu(self, x: P, approximate: Literal["none", "tanh"]) -> P:
        if approximate == "tanh":
            cube = self.float_mul(self.float_mul(x, x), x)
            inner = self.float_mul_scalar(
                self.float_add(x, self.float_mul_scalar(cube, 0.044715)), math.sqrt(2 / math.pi))
            gate = self.float_add_scalar(self.float_tanh(inner), 1.0)
        else:
            scaled = self.float_mul_scalar(x, 1 / math.sqrt(2))
            gate = self.float_add_scalar(self.float_erf(scaled), 1.0)
        return self.float_mul(self.float_mul_scalar(x, 0.5), gate)

    def sigmoid(self, x: P) -> P:
        # exp of -|x| never overflows: sigmoid(x) = where(x >= 0, 1/(1+e), e/(1+e)), e = exp(-|x|)
        e = self.float_exp(self.float_neg(self.float_abs(x)))
        denom = self.float_recip(self.float_add_scalar(e, 1.0))
        non_negative = self.float_greater_equal_elem(x, 0.0)
        return self.float_mask_where(self.float_mul(e, denom), non_negative, denom)

    def hard_sigmoid(self, x: P, alpha: float, beta: float) -> P:
        shifted = self.float_add_scalar(self.float_mul_scalar(x, alpha), beta)
        return self.float_clamp(shifted, 0.0, 1.0)

    def _low_precision(self, x: P) -> DType | None:
        """x's dtype where it is float16 / bfloat16, which an activation computes in float32 and
        rounds once, as torch's opmath (else None)."""
        dtype = self.dtype(x)
        return dtype if dtype in (DType.float16, DType.bfloat16) else None

    def softplus(self, x: P, beta: float, threshold: float) -> P:
        """log(1 + exp(beta x)) / beta, linear above `threshold` (as torch); float16 / bfloat16
        in float32 (exp(beta x) overflowed float16 from x = 11.1: inf below the threshold).
        The exp's argument is capped by a fill above the threshold, not a clamp, so a NaN x
        has a NaN gradient, as torch's (clamp's gradient is 0 at NaN)."""
        low = self._low_precision(x)
        if low is not None:
            wide = self.softplus(self.float_cast(x, DType.float32), beta, threshold)
            return self.float_cast(wide, low)
        bx = self.float_mul_scalar(x, beta)
        above = self.float_greater_elem(bx, threshold)
        soft = self.float_div_scalar(
            self.float_log1p(self.float_exp(self.float_mask_fill(bx, above, threshold))), beta)
        return self.float_mask_where(soft, above, x)

    def log_sigmoid(self, x: P) -> P:
        """-softplus(-x) plus 0.0, so that a zero result is +0.0 as torch's (x past ~104);
        float16 / bfloat16 in float32, rounded once as torch's: a float32 -tiny (x in [17,
        104)) rounds to -0.0, and x = -20 stays -20 (float16's exp(20) overflowed: -inf)."""
        low = self._low_precision(x)
        if low is not None:
            return self.float_cast(self.log_sigmoid(self.float_cast(x, DType.float32)), low)
        out = self.float_neg(self.softplus(self.float_neg(x), 1.0, 20.0))
        return self.float_add_scalar(out, 0.0)

    def silu(self, x: P) -> P:
        """x sigmoid(x); float16 / bfloat16 in float32, rounded once as torch's (a float16
        sigmoid rounded first lost silu's subnormal tail: silu(-20) gave -0.0)."""
        low = self._low_precision(x)
        if low is not None:
            return self.float_cast(self.silu(self.float_cast(x, DType.float32)), low)
        return self.float_mul(x, self.sigmoid(x))

    def mish(self, x: P) -> P:
        return self.float_mul(x, self.float_tanh(self.softplus(x, 1.0, 20.0)))

    def elu(self, x: P, alpha: float) -> P:
        """x where x > 0, else alpha (exp(x) - 1) by `_expm1` (exp(x) - 1 lost small x:
        elu(-1e-7) was -1.19e-7, and the sign of -0.0)."""
        return self.float_mask_where(x, self.float_lower_equal_elem(x, 0.0),
                                     self.float_mul_scalar(self._expm1(
                                         self.float_clamp(x, None, 0.0)), alpha))

    def _expm1(self, x: P) -> P:
        """exp(x) - 1 to a few ulps for small x too: tanh(x / 2) (exp(x) + 1) below |x| = 0.5,
        exp(x) - 1 above (where its gradient is exp(x) exactly; the product's cancels)."""
        small = self.float_mul(self.float_tanh(self.float_mul_scalar(x, 0.5)),
                               self.float_add_scalar(self.float_exp(x), 1.0))
        return self.float_mask_where(self.float_sub_scalar(self.float_exp(x), 1.0),
                                     self.float_lower_elem(self.float_abs(x), 0.5), small)

    def selu(self, x: P) -> P:
        alpha, scale = 1.6732632423543772, 1.0507009873554805
        return self.float_mul_scalar(self.elu(x, alpha), scale)

    def softmax(self, x: P, dim: int) -> P:
        shifted = self._shift_by_max(x, dim)
        e = self.float_exp(shifted)
        return self.float_div(e, self.float_sum_dim(e, dim))

    def log_softmax(self, x: P, dim: int) -> P:
        shifted = self._shift_by_max(x, dim)
        log_total = self.float_log(self.float_sum_dim(self.float_exp(shifted), dim))
        return self.float_sub(shifted, log_total)

    def _shift_by_max(self, x: P, dim: int) -> P:
        """`x` minus its (untracked) max along `dim`; empty tensors have no max and stay as is."""
        if 0 in self.shape(x):
            return x
        return self.float_sub(x, self.detach_values(self.float_max_dim_with_indices(x, dim)[0]))


class ModuleOps(ActivationOps):
    """Neural-network ops with their backward (Burn's ModuleOps). Layouts are PyTorch's.

    Built on the activations: the default `attention` uses `softmax`.
    """

    @abstractmethod
    def conv(self, x: P, weight: P, bias: P | None, options: ConvOptions) -> P:
        """conv1d/2d/3d by the number of spatial dims of x ([N, C, *spatial])."""

    @abstractmethod
    def conv_backward(
        self, x: P, weight: P, bias: P | None, grad: P, options: ConvOptions
    ) -> tuple[P, P, P | None]:
        """Gradients of x, weight and bias."""

    @abstractmethod
    def conv_transpose(
        self, x: P, weight: P, bias: P | None, options: ConvTransposeOptions
    ) -> P: ...
    @abstractmethod
    def conv_transpose_backward(
        self, x: P, weight: P, bias: P | None, grad: P, options: ConvTransposeOptions
    ) -> tuple[P, P, P | None]: ...
    @abstractmethod
    def deform_conv2d(
        self, x: P, offset: P, weight: P, mask: P | None, bias: P | None,
        options: DeformConvOptions,
    ) -> P: ...
    @abstractmethod
    def deform_conv2d_backward(
        self, x: P, offset: P, weight: P, mask: P | None, bias: P | None, grad: P,
        options: DeformConvOptions,
    ) -> tuple[P, P, P, P | None, P | None]:
        """Gradients of x, offset, weight, mask and bias."""

    @abstractmethod
    def unfold4d(self, x: P, kernel_size: tuple[int, int], options: ConvOptions) -> P:
        """torch.nn.functional.unfold: [N, C, H, W] -> [N, C*kh*kw, L]."""

    @abstractmethod
    def avg_pool(self, x: P, options: PoolOptions) -> P: ...
    @abstractmethod
    def avg_pool_backward(self, x: P, grad: P, options: PoolOptions) -> P: ...
    @abstractmethod
    def max_pool_with_indices(self, x: P, options: PoolOptions) -> tuple[P, P]:
        """Values and int64 flat indices into each input plane (as torch)."""

    @abstractmethod
    def max_pool_backward(self, x: P, indices: P, grad: P, options: PoolOptions) -> P: ...
    @abstractmethod
    def adaptive_avg_pool(self, x: P, output_size: Shape) -> P: ...
    @abstractmethod
    def adaptive_avg_pool_backward(self, x: P, grad: P) -> P: ...
    @abstractmethod
    def interpolate(self, x: P, output_size: tuple[int, int], options: InterpolateOptions) -> P: ...
    @abstractmethod
    def interpolate_backward(
        self, x: P, grad: P, output_size: tuple[int, int], options: InterpolateOptions
    ) -> P: ...
    @abstractmethod
    def grid_sample_2d(self, x: P, grid: P, options: GridSampleOptions) -> P: ...
    @abstractmethod
    def grid_sample_2d_backward(
        self, x: P, grid: P, grad: P, options: GridSampleOptions
    ) -> tuple[P, P]: ...

    def embedding(self, weight: P, indices: P) -> P:
        """Rows of `weight` [V, D] picked by int `indices` of any shape -> [*indices, D]."""
        idx_shape = self.shape(indices)
        flat = self.int_reshape(indices, (math.prod(idx_shape),))
        rows = self.float_select(weight, 0, flat)
        return self.float_reshape(rows, (*idx_shape, self.shape(weight)[1]))

    def layer_norm(self, x: P, weight: P | None, bias: P | None, num_dims: int,
                   eps: float) -> tuple[P, P, P]:
        """Layer normalisation over the last `num_dims` dims (torch's native_layer_norm).

        Args:
            x: float input [..., *D] with at least `num_dims` dims.
            weight: scale shaped D, or None.
            bias: shift shaped D, or None.
            num_dims: how many trailing dims (D) one group spans, >= 1.
            eps: added to the biased variance.
        Returns:
            (out, mean, rstd): out = (x - mean) * rstd * weight + bias, shaped as x; mean and
            rstd = 1 / sqrt(var + eps) shaped as x with the last `num_dims` dims of size 1.
            float16 / bfloat16 compute in float32, as torch (the squared deviations overflowed
            float16 from about 256).
        """
        dtype = self.dtype(x)
        if dtype in (DType.float16, DType.bfloat16):
            wide = [None if t is None else self.float_cast(t, DType.float32)
                    for t in (x, weight, bias)]
            results = self.layer_norm(wide[0], wide[1], wide[2], num_dims, eps)
            return tuple(self.float_cast(t, dtype) for t in results)  # type: ignore[return-value]
        shape = self.shape(x)
        flat, stats = self._layer_norm_shapes(shape, num_dims)
        x2 = self.float_reshape(x, flat)
        if flat[1]:  # the first element plus the mean of the differences: exact when constant
            first = self.float_slice(x2, [slice(0, flat[0], 1), slice(0, 1, 1)])
            mean = self.float_add(self.float_mean_dim(self.float_sub(x2, first), 1), first)
        else:
            mean = self.float_mean_dim(x2, 1)
        centered = self.float_sub(x2, mean)
        var = self.float_mean_dim(self.float_mul(centered, centered), 1)
        rstd = self.float_recip(self.float_sqrt(self.float_add_scalar(var, eps)))
        out = self.float_reshape(self.float_mul(centered, rstd), shape)
        if weight is not None:
            out = self.float_mul(out, weight)
        if bias is not None:
            out = self.float_add(out, bias)
        return out, self.float_reshape(mean, stats), self.float_reshape(rstd, stats)

    def layer_norm_backward(self, x: P, weight: P | None, bias: P | None, mean: P, rstd: P,
                            grad: P, num_dims: int) -> tuple[P, P | None, P | None]:
        """Gradients of `layer_norm`'s x, weight and bias (None where absent) from the forward's
        `mean` and `rstd`: dx = rstd (gw - mean(gw) - xhat mean(gw xhat)) with gw = grad *
        weight, dweight = sum(grad xhat), dbias = sum(grad) over the leading dims."""
        shape = self.shape(x)
        flat, _ = self._layer_norm_shapes(shape, num_dims)
        rows = (flat[0], 1)
        xhat = self.float_mul(self.float_sub(self.float_reshape(x, flat),
                                             self.float_reshape(mean, rows)),
                              self.float_reshape(rstd, rows))
        g = self.float_reshape(grad, flat)
        gw = g if weight is None else self.float_mul(g, self.float_reshape(weight, (1, flat[1])))
        dx = self.float_mul(self.float_sub(
            self.float_sub(gw, self.float_mean_dim(gw, 1)),
            self.float_mul(xhat, self.float_mean_dim(self.float_mul(gw, xhat), 1))),
            self.float_reshape(rstd, rows))
        d_shape = shape[len(shape) - num_dims:]
        dw = None if weight is None else self.float_reshape(
            self.float_sum_dim(self.float_mul(g, xhat), 0), d_shape)
        db = None if bias is None else self.float_reshape(self.float_sum_dim(g, 0), d_shape)
        return self.float_reshape(dx, shape), dw, db

    def cross_entropy(self, logits: P, target: P, weight: P | None, ignore_index: int,
                      label_smoothing: float, reduction: str) -> P:
        """Cross entropy of logits and class indices (torch's cross_entropy on [M, C]).

        Args:
            logits: float [M, C].
            target: int [M] class indices in [0, C), or `ignore_index` (the sample is skipped);
                checked through `check_indices` (naming "cross_entropy").
            weight: float [C] class weights, or None.
            ignore_index: the target value of skipped samples.
            label_smoothing: in [0, 1]: the target mixed with the uniform distribution.
            reduction: "mean" (divided by the summed weights of the kept targets:
                `_mean_weights`), "sum" or "none".
        Returns:
            [M] per-sample losses for "none", else a 0-d loss; logits' dtype.
        """
        m, c = self.shape(logits)
        safe, keep, w_target = self._class_targets(logits, target, weight, ignore_index)
        logp = self.log_softmax(logits, 1)
        picked = self.float_gather(1, logp, self.int_reshape(safe, (m, 1)))
        loss = self.float_mul(self.float_neg(self.float_reshape(picked, (m,))), w_target)
        if label_smoothing > 0:
            weighted = logp if weight is None else self.float_mul(
                logp, self.float_reshape(weight, (1, c)))
            smooth = self.float_mul(self.float_neg(self.float_reshape(
                self.float_sum_dim(weighted, 1), (m,))), keep)
            loss = self.float_add(self.float_mul_scalar(loss, 1 - label_smoothing),
                                  self.float_mul_scalar(smooth, label_smoothing / c))
        # ignored samples are skipped (as torch): 0, not their logits' nan times 0
        loss = self.float_mask_fill(loss, self.float_equal_elem(keep, 0.0), 0.0)
        if reduction == "none":
            return loss
        total = self.float_sum(loss)
        if reduction == "sum":
            return total
        return self.float_div(total, self._mean_weights(w_target, label_smoothing))

    def cross_entropy_backward(self, logits: P, target: P, weight: P | None, grad: P,
                               ignore_index: int, label_smoothing: float, reduction: str) -> P:
        """Gradient of `cross_entropy`'s logits for the output gradient `grad` ([M] or 0-d):
        g (mass softmax(logits) - q), q the (weighted, smoothed) target distribution of each
        sample and mass its sum. g is 0 for ignored samples, whatever `grad` (NaN / inf
        included: torch never touches them), and the mean's is grad over `_mean_weights` for
        kept ones (inf / NaN where the weights sum to 0, as torch)."""
        m, c = self.shape(logits)
        safe, keep, w_target = self._class_targets(logits, target, weight, ignore_index)
        if reduction != "none":
            grad = self.float_expand(self.float_reshape(grad, (1,)), (m,))
        if reduction == "mean":
            weights = self.float_reshape(self._mean_weights(w_target, label_smoothing), (1,))
            grad = self.float_div(grad, weights)
        grad = self.float_mask_fill(grad, self.float_equal_elem(keep, 0.0), 0.0)
        eps = label_smoothing
        smooth_mass = float(c) if weight is None else self.float_sum(weight)
        mass = self.float_mul_scalar(w_target, 1 - eps)
        if eps > 0:
            per_class = self.float_mul_scalar(keep, eps / c)
            mass = self.float_add(mass, self.float_mul_scalar(per_class, smooth_mass)
                                  if weight is None else self.float_mul(per_class, smooth_mass))
        dx = self.float_mul(self.softmax(logits, 1), self.float_reshape(
            self.float_mul(grad, mass), (m, 1)))
        hit = self.float_neg(self.float_mul_scalar(self.float_mul(grad, w_target), 1 - eps))
        dx = self.float_scatter(1, dx, self.int_reshape(safe, (m, 1)),
                                self.float_reshape(hit, (m, 1)), "add")
        if eps > 0:
            spread = self.float_reshape(self.float_mul(grad, per_class), (m, 1))
            if weight is not None:
                spread = self.float_mul(spread, self.float_reshape(weight, (1, c)))
            dx = self.float_sub(dx, spread)
        return dx

    if TYPE_CHECKING:  # Backend's hook, which `_class_targets` calls
        def check_indices(self, op: str, indices: P, size: int,
                          wrap_negative: bool = True) -> P: ...

    def _class_targets(self, logits: P, target: P, weight: P | None, ignore_index: int
                       ) -> tuple[P, P, P]:
        """(checked targets with ignored ones set to 0, float keep mask, per-sample target
        weights: the keep mask times the target's class weight) of `cross_entropy`."""
        ignored = self.int_equal_elem(target, ignore_index)
        safe = self.check_indices("cross_entropy", self.int_mask_fill(target, ignored, 0),
                                  self.shape(logits)[1], False)
        keep = self.bool_into_float(self.bool_not(ignored), self.dtype(logits))
        if weight is None:
            return safe, keep, keep
        return safe, keep, self.float_mul(self.float_select(weight, 0, safe), keep)

    def _mean_weights(self, w_target: P, label_smoothing: float) -> P:
        """The mean reduction's denominator of `cross_entropy`: the summed target weights, NaN
        where they sum to 0 with smoothing (torch divides its NLL and smoothing means apart:
        0 / 0 NaN for non-negative weights, and NaN gradients for the kept samples)."""
        total = self.float_sum(w_target)
        if label_smoothing == 0:
            return total
        return self.float_mask_fill(total, self.float_equal_elem(total, 0.0), math.nan)

    @staticmethod
    def _layer_norm_shapes(shape: Shape, num_dims: int) -> tuple[Shape, Shape]:
        """([M, D] rows of a layer norm's groups, the stats' shape) for an input `shape`."""
        lead = len(shape) - num_dims
        return ((math.prod(shape[:lead]), math.prod(shape[lead:])),
                (*shape[:lead], *(1,) * num_dims))

    def attention(
        self, q: P, k: P, v: P, mask: P | None, scale: float | None, is_causal: bool
    ) -> P:
        """softmax(q k^T * scale, masked) v; q [..., Lq, E], k [..., Lk, E], v [..., Lk, Ev].

        `mask` is bool (true = masked out) and broadcasts to [..., Lq, Lk]; `scale` defaults to
        1/sqrt(E); `is_causal` masks keys after each query (top-left aligned, as torch). A query
        whose every key is masked gives 0 with a zero gradient (PyTorch's SDPA), where softmax
        over its row of -inf would give NaN: the row keeps its scores and its output is zeroed.
        float16 / bfloat16 queries are scaled before the product, as torch's: q k^T itself
        overflowed float16 where the scaled scores fit (64 dims of 40: 102400).
        """
        factor = 1 / math.sqrt(self.shape(q)[-1]) if scale is None else scale
        half = self._low_precision(q) is not None
        if half:
            q = self.float_mul_scalar(q, factor)
        scores = self.float_matmul(q, self.float_swap_dims(k, -2 % len(self.shape(k)),
                                                            -1 % len(self.shape(k))))
        if not half:
            scores = self.float_mul_scalar(scores, factor)
        lq, lk = self.shape(scores)[-2:]
        causal = self.bool_from_data(np.triu(np.ones((lq, lk), dtype=bool), k=1),
                                     self.device_of(q)) if is_causal else None
        masked_rows = None
        if mask is not None:
            if causal is not None:
                mask = self.bool_or(mask, causal)
            masked_rows = self.bool_all_dim(mask, len(self.shape(mask)) - 1)
            mask = self.bool_and(mask, self.bool_not(masked_rows))
        else:
            mask = causal  # alone, it keeps key 0 of every query
        if mask is not None:
            scores = self.float_mask_fill(scores, mask, -math.inf)
        weights = self.softmax(scores, len(self.shape(scores)) - 1)
        out = self.float_matmul(weights, v)
        return out if masked_rows is None else self.float_mask_fill(out, masked_rows, 0.0)


class Backend(ModuleOps):
    """A complete backend: every op group plus the hooks below.

    The op methods are the rows of the op table (`burn.ir.OPS`); `burn.ir.check_protocol` (run
    by the op-table tests, not at import) checks that the two agree, and the device registry
    refuses a backend class that lacks an op.
    """

    #: short name used in devices ("numpy", "cpu", "wgpu", "cuda", "autodiff(numpy)").
    name: str = "abstract"
    #: whether this backend tracks gradients (the Autodiff decorator does).
    is_autodiff: bool = False

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Why this backend cannot run on this machine (a missing driver or package), or None
        when it can. Checked by `burn.available_backends()` without building the backend."""
        return None

    def supports(self, dtype: DType) -> bool:
        """Whether tensors of `dtype` can live on this backend (all dtypes by default). The
        frontend refuses an unsupported dtype with `UnsupportedDTypeError` where a tensor of it
        would be made (creation, casts)."""
        return True

    def check_indices(self, op: str, indices: P, size: int, wrap_negative: bool = True) -> P:
        """`indices` (an int primitive) checked against an extent of `size`, negatives wrapped.

        This default reads the values on the host and raises at once; a device backend may
        override it to check on the device and raise at the next sync instead, naming `op`.

        Args:
            op: the op the indices serve, for the error.
            indices: int primitive of any shape.
            size: the extent indexed.
            wrap_negative: accept [-size, size) and wrap negatives (else only [0, size)).
        Returns:
            The indices, in [0, size).
        Raises:
            BurnIndexError: for an index out of range.
        """
        from burn.errors import BurnIndexError

        data = self.int_into_data(indices)
        if not data.size:
            return indices
        low = -size if wrap_negative else 0
        bad = data[(data < low) | (data >= size)]
        if bad.size:
            raise BurnIndexError(op, f"index {int(bad.flat[0])} out of range [{low}, {size})",
                                 size=size, indices_shape=tuple(data.shape))
        if int(data.min()) >= 0:
            return indices
        return self.int_from_data(np.where(data < 0, data + size, data), self.device_of(indices))

    def check_nonzero(self, op: str, divisor: P) -> None:
        """Raise DivisionByZeroError if the int primitive `divisor` holds a zero (integer
        division and remainder). This default reads the values on the host; a device backend may
        check on the device and raise at the next sync instead, naming `op`.
        """
        from burn.errors import DivisionByZeroError

        zero = self.int_equal_elem(divisor, 0)
        if bool(self.bool_into_data(self.bool_any(zero))):
            raise DivisionByZeroError(op, "integer division by zero",
                                      dtype=self.dtype(divisor).value, shape=self.shape(divisor))

    def exported(self, x: P) -> Any:
        """`x`'s values for DLPack and numpy consumers (`__dlpack__`, `__dlpack_device__`,
        `__array__`): a host copy by default; a backend may share its memory instead."""
        return getattr(self, f"{self.dtype(x).kind.value}_into_data")(x)

    # --- seed / sync / memory hooks ---
    @abstractmethod
    def seed(self, seed: int) -> None:
        """Reseed the backend's random generator."""

    def sync(self) -> None:
        """Wait for queued work to finish (no-op for eager host backends)."""

    def flush(self) -> None:
        """Start queued work without waiting for it (no-op for eager host backends)."""

    def memory_stats(self) -> dict[str, int]:
        """Bytes in use / reserved by the backend's allocator, where it tracks them."""
        return {}


class AutodiffBackend(Backend):
    """A backend that tracks gradients (Burn's AutodiffBackend): what the frontend calls for
    `require_grad`, `backward`, `grad` and moving tensors between it and its inner backend.

    Float primitives of an autodiff backend wrap the inner backend's; int and bool primitives
    are the inner backend's own.
    """

    is_autodiff = True
    #: the backend that computes.
    inner: Backend

    @abstractmethod
    def float_inner(self, x: P) -> P:
        """The inner backend's primitive of `x` (shared, untracked)."""

    @abstractmethod
    def float_from_inner(self, x: P) -> P:
        """An untracked primitive of this backend around an inner float primitive."""

    @abstractmethod
    def float_require_grad(self, x: P) -> P:
        """`x` as a leaf that requires grad."""

    @abstractmethod
    def float_is_require_grad(self, x: P) -> bool:
        """Whether `x` is a leaf that requires grad."""

    @abstractmethod
    def backward(self, x: P) -> Any:
        """Gradients of `x` (seeded with ones) for every leaf that requires grad."""

    @abstractmethod
    def grad(self, x: P, grads: Any) -> P | None:
        """The inner primitive holding the gradient of leaf `x`, or None."""

    @abstractmethod
    def grad_remove(self, x: P, grads: Any) -> P | None:
        """Like `grad`, and remove it from `grads`."""

