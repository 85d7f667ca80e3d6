"""NaN, infinities, signed zeros and extreme magnitudes through `sign`, `pow` and `remainder`
against torch (every backend: the cube lowerings and WGSL's pow and fmod helpers handle them
explicitly)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burn

from .reference import T, check_forward, flushes_subnormals, normal_or_zero

#: Bases and exponents with NaN, +-inf, +-0 and the integer / parity cases of pow.
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 0.25]
EXPONENTS = [2.0, 3.0, -1.0, -2.0, 0.0, 2.5, np.nan, np.inf, -np.inf]


@pytest.mark.op("sign")
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_sign_of_nan_and_zeros(dtype: str, device: burn.Device) -> None:
    """sign(NaN) = 0 and sign(-0.0) = 0 as torch; on a transposed view and 0-d too."""
    values = np.array(SPECIAL)
    for x in (T(values, dtype), T(np.stack([values, values[::-1]]), dtype, "transposed"),
              T(np.array(np.nan), dtype)):
        check_forward(lambda a: a.sign(), torch.sign, [x], device)


@pytest.mark.op("powf_scalar")
@pytest.mark.parametrize("exponent", EXPONENTS)
def test_pow_scalar_special_values(exponent: float, device: burn.Device) -> None:
    """x ** e for special bases: NaN propagates except x ** 0 = 1 ** e = 1; 0 ** -e = inf
    (-inf for -0 to an odd power); a negative base to an infinite power is even; also as lines
    (four elements) and strided."""
    x = T(np.array(SPECIAL), "float32")
    check_forward(lambda a: a ** exponent, lambda a: a ** exponent, [x], device)
    lines = T(np.array(SPECIAL[:8]), "float32")
    check_forward(lambda a: a ** exponent, lambda a: a ** exponent, [lines], device)
    grid = T(np.stack([np.array(SPECIAL)] * 2), "float32", "transposed")
    check_forward(lambda a: a ** exponent, lambda a: a ** exponent, [grid], device)


@pytest.mark.op("powf")
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_pow_tensor_special_values(dtype: str, device: burn.Device) -> None:
    """Every special base to every special exponent (broadcast grid)."""
    base = T(np.array(SPECIAL)[:, None], dtype)
    exponent = T(np.array(EXPONENTS)[None, :], dtype)
    check_forward(lambda a, b: a.powf(b), torch.pow, [base, exponent], device)


def _exact_remainder(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """C's fmod (numpy's; torch.fmod loses precision past 2**24 quotients) moved to the
    divisor's sign: the remainder burn computes."""
    with np.errstate(invalid="ignore"):
        m = torch.from_numpy(np.fmod(a.numpy(), b.numpy()))
    return torch.where((m != 0) & ((m < 0) != (b < 0)), m + b, m)


@pytest.mark.op("remainder")
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_remainder_exact_for_huge_quotients(dtype: str, device: burn.Device) -> None:
    """Dividends and divisors over the whole range (subnormals, quotients past the float max):
    the remainder is exact (torch's `%` loses it, NaN where the quotient overflows). On a
    device that flushes float32 subnormals (docs/differences.md) the cases with a subnormal
    operand, fmod or result are left out: there they are zero by the device's arithmetic."""
    rng = np.random.default_rng(7)
    top = 38 if dtype == "float32" else 4
    a = rng.standard_normal(4000) * 10.0 ** rng.integers(-top - 7, top + 1, 4000)
    b = rng.standard_normal(4000) * 10.0 ** rng.integers(-top - 7, top + 1, 4000)
    a[:4], b[:4] = [3.4e38 if top == 38 else 6.5e4, 1.0, -5.5, 7.0], [0.7, np.inf, 2.0, -np.inf]
    if dtype == "float32" and flushes_subnormals(device):
        a32, b32 = a.astype(np.float32), b.astype(np.float32)
        with np.errstate(invalid="ignore", divide="ignore"):
            fmod = np.fmod(a32, b32)
            exact = _exact_remainder(torch.from_numpy(a32), torch.from_numpy(b32)).numpy()
        keep = normal_or_zero(a32) & normal_or_zero(b32) & normal_or_zero(fmod) & \
            normal_or_zero(exact)
        assert keep[:4].all() and keep.sum() > 3000  # the sweep still covers the range
        a, b = a[keep], b[keep]
    with np.errstate(over="ignore"):
        x, y = T(a, dtype), T(b, dtype)
    check_forward(lambda p, q: p % q, _exact_remainder, [x, y], device)


@pytest.mark.op("powf")
@pytest.mark.parametrize("exponent", [0.5, -0.5, -1.0, -2.0, 2.0, 3.0, 1.5])
def test_pow_scalar_gradients_at_special_values(exponent: float,
                                                grad_device: burn.Device) -> None:
    """x ** s and its gradient at signed zeros, infinities, NaN and negative bases, as torch:
    the exponents torch computes by sqrt / reciprocal / products are computed so, and their
    gradient is pow's, s * x ** (s - 1), the power again by those ops (the composites'
    own gradients gave +inf at -0.0 for s = -0.5 and NaN at zeros for s = -2)."""
    data = np.array([-0.0, 0.0, -np.inf, np.inf, 4.0, -4.0, np.nan, 0.25], np.float32)
    x = burn.tensor(data, device=grad_device).require_grad()
    y = x ** exponent
    grad = x.grad(y.sum().backward())
    tx = torch.from_numpy(data).requires_grad_()
    ty = tx ** exponent
    ty.sum().backward()
    for got, want in ((y, ty.detach()), (grad, tx.grad)):
        values, expected = got.to_numpy(), want.numpy()
        assert values.shape == expected.shape and values.dtype == expected.dtype
        np.testing.assert_allclose(values, expected, rtol=1e-5, equal_nan=True)
        numbers = ~np.isnan(expected)
        np.testing.assert_array_equal(np.signbit(values[numbers]), np.signbit(expected[numbers]))
