"""Activations of burn.functional against torch.nn.functional, forward and backward.

Input data keeps away from kinks (relu at 0, hard_sigmoid's corners, softplus' threshold).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import burn
import burn.functional

from .reference import (
    GRAD_DTYPES,
    NUMPY_OF,
    Case,
    Domain,
    Lazy,
    T,
    assert_same,
    build,
    burn_tensor,
    check_backward,
    check_forward,
    held,
    op_param,
    rand,
    to_numpy,
    torch_numpy,
    torch_tensor,
)

Fn = Callable[..., Any]
bF = Lazy(burn.functional)


def _hard_sigmoid(x: torch.Tensor, alpha: float = 0.2, beta: float = 0.5) -> torch.Tensor:
    return torch.clamp(x * alpha + beta, 0.0, 1.0)


def _quiet_softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    """softmax with an extra zero logit (Burn's quiet_softmax), the max detached."""
    m = x.detach().amax(dim, keepdim=True)
    e = (x - m).exp()
    return e / (e.sum(dim, keepdim=True) + (-m).exp())


SMOOTH = Domain(-4, 4)
KINKED = Domain(-4, 4, avoid="zero", margin=0.05)
#: values at least 0.05 away from every integer (the kinks of hardtanh, relu6, threshold, ...).
OFF_INT = Domain(-7, 7, avoid="int", margin=0.05)

#: op -> list of (burn, torch, domain) variants of one input tensor.
ACTIVATIONS: dict[str, list[tuple[Fn, Fn, Domain]]] = {
    "relu": [(bF.relu, tF.relu, KINKED)],
    "leaky_relu": [(bF.leaky_relu, tF.leaky_relu, KINKED),
                   (lambda x: bF.leaky_relu(x, negative_slope=0.2),
                    lambda x: tF.leaky_relu(x, negative_slope=0.2), KINKED)],
    "gelu": [(bF.gelu, tF.gelu, SMOOTH),
             (lambda x: bF.gelu(x, approximate="tanh"),
              lambda x: tF.gelu(x, approximate="tanh"), SMOOTH)],
    "sigmoid": [(bF.sigmoid, torch.sigmoid, Domain(-8, 8))],
    "hard_sigmoid": [(bF.hard_sigmoid, _hard_sigmoid, Domain(-2.3, 2.3)),
                     (lambda x: bF.hard_sigmoid(x, alpha=0.5, beta=0.25),
                      lambda x: _hard_sigmoid(x, 0.5, 0.25), Domain(-0.4, 1.4))],
    "log_sigmoid": [(bF.log_sigmoid, tF.logsigmoid, Domain(-8, 8))],
    "softmax": [(lambda x: bF.softmax(x, -1), lambda x: tF.softmax(x, -1), SMOOTH),
                (lambda x: bF.softmax(x, dim=0), lambda x: tF.softmax(x, dim=0), SMOOTH)],
    "log_softmax": [(lambda x: bF.log_softmax(x, -1), lambda x: tF.log_softmax(x, -1), SMOOTH),
                    (lambda x: bF.log_softmax(x, dim=0), lambda x: tF.log_softmax(x, dim=0),
                     SMOOTH)],
    "softmin": [(lambda x: bF.softmin(x, 1), lambda x: tF.softmin(x, 1), SMOOTH)],
    "silu": [(bF.silu, tF.silu, SMOOTH)],
    "softplus": [(bF.softplus, tF.softplus, SMOOTH),
                 (lambda x: bF.softplus(x, beta=2, threshold=3),
                  lambda x: tF.softplus(x, beta=2, threshold=3), Domain(-4, 1.4))],
    "mish": [(bF.mish, tF.mish, SMOOTH)],
    "elu": [(bF.elu, tF.elu, KINKED),
            (lambda x: bF.elu(x, alpha=0.5), lambda x: tF.elu(x, alpha=0.5), KINKED)],
    "selu": [(bF.selu, tF.selu, KINKED)],
    "tanh": [(bF.tanh, torch.tanh, SMOOTH)],
    "hardtanh": [(bF.hardtanh, tF.hardtanh, OFF_INT),
                 (lambda x: bF.hardtanh(x, -2, 3), lambda x: tF.hardtanh(x, -2, 3), OFF_INT)],
    "relu6": [(bF.relu6, tF.relu6, OFF_INT)],
    "tanhshrink": [(bF.tanhshrink, tF.tanhshrink, SMOOTH)],
    "softsign": [(bF.softsign, tF.softsign, KINKED)],
    "celu": [(bF.celu, tF.celu, KINKED),
             (lambda x: bF.celu(x, alpha=0.5), lambda x: tF.celu(x, alpha=0.5), KINKED)],
    "threshold": [(lambda x: bF.threshold(x, 1.0, -3.0), lambda x: tF.threshold(x, 1.0, -3.0),
                   OFF_INT)],
    "thresholded_relu": [(bF.thresholded_relu, lambda x: torch.where(x > 1, x, 0.0), OFF_INT),
                         (lambda x: bF.thresholded_relu(x, alpha=-1.0),
                          lambda x: torch.where(x > -1, x, 0.0), OFF_INT)],
    "glu": [(lambda x: bF.glu(burn.cat([x, x * 0.5], -1)),
             lambda x: tF.glu(torch.cat([x, x * 0.5], -1)), SMOOTH),
            (lambda x: bF.glu(burn.cat([x, -x], 0), dim=0),
             lambda x: tF.glu(torch.cat([x, -x], 0), dim=0), SMOOTH)],
    "quiet_softmax": [(lambda x: bF.quiet_softmax(x, -1), lambda x: _quiet_softmax(x, -1),
                       SMOOTH),
                      (lambda x: bF.quiet_softmax(x, 1), lambda x: _quiet_softmax(x, 1),
                       Domain(-40, 4))],
}
FORWARD_CASES = [
    Case("float32", ((3, 5),)),
    Case("float64", ((2, 3, 4),), "transposed"),
    Case("float16", ((4, 6),)),
    Case("bfloat16", ((2, 6),), "strided"),
    Case("float32", ((0, 4),)),
]


@pytest.mark.parametrize("name,case", [op_param(n, c, id=f"{n}-{c.id}") for n in ACTIVATIONS
                                       for c in FORWARD_CASES])
def test_activation_forward(name: str, case: Case, device: burn.Device,
                            rng: np.random.Generator) -> None:
    for fb, ft, dom in ACTIVATIONS[name]:
        x = T(rand(rng, case.shapes[0], case.dtype, dom), case.dtype, case.layout)
        check_forward(fb, ft, [x], device)


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in ACTIVATIONS for d in GRAD_DTYPES])
def test_activation_backward(name: str, dtype: str, grad_device: burn.Device,
                             rng: np.random.Generator) -> None:
    for fb, ft, dom in ACTIVATIONS[name]:
        x = T(rand(rng, (3, 5), dtype, dom), dtype, "transposed")
        check_backward(fb, ft, [x], grad_device, rng)


@pytest.mark.parametrize("name", [op_param(n) for n in ("sigmoid", "log_sigmoid", "softplus",
                                                        "softmax", "log_softmax")])
def test_activation_extremes(name: str, device: burn.Device) -> None:
    """Large magnitudes neither overflow nor lose the result (torch's stable formulas)."""
    data = np.array([[-100.0, -30.0, 0.5, 30.0, 100.0]])
    fb, ft, _ = ACTIVATIONS[name][0]
    for dtype in dict.fromkeys(("float32", held("float64", device))):
        check_forward(fb, ft, [T(data, dtype)], device)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.op("gelu")
def test_gelu_near_the_largest_floats(approximate: str, device: burn.Device) -> None:
    """GELU of values past half the largest float32 stays finite (x, not inf: the product with
    x comes after the halving), as torch's float64 GELU rounded to the dtype (torch's own
    float32 exact GELU gives inf there, and NaN at inf, on some builds: 2.11's)."""
    data = np.array([3e38, 2e38, 1.7e38, -3e38, -2e38, 1e30, -1e30, np.inf, 4.0])
    for dtype in dict.fromkeys(("float32", held("float64", device))):
        check_forward(lambda x: bF.gelu(x, approximate=approximate),
                      lambda x: tF.gelu(x.double(), approximate=approximate).to(x.dtype),
                      [T(data, dtype)], device)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.op("gelu")
def test_erf_and_gelu_tails_keep_their_bounds(dtype: str, device: burn.Device) -> None:
    """erf stays in [-1, 1] and the exact GELU of a negative x is never positive, through the
    tails where float32 erf reaches +-1 (|x| in [3, 4.5], GELU's x in [-6.4, -4]), as torch's:
    the float32 rational erf's quotient reached 1.0000002 there, so GELU of x near -5.6 came
    out +3e-7 where torch gives -0.0; values within the forward tolerance of torch."""
    dtype = held(dtype, device)
    tail = np.linspace(3.0, 4.5, 30001)
    erf, gelu = T(np.concatenate([tail, -tail]), dtype), T(-tail * np.sqrt(2.0), dtype)
    got = to_numpy(burn_tensor(erf.data, erf.dtype, device).erf()).astype(np.float64)
    assert got.shape == erf.data.shape and np.abs(got).max() <= 1.0, \
        f"erf beyond +-1: {np.abs(got).max()}"
    got = to_numpy(bF.gelu(burn_tensor(gelu.data, gelu.dtype, device))).astype(np.float64)
    assert got.shape == gelu.data.shape and (got <= 0).all(), \
        f"gelu of a negative x is positive: {got.max()} at {gelu.data[np.argmax(got)]}"
    check_forward(lambda x: x.erf(), torch.erf, [erf], device)
    check_forward(bF.gelu, tF.gelu, [gelu], device)


@pytest.mark.parametrize("dtype,layout", [("float32", "contiguous"), ("float64", "transposed"),
                                          ("float16", "contiguous")])
@pytest.mark.op("prelu")
def test_prelu(dtype: str, layout: str, device: burn.Device, rng: np.random.Generator) -> None:
    x = T(rand(rng, (2, 3, 4), dtype, KINKED), dtype, layout)
    for wshape in ((3,), (1,)):
        w = T(rand(rng, wshape, dtype, Domain(0.05, 0.5)), dtype)
        check_forward(bF.prelu, tF.prelu, [x, w], device)


@pytest.mark.parametrize("dtype", GRAD_DTYPES)
@pytest.mark.op("prelu")
def test_prelu_backward(dtype: str, grad_device: burn.Device, rng: np.random.Generator) -> None:
    x = T(rand(rng, (2, 3, 4), dtype, KINKED), dtype, "transposed")
    for wshape in ((3,), (1,)):
        w = T(rand(rng, wshape, dtype, Domain(0.05, 0.5)), dtype)
        check_backward(bF.prelu, tF.prelu, [x, w], grad_device, rng)


#: ReLU inputs at and around its kink: NaN and both infinities, both zeros, tiny and ordinary
#: magnitudes of both signs.
RELU_SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 2.5, -2.5, 7.0]


#: hardtanh's and relu6's kinks, NaN and values either side.
KINKS = [-1.0, 1.0, 0.0, 6.0, -0.0, 0.5, -1.5, 1.5, 6.5, np.nan, np.inf, -np.inf]


@pytest.mark.parametrize("name", [op_param("hardtanh"), op_param("relu6")])
def test_clamping_activations_at_their_bounds_and_nan(name: str,
                                                      grad_device: burn.Device) -> None:
    """hardtanh and relu6 as torch's: gradient 0 at and past the bounds, 1 inside and at NaN
    (torch's hardtanh_backward keeps the gradient where x is neither <= min nor >= max)."""
    x = T(np.array([KINKS]), "float32")
    g = np.resize(np.array([1.5, -2.0, 0.25], dtype=np.float32), (1, len(KINKS)))
    built = build(x, grad_device, grad=True)
    fb, ft = {"hardtanh": (bF.hardtanh, tF.hardtanh), "relu6": (bF.relu6, tF.relu6)}[name]
    out_b, out_t = fb(built[0]), ft(built[1])
    assert_same(out_b, out_t)
    (out_t * torch_tensor(g, x.dtype)).sum().backward()
    grads = (out_b * burn_tensor(g, x.dtype, grad_device)).sum().backward()
    assert_same(built[2].grad(grads), built[3].grad, phase="backward", what=f"{name} grad")


@pytest.mark.parametrize("name", [op_param("softplus"), op_param("log_sigmoid"),
                                  op_param("mish")])
def test_nan_inputs_have_nan_gradients(name: str, grad_device: burn.Device) -> None:
    """softplus and the activations built on it give a NaN input a NaN gradient, as torch
    (the cap of exp's argument at the threshold is a fill, not a clamp, whose gradient is 0
    at NaN); the other elements' gradients are torch's."""
    x = T(np.array([[np.nan, 1.0, -1.0, 25.0, -25.0, np.nan]]), "float32")
    built = build(x, grad_device, grad=True)
    fb, ft = {"softplus": (bF.softplus, tF.softplus), "log_sigmoid": (bF.log_sigmoid,
              tF.logsigmoid), "mish": (bF.mish, tF.mish)}[name]
    ft(built[1]).sum().backward()
    got = built[2].grad(fb(built[0]).sum().backward())
    assert_same(got, built[3].grad, phase="backward", what=f"{name} grad")
    assert np.isnan(to_numpy(got)).tolist() == [[True, False, False, False, False, True]]


#: Inputs where tanh and sigmoid saturate (their float32 and float64 results are +-1, 0 or 1).
SATURATED = [-1e4, -100.0, -40.0, -20.0, 20.0, 40.0, 100.0, 1e4, np.inf, -np.inf]


@pytest.mark.parametrize("name", [op_param("tanh"), op_param("sigmoid")])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_saturated_gradients_keep_the_sign_of_zero(name: str, dtype: str,
                                                   grad_device: burn.Device) -> None:
    """Where tanh or sigmoid saturates, the gradient is torch's zero with its sign: grad times
    1 - y^2 (1 - y), +0.0 at y = +-1 (1), so the incoming gradient's sign (-(y^2 - 1) gave
    the opposite one)."""
    dtype = held(dtype, grad_device)
    x = T(np.array([SATURATED, SATURATED[::-1]]), dtype)
    g = np.tile(np.array([1.5, -2.0], dtype=np.float32), (2, len(SATURATED) // 2))
    built = build(x, grad_device, grad=True)
    fb = {"tanh": lambda t: t.tanh(), "sigmoid": bF.sigmoid}[name]
    out_b, out_t = fb(built[0]), getattr(torch, name)(built[1])
    (out_t * torch_tensor(g.astype(NUMPY_OF[x.dtype]), x.dtype)).sum().backward()
    grads = (out_b * burn_tensor(g.astype(NUMPY_OF[x.dtype]), x.dtype, grad_device)).sum()\
        .backward()
    got, want = built[2].grad(grads), built[3].grad
    assert_same(got, want, phase="backward", what=f"{name} grad")
    assert (torch_numpy(want) == 0).sum() >= len(SATURATED)  # the inputs do saturate
    np.testing.assert_array_equal(np.signbit(to_numpy(got)), np.signbit(torch_numpy(want)))


@pytest.mark.op("relu_backward")
@pytest.mark.parametrize("dtype,layout", [("float32", "contiguous"), ("float64", "transposed"),
                                          ("float32", "strided"), ("float16", "contiguous"),
                                          ("bfloat16", "transposed")])
def test_relu_backward_at_special_values(dtype: str, layout: str, grad_device: burn.Device,
                                         rng: np.random.Generator) -> None:
    """relu's gradient is torch's threshold_backward of its output: the incoming gradient where
    the output is > 0 or NaN (a NaN input passes it), +0.0 where it is <= 0 (-0.0 included),
    with the gradient's NaN / inf / signed zero passed through as they are."""
    dtype = held(dtype, grad_device)
    x = T(np.stack([RELU_SPECIAL, RELU_SPECIAL[::-1]]), dtype, layout)
    g = np.tile(np.array([1.5, np.nan, -np.inf, -0.0, 3.0], dtype=np.float32), (2, 2))
    built = build(x, grad_device, grad=True)
    out_b, out_t = bF.relu(built[0]), tF.relu(built[1])
    assert_same(out_b, out_t)
    (out_t * torch_tensor(g.astype(NUMPY_OF[x.dtype]), x.dtype)).sum().backward()
    grads = (out_b * burn_tensor(g.astype(NUMPY_OF[x.dtype]), x.dtype, grad_device)).sum()\
        .backward()
    got, want = built[2].grad(grads), built[3].grad
    assert_same(got, want, phase="backward", what="relu grad")
    np.testing.assert_array_equal(np.signbit(to_numpy(got)), np.signbit(torch_numpy(want)))


@pytest.mark.op("relu_backward")
@pytest.mark.parametrize("shape", [(), (0, 3), (4, 0), (7,), (3, 33)])
def test_relu_backward_shapes(shape: tuple[int, ...], grad_device: burn.Device,
                              rng: np.random.Generator) -> None:
    """0-d, empty, odd and line-sized shapes."""
    check_backward(bF.relu, tF.relu, [T(rand(rng, shape, "float32", KINKED), "float32")],
                   grad_device, rng)
