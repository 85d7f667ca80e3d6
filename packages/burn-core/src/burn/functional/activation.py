"""Activations (the backend's ActivationOps) on float tensors."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from burn.errors import ShapeError, ValueRangeError
from burn.frontend.validation import norm_dim
from burn.functional._common import float_input

if TYPE_CHECKING:
    from burn.frontend.tensor import Tensor


def _act(op: str, x: Tensor, *args: Any) -> Tensor:
    """Backend activation `op` on float `x` (DTypeError otherwise)."""
    x = float_input(op, "x", x)
    return x._wrap(getattr(x._bk, op)(x._prim, *args))


def relu(x: Tensor) -> Tensor:
    """max(x, 0)."""
    return _act("relu", x)


def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    """x for x > 0, negative_slope * x otherwise (the gradient at 0 is the slope, as torch)."""
    return _act("leaky_relu", x, float(negative_slope))


def prelu(x: Tensor, weight: Tensor) -> Tensor:
    """leaky_relu with a learned slope: `weight` is [1] or [C] (per channel, dim 1 of x).

    Raises:
        ShapeError: when the weight is neither one value nor one per channel.
    """
    x = float_input("prelu", "x", x)
    weight = float_input("prelu", "weight", weight, x)
    shape = x.shape
    if weight.numel() != 1:
        if weight.shape != (shape[1] if len(shape) > 1 else -1,):
            raise ShapeError("prelu", "weight must be [1] or [C] (C = x.shape[1])",
                             x=shape, weight=weight.shape)
        weight = weight.reshape((shape[1],) + (1,) * (len(shape) - 2))
    else:
        weight = weight.reshape(())
    return x._wrap(x._bk.prelu(x._prim, weight._prim))


def gelu(x: Tensor, approximate: Literal["none", "tanh"] = "none") -> Tensor:
    """Gaussian error linear unit (exact, or the tanh approximation).

    Raises:
        ValueRangeError: for another `approximate`.
    """
    if approximate not in ("none", "tanh"):
        raise ValueRangeError("gelu", "approximate must be 'none' or 'tanh'",
                              approximate=approximate)
    return _act("gelu", x, approximate)


def sigmoid(x: Tensor) -> Tensor:
    """1 / (1 + exp(-x))."""
    return _act("sigmoid", x)


def hard_sigmoid(x: Tensor, alpha: float = 0.2, beta: float = 0.5) -> Tensor:
    """clamp(alpha * x + beta, 0, 1)."""
    return _act("hard_sigmoid", x, float(alpha), float(beta))


def log_sigmoid(x: Tensor) -> Tensor:
    """log(sigmoid(x)), computed stably."""
    return _act("log_sigmoid", x)


def _along(op: str, x: Tensor, dim: int) -> Tensor:
    """Backend activation `op(x, dim)`; a 0-d x takes dim 0 / -1 as one element (as torch)."""
    x = float_input(op, "x", x)
    d = norm_dim(op, dim, x.ndim, scalar=True)
    if not x.ndim:
        return _act(op, x.reshape((1,)), 0).reshape(())
    return _act(op, x, d)


def softmax(x: Tensor, dim: int) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim`."""
    return _along("softmax", x, dim)


def log_softmax(x: Tensor, dim: int) -> Tensor:
    """log(softmax(x, dim)), computed stably."""
    return _along("log_softmax", x, dim)


def softmin(x: Tensor, dim: int) -> Tensor:
    """softmax(-x, dim)."""
    return softmax(-float_input("softmin", "x", x), dim)


def silu(x: Tensor) -> Tensor:
    """x * sigmoid(x)."""
    return _act("silu", x)


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, linear where beta x > threshold (as torch)."""
    return _act("softplus", x, float(beta), float(threshold))


def mish(x: Tensor) -> Tensor:
    """x * tanh(softplus(x))."""
    return _act("mish", x)


def elu(x: Tensor, alpha: float = 1.0) -> Tensor:
    """x for x > 0, alpha * (exp(x) - 1) below."""
    return _act("elu", x, float(alpha))


def selu(x: Tensor) -> Tensor:
    """Scaled elu with the self-normalising constants."""
    return _act("selu", x)


def tanh(x: Tensor) -> Tensor:
    """Hyperbolic tangent."""
    return _act("float_tanh", x)


def hardtanh(x: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """clamp(x, min_val, max_val), with torch's gradient: 1 strictly inside the bounds and at
    NaN, 0 at and past them.

    Raises:
        ValueRangeError: when min_val > max_val.
    """
    if min_val > max_val:
        raise ValueRangeError("hardtanh", "min_val must not exceed max_val", min_val=min_val,
                              max_val=max_val)
    x = float_input("hardtanh", "x", x)
    # x itself where it is inside (or NaN: torch passes the gradient there, clamp's is 0), the
    # bounds' values detached at and past them (clamp's gradient is 1 at the bounds)
    return x.mask_where((x <= min_val) | (x >= max_val), x.clamp(min_val, max_val).detach())


def relu6(x: Tensor) -> Tensor:
    """min(max(x, 0), 6), with hardtanh's gradient (0 at and past 0 and 6, 1 at NaN)."""
    return hardtanh(float_input("relu6", "x", x), 0.0, 6.0)


def tanhshrink(x: Tensor) -> Tensor:
    """x - tanh(x)."""
    x = float_input("tanhshrink", "x", x)
    return x - x.tanh()


def softsign(x: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    x = float_input("softsign", "x", x)
    return x / (x.abs() + 1.0)


def celu(x: Tensor, alpha: float = 1.0) -> Tensor:
    """x for x > 0, alpha * (exp(x / alpha) - 1) below.

    Raises:
        ValueRangeError: for alpha == 0.
    """
    if alpha == 0:
        raise ValueRangeError("celu", "alpha must not be 0", alpha=alpha)
    x = float_input("celu", "x", x)
    if alpha > 0:  # alpha elu(x / alpha): its exp(x) - 1 is exact for small x
        return x.mask_where(x <= 0, elu(x / alpha) * alpha)
    return x.mask_where(x <= 0, ((x / alpha).exp() - 1.0) * alpha)


def threshold(x: Tensor, threshold: float, value: float) -> Tensor:
    """x where x > threshold, else `value`."""
    x = float_input("threshold", "x", x)
    return x.mask_fill(x <= threshold, value)


def thresholded_relu(x: Tensor, alpha: float = 1.0) -> Tensor:
    """x where x > alpha, else 0 (Burn's and ONNX's ThresholdedRelu)."""
    return threshold(x, alpha, 0.0)


def glu(x: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: first half of `dim` times sigmoid of the second half.

    Raises:
        ShapeError: when the size of `dim` is odd.
    """
    x = float_input("glu", "x", x)
    d = norm_dim("glu", dim, x.ndim)
    n = x.shape[d]
    if n % 2:
        raise ShapeError("glu", "the size of dim must be even", shape=x.shape, dim=dim)
    return x.narrow(d, 0, n // 2) * sigmoid(x.narrow(d, n // 2, n // 2))


def quiet_softmax(x: Tensor, dim: int) -> Tensor:
    """Burn's softmax with an extra zero logit ("off by one"): exp(x - m) / (sum(exp(x - m)) +
    exp(-m)), m the (detached) max along `dim`; rows of very negative logits go to 0."""
    x = float_input("quiet_softmax", "x", x)
    d = norm_dim("quiet_softmax", dim, x.ndim, scalar=True)
    if not x.ndim:
        return quiet_softmax(x.reshape((1,)), 0).reshape(())
    m = x.detach().max_dim(d)
    e = (x - m).exp()
    return e / (e.sum_dim(d) + (-m).exp())
