"""Initializers: records (as Burn's `Initializer` enum) and functions (as `torch.nn.init`).

Every initializer builds a new Tensor of a shape on a device (float32 unless `dtype`), drawing
from the device's random generator, so `burn.seed(n, device)` makes it reproducible.

Fans follow torch's convention for a shape [out, in, *kernel]: fan_in = in * prod(kernel),
fan_out = out * prod(kernel). Layers whose weight layout differs (Linear stores [in, out]) pass
`fan_in` / `fan_out` explicitly.
"""

from __future__ import annotations

import dataclasses
import math
import re
from abc import ABC, abstractmethod
from typing import Any, Literal

import numpy as np

import burn
from burn.device import Device
from burn.dtype import DType
from burn.errors import ValueRangeError
from burn.frontend.tensor import Tensor
from burn.nn.config import Config

FanMode = Literal["fan_in", "fan_out"]
Shape = int | tuple[int, ...]
_DeviceLike = Device | str | None


def _shape(shape: Shape) -> tuple[int, ...]:
    return (shape,) if isinstance(shape, int) else tuple(shape)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (torch.nn.init.calculate_gain).

    Args:
        nonlinearity: "linear", "conv*", "sigmoid", "tanh", "relu", "leaky_relu" or "selu".
        param: the negative slope of leaky_relu (0.01 when None).
    Returns:
        The gain.
    Raises:
        ValueRangeError: for an unknown nonlinearity.
    """
    if nonlinearity in ("linear", "sigmoid", "conv1d", "conv2d", "conv3d",
                        "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueRangeError("calculate_gain", "unknown nonlinearity", nonlinearity=nonlinearity)


def fans(shape: Shape) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight shaped [out, in, *kernel], as torch.

    Raises:
        ValueRangeError: for fewer than 2 dims.
    """
    s = _shape(shape)
    if len(s) < 2:
        raise ValueRangeError("fans", "fans need a shape of 2 or more dims (or pass them)",
                              shape=s)
    receptive = math.prod(s[2:])
    return s[1] * receptive, s[0] * receptive


def _fan(op: str, shape: tuple[int, ...], mode: FanMode, fan_in: int | None,
         fan_out: int | None) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueRangeError(op, "mode must be 'fan_in' or 'fan_out'", mode=mode)
    if fan_in is None or fan_out is None:
        default_in, default_out = fans(shape)
        fan_in = default_in if fan_in is None else fan_in
        fan_out = default_out if fan_out is None else fan_out
    fan = fan_in if mode == "fan_in" else fan_out
    if fan <= 0:
        raise ValueRangeError(op, "fan must be positive", shape=shape, mode=mode, fan=fan)
    return fan


def _both_fans(op: str, shape: tuple[int, ...], fan_in: int | None,
               fan_out: int | None) -> int:
    return _fan(op, shape, "fan_in", fan_in, fan_out) + _fan(op, shape, "fan_out", fan_in,
                                                              fan_out)


# --- functions ---
def constant(shape: Shape, value: float, device: _DeviceLike = None,
             dtype: DType = burn.float32) -> Tensor:
    """A tensor filled with `value`."""
    return burn.full(_shape(shape), float(value), dtype=dtype, device=device)


def zeros(shape: Shape, device: _DeviceLike = None, dtype: DType = burn.float32) -> Tensor:
    """A tensor of zeros."""
    return constant(shape, 0.0, device, dtype)


def ones(shape: Shape, device: _DeviceLike = None, dtype: DType = burn.float32) -> Tensor:
    """A tensor of ones."""
    return constant(shape, 1.0, device, dtype)


def uniform(shape: Shape, a: float = 0.0, b: float = 1.0, device: _DeviceLike = None,
            dtype: DType = burn.float32) -> Tensor:
    """Values drawn from U(a, b)."""
    return burn.uniform(_shape(shape), a, b, dtype=dtype, device=device)


def normal(shape: Shape, mean: float = 0.0, std: float = 1.0, device: _DeviceLike = None,
           dtype: DType = burn.float32) -> Tensor:
    """Values drawn from N(mean, std^2)."""
    return burn.normal(_shape(shape), mean, std, dtype=dtype, device=device)


def kaiming_uniform(shape: Shape, gain: float = math.sqrt(2.0), mode: FanMode = "fan_in",
                    fan_in: int | None = None, fan_out: int | None = None,
                    device: _DeviceLike = None, dtype: DType = burn.float32) -> Tensor:
    """He uniform: U(-bound, bound), bound = gain * sqrt(3 / fan) (torch.nn.init.kaiming_uniform_
    with gain = calculate_gain(nonlinearity, a)).

    Args:
        shape: output shape.
        gain: scale (sqrt(2) suits relu; torch's layers use 1/sqrt(3), i.e. a = sqrt(5)).
        mode: which fan to use.
        fan_in, fan_out: override the fans computed from `shape`.
        device, dtype: of the result.
    Returns:
        The tensor.
    """
    s = _shape(shape)
    bound = gain * math.sqrt(3.0 / _fan("kaiming_uniform", s, mode, fan_in, fan_out))
    return uniform(s, -bound, bound, device, dtype)


def kaiming_normal(shape: Shape, gain: float = math.sqrt(2.0), mode: FanMode = "fan_in",
                   fan_in: int | None = None, fan_out: int | None = None,
                   device: _DeviceLike = None, dtype: DType = burn.float32) -> Tensor:
    """He normal: N(0, std^2), std = gain / sqrt(fan). Arguments as `kaiming_uniform`."""
    s = _shape(shape)
    std = gain / math.sqrt(_fan("kaiming_normal", s, mode, fan_in, fan_out))
    return normal(s, 0.0, std, device, dtype)


def xavier_uniform(shape: Shape, gain: float = 1.0, fan_in: int | None = None,
                   fan_out: int | None = None, device: _DeviceLike = None,
                   dtype: DType = burn.float32) -> Tensor:
    """Glorot uniform: U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out))."""
    s = _shape(shape)
    bound = gain * math.sqrt(6.0 / _both_fans("xavier_uniform", s, fan_in, fan_out))
    return uniform(s, -bound, bound, device, dtype)


def xavier_normal(shape: Shape, gain: float = 1.0, fan_in: int | None = None,
                  fan_out: int | None = None, device: _DeviceLike = None,
                  dtype: DType = burn.float32) -> Tensor:
    """Glorot normal: N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out))."""
    s = _shape(shape)
    std = gain * math.sqrt(2.0 / _both_fans("xavier_normal", s, fan_in, fan_out))
    return normal(s, 0.0, std, device, dtype)


def orthogonal(shape: Shape, gain: float = 1.0, device: _DeviceLike = None,
               dtype: DType = burn.float32) -> Tensor:
    """A (semi-)orthogonal matrix, as torch.nn.init.orthogonal_: the normal draw is flattened to
    [shape[0], rest], QR-decomposed (on the host, with numpy) and sign-corrected.

    Raises:
        ValueRangeError: for fewer than 2 dims.
    """
    s = _shape(shape)
    if len(s) < 2:
        raise ValueRangeError("orthogonal", "shape must have 2 or more dims", shape=s)
    rows = s[0]
    cols = math.prod(s) // rows if rows else 0
    flat = normal((rows, cols), device=device, dtype=burn.float64).to_numpy()
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return burn.tensor((gain * q).reshape(s), dtype=dtype, device=device)


# --- records ---
_KINDS: dict[str, type[Initializer]] = {}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@dataclasses.dataclass(frozen=True)
class Initializer(ABC):
    """Base of the initializer records (Burn's `Initializer` enum). Layers call `init`; configs
    save one as `{"kind": ..., **fields}`, `kind` being the snake_case class name."""

    kind: str = dataclasses.field(default="", init=False, repr=False, compare=False)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _KINDS[_snake(cls.__name__)] = cls

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", _snake(type(self).__name__))

    @abstractmethod
    def init(self, shape: Shape, device: _DeviceLike = None, dtype: DType = burn.float32,
             fan_in: int | None = None, fan_out: int | None = None) -> Tensor:
        """A new tensor of `shape`.

        Args:
            shape: output shape.
            device, dtype: of the result.
            fan_in, fan_out: fans for the fan-based initializers (computed from `shape`, torch
                style, when None).
        Returns:
            The tensor.
        """

    def to_dict(self) -> dict[str, Any]:
        """`{"kind": ..., **fields}` (JSON-ready)."""
        return dataclasses.asdict(self)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Initializer:
        """The initializer `to_dict` wrote.

        Raises:
            ValueRangeError: for an unknown kind.
        """
        fields = dict(data)
        kind = fields.pop("kind", None)
        if kind not in _KINDS:
            raise ValueRangeError("Initializer.from_dict", "unknown kind", kind=kind,
                                  kinds=sorted(_KINDS))
        return _KINDS[kind](**fields)


@dataclasses.dataclass(frozen=True)
class Constant(Initializer):
    """Every value `value`."""

    value: float

    def init(self, shape: Shape, device: _DeviceLike = None, dtype: DType = burn.float32,
             fan_in: int | None = None, fan_out: int | None = None) -> Tensor:
        return constant(shape, self.value, device, dtype)


@dataclasses.dataclass(frozen=True)
class Zeros(Initializer):
    """Every value 0."""


    def init(self, shape: Shape, device: _DeviceLike = None, dtype: DType = burn.float32,
             fan_in: int | None = None, fan_out: int | None = None) -> Tensor:
        return zeros(shape, device, dtype)


@dataclasses.dataclass(frozen=True)
class Ones(Initializer):
    """Every value 1."""


    def init(self, shape: Shape, device: _DeviceLike = None, dtype: DType = burn.float32,
             fan_in: int | None = None, fan_out: int | None = None) -> Tensor:
        return ones(shape, device, dtype)


@dataclasses.dataclass(frozen=True)
class Uniform(Initializer):
    """U(a, b)."""

    a: float = 0.0
    b: float = 1.0

    def init(self, shape: Shape, device: _DeviceLike = None, dtype: DType = burn.float32,
             fan_in: int | None = None, fan_out: int | None = None) -> Tensor:
        return uniform(shape, self.a, self.b, device, dtype)


@dataclasses.dataclass(frozen=True)
class Normal(Initializer):
    """N(mean, std^2)."""

    mean: float = 0.0
    std: float = 1.0

    def init(self, shape: Shape, device: _DeviceLike = None, dtype: DType = burn.float32,
             fan_in: int | None = None, fan_out: int | None = None) -> Tensor:
        return normal(shape, self.mean, self.std, device, dtype)


@dataclasses.dataclass(frozen=True)
class KaimingUniform(Initializer):
    """He uniform (see `kaiming_uniform`)."""

    gain: float = math.sqrt(2.0)
    mode: FanMode = "fan_in"

    def init(self, shape: Shape, device: _DeviceLike = None, dtype: DType = burn.float32,
             fan_in: int | None = None, fan_out: int | None = None) -> Tensor:
        return kaiming_uniform(shape, self.gain, self.mode, fan_in, fan_out, device, dtype)


@dataclasses.dataclass(frozen=True)
class KaimingNormal(Initializer):
    """He normal (see `kaiming_normal`)."""

    gain: float = math.sqrt(2.0)
    mode: FanMode = "fan_in"

    def init(self, shape: Shape, device: _DeviceLike = None, dtype: DType = burn.float32,
             fan_in: int | None = None, fan_out: int | None = None) -> Tensor:
        return kaiming_normal(shape, self.gain, self.mode, fan_in, fan_out, device, dtype)


@dataclasses.dataclass(frozen=True)
class XavierUniform(Initializer):
    """Glorot uniform (see `xavier_uniform`)."""

    gain: float = 1.0

    def init(self, shape: Shape, device: _DeviceLike = None, dtype: DType = burn.float32,
             fan_in: int | None = None, fan_out: int | None = None) -> Tensor:
        return xavier_uniform(shape, self.gain, fan_in, fan_out, device, dtype)


@dataclasses.dataclass(frozen=True)
class XavierNormal(Initializer):
    """Glorot normal (see `xavier_normal`)."""

    gain: float = 1.0

    def init(self, shape: Shape, device: _DeviceLike = None, dtype: DType = burn.float32,
             fan_in: int | None = None, fan_out: int | None = None) -> Tensor:
        return xavier_normal(shape, self.gain, fan_in, fan_out, device, dtype)


@dataclasses.dataclass(frozen=True)
class Orthogonal(Initializer):
    """(Semi-)orthogonal (see `orthogonal`); fans are ignored."""

    gain: float = 1.0

    def init(self, shape: Shape, device: _DeviceLike = None, dtype: DType = burn.float32,
             fan_in: int | None = None, fan_out: int | None = None) -> Tensor:
        return orthogonal(shape, self.gain, device, dtype)


# torch's default for Linear / Conv weights and biases: kaiming_uniform_(a=sqrt(5)), i.e.
# U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
TORCH_DEFAULT = KaimingUniform(gain=1.0 / math.sqrt(3.0), mode="fan_in")


class InitConfig(Config):
    """Config base for layers with `Initializer` fields: they save as `{"kind": ..., **fields}`
    (also nested in other configs) and load back from it. JSON arrays load as tuples, also
    under union hints such as `int | tuple[int, ...]`."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, dict) and "kind" in value:
                setattr(self, f.name, Initializer.from_dict(value))
            elif isinstance(value, list):
                setattr(self, f.name, tuple(value))
