"""Activation modules over `burn.functional`'s activations, plus SwiGlu and PRelu (learned)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from burn import functional as F
from burn.device import Device
from burn.frontend.tensor import Tensor
from burn.nn._layer import LayerConfig, check_input
from burn.nn.init import TORCH_DEFAULT, Initializer, constant
from burn.nn.linear import Linear
from burn.nn.module import Module
from burn.nn.param import Param


class Relu(Module):
    """max(x, 0)."""

    def forward(self, x: Tensor) -> Tensor:
        """Elementwise; any shape."""
        return F.relu(x)


class Gelu(Module):
    """Gaussian error linear unit.

    Args:
        approximate: "none" (exact, erf) or "tanh".
    """

    def __init__(self, approximate: Literal["none", "tanh"] = "none") -> None:
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        """Elementwise; any shape."""
        return F.gelu(x, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Silu(Module):
    """x * sigmoid(x)."""

    def forward(self, x: Tensor) -> Tensor:
        """Elementwise; any shape."""
        return F.silu(x)


class Sigmoid(Module):
    """1 / (1 + exp(-x))."""

    def forward(self, x: Tensor) -> Tensor:
        """Elementwise; any shape."""
        return F.sigmoid(x)


class Tanh(Module):
    """Hyperbolic tangent."""

    def forward(self, x: Tensor) -> Tensor:
        """Elementwise; any shape."""
        return F.tanh(x)


class Mish(Module):
    """x * tanh(softplus(x))."""

    def forward(self, x: Tensor) -> Tensor:
        """Elementwise; any shape."""
        return F.mish(x)


class Selu(Module):
    """Scaled elu with the self-normalising constants."""

    def forward(self, x: Tensor) -> Tensor:
        """Elementwise; any shape."""
        return F.selu(x)


class LeakyRelu(Module):
    """x for x >= 0, negative_slope * x below.

    Args:
        negative_slope: slope below 0.
    """

    def __init__(self, negative_slope: float = 0.01) -> None:
        self.negative_slope = negative_slope

    def forward(self, x: Tensor) -> Tensor:
        """Elementwise; any shape."""
        return F.leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class Softplus(Module):
    """log(1 + exp(beta x)) / beta, linear where beta x > threshold.

    Args:
        beta: sharpness.
        threshold: where it switches to the identity.
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        self.beta, self.threshold = beta, threshold

    def forward(self, x: Tensor) -> Tensor:
        """Elementwise; any shape."""
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Elu(Module):
    """x for x > 0, alpha * (exp(x) - 1) below.

    Args:
        alpha: scale of the negative part.
    """

    def __init__(self, alpha: float = 1.0) -> None:
        self.alpha = alpha

    def forward(self, x: Tensor) -> Tensor:
        """Elementwise; any shape."""
        return F.elu(x, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


class HardSigmoid(Module):
    """clamp(alpha * x + beta, 0, 1). The defaults are Burn's (alpha 0.2); torch's
    nn.Hardsigmoid is alpha = 1/6.

    Args:
        alpha: slope.
        beta: offset.
    """

    def __init__(self, alpha: float = 0.2, beta: float = 0.5) -> None:
        self.alpha, self.beta = alpha, beta

    def forward(self, x: Tensor) -> Tensor:
        """Elementwise; any shape."""
        return F.hard_sigmoid(x, self.alpha, self.beta)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}, beta={self.beta}"


class PRelu(Module):
    """leaky_relu with a learned slope: one shared, or one per channel (dim 1 of the input), as
    torch.nn.PReLU.

    Args:
        num_parameters: 1, or the channel count C.
        init: initial slope.
        device: where the weight lives.
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25,
                 device: Device | str | None = None) -> None:
        self.num_parameters, self.init = num_parameters, init
        self.weight = Param(constant(num_parameters, init, device))

    def forward(self, x: Tensor) -> Tensor:
        """Args:
            x: any shape; [N, C, *] (C = num_parameters) when num_parameters > 1.
        Returns:
            same shape.
        Raises:
            ShapeError: when dim 1 is not num_parameters (for num_parameters > 1).
        """
        if self.num_parameters > 1:
            check_input("PRelu", x, f"[N, C={self.num_parameters}, *]", min_rank=2, dim=1,
                        size=self.num_parameters)
        return F.prelu(x, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class SwiGlu(Module):
    """silu(linear_inner(x)) * linear_outer(x), as Burn's SwiGlu (two Linears d_input ->
    d_output).

    Args:
        d_input: input features.
        d_output: output features.
        bias: whether the Linears have biases (off, as Burn).
        device: where the params live.
        initializer: of both Linears (torch's Linear default when None).
    """

    def __init__(self, d_input: int, d_output: int, bias: bool = False,
                 device: Device | str | None = None,
                 initializer: Initializer | None = None) -> None:
        self.linear_inner = Linear(d_input, d_output, bias, device, initializer)
        self.linear_outer = Linear(d_input, d_output, bias, device, initializer)

    def forward(self, x: Tensor) -> Tensor:
        """Args:
            x: [..., d_input].
        Returns:
            [..., d_output].
        Raises:
            ShapeError: when the last dim is not d_input.
        """
        d_input = self.linear_inner.d_input
        check_input("SwiGlu", x, f"[..., d_input={d_input}]", dim=-1, size=d_input)
        return F.silu(self.linear_inner(x)) * self.linear_outer(x)


@dataclass
class _StatelessConfig(LayerConfig):
    takes_device = False


@dataclass
class ReluConfig(_StatelessConfig):
    """Config of `Relu`."""

    module = Relu


@dataclass
class GeluConfig(_StatelessConfig):
    """Config of `Gelu`."""

    approximate: str = "none"
    module = Gelu


@dataclass
class SiluConfig(_StatelessConfig):
    """Config of `Silu`."""

    module = Silu


@dataclass
class SigmoidConfig(_StatelessConfig):
    """Config of `Sigmoid`."""

    module = Sigmoid


@dataclass
class TanhConfig(_StatelessConfig):
    """Config of `Tanh`."""

    module = Tanh


@dataclass
class MishConfig(_StatelessConfig):
    """Config of `Mish`."""

    module = Mish


@dataclass
class SeluConfig(_StatelessConfig):
    """Config of `Selu`."""

    module = Selu


@dataclass
class LeakyReluConfig(_StatelessConfig):
    """Config of `LeakyRelu`."""

    negative_slope: float = 0.01
    module = LeakyRelu


@dataclass
class SoftplusConfig(_StatelessConfig):
    """Config of `Softplus`."""

    beta: float = 1.0
    threshold: float = 20.0
    module = Softplus


@dataclass
class EluConfig(_StatelessConfig):
    """Config of `Elu`."""

    alpha: float = 1.0
    module = Elu


@dataclass
class HardSigmoidConfig(_StatelessConfig):
    """Config of `HardSigmoid`."""

    alpha: float = 0.2
    beta: float = 0.5
    module = HardSigmoid


@dataclass
class PReluConfig(LayerConfig):
    """Config of `PRelu`: `alpha` is the initial slope (`PRelu`'s `init`, Burn's name)."""

    num_parameters: int = 1
    alpha: float = 0.25
    module = PRelu

    def init(self, device: Device | str | None = None) -> PRelu:
        """Build the PRelu on `device`."""
        return PRelu(self.num_parameters, self.alpha, device)


@dataclass
class SwiGluConfig(LayerConfig):
    """Config of `SwiGlu` (same arguments)."""

    d_input: int
    d_output: int
    bias: bool = False
    initializer: Initializer = TORCH_DEFAULT
    module = SwiGlu
