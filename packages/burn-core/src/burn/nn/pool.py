"""Pooling layers (average, max, adaptive average), parametrised by the number of spatial dims
over `burn.functional`'s pools."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from burn import functional as F
from burn.frontend.tensor import Tensor
from burn.functional._common import IntOrTuple
from burn.nn._layer import LayerConfig, check_input
from burn.nn.module import Module


class _Pool(Module):
    """A stateless pool over [N, C, *spatial] or [C, *spatial]: `_fn(x, **settings)`."""

    dims: ClassVar[int]
    _fn: ClassVar[Callable[..., Tensor]]

    def __init__(self, **settings: Any) -> None:
        self._settings = settings

    def forward(self, x: Tensor) -> Tensor:
        """Args:
            x: [N, C, *spatial] or [C, *spatial].
        Returns:
            the pooled tensor.
        Raises:
            ShapeError: for a wrong rank.
        """
        n = self.dims
        spatial = ("L", "H, W")[n - 1]
        check_input(type(self).__name__, x, f"[N, C, {spatial}] or [C, {spatial}]",
                    ranks=(n + 1, n + 2))
        return type(self)._fn(x, **self._settings)

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self._settings.items())


class AvgPoolNd(_Pool):
    """Average pooling (torch.nn.AvgPool1d / 2d).

    Args:
        kernel_size: window size.
        stride: window step (the kernel size when None).
        padding: zero padding (at most half the kernel).
        ceil_mode: round the output size up.
        count_include_pad: count padded zeros in the average.
    """

    def __init__(self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
                 padding: IntOrTuple = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__(kernel_size=kernel_size, stride=stride, padding=padding,
                         ceil_mode=ceil_mode, count_include_pad=count_include_pad)


class MaxPoolNd(_Pool):
    """Max pooling (torch.nn.MaxPool1d / 2d).

    Args:
        kernel_size: window size.
        stride: window step (the kernel size when None).
        padding: -inf padding (at most half the kernel).
        dilation: window dilation.
        ceil_mode: round the output size up.
    """

    def __init__(self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
                 padding: IntOrTuple = 0, dilation: IntOrTuple = 1,
                 ceil_mode: bool = False) -> None:
        super().__init__(kernel_size=kernel_size, stride=stride, padding=padding,
                         dilation=dilation, ceil_mode=ceil_mode)


class AdaptiveAvgPoolNd(_Pool):
    """Adaptive average pooling to a fixed output size (torch.nn.AdaptiveAvgPool1d / 2d).

    Args:
        output_size: output spatial size (an int for all dims; None in a 2-d tuple keeps it).
    """

    def __init__(self, output_size: int | tuple[int | None, ...]) -> None:
        super().__init__(output_size=output_size)


class AvgPool1d(AvgPoolNd):
    """Average pooling over [N, C, L]. See `AvgPoolNd`."""

    dims, _fn = 1, staticmethod(F.avg_pool1d)


class AvgPool2d(AvgPoolNd):
    """Average pooling over [N, C, H, W]. See `AvgPoolNd`."""

    dims, _fn = 2, staticmethod(F.avg_pool2d)


class MaxPool1d(MaxPoolNd):
    """Max pooling over [N, C, L]. See `MaxPoolNd`."""

    dims, _fn = 1, staticmethod(F.max_pool1d)


class MaxPool2d(MaxPoolNd):
    """Max pooling over [N, C, H, W]. See `MaxPoolNd`."""

    dims, _fn = 2, staticmethod(F.max_pool2d)


class AdaptiveAvgPool1d(AdaptiveAvgPoolNd):
    """Adaptive average pooling of [N, C, L]. See `AdaptiveAvgPoolNd`."""

    dims, _fn = 1, staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(AdaptiveAvgPoolNd):
    """Adaptive average pooling of [N, C, H, W]. See `AdaptiveAvgPoolNd`."""

    dims, _fn = 2, staticmethod(F.adaptive_avg_pool2d)


@dataclass
class AvgPoolConfig(LayerConfig):
    """Config of an average pool (fields as `AvgPoolNd`'s arguments)."""

    kernel_size: int | tuple[int, ...]
    stride: int | tuple[int, ...] | None = None
    padding: int | tuple[int, ...] = 0
    ceil_mode: bool = False
    count_include_pad: bool = True
    takes_device = False


@dataclass
class MaxPoolConfig(LayerConfig):
    """Config of a max pool (fields as `MaxPoolNd`'s arguments)."""

    kernel_size: int | tuple[int, ...]
    stride: int | tuple[int, ...] | None = None
    padding: int | tuple[int, ...] = 0
    dilation: int | tuple[int, ...] = 1
    ceil_mode: bool = False
    takes_device = False


@dataclass
class AdaptiveAvgPoolConfig(LayerConfig):
    """Config of an adaptive average pool."""

    output_size: int | tuple[int | None, ...]
    takes_device = False


@dataclass
class AvgPool1dConfig(AvgPoolConfig):
    """Config of `AvgPool1d`."""

    module = AvgPool1d


@dataclass
class AvgPool2dConfig(AvgPoolConfig):
    """Config of `AvgPool2d`."""

    module = AvgPool2d


@dataclass
class MaxPool1dConfig(MaxPoolConfig):
    """Config of `MaxPool1d`."""

    module = MaxPool1d


@dataclass
class MaxPool2dConfig(MaxPoolConfig):
    """Config of `MaxPool2d`."""

    module = MaxPool2d


@dataclass
class AdaptiveAvgPool1dConfig(AdaptiveAvgPoolConfig):
    """Config of `AdaptiveAvgPool1d`."""

    module = AdaptiveAvgPool1d


@dataclass
class AdaptiveAvgPool2dConfig(AdaptiveAvgPoolConfig):
    """Config of `AdaptiveAvgPool2d`."""

    module = AdaptiveAvgPool2d
