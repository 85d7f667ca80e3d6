"""Shared by the layers: the config base and input checks whose errors name the layer."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from burn.device import Device
from burn.errors import DTypeError, ShapeError
from burn.frontend.tensor import Tensor
from burn.nn.init import InitConfig
from burn.nn.module import Module


class LayerConfig(InitConfig):
    """Config of a layer: `init(device)` calls `module(**fields)` (plus `device=` when the
    module has params). `Initializer` fields save as `{"kind": ..., **fields}` and load back."""

    module: ClassVar[type[Module]]
    takes_device: ClassVar[bool] = True

    def init(self, device: Device | str | None = None) -> Any:
        """Build the configured layer on `device` (the default device when None)."""
        kwargs = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore
        if self.takes_device:
            kwargs["device"] = device
        return self.module(**kwargs)


def check_input(layer: str, x: Tensor, expected: str, ranks: tuple[int, ...] | None = None,
                dim: int | None = None, size: int | None = None, min_rank: int = 0) -> None:
    """Raise ShapeError unless `x` has one of `ranks` dims (at least `min_rank`) and
    `x.shape[dim] == size`.

    Args:
        layer: the layer's name, for the message.
        x: the input.
        expected: the expected shape in words, e.g. "[..., d_input=4]".
        ranks: accepted numbers of dims (any when None).
        dim, size: a dim that must have `size` entries (unchecked when None).
        min_rank: the fewest dims accepted.
    Raises:
        ShapeError: naming `layer` and `expected`.
    """
    ok = x.ndim >= min_rank and (ranks is None or x.ndim in ranks)
    if ok and dim is not None and size is not None:
        ok = -x.ndim <= dim < x.ndim and x.shape[dim] == size
    if not ok:
        raise ShapeError(layer, f"expected input {expected}", x=x.shape)


def check_float_input(layer: str, x: Tensor, weight: Tensor) -> None:
    """Raise DTypeError unless `x` is a float tensor of `weight`'s dtype (a float64 input to a
    float32 layer is refused rather than silently promoted).

    Args:
        layer: the layer's name, for the message.
        x: the input.
        weight: a param of the layer, giving its dtype.
    Raises:
        DTypeError: naming `layer` and both dtypes.
    """
    if x.dtype != weight.dtype:
        raise DTypeError(layer, f"expected a {weight.dtype.value} input (the layer's dtype); "
                         "cast the input or the layer", input=x.dtype, layer=weight.dtype)
