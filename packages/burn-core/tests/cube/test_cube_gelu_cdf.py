"""The cube backends' `gelu_with_cdf` / `gelu_backward_from_cdf` (`backends/cube/math.py`),
which Autodiff's exact GELU rule uses: forward values and input gradients against torch in
float64 on cpu and wgpu, float32 / float64 (cpu) / float16, over 0, +-inf, NaN, large and
tiny values; one backward kernel; the tanh form and checkpointing keep their rules."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import burn
import burn.functional as F
from burn.backends.cube import math as cube_math

DEVICES = {"cpu": ["float32", "float64", "float16"], "wgpu": ["float32", "float16"]}
TOL = {"float32": 1e-6, "float64": 1e-12, "float16": 2e-3}


def _values(dtype: str) -> np.ndarray:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 37)) * 3
    x[0, :8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 30.0, -30.0, 1e-30]
    return x.astype(dtype)


def _launched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records the `MATH` kernels run from now on."""
    keys: list[str] = []
    real = cube_math.run_math

    def run_math(backend: Any, key: str, tensors: list[Any], scalars: list[Any]) -> Any:
        keys.append(key)
        return real(backend, key, tensors, scalars)

    monkeypatch.setattr(cube_math, "run_math", run_math)
    return keys


@pytest.mark.parametrize("device,dtype", [(d, t) for d, ts in DEVICES.items() for t in ts])
def test_exact_gelu_and_gradient_match_torch(device: str, dtype: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    keys = _launched(monkeypatch)
    x = _values(dtype)
    g = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)
    ad = burn.Device(device).autodiff()
    t = burn.tensor(x, device=ad).require_grad()
    out = F.gelu(t)
    grads = (out * burn.tensor(g, device=ad)).sum().backward()
    grad = t.grad(grads)
    tx = torch.tensor(x.astype(np.float64), requires_grad=True)
    want = torch.nn.functional.gelu(tx)
    (want * torch.from_numpy(g.astype(np.float64))).sum().backward()
    assert tx.grad is not None and grad is not None
    for got, ref in ((out, want.detach().numpy()), (grad, tx.grad.numpy())):
        assert tuple(got.shape) == ref.shape and got.dtype == getattr(burn, dtype)
        values = got.to_numpy().astype(np.float64)
        if dtype == "float16":  # torch's float16 GELU rounds float32 values: compare in that
            ref = ref.astype(np.float16).astype(np.float64)
        np.testing.assert_allclose(values, ref, rtol=TOL[dtype], atol=TOL[dtype],
                                   equal_nan=True)
    assert keys == ["gelu", "gelu_cdf", "gelu_backward_cdf"]


def test_tanh_form_keeps_its_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    keys = _launched(monkeypatch)
    ad = burn.Device("cpu").autodiff()
    t = burn.tensor(_values("float32"), device=ad).require_grad()
    t.grad(F.gelu(t, approximate="tanh").sum().backward())
    assert "gelu_cdf" not in keys and "gelu_backward_cdf" not in keys
