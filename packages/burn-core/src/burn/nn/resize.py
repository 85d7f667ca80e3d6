"""Resizing layers: Interpolate and PixelShuffle."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from burn import functional as F
from burn.backend.options import InterpolateMode
from burn.errors import ShapeError, ValueRangeError
from burn.frontend.tensor import Tensor
from burn.nn._layer import LayerConfig, check_input
from burn.nn.module import Module


class Interpolate(Module):
    """Resizes [N, C, H, W] images to `size` or by `scale_factor` (torch.nn.Upsample; Burn's
    Interpolate2d).

    Args:
        size: output (H, W), or one int for both.
        scale_factor: alternative to `size`: output = floor(input * factor).
        mode: "nearest", "bilinear" or "bicubic".
        align_corners: as torch (ignored by "nearest").
    """

    def __init__(self, size: int | Sequence[int] | None = None,
                 scale_factor: float | Sequence[float] | None = None,
                 mode: InterpolateMode = "nearest", align_corners: bool = False) -> None:
        if (size is None) == (scale_factor is None):
            raise ValueRangeError("Interpolate", "give exactly one of size and scale_factor",
                                  size=size, scale_factor=scale_factor)
        self.size, self.scale_factor = size, scale_factor
        self.mode, self.align_corners = mode, align_corners

    def forward(self, x: Tensor) -> Tensor:
        """Args:
            x: [N, C, H, W].
        Returns:
            [N, C, H_out, W_out].
        Raises:
            ShapeError: for a non-4-d input.
        """
        check_input("Interpolate", x, "[N, C, H, W]", ranks=(4,))
        return F.interpolate(x, self.size, self.mode, self.align_corners,
                             scale_factor=self.scale_factor)

    def extra_repr(self) -> str:
        target = f"size={self.size}" if self.size is not None else \
            f"scale_factor={self.scale_factor}"
        return f"{target}, mode={self.mode!r}, align_corners={self.align_corners}"


class PixelShuffle(Module):
    """Rearranges [*, C * r^2, H, W] into [*, C, H * r, W * r] (torch.nn.PixelShuffle),
    with reshapes and a permute.

    Args:
        upscale_factor: r.
    """

    def __init__(self, upscale_factor: int) -> None:
        if upscale_factor < 1:
            raise ValueRangeError("PixelShuffle", "upscale_factor must be >= 1",
                                  upscale_factor=upscale_factor)
        self.upscale_factor = upscale_factor

    def forward(self, x: Tensor) -> Tensor:
        """Args:
            x: [*, C * r^2, H, W].
        Returns:
            [*, C, H * r, W * r].
        Raises:
            ShapeError: for fewer than 3 dims or channels not divisible by r^2.
        """
        r = self.upscale_factor
        if x.ndim < 3 or x.shape[-3] % (r * r):
            raise ShapeError("PixelShuffle", f"expected input [*, C * {r * r}, H, W]",
                             x=x.shape)
        *batch, c, h, w = x.shape
        lead = len(batch)
        out = x.reshape(*batch, c // (r * r), r, r, h, w)
        out = out.permute(*range(lead), lead, lead + 3, lead + 1, lead + 4, lead + 2)
        return out.reshape(*batch, c // (r * r), h * r, w * r)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


@dataclass
class InterpolateConfig(LayerConfig):
    """Config of `Interpolate` (same arguments)."""

    size: int | tuple[int, ...] | None = None
    scale_factor: float | tuple[float, ...] | None = None
    mode: str = "nearest"
    align_corners: bool = False
    module = Interpolate
    takes_device = False


@dataclass
class PixelShuffleConfig(LayerConfig):
    """Config of `PixelShuffle`."""

    upscale_factor: int
    module = PixelShuffle
    takes_device = False
