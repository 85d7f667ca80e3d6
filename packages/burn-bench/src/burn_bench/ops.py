"""The cheap operation suites (Burn's benchmarks.toml list): for one (bench, size, dtype,
device), the burn call and the PyTorch / numpy calls doing the same work on the same data.

Each builder takes the size scale `n` (the side of the square operands), a numpy dtype name and
a burn device, and returns the candidates' calls keyed by "burn", "torch" and, where numpy has
the op, "numpy". Every burn call ends with `burn.sync(device)` (device synchronisation)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

import burn
import burn.functional as F

Calls = dict[str, Callable[[], object]]
Builder = Callable[[int, str, Any], Calls]


def _data(dtype: str, *shape: int) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(shape).astype(dtype)


def _synced(device: Any, fn: Callable[[], object]) -> Callable[[], object]:
    def call() -> object:
        out = fn()
        burn.sync(device)
        return out
    return call


def _elementwise(n: int, dtype: str, device: Any, burn_fn: Callable[[Any], object],
                 torch_fn: Callable[[Any], object],
                 numpy_fn: Callable[[np.ndarray], object] | None) -> Calls:
    x = _data(dtype, n, n)
    b, t = burn.tensor(x, device=device), torch.from_numpy(x.copy())
    calls: Calls = {"burn": _synced(device, lambda: burn_fn(b)), "torch": lambda: torch_fn(t)}
    if numpy_fn is not None:
        calls["numpy"] = lambda: numpy_fn(x)
    return calls


def unary(n: int, dtype: str, device: Any) -> Calls:
    """`exp(x)` on an n x n tensor."""
    return _elementwise(n, dtype, device, lambda b: b.exp(), torch.exp, np.exp)


def binary(n: int, dtype: str, device: Any) -> Calls:
    """`a * b` on n x n tensors."""
    x, y = _data(dtype, n, n), _data(dtype, n, n)[::-1].copy()
    a, b = burn.tensor(x, device=device), burn.tensor(y, device=device)
    ta, tb = torch.from_numpy(x.copy()), torch.from_numpy(y.copy())
    return {"burn": _synced(device, lambda: a * b), "torch": lambda: ta * tb,
            "numpy": lambda: x * y}


def matmul(n: int, dtype: str, device: Any) -> Calls:
    """`a @ b` of two n x n matrices."""
    x, y = _data(dtype, n, n), _data(dtype, n, n).T.copy()
    a, b = burn.tensor(x, device=device), burn.tensor(y, device=device)
    ta, tb = torch.from_numpy(x.copy()), torch.from_numpy(y.copy())
    return {"burn": _synced(device, lambda: a @ b), "torch": lambda: ta @ tb,
            "numpy": lambda: x @ y}


def reduce(n: int, dtype: str, device: Any) -> Calls:
    """`x.sum(dim=1)` of an n x n tensor."""
    return _elementwise(n, dtype, device, lambda b: b.sum(1), lambda t: t.sum(1),
                        lambda x: x.sum(1))


def softmax(n: int, dtype: str, device: Any) -> Calls:
    """`softmax(x, dim=1)` of an n x n tensor."""
    return _elementwise(n, dtype, device, lambda b: F.softmax(b, 1),
                        lambda t: torch.softmax(t, 1), None)


def custom_gelu(n: int, dtype: str, device: Any) -> Calls:
    """GELU from primitives, `x * 0.5 * (1 + erf(x / sqrt(2)))`, on an n x n tensor.

    What Burn's custom-gelu bench composes: the fusion candidate."""
    root = math.sqrt(2.0)
    return _elementwise(n, dtype, device, lambda b: b * 0.5 * ((b / root).erf() + 1.0),
                        lambda t: t * 0.5 * (torch.erf(t / root) + 1.0), None)


def random(n: int, dtype: str, device: Any) -> Calls:
    """A uniform [0, 1) n x n tensor.

    numpy draws float64 and casts (its generator has no float16)."""
    gen = np.random.default_rng(0)
    tdtype = getattr(torch, dtype)
    return {"burn": _synced(device, lambda: burn.rand(n, n, dtype=dtype, device=device)),
            "torch": lambda: torch.rand(n, n, dtype=tdtype),
            "numpy": lambda: gen.random((n, n)).astype(dtype, copy=False)}


def data(n: int, dtype: str, device: Any) -> Calls:
    """Host data to a tensor and back (`burn.tensor(array).numpy()`), n x n."""
    x = _data(dtype, n, n)
    return {"burn": lambda: burn.tensor(x, device=device).numpy(),
            "torch": lambda: torch.tensor(x).numpy(), "numpy": lambda: np.array(x)}


def autodiff(n: int, dtype: str, device: Any) -> Calls:
    """Forward and backward of `(a @ b).exp().sum()`, n x n leaves.

    The device gets the autodiff decorator when it lacks it."""
    if "autodiff" not in str(device).split("+"):
        device = burn.Device(f"{device}+autodiff")
    x, y = _data(dtype, n, n) / n, _data(dtype, n, n)
    a = burn.tensor(x, device=device).require_grad()
    b = burn.tensor(y, device=device).require_grad()
    ta = torch.from_numpy(x.copy()).requires_grad_()
    tb = torch.from_numpy(y.copy()).requires_grad_()

    def burn_step() -> object:
        grads = (a @ b).exp().sum().backward()
        return a.grad(grads), b.grad(grads)

    def torch_step() -> object:
        ta.grad = tb.grad = None
        (ta @ tb).exp().sum().backward()
        return ta.grad, tb.grad

    return {"burn": _synced(device, burn_step), "torch": torch_step}


def _image(n: int, dtype: str) -> np.ndarray:
    return _data(dtype, 2, 8, n, n)


def conv2d(n: int, dtype: str, device: Any) -> Calls:
    """3x3 convolution, padding 1: batch 2, 8 -> 16 channels, n x n images."""
    x, w = _image(n, dtype), _data(dtype, 16, 8, 3, 3)
    bx, bw = burn.tensor(x, device=device), burn.tensor(w, device=device)
    tx, tw = torch.from_numpy(x.copy()), torch.from_numpy(w.copy())
    return {"burn": _synced(device, lambda: F.conv2d(bx, bw, padding=1)),
            "torch": lambda: torch.nn.functional.conv2d(tx, tw, padding=1)}


def max_pool2d(n: int, dtype: str, device: Any) -> Calls:
    """3x3 max pooling, stride 2: batch 2, 8 channels, n x n images."""
    x = _image(n, dtype)
    bx, tx = burn.tensor(x, device=device), torch.from_numpy(x.copy())
    return {"burn": _synced(device, lambda: F.max_pool2d(bx, 3, stride=2)),
            "torch": lambda: torch.nn.functional.max_pool2d(tx, 3, stride=2)}


#: bench name -> builder of its calls
BUILDERS: dict[str, Builder] = {
    "unary": unary, "binary": binary, "matmul": matmul, "reduce": reduce, "softmax": softmax,
    "custom-gelu": custom_gelu, "random": random, "data": data, "autodiff": autodiff,
    "conv2d": conv2d, "max-pool2d": max_pool2d}
