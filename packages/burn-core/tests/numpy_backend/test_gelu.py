"""GELU and erf of the NumPy backend: float32 math stays in float32, values and gradients match
PyTorch, and autodiff records GELU as one op with its own rule."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch

import burn
import burn.functional as F
from burn.backends.numpy import NumpyBackend
from burn.backends.numpy import elementwise as ew

B = NumpyBackend()
MODES = ("none", "tanh")


def _data(dtype: type) -> np.ndarray:
    x = np.random.default_rng(0).standard_normal((8, 257)).astype(np.float64) * 3
    x[0, :7] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, 9.0]
    return x.astype(dtype)


@pytest.fixture
def fdlibm_calls(monkeypatch: pytest.MonkeyPatch) -> list[np.dtype]:
    """The dtypes the float64 erf (fdlibm) is called with."""
    calls: list[np.dtype] = []
    original = ew.erf

    def spy(x: np.ndarray) -> np.ndarray:
        calls.append(x.dtype)
        return original(x)

    monkeypatch.setattr(ew, "erf", spy)
    return calls


@pytest.mark.parametrize("approximate", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_matches_torch(dtype: type, approximate: str, fdlibm_calls: list[np.dtype]) -> None:
    x = _data(dtype)
    out = B.gelu(x, approximate)
    ref = torch.nn.functional.gelu(torch.from_numpy(x), approximate=approximate).numpy()
    assert out.shape == x.shape and out.dtype == x.dtype
    finite = np.isfinite(x)
    tol = 2e-6 if dtype is np.float32 else 1e-14
    np.testing.assert_allclose(out[finite], ref[finite], rtol=tol, atol=tol)
    assert np.isnan(out[0, 0]) and out[0, 1] == np.inf and np.isnan(out[0, 2])
    wide = [np.dtype(np.float64)] if dtype is np.float64 and approximate == "none" else []
    assert fdlibm_calls == wide  # float32 never detours through float64


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_gelu_and_erf_of_half_types_round_the_float32_result(dtype: type) -> None:
    x = _data(np.float32)[:, 7:].astype(dtype)
    wide = x.astype(np.float32)
    gelu, erf = B.gelu(x, "none"), B.float_erf(x)
    assert gelu.dtype == erf.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(gelu, B.gelu(wide, "none").astype(dtype))
    np.testing.assert_array_equal(erf, ew._erf32(wide).astype(dtype))


def test_float32_erf_is_within_a_few_ulp_of_torch(fdlibm_calls: list[np.dtype]) -> None:
    x = np.concatenate([np.linspace(-6, 6, 100_001, dtype=np.float32),
                        np.array([np.inf, -np.inf, 0.0, 1e-38], np.float32)])
    out = B.float_erf(x)
    ref = torch.erf(torch.from_numpy(x)).numpy()
    assert out.dtype == np.float32 and out.shape == x.shape
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=5e-7)
    assert np.isnan(B.float_erf(np.array([np.nan], np.float32)))[0]
    assert fdlibm_calls == []


@pytest.mark.parametrize("approximate", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_gradient_is_one_op_and_matches_torch(dtype: type, approximate: str) -> None:
    device = burn.Device("numpy").profile().autodiff()
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((6, 130)) * 3).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    xb = burn.tensor(x, device=device).require_grad()
    with burn.profile() as prof:
        y = F.gelu(xb, approximate)
    assert [r.record.name for r in prof.records] == ["gelu"]
    grad = xb.grad((y * burn.tensor(g, device=device)).sum().backward())
    xt = torch.from_numpy(x).requires_grad_()
    torch.nn.functional.gelu(xt, approximate=approximate).backward(torch.from_numpy(g))
    assert grad is not None and xt.grad is not None
    assert grad.shape == x.shape and grad.to_numpy().dtype == x.dtype
    tol = 1e-5 if dtype is np.float32 else 1e-12
    np.testing.assert_allclose(grad.to_numpy(), xt.grad.numpy(), rtol=tol, atol=tol)
