"""Convolutions and transposed convolutions, one class per kind parametrised by the number of
spatial dims (Conv1d / Conv2d / Conv3d only fix it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from burn import functional as F
from burn.device import Device
from burn.errors import ValueRangeError
from burn.frontend.tensor import Tensor
from burn.functional._common import IntOrTuple, ntuple
from burn.nn._layer import LayerConfig, check_float_input, check_input
from burn.nn._padding import PADDING_MODES, pad_spatial
from burn.nn.init import TORCH_DEFAULT, Initializer, fans
from burn.nn.module import Module
from burn.nn.param import Param


class _ConvBase(Module):
    """Shared by ConvNd and ConvTransposeNd: params, input check and repr."""

    dims: ClassVar[int]
    transposed: ClassVar[bool]

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple,
                 stride: IntOrTuple, padding: IntOrTuple | str, dilation: IntOrTuple,
                 groups: int, bias: bool, device: Device | str | None,
                 initializer: Initializer | None, padding_mode: str = "zeros") -> None:
        name = type(self).__name__
        if padding_mode not in PADDING_MODES:
            raise ValueRangeError(name, f"padding_mode must be one of {PADDING_MODES}",
                                  padding_mode=padding_mode)
        if self.transposed and padding_mode != "zeros":
            raise ValueRangeError(name, 'only "zeros" padding_mode is supported (as torch)',
                                  padding_mode=padding_mode)
        self.padding_mode = padding_mode
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = ntuple(name, "kernel_size", kernel_size, self.dims, 1)
        self.stride, self.padding, self.dilation = stride, padding, dilation
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueRangeError(name, "in_channels and out_channels must be divisible by groups",
                                  in_channels=in_channels, out_channels=out_channels,
                                  groups=groups)
        shape = ((in_channels, out_channels // groups) if self.transposed
                 else (out_channels, in_channels // groups)) + self.kernel_size
        fan_in, fan_out = fans(shape)  # torch's fans of the stored layout
        init = initializer or TORCH_DEFAULT
        self.weight = Param(init.init(shape, device, fan_in=fan_in, fan_out=fan_out))
        self.bias = (Param(init.init((out_channels,), device, fan_in=fan_in, fan_out=fan_out))
                     if bias else None)

    def _check(self, x: Tensor) -> None:
        n = self.dims
        spatial = ("L", "H, W", "D, H, W")[n - 1]
        check_input(type(self).__name__, x, f"[N, C_in={self.in_channels}, {spatial}] "
                    f"or [C_in, {spatial}]", ranks=(n + 1, n + 2), dim=-n - 1,
                    size=self.in_channels)
        check_float_input(type(self).__name__, x, self.weight)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}, groups={self.groups}, "
                f"bias={self.bias is not None}, padding_mode={self.padding_mode!r}")


class ConvNd(_ConvBase):
    """N-d convolution (torch.nn.ConvNd): weight [C_out, C_in / groups, *kernel], torch's init.

    Args:
        in_channels, out_channels: channels of input and output.
        kernel_size, stride, dilation: ints or N-tuples.
        padding: int, N-tuple, "valid" or "same".
        groups: channel groups.
        bias: whether to add a learned bias.
        device: where the params live.
        initializer: of weight and bias (torch's U(-1/sqrt(fan_in), 1/sqrt(fan_in)) when None).
        padding_mode: "zeros", "reflect", "replicate" or "circular" (torch's modes).
    Raises:
        ValueRangeError: for another padding_mode, or channels not divisible by groups.
    """

    transposed = False
    _fn: ClassVar[Callable[..., Tensor]]

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple,
                 stride: IntOrTuple = 1, padding: IntOrTuple | str = 0,
                 dilation: IntOrTuple = 1, groups: int = 1, bias: bool = True,
                 device: Device | str | None = None,
                 initializer: Initializer | None = None, padding_mode: str = "zeros") -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, device, initializer, padding_mode)

    def forward(self, x: Tensor) -> Tensor:
        """Args:
            x: [N, C_in, *spatial] or [C_in, *spatial].
        Returns:
            [N, C_out, *spatial_out] (no N for unbatched input).
        Raises:
            ShapeError: for a wrong rank or channel count, or a reflect / circular padding
                too large for the input. DTypeError: for an input not of the layer's dtype.
        """
        self._check(x)
        padding = self.padding
        if self.padding_mode != "zeros":
            x = pad_spatial(type(self).__name__, x, self._pads(), self.padding_mode)
            padding = 0
        return type(self)._fn(x, self.weight, self.bias, self.stride, padding,
                              self.dilation, self.groups)

    def _pads(self) -> list[tuple[int, int]]:
        """(before, after) padding per spatial dim, as torch computes it for a padding_mode."""
        name, n = type(self).__name__, self.dims
        if self.padding == "valid":
            return [(0, 0)] * n
        if self.padding == "same":
            if any(v != 1 for v in ntuple(name, "stride", self.stride, n, 1)):
                raise ValueRangeError(name, "padding='same' needs stride 1", stride=self.stride)
            dilation = ntuple(name, "dilation", self.dilation, n, 1)
            totals = [d * (k - 1) for d, k in zip(dilation, self.kernel_size, strict=True)]
            return [(t // 2, t - t // 2) for t in totals]
        assert not isinstance(self.padding, str)
        return [(p, p) for p in ntuple(name, "padding", self.padding, n, 0)]


class ConvTransposeNd(_ConvBase):
    """N-d transposed convolution (torch.nn.ConvTransposeNd): weight
    [C_in, C_out / groups, *kernel]; torch's init, whose fan_in is C_out / groups * prod(kernel).

    Args:
        in_channels, out_channels: channels of input and output.
        kernel_size, stride, padding, output_padding, dilation: ints or N-tuples.
        groups: channel groups.
        bias: whether to add a learned bias.
        device: where the params live.
        initializer: of weight and bias (torch's default when None).
        padding_mode: "zeros" only (torch refuses the others for transposed convolutions).
    Raises:
        ValueRangeError: for another padding_mode, or channels not divisible by groups.
    """

    transposed = True
    _fn: ClassVar[Callable[..., Tensor]]

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple,
                 stride: IntOrTuple = 1, padding: IntOrTuple = 0,
                 output_padding: IntOrTuple = 0, groups: int = 1, bias: bool = True,
                 dilation: IntOrTuple = 1, device: Device | str | None = None,
                 initializer: Initializer | None = None, padding_mode: str = "zeros") -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, device, initializer, padding_mode)
        self.output_padding = output_padding

    def forward(self, x: Tensor) -> Tensor:
        """Args:
            x: [N, C_in, *spatial] or [C_in, *spatial].
        Returns:
            [N, C_out, *spatial_out] (no N for unbatched input).
        Raises:
            ShapeError: for a wrong rank or channel count.
        """
        self._check(x)
        return type(self)._fn(x, self.weight, self.bias, self.stride, self.padding,
                              self.output_padding, self.groups, self.dilation)


class Conv1d(ConvNd):
    """1-d convolution over [N, C, L]. See `ConvNd`."""

    dims, _fn = 1, staticmethod(F.conv1d)


class Conv2d(ConvNd):
    """2-d convolution over [N, C, H, W]. See `ConvNd`."""

    dims, _fn = 2, staticmethod(F.conv2d)


class Conv3d(ConvNd):
    """3-d convolution over [N, C, D, H, W]. See `ConvNd`."""

    dims, _fn = 3, staticmethod(F.conv3d)


class ConvTranspose1d(ConvTransposeNd):
    """Transposed 1-d convolution. See `ConvTransposeNd`."""

    dims, _fn = 1, staticmethod(F.conv_transpose1d)


class ConvTranspose2d(ConvTransposeNd):
    """Transposed 2-d convolution. See `ConvTransposeNd`."""

    dims, _fn = 2, staticmethod(F.conv_transpose2d)


class ConvTranspose3d(ConvTransposeNd):
    """Transposed 3-d convolution. See `ConvTransposeNd`."""

    dims, _fn = 3, staticmethod(F.conv_transpose3d)


@dataclass
class ConvConfig(LayerConfig):
    """Config of a convolution; `Conv1dConfig` / `Conv2dConfig` / `Conv3dConfig` pick the
    layer. Fields as `ConvNd`'s arguments."""

    in_channels: int
    out_channels: int
    kernel_size: int | tuple[int, ...]
    stride: int | tuple[int, ...] = 1
    padding: int | tuple[int, ...] | str = 0
    dilation: int | tuple[int, ...] = 1
    groups: int = 1
    bias: bool = True
    initializer: Initializer = TORCH_DEFAULT
    padding_mode: str = "zeros"


@dataclass
class ConvTransposeConfig(LayerConfig):
    """Config of a transposed convolution; `ConvTranspose1dConfig` / `2d` / `3d` pick the
    layer. Fields as `ConvTransposeNd`'s arguments."""

    in_channels: int
    out_channels: int
    kernel_size: int | tuple[int, ...]
    stride: int | tuple[int, ...] = 1
    padding: int | tuple[int, ...] = 0
    output_padding: int | tuple[int, ...] = 0
    groups: int = 1
    bias: bool = True
    dilation: int | tuple[int, ...] = 1
    initializer: Initializer = TORCH_DEFAULT


@dataclass
class Conv1dConfig(ConvConfig):
    """Config of `Conv1d`."""

    module = Conv1d


@dataclass
class Conv2dConfig(ConvConfig):
    """Config of `Conv2d`."""

    module = Conv2d


@dataclass
class Conv3dConfig(ConvConfig):
    """Config of `Conv3d`."""

    module = Conv3d


@dataclass
class ConvTranspose1dConfig(ConvTransposeConfig):
    """Config of `ConvTranspose1d`."""

    module = ConvTranspose1d


@dataclass
class ConvTranspose2dConfig(ConvTransposeConfig):
    """Config of `ConvTranspose2d`."""

    module = ConvTranspose2d


@dataclass
class ConvTranspose3dConfig(ConvTransposeConfig):
    """Config of `ConvTranspose3d`."""

    module = ConvTranspose3d

