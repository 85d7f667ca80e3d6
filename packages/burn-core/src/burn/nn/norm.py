"""Normalisation layers: BatchNorm, LayerNorm, GroupNorm, InstanceNorm, RmsNorm."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import burn
from burn.device import Device
from burn.errors import ShapeError, ValueRangeError
from burn.frontend.tensor import Tensor
from burn.functional.layers import layer_norm
from burn.nn._layer import LayerConfig, check_float_input, check_input
from burn.nn.init import ones, zeros
from burn.nn.module import Buffer, Module
from burn.nn.param import Param


def _accumulated(x: Tensor) -> Tensor:
    """`x` in float32 where it is float16 / bfloat16 (torch's accumulate type: squares of
    float16 values overflowed from 256), else `x`."""
    return x.float() if x.dtype in (burn.float16, burn.bfloat16) else x


def _normalize(x: Tensor, dims: tuple[int, ...], eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """(x - mean) / sqrt(var + eps) over `dims` (biased var), with the mean and var (dims kept),
    computed in float32 for float16 / bfloat16 `x` (`_accumulated`): the result in x's dtype,
    the mean and var in float32."""
    wide = _accumulated(x)
    mean = wide.mean(dims, keepdim=True)
    centered = wide - mean
    var = (centered * centered).mean(dims, keepdim=True)
    return (centered / (var + eps).sqrt()).cast(x.dtype), mean, var


def _per_channel(t: Tensor, ndim: int) -> Tensor:
    """A [C] tensor shaped to broadcast over dim 1 of an `ndim`-d input."""
    return t.reshape((t.shape[0],) + (1,) * (ndim - 2))


def _affine(num: int | tuple[int, ...], affine: bool, bias: bool,
            device: Device | str | None) -> tuple[Param | None, Param | None]:
    """(weight = ones, bias = zeros) params, or None where disabled."""
    if not affine:
        return None, None
    return Param(ones(num, device)), Param(zeros(num, device)) if bias else None


class BatchNorm(Module):
    """Batch normalisation over channel dim 1 of [N, C, *] inputs (torch's BatchNorm1d / 2d /
    3d in one class).

    Training normalises with the batch statistics (biased variance) and updates the running
    mean / var Buffers: running = (1 - momentum) * running + momentum * batch (unbiased var);
    with `momentum=None` the running statistics are the cumulative average of every batch
    (factor 1 / num_batches_tracked, as torch). Eval normalises with the running statistics;
    without `track_running_stats` there are none and batch statistics are used in eval too.

    Args:
        num_features: channels C.
        eps: added to the variance.
        momentum: weight of the batch statistic in the running update; None for the
            cumulative average (then a `num_batches_tracked` Buffer counts the batches).
        affine: whether to learn a per-channel scale (weight) and shift (bias).
        track_running_stats: keep running statistics (Buffers) for eval.
        device: where params and buffers live.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 device: Device | str | None = None) -> None:
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.track_running_stats = track_running_stats
        self.weight, self.bias = _affine(num_features, affine, True, device)
        self.running_mean = Buffer(zeros(num_features, device)) if track_running_stats else None
        self.running_var = Buffer(ones(num_features, device)) if track_running_stats else None
        self.num_batches_tracked = (Buffer(burn.tensor(0, dtype=burn.int64, device=device))
                                    if track_running_stats and momentum is None else None)

    def forward(self, x: Tensor) -> Tensor:
        """Args:
            x: [N, C, *].
        Returns:
            x normalised per channel, same shape.
        Raises:
            ShapeError: for fewer than 2 dims or a wrong channel count. DTypeError: for an
                input whose dtype is not the layer's. ValueRangeError: with batch statistics
                (training, or no running statistics), for one value per channel
                (N * spatial = 1) or an eps that is not positive (torch's ValueErrors).
        """
        check_input("BatchNorm", x, f"[N, C={self.num_features}, *]",
                    min_rank=2, dim=1, size=self.num_features)
        reference = self.weight if self.weight is not None else self.running_mean
        if reference is not None:
            check_float_input("BatchNorm", x, reference)
        dims = (0, *range(2, x.ndim))
        n = math.prod(x.shape[d] for d in dims)
        if self.training or self.running_mean is None or self.running_var is None:
            self._check_batch_statistics(x, n)
            out, mean, var = _normalize(x, dims, self.eps)
            if self.training and self.running_mean is not None and self.running_var is not None:
                self._update_running(mean.detach().reshape(-1),
                                     var.detach().reshape(-1) * (n / max(n - 1, 1)), n)
        else:
            mean = _per_channel(self.running_mean.value(), x.ndim)
            var = _per_channel(self.running_var.value(), x.ndim)
            out = (x - mean) / (var + self.eps).sqrt()
        if self.weight is not None and self.bias is not None:
            out = out * _per_channel(self.weight, x.ndim) + _per_channel(self.bias, x.ndim)
        return out

    def _check_batch_statistics(self, x: Tensor, n: int) -> None:
        """Refuse what torch refuses when normalising with batch statistics: one value per
        channel (a variance of nothing) or an eps that is not positive."""
        if n == 1:
            raise ValueRangeError("BatchNorm", "expected more than 1 value per channel when "
                                  "training", x=x.shape)
        if not self.eps > 0:
            raise ValueRangeError("BatchNorm", "eps must be positive when training", eps=self.eps)

    def _update_running(self, mean: Tensor, unbiased_var: Tensor, n: int) -> None:
        """Fold a batch of `n` values per channel into the running statistics (an empty batch
        is counted, its NaN statistics are not taken, as torch)."""
        assert self.running_mean is not None and self.running_var is not None
        m = self.momentum
        if self.num_batches_tracked is not None:
            count = int(self.num_batches_tracked.item()) + 1
            self.num_batches_tracked.set_(self.num_batches_tracked.value() + 1)
            m = 1.0 / count
        if n == 0:
            return
        assert m is not None
        for running, batch in ((self.running_mean, mean), (self.running_var, unbiased_var)):
            # (in the batch statistics' dtype, float32 for a float16 layer: torch's)
            old = running.value()
            running.set_((old.cast(batch.dtype) * (1 - m) + batch * m).cast(old.dtype))

    def extra_repr(self) -> str:
        stats = "" if self.track_running_stats else ", track_running_stats=False"
        return f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, " \
               f"affine={self.weight is not None}{stats}"


BatchNorm1d = BatchNorm
BatchNorm2d = BatchNorm


class LayerNorm(Module):
    """Layer normalisation over the last dims (torch.nn.LayerNorm).

    Args:
        normalized_shape: the trailing shape to normalise over (an int for the last dim).
        eps: added to the variance.
        elementwise_affine: whether to learn weight (ones) and bias (zeros) of that shape.
        bias: whether the affine part has a bias.
        device: where the params live.
    """

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True,
                 device: Device | str | None = None) -> None:
        self.normalized_shape = ((normalized_shape,) if isinstance(normalized_shape, int)
                                 else tuple(normalized_shape))
        self.eps = eps
        self.weight, self.bias = _affine(self.normalized_shape, elementwise_affine, bias, device)

    def forward(self, x: Tensor) -> Tensor:
        """Args:
            x: [..., *normalized_shape].
        Returns:
            same shape.
        Raises:
            ShapeError: when the trailing dims differ from normalized_shape. DTypeError: for an
                input whose dtype is not the layer's.
        """
        k = len(self.normalized_shape)
        if x.ndim < k or x.shape[x.ndim - k:] != self.normalized_shape:
            raise ShapeError("LayerNorm", "expected input [..., "
                             f"{', '.join(map(str, self.normalized_shape))}]", x=x.shape)
        if self.weight is not None:
            check_float_input("LayerNorm", x, self.weight)
        return layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, " \
               f"elementwise_affine={self.weight is not None}"


class GroupNorm(Module):
    """Group normalisation (torch.nn.GroupNorm): channels split into groups, each normalised
    over its channels and all spatial positions.

    Args:
        num_groups: groups (must divide num_channels).
        num_channels: channels C.
        eps: added to the variance.
        affine: whether to learn per-channel weight (ones) and bias (zeros).
        device: where the params live.
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device: Device | str | None = None) -> None:
        name = type(self).__name__
        if num_groups < 1 or num_channels % num_groups:
            raise ValueRangeError(name, "num_groups must divide num_channels",
                                  num_groups=num_groups, num_channels=num_channels)
        self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
        self.weight, self.bias = _affine(num_channels, affine, True, device)

    def forward(self, x: Tensor) -> Tensor:
        """Args:
            x: [N, C, *].
        Returns:
            same shape.
        Raises:
            ShapeError: for fewer than 2 dims or a wrong channel count. DTypeError: for an
                input whose dtype is not the layer's.
        """
        check_input(type(self).__name__, x, f"[N, C={self.num_channels}, *]",
                    min_rank=2, dim=1, size=self.num_channels)
        if self.weight is not None:
            check_float_input(type(self).__name__, x, self.weight)
        group_size = self.num_channels // self.num_groups * math.prod(x.shape[2:])
        grouped = x.reshape(x.shape[0], self.num_groups, group_size)  # (also of a batch of 0)
        out = layer_norm(grouped, grouped.shape[-1], eps=self.eps).reshape(x.shape)
        if self.weight is not None and self.bias is not None:
            out = out * _per_channel(self.weight, x.ndim) + _per_channel(self.bias, x.ndim)
        return out

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, " \
               f"affine={self.weight is not None}"


class InstanceNorm(GroupNorm):
    """Instance normalisation (torch.nn.InstanceNorm1d / 2d without running stats): each
    channel of each sample normalised over its spatial positions; GroupNorm with one group per
    channel.

    Args:
        num_channels: channels C.
        eps: added to the variance.
        affine: whether to learn per-channel weight and bias (off by default, as torch).
        device: where the params live.
    """

    def __init__(self, num_channels: int, eps: float = 1e-5, affine: bool = False,
                 device: Device | str | None = None) -> None:
        # no channels: one (empty) group, as torch's instance_norm of [N, 0, *]
        super().__init__(num_channels or 1, num_channels, eps, affine, device)

    def forward(self, x: Tensor) -> Tensor:
        """`GroupNorm.forward`, which also raises ValueRangeError for one spatial element
        (torch's ValueError: there is nothing to normalise over)."""
        if x.ndim >= 2 and math.prod(x.shape[2:]) == 1:
            raise ValueRangeError("InstanceNorm", "expected more than 1 spatial element",
                                  x=x.shape)
        return super().forward(x)

    def extra_repr(self) -> str:
        return f"{self.num_channels}, eps={self.eps}, affine={self.weight is not None}"


class RmsNorm(Module):
    """Root-mean-square normalisation over the last dim: x / sqrt(mean(x^2) + eps) * weight
    (Burn's RmsNorm; torch.nn.RMSNorm with an explicit eps).

    Args:
        d_model: size of the last dim.
        eps: added to the mean square.
        device: where the weight (ones) lives.

    Defaults that differ from torch: `eps` 1e-5 (torch's None: the dtype's machine epsilon).
    """

    def __init__(self, d_model: int, eps: float = 1e-5,
                 device: Device | str | None = None) -> None:
        self.d_model, self.eps = d_model, eps
        self.weight = Param(ones(d_model, device))

    def forward(self, x: Tensor) -> Tensor:
        """Args:
            x: [..., d_model].
        Returns:
            same shape.
        Raises:
            ShapeError: when the last dim is not d_model. DTypeError: for an input whose dtype
                is not the layer's.
        """
        check_input("RmsNorm", x, f"[..., d_model={self.d_model}]", dim=-1, size=self.d_model)
        check_float_input("RmsNorm", x, self.weight)
        wide = _accumulated(x)
        rms = ((wide * wide).mean(-1, keepdim=True) + self.eps).sqrt()
        return (wide / rms).cast(x.dtype) * self.weight

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, eps={self.eps}"


@dataclass
class BatchNormConfig(LayerConfig):
    """Config of `BatchNorm` (same arguments)."""

    num_features: int
    eps: float = 1e-5
    momentum: float | None = 0.1
    affine: bool = True
    track_running_stats: bool = True
    module = BatchNorm


@dataclass
class LayerNormConfig(LayerConfig):
    """Config of `LayerNorm` (same arguments)."""

    normalized_shape: int | tuple[int, ...]
    eps: float = 1e-5
    elementwise_affine: bool = True
    bias: bool = True
    module = LayerNorm


@dataclass
class GroupNormConfig(LayerConfig):
    """Config of `GroupNorm` (same arguments)."""

    num_groups: int
    num_channels: int
    eps: float = 1e-5
    affine: bool = True
    module = GroupNorm


@dataclass
class InstanceNormConfig(LayerConfig):
    """Config of `InstanceNorm` (same arguments)."""

    num_channels: int
    eps: float = 1e-5
    affine: bool = False
    module = InstanceNorm


@dataclass
class RmsNormConfig(LayerConfig):
    """Config of `RmsNorm` (same arguments)."""

    d_model: int
    eps: float = 1e-5
    module = RmsNorm
