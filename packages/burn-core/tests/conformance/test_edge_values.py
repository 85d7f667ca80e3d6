"""Edge values of arithmetic against torch: signed zeros and infinities of remainder / floor
division, hypot with inf and nan, chunk of empty tensors, mask_fill dtypes, integer division by
zero (a typed error where torch raises ZeroDivisionError)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burn

from .reference import T, check_backward, check_forward, held

INF, NAN = np.inf, np.nan
DIVIDENDS = np.array([3.0, -3.0, 0.0, -0.0, 1.0, -1.0, 5.5, INF, -INF, NAN, 7.0, -7.0])
DIVISORS = np.array([-1.5, 1.5, 2.0, -2.0, 0.1, -0.1, INF, -INF, 0.0, 2.0, -INF, INF])


def _signed(x: np.ndarray) -> np.ndarray:
    """Values with the sign of zeros made visible (copysign(1, x) for zeros)."""
    return np.where(x == 0, np.copysign(1.0, x), x)


@pytest.mark.op("remainder")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_remainder_signed_zero_and_inf(dtype: str, device: burn.Device) -> None:
    a, b = T(DIVIDENDS, dtype), T(DIVISORS, dtype)
    out = check_forward(lambda x, y: x % y, lambda x, y: x % y, [a, b], device)
    lhs, rhs = (torch.from_numpy(v.astype(dtype)) for v in (DIVIDENDS, DIVISORS))
    np.testing.assert_array_equal(_signed(out.to_numpy()), _signed((lhs % rhs).numpy()))
    for s in (-1.5, 1.5, INF):
        got = (burn.tensor(lhs.numpy(), device=device) % s).to_numpy()
        np.testing.assert_array_equal(_signed(got), _signed((lhs % s).numpy()))


@pytest.mark.op("floor_div")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_floor_div_inf_nan_and_rounding(dtype: str, device: burn.Device) -> None:
    a, b = T(DIVIDENDS, dtype), T(DIVISORS, dtype)
    # torch gives -1 for a finite dividend over an infinite divisor of the other sign; burn
    # gives -0 there (docs/differences.md), so those pairs are compared separately.
    same = ~(np.isinf(DIVISORS) & np.isfinite(DIVIDENDS)
             & (np.signbit(DIVIDENDS) != np.signbit(DIVISORS)) & (DIVIDENDS != 0))
    check_forward(lambda x, y: x[same] // y[same], lambda x, y: x[same] // y[same], [a, b],
                  device)
    for s in (2.0, 0.1, -1.5, 0.0):
        check_forward(lambda x, _, s=s: x // s, lambda x, _, s=s: x // s, [a, b], device)


@pytest.mark.op("hypot")
def test_hypot_inf_beats_nan(device: burn.Device) -> None:
    a = T(np.array([NAN, INF, -INF, 3.0, NAN, 0.0]), "float32")
    b = T(np.array([INF, NAN, 1.0, 4.0, 1.0, 0.0]), "float32")
    check_forward(lambda x, y: x.hypot(y), torch.hypot, [a, b], device)


@pytest.mark.op("hypot")
def test_hypot_grad_beside_an_infinite_operand(grad_device: burn.Device,
                                               rng: np.random.Generator) -> None:
    """The finite operand's gradient where the other is infinite: 0, as torch's (it was NaN:
    inf * 0 in the composite's backward). The infinite operand's is held constant here: its
    gradient differs on purpose (ours 0, torch's NaN; docs/differences.md)."""
    a = T(np.array([3.0, -2.0, 0.0, 1e30, 5.0, -0.5]), "float32")
    other = np.array([INF, -INF, INF, -INF, 1.0, 2.0], np.float32)

    def burn_fn(x: burn.Tensor) -> burn.Tensor:
        return x.hypot(x.detach() * 0.0 + burn.tensor(other, device=x.device))

    def torch_fn(x: torch.Tensor) -> torch.Tensor:
        return torch.hypot(x, x.detach() * 0.0 + torch.from_numpy(other))

    check_backward(burn_fn, torch_fn, [a], grad_device, rng)


@pytest.mark.op("chunk")
@pytest.mark.parametrize("n,chunks", [(0, 2), (0, 1), (1, 3), (5, 3), (6, 4)])
def test_chunk_counts(n: int, chunks: int, device: burn.Device) -> None:
    x = T(np.arange(n * 2).reshape(n, 2), "float32")
    check_forward(lambda a: tuple(a.chunk(chunks)), lambda a: a.chunk(chunks), [x], device)


@pytest.mark.op("mask_fill")
@pytest.mark.parametrize("dtype,value", [("int64", 2.5), ("int32", -2.5), ("uint8", -1),
                                         ("bool", 0.0), ("float16", 3)])
def test_mask_fill_keeps_dtype(dtype: str, value: float, device: burn.Device,
                               rng: np.random.Generator) -> None:
    x = T(rng.integers(0, 3, size=(2, 3)), dtype)
    m = T(rng.random((2, 3)) < 0.5, "bool")
    check_forward(lambda a, k: a.mask_fill(k, value), lambda a, k: a.masked_fill(k, value),
                  [x, m], device)


@pytest.mark.op("mask_fill")
def test_mask_fill_refuses_nan_on_ints(device: burn.Device) -> None:
    x = burn.tensor([1, 2], device=device)
    with pytest.raises(burn.errors.ValueRangeError, match="mask_fill"):
        x.mask_fill(burn.tensor([True, False], device=device), float("nan"))


@pytest.mark.op("floor_div")
@pytest.mark.parametrize("op", ["floor_div", "remainder"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_int_division_by_zero_raises(op: str, dtype: str, device: burn.Device) -> None:
    fn = {"floor_div": lambda a, b: a // b, "remainder": lambda a, b: a % b}[op]
    tdt = getattr(torch, dtype)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(torch.tensor([4, 2], dtype=tdt), torch.tensor([2, 0], dtype=tdt))
    x = burn.tensor([4, 2], dtype=getattr(burn, dtype), device=device)
    zero_somewhere = burn.tensor([2, 0], dtype=getattr(burn, dtype), device=device)
    # raised at the call (numpy) or at the next sync point (a device backend's kernel check)
    for divisor in (zero_somewhere, 0):
        with pytest.raises(burn.errors.DivisionByZeroError, match=op):
            fn(x, divisor)
            burn.sync(device)
        with pytest.raises(ZeroDivisionError):
            fn(x, divisor)
            burn.sync(device)
    with pytest.raises(burn.errors.DivisionByZeroError, match=op):
        fn(3, burn.tensor([0], device=device))
        burn.sync(device)
    # float division by zero stays inf / nan, as torch
    check_forward(lambda a: a / 0, lambda a: a / 0, [T(np.array([4, 0]), dtype)], device)


@pytest.mark.op("floor_div")
@pytest.mark.parametrize("op", ["floor_div", "remainder"])
@pytest.mark.parametrize(("dtype", "divisor"), [("int32", 2**32), ("int32", -(2**33)),
                                                 ("int8", 256), ("uint8", 512)])
def test_int_division_by_a_host_int_that_wraps_to_zero_raises(op: str, dtype: str, divisor: int,
                                                               device: burn.Device) -> None:
    """A host int divisor wraps into the tensor's dtype first (as torch): one that wraps to 0
    raises as 0 does; one that wraps elsewhere divides by its wrapped value, as torch's."""
    fn = {"floor_div": lambda a, b: a // b, "remainder": lambda a, b: a % b}[op]
    tdt = getattr(torch, dtype)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(torch.tensor([4, 2], dtype=tdt), divisor)
    x = burn.tensor(np.array([100, 2, 7, 4]), dtype=getattr(burn, dtype), device=device)
    with pytest.raises(burn.errors.DivisionByZeroError, match=f"^{op}: .*divisor={divisor}"):
        fn(x, divisor)
    wraps_to_three = divisor + 3
    check_forward(lambda a: fn(a, wraps_to_three), lambda a: fn(a, wraps_to_three),
                  [T(np.array([100, 2, 7, 4]), dtype)], device)


@pytest.mark.op("remainder")
def test_remainder_backward(grad_device: burn.Device, rng: np.random.Generator) -> None:
    dtype = held("float64", grad_device)
    a = T(np.array([3.2, -3.2, 0.7, 5.1]), dtype)
    b = T(np.array([1.5, 1.5, -1.5, -2.0]), dtype)
    check_backward(lambda x, y: x % y, lambda x, y: x % y, [a, b], grad_device, rng)


@pytest.mark.op("sigmoid")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_activations_and_pow_compute_in_float32(dtype: str,
                                                               device: burn.Device) -> None:
    """float16 / bfloat16 sigmoid, silu, pow, remainder and fmod compute in float32 and round
    once, as torch's (sigmoid's exp(-x) overflowed float16 below -11.09: sigmoid and silu
    gave 0 there; WGSL's float16 pow gave 3 ** 10 = 59136 and 0.000617 ** -1.5 = inf)."""
    tdtype = getattr(torch, dtype)
    rtol = 2e-3 if dtype == "float16" else 1.6e-2
    x = torch.tensor([-20.0, -15.0, -12.0, -11.5, -11.1, -3.0, 0.5, 6.0], dtype=tdtype)
    bx = burn.tensor(x.float().numpy(), device=device, dtype=getattr(burn, dtype))
    for name, want in (("sigmoid", torch.sigmoid(x)), ("silu", torch.nn.functional.silu(x))):
        got = getattr(burn.functional, name)(bx * 1.0)  # (a chain: fused where it can be)
        assert got.dtype == getattr(burn, dtype) and got.shape == tuple(want.shape)
        np.testing.assert_allclose(got.to_numpy().astype(np.float64),
                                   want.double().numpy(), rtol=rtol, atol=0)
    base = torch.tensor([3.0, 9.664, 0.000617, 7.5, -7.5], dtype=tdtype)
    power = torch.tensor([10.0, 4.5, -1.5, 2.0, 3.0], dtype=tdtype)
    bb, bp = (burn.tensor(t.float().numpy(), device=device, dtype=getattr(burn, dtype))
              for t in (base, power))
    for got, want in ((bb ** bp, base ** power), (bb ** 4.5, base ** 4.5),
                      (bb % 0.7, base % 0.7), (bb.fmod(0.7), torch.fmod(base, 0.7))):
        assert got.dtype == getattr(burn, dtype)
        np.testing.assert_allclose(got.to_numpy().astype(np.float64), want.double().numpy(),
                                   rtol=rtol, atol=0)


@pytest.mark.op("neg")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_negated_multiply_add_keeps_the_sign_of_zero(dtype: str, device: burn.Device) -> None:
    """-(a * b + c) is -0.0 where a * b + c is +0.0 (a fused kernel's C compiler folded the
    negation into one fnmsub, -a * b - c, whose exact zero is +0.0), so 1 / r is -inf as in
    torch."""
    a, b, c = ([2.0, 1.5, -0.0, 1.0], [3.0, -2.0, 1.0, 0.5], [-6.0, 3.0, 0.0, -0.5])
    ta, tb, tc = (torch.tensor(v, dtype=getattr(torch, dtype)) for v in (a, b, c))
    want = -(ta * tb + tc)
    ba, bb, bc = (burn.tensor(np.array(v, dtype), device=device) for v in (a, b, c))
    got = -(ba * bb + bc)
    assert got.dtype == getattr(burn, dtype) and got.shape == (4,)
    np.testing.assert_array_equal(_signed(got.to_numpy()), _signed(want.numpy()))
    np.testing.assert_array_equal((1.0 / got).to_numpy(), (1.0 / want).numpy())
