"""Linear (fully connected) layer."""

from __future__ import annotations

from dataclasses import dataclass

from burn.device import Device
from burn.frontend.tensor import Tensor
from burn.nn._layer import LayerConfig, check_float_input, check_input
from burn.nn.init import TORCH_DEFAULT, Initializer
from burn.nn.module import Module
from burn.nn.param import Param


class Linear(Module):
    """y = x @ weight + bias.

    As Burn (and unlike torch), `weight` is stored [d_input, d_output]: torch's weight is its
    transpose. Weight and bias are drawn from `initializer` with fan_in = d_input and
    fan_out = d_output; the default is torch's U(-1/sqrt(d_input), 1/sqrt(d_input)).

    Args:
        d_input: input features.
        d_output: output features.
        bias: whether to add a learned bias.
        device: where the params live (default device when None).
        initializer: initializer of weight and bias (torch's default when None).
    """

    def __init__(self, d_input: int, d_output: int, bias: bool = True,
                 device: Device | str | None = None,
                 initializer: Initializer | None = None) -> None:
        init = initializer or TORCH_DEFAULT
        self.d_input, self.d_output = d_input, d_output
        self.weight = Param(init.init((d_input, d_output), device, fan_in=d_input,
                                      fan_out=d_output))
        self.bias = (Param(init.init((d_output,), device, fan_in=d_input, fan_out=d_output))
                     if bias else None)

    def forward(self, x: Tensor) -> Tensor:
        """Args:
            x: [..., d_input].
        Returns:
            [..., d_output].
        Raises:
            ShapeError: when the last dim is not d_input. DTypeError: for an input not of the
                layer's dtype.
        """
        shape = x._shape or x.shape
        if not shape or shape[-1] != self.d_input or x._dtype is not self.weight._dtype:
            check_input("Linear", x, f"[..., d_input={self.d_input}]", dim=-1,
                        size=self.d_input)
            check_float_input("Linear", x, self.weight)
        out = x @ self.weight
        return out if self.bias is None else out + self.bias

    def extra_repr(self) -> str:
        return f"d_input={self.d_input}, d_output={self.d_output}, bias={self.bias is not None}"


@dataclass
class LinearConfig(LayerConfig):
    """Config of `Linear` (same arguments)."""

    d_input: int
    d_output: int
    bias: bool = True
    initializer: Initializer = TORCH_DEFAULT
    module = Linear
