"""Row ops on a row slice (`x[2:]`, `x.chunk(2)[1]`: dense, but starting past the storage's
first row), forward and backward, against torch: the cube backends' rows kernels (softmax,
layer norm and the norms built on it, cross entropy) indexed their storage from its start and
read the first rows instead (found by a training sweep of micro-batches); so did the cpu max
pool backward's scatter with a gradient arriving as such a slice (through `cat`, `stack`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import burn
import burn.functional as F

from .reference import T, check_backward, check_forward, held

#: op -> (burn on the slice, torch on the slice); rows of 16 (softmax's rows kernel takes
#: rows of at least 8 elements).
CASES: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "softmax": (lambda x: F.softmax(x[2:], -1), lambda x: torch.softmax(x[2:], -1)),
    "log_softmax": (lambda x: F.log_softmax(x[2:], -1), lambda x: torch.log_softmax(x[2:], -1)),
    "layer_norm": (lambda x: F.layer_norm(x[3:], 16),
                   lambda x: torch.nn.functional.layer_norm(x[3:], (16,))),
    "group_norm": (lambda x: burn.nn.GroupNorm(4, 16, affine=False, device=x.device)(x[2:]),
                   lambda x: torch.nn.functional.group_norm(x[2:], 4)),
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.op(
    n if n != "group_norm" else "layer_norm")) for n in CASES])
def test_row_ops_of_a_row_slice(name: str, device: burn.Device, grad_device: burn.Device,
                                rng: np.random.Generator) -> None:
    burn_fn, torch_fn = CASES[name]
    x = T(rng.standard_normal((6, 16)), held("float32", device))
    check_forward(burn_fn, torch_fn, [x], device)
    check_backward(burn_fn, torch_fn, [x], grad_device, rng)


@pytest.mark.op("cross_entropy")
@pytest.mark.parametrize("options", [{}, {"reduction": "none"}, {"label_smoothing": 0.1},
                                     {"weight": True}])
def test_cross_entropy_of_row_slices(options: dict[str, Any], device: burn.Device,
                                     grad_device: burn.Device, rng: np.random.Generator
                                     ) -> None:
    """Logits and targets both sliced (a micro-batch of a batch), class weights too."""
    dtype = held("float32", device)
    logits = T(rng.standard_normal((8, 5)), dtype)
    targets = T(rng.integers(0, 5, 8), "int64", grad=False)
    weight = T(rng.uniform(0.5, 2.0, 7), dtype, grad=False)  # sliced to its last 5 classes
    keyword = {k: v for k, v in options.items() if k != "weight"}

    def burn_fn(x: Any, y: Any, w: Any) -> Any:
        return F.cross_entropy(x[3:], y[3:], weight=w[2:] if options.get("weight") else None,
                               **keyword)

    def torch_fn(x: Any, y: Any, w: Any) -> Any:
        return torch.nn.functional.cross_entropy(
            x[3:], y[3:], weight=w[2:] if options.get("weight") else None, **keyword)

    check_forward(burn_fn, torch_fn, [logits, targets, weight], device)
    check_backward(burn_fn, torch_fn, [logits, targets, weight], grad_device, rng)


@pytest.mark.op("layer_norm")
def test_affine_layer_norm_of_a_row_slice(device: burn.Device, grad_device: burn.Device,
                                          rng: np.random.Generator) -> None:
    """With a weight and a bias: their gradients are column sums over the sliced rows."""
    dtype = held("float32", device)
    x, w, b = (T(rng.standard_normal(s), dtype) for s in ((6, 16), (16,), (16,)))

    def burn_fn(x: Any, w: Any, b: Any) -> Any:
        return F.layer_norm(x[3:], 16, w, b)

    def torch_fn(x: Any, w: Any, b: Any) -> Any:
        return torch.nn.functional.layer_norm(x[3:], (16,), w, b)

    check_forward(burn_fn, torch_fn, [x, w, b], device)
    check_backward(burn_fn, torch_fn, [x, w, b], grad_device, rng)


@pytest.mark.op("max_pool2d")
@pytest.mark.parametrize("window", [(2, 2), (2, 3)])
def test_max_pool_backward_of_a_gradient_row_slice(window: tuple[int, int],
                                                   grad_device: burn.Device,
                                                   rng: np.random.Generator) -> None:
    """The pooled output is the second half of a `cat`, so its gradient is a row slice of the
    cat's (non-overlapping windows: the scatter path)."""
    kernel, stride = window
    x = T(rng.standard_normal((2, 3, 7, 8)), held("float32", grad_device))

    def burn_fn(a: Any) -> Any:
        pooled = F.max_pool2d(a, kernel, stride)
        return burn.cat([burn.zeros(pooled.shape, device=a.device), pooled], 0)

    def torch_fn(a: Any) -> Any:
        pooled = torch.nn.functional.max_pool2d(a, kernel, stride)
        return torch.cat([torch.zeros(pooled.shape), pooled], 0)

    check_backward(burn_fn, torch_fn, [x], grad_device, rng)
