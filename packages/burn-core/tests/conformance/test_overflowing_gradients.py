"""Gradients whose textbook composition overflows or rounds away, against torch's direct
rules (found by an edge sweep of the fusion decorator, on every autodiff device): silu and mish
of large finite inputs under an upstream gradient above 1, huber and smooth L1 of differences
that overflow to inf, exact GELU of tiny and subnormal inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burn
import burn.functional as F

from .reference import T, check_backward, held

#: Large finite magnitudes (x * 4 overflows float32), ordinary values and zeros.
LARGE = [3e38, -3e38, 1e38, -1e38, 2.5, -2.5, 0.0, -0.0]


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.op(n))
                                  for n in ("silu", "mish")])
def test_silu_and_mish_of_large_inputs_keep_finite_gradients(
        name: str, grad_device: burn.Device, rng: np.random.Generator) -> None:
    """x sigmoid(x)'s product rule formed g x (inf) before sigmoid's slope (0): NaN, where
    torch's rule g s (1 + x (1 - s)) gives g."""
    x = T(np.array([LARGE, LARGE[::-1]]), "float32")
    upstream = np.full((2, len(LARGE)), 4.0, np.float32)
    check_backward(getattr(F, name), getattr(torch.nn.functional, name), [x], grad_device,
                   rng, upstream=upstream)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.op(n))
                                  for n in ("huber_loss", "smooth_l1_loss")])
def test_losses_of_differences_that_overflow_keep_finite_gradients(
        name: str, grad_device: burn.Device, rng: np.random.Generator) -> None:
    """3e38 - (-3e38) is inf: the quadratic branch not taken sent 0 * inf = NaN back; torch
    gives the linear branch's gradient. A NaN difference still gives NaN (as torch), and a
    difference of exactly delta / beta the quadratic branch's gradient."""
    dtype = held("float32", grad_device)
    x = T(np.array([3e38, -3e38, 1.0, 0.2, -0.7, np.nan, 1.0, 0.5, -0.5]), dtype)
    y = T(np.array([-3e38, 3e38, 0.0, 0.0, 0.0, 0.0, np.nan, 0.0, 0.0]), dtype)
    option = "delta" if name == "huber_loss" else "beta"

    def burn_fn(a: burn.Tensor, b: burn.Tensor) -> burn.Tensor:
        return getattr(F, name)(a, b, reduction="none", **{option: 0.5})

    def torch_fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return getattr(torch.nn.functional, name)(a, b, reduction="none", **{option: 0.5})

    check_backward(burn_fn, torch_fn, [x, y], grad_device, rng)


@pytest.mark.op("gelu")
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_exact_gelu_of_tiny_inputs_has_half_slope(
        dtype: str, grad_device: burn.Device, rng: np.random.Generator) -> None:
    """cdf(x) read back as gelu(x) / x was 0 or 0.6 where gelu(x) is subnormal or rounds
    in float16 (the fusion decorator's rule then), against torch's 0.5."""
    tiny = [6e-8, 3e-7, 1e-6, -1e-6, 1e-4] if dtype == "float16" else \
        [1e-45, 2e-40, -1e-45, 1e-30, -1e-30, 1e-6]
    x = T(np.array(tiny + [0.0, -0.0, 1.5, -1.5]), dtype)
    check_backward(F.gelu, torch.nn.functional.gelu, [x], grad_device, rng)


@pytest.mark.op("gelu")
@pytest.mark.parametrize("approximate", ["tanh", "none"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_gelu_of_large_half_inputs_has_unit_or_zero_slope(
        approximate: str, dtype: str, grad_device: burn.Device,
        rng: np.random.Generator) -> None:
    """The tanh form's x^3 overflowed float16 from |x| = 256: its gradient was NaN there,
    torch's (which computes half dtypes in float32) 1 for large positive and 0 for large
    negative inputs; both forms against torch in float16 and bfloat16."""
    dtype = held(dtype, grad_device)
    x = T(np.array([100.0, 255.0, 300.0, 1000.0, 60000.0, -300.0, -60000.0, 2.0, -2.0, 0.0]),
          dtype)
    check_backward(lambda a: F.gelu(a, approximate=approximate),
                   lambda a: torch.nn.functional.gelu(a, approximate=approximate), [x],
                   grad_device, rng)
