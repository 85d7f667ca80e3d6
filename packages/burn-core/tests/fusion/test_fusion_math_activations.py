"""The activations the cube backends compute by a builder expression (`FUSED_MATH`: exact and
tanh GELU, softplus, mish, selu, log_sigmoid) are recorded under fusion and fused with the ops
around them, a linear's bias included (one epilogue kernel), against the unfused backend and
PyTorch; float64 ones run alone on the cpu (libm calls keep gcc from vectorizing a fused
loop)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from fusion_testing import DEVICES, LaunchCounter, check, pending

import burn
import burn.functional as F
from burn.fusion import reset_stats, stats

pytestmark = [pytest.mark.parametrize("base", DEVICES), pytest.mark.usefixtures("empty_stream")]
torch.set_num_threads(1)

#: name -> (burn activation, torch activation)
ACTIVATIONS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "gelu": (F.gelu, torch.nn.functional.gelu),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"),
                  lambda x: torch.nn.functional.gelu(x, approximate="tanh")),
    "softplus": (lambda x: F.softplus(x, beta=0.7, threshold=5.0),
                 lambda x: torch.nn.functional.softplus(x, beta=0.7, threshold=5.0)),
    "mish": (F.mish, torch.nn.functional.mish),
    "selu": (F.selu, torch.nn.functional.selu),
    "log_sigmoid": (F.log_sigmoid, torch.nn.functional.logsigmoid),
}


def _data(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    data = (np.random.default_rng(seed).standard_normal(shape) * 4).astype(np.float32)
    data.flat[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, -30.0]
    return data


#: per dtype: torch's (rtol, atol) of the chain (float32: 1 + erf cancels in GELU's negative
#: tail, where the unfused kernel is as far)
TOLERANCES = {"float32": (1e-5, 1e-5), "float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1e-2),
              "float64": (1e-12, 1e-14)}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_fuses_with_its_neighbours(base: str, name: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """`act(x * 0.5 - 1) * 3` in each float dtype of the device: one kernel (four ops
    recorded and fused), equal to the unfused ops (bit for bit on the cpu, whose kernels
    compute the same expression), torch's values within the dtype's rounding. On the cpu a
    float64 activation is a block of its own (three kernels: the ops before it, it, the ops
    after): its erf, tanh, exp or log1p is a libm call, which keeps gcc from vectorizing a
    fused loop."""
    act, torch_act = ACTIVATIONS[name]
    dtypes = [d for d in TOLERANCES if burn.Device(base).backend.supports(getattr(burn, d))]
    assert "float32" in dtypes and "float16" in dtypes
    data = _data((64, 96))
    for dtype in dtypes:
        kind = getattr(burn, dtype)
        x = burn.tensor(data, device=f"{base}+fusion").cast(kind)
        burn.sync(f"{base}+fusion")
        counter = LaunchCounter(monkeypatch, base)
        reset_stats()
        y = act(x * 0.5 - 1.0) * 3.0
        assert pending(y) and counter.take() == 0
        assert y.shape == (64, 96) and y.dtype == kind
        burn.sync(f"{base}+fusion")
        alone = base == "cpu" and dtype == "float64"
        assert counter.take() == (3 if alone else 1), dtype
        assert stats().ops_recorded == 4 and stats().ops_fused == (2 if alone else 4), dtype
        plain = burn.tensor(data, device=base).cast(kind)
        unfused = (act(plain * 0.5 - 1.0) * 3.0).to_numpy().astype(np.float64)
        got = y.to_numpy().astype(np.float64)
        if base == "cpu":
            np.testing.assert_array_equal(got, unfused)
        else:  # (GPU compilers may contract a * b + c into an FMA: an ulp of an intermediate)
            loose = dtype in ("float16", "bfloat16")
            np.testing.assert_allclose(got, unfused, rtol=1e-2 if loose else 1e-5,
                                       atol=1e-2 if loose else 1e-6)
        t = torch.from_numpy(data).to(getattr(torch, dtype)).double()
        want = (torch_act(t * 0.5 - 1.0) * 3.0).to(getattr(torch, dtype))
        rtol, atol = TOLERANCES[dtype]
        if dtype in ("float16", "bfloat16"):  # (numpy has no bfloat16: compared as float32)
            check(y.cast(burn.float32), want.float(), rtol=rtol, atol=atol)
        else:
            check(y, want, rtol=rtol, atol=atol)


@pytest.mark.usefixtures("small_cpu_epilogues_pay")
def test_linear_bias_gelu_is_one_epilogue_kernel(base: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """`gelu(linear(x))` records the product, the bias and the GELU: one kernel a call (on the
    cpu the vendor product and one epilogue kernel, its bound on the elements an epilogue keeps
    out of memory lowered for this small layer; on GPU runtimes the tiled product storing the
    epilogue), through the stream's settling; torch's values."""
    from burn import nn
    from burn.fusion.stream import LONE_SHARED

    dev = f"{base}+fusion"
    burn.seed(0, dev)
    layer = nn.Linear(48, 72, device=dev)
    data = _data((40, 48), seed=2)
    data[0] = 0.0  # (no NaN through the product: every output would be NaN)
    x = burn.tensor(data, device=dev)
    F.gelu(layer(x)).to_numpy()  # the product's autotuning (if any) is not counted
    assert layer.bias is not None
    w, b = (torch.from_numpy(p.to_numpy()) for p in (layer.weight, layer.bias))
    counter = LaunchCounter(monkeypatch, base)
    for _ in range(LONE_SHARED + 2):
        reset_stats()
        y = F.gelu(layer(x))
        burn.sync(dev)
        s = stats()
        assert (s.ops_recorded, s.ops_eager) == (3, 0)
        assert counter.take() == 1 and s.kernels_launched == 1
        assert y.shape == (40, 72) and y.dtype == burn.float32
        check(y, torch.nn.functional.gelu(torch.from_numpy(data) @ w + b), rtol=1e-5, atol=1e-5)


def test_strided_input_and_autodiff_match_torch(base: str) -> None:
    """A transposed input fuses (read through its strides), and Autodiff over the fused
    linear + GELU gives torch's loss and gradients."""
    data = _data((24, 36), seed=3)
    data[:1] = 0.5
    dev = f"{base}+fusion"
    y = F.gelu(burn.tensor(data, device=dev).swap_dims(0, 1) + 1.0, approximate="tanh")
    assert y.shape == (36, 24)
    check(y, torch.nn.functional.gelu(torch.from_numpy(data).T + 1.0, approximate="tanh"),
          rtol=1e-5, atol=2e-6)

    rng = np.random.default_rng(5)
    wd, bd = (rng.standard_normal(s).astype(np.float32) * 0.3 for s in ((36, 20), (20,)))
    ad = f"{base}+fusion+autodiff"
    x = burn.tensor(data, device=ad)
    w, b = (burn.tensor(a, device=ad).require_grad() for a in (wd, bd))
    loss = (F.gelu(x.matmul(w) + b) * F.mish(x.matmul(w))).sum()
    grads = loss.backward()
    tw, tb = (torch.from_numpy(a).requires_grad_() for a in (wd, bd))
    tx = torch.from_numpy(data)
    tloss = (torch.nn.functional.gelu(tx @ tw + tb) * torch.nn.functional.mish(tx @ tw)).sum()
    tloss.backward()
    assert tw.grad is not None and tb.grad is not None
    check(loss, tloss.detach(), rtol=1e-5, atol=1e-4)
    check(w.grad(grads), tw.grad, rtol=1e-4, atol=1e-4)
    check(b.grad(grads), tb.grad, rtol=1e-4, atol=1e-4)
