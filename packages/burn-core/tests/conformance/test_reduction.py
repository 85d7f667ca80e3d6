"""Reductions, scans and sorting against torch, forward and backward.

Data for max / min / sort / topk / cummax / arg* has no ties (`distinct`), so indices and
gradients are unambiguous.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import burn

from .reference import (
    GRAD_DTYPES,
    Domain,
    T,
    check_backward,
    check_forward,
    distinct,
    op_param,
    rand,
)

Fn = Callable[..., Any]
SHAPE = (3, 4, 5)
LOW_PRECISION_SHAPE = (3, 4, 2)  # fewer rounded terms per reduction in float16 / bfloat16


def _values(out: Any) -> Any:
    """torch's (values, indices) named tuples as plain tuples."""
    return tuple(out) if isinstance(out, tuple) else out


#: op -> list of (burn, torch) variants over a [3, 4, 5] input.
FULL_AND_DIMS: dict[str, list[tuple[Fn, Fn]]] = {
    "sum": [
        (lambda x: x.sum(), torch.sum),
        (lambda x: x.sum(1), lambda x: torch.sum(x, 1)),
        (lambda x: x.sum(dim=(0, 2), keepdim=True), lambda x: torch.sum(x, (0, 2), keepdim=True)),
        (lambda x: x.sum(-1, keepdim=False), lambda x: torch.sum(x, -1)),
    ],
    "mean": [
        (lambda x: x.mean(), torch.mean),
        (lambda x: x.mean(0), lambda x: torch.mean(x, 0)),
        (lambda x: x.mean(dim=(1, 2), keepdim=True), lambda x: torch.mean(x, (1, 2), keepdim=True)),
    ],
    "prod": [
        (lambda x: x.prod(), torch.prod),
        (lambda x: x.prod(2), lambda x: torch.prod(x, 2)),
        (lambda x: x.prod(dim=1, keepdim=True), lambda x: torch.prod(x, 1, keepdim=True)),
    ],
    "max": [
        (lambda x: x.max(), torch.amax),
        (lambda x: x.max(1), lambda x: torch.amax(x, 1)),
        (lambda x: x.max(dim=(0, 2), keepdim=True), lambda x: torch.amax(x, (0, 2), keepdim=True)),
    ],
    "min": [
        (lambda x: x.min(), torch.amin),
        (lambda x: x.min(-1), lambda x: torch.amin(x, -1)),
        (lambda x: x.min(dim=0, keepdim=True), lambda x: torch.amin(x, 0, keepdim=True)),
    ],
    "var": [
        (lambda x: x.var(), torch.var),
        (lambda x: x.var(1), lambda x: torch.var(x, 1)),
        (lambda x: x.var(dim=(0, 2), correction=0, keepdim=True),
         lambda x: torch.var(x, (0, 2), correction=0, keepdim=True)),
        (lambda x: x.var(-1, correction=2), lambda x: torch.var(x, -1, correction=2)),
    ],
    "std": [
        (lambda x: x.std(), torch.std),
        (lambda x: x.std(dim=(0, 2), correction=0, keepdim=True),
         lambda x: torch.std(x, (0, 2), correction=0, keepdim=True)),
    ],
    "logsumexp": [
        (lambda x: x.logsumexp(1), lambda x: torch.logsumexp(x, 1)),
        (lambda x: x.logsumexp((0, -1), keepdim=True),
         lambda x: torch.logsumexp(x, (0, -1), keepdim=True)),
        (lambda x: burn.functional.logsumexp(x, -1), lambda x: torch.logsumexp(x, -1)),
    ],
    "sum_dim": [(lambda x, d=d: x.sum_dim(d), lambda x, d=d: torch.sum(x, d, keepdim=True))
                for d in (0, 2, -2)],
    "mean_dim": [(lambda x, d=d: x.mean_dim(d), lambda x, d=d: torch.mean(x, d, keepdim=True))
                 for d in (0, 2)],
    "prod_dim": [(lambda x, d=d: x.prod_dim(d), lambda x, d=d: torch.prod(x, d, keepdim=True))
                 for d in (1, -1)],
    "max_dim": [(lambda x, d=d: x.max_dim(d), lambda x, d=d: torch.amax(x, d, keepdim=True))
                for d in (0, 2)],
    "min_dim": [(lambda x, d=d: x.min_dim(d), lambda x, d=d: torch.amin(x, d, keepdim=True))
                for d in (1, -1)],
    "max_dim_with_indices": [
        (lambda x, d=d: x.max_dim_with_indices(d),
         lambda x, d=d: _values(torch.max(x, d, keepdim=True))) for d in (0, 2)],
    "min_dim_with_indices": [
        (lambda x, d=d: x.min_dim_with_indices(d),
         lambda x, d=d: _values(torch.min(x, d, keepdim=True))) for d in (1, -1)],
    "argmax": [
        (lambda x: x.argmax(), torch.argmax),
        (lambda x: x.argmax(1), lambda x: torch.argmax(x, 1)),
        (lambda x: x.argmax(dim=-1, keepdim=True), lambda x: torch.argmax(x, -1, keepdim=True)),
    ],
    "argmin": [
        (lambda x: x.argmin(), torch.argmin),
        (lambda x: x.argmin(0), lambda x: torch.argmin(x, 0)),
        (lambda x: x.argmin(dim=2, keepdim=True), lambda x: torch.argmin(x, 2, keepdim=True)),
    ],
    "cumsum": [(lambda x, d=d: x.cumsum(d), lambda x, d=d: torch.cumsum(x, d)) for d in (0, 2)],
    "cumprod": [(lambda x, d=d: x.cumprod(d), lambda x, d=d: torch.cumprod(x, d))
                for d in (1, -1)],
    "cummax": [(lambda x, d=d: x.cummax(d), lambda x, d=d: _values(torch.cummax(x, d)))
               for d in (0, 2)],
    "cummin": [(lambda x, d=d: x.cummin(d), lambda x, d=d: _values(torch.cummin(x, d)))
               for d in (1, -1)],
    "topk": [
        (lambda x: x.topk(2), lambda x: torch.topk(x, 2).values),
        (lambda x: x.topk(3, dim=1, largest=False),
         lambda x: torch.topk(x, 3, dim=1, largest=False).values),
    ],
    "topk_with_indices": [
        (lambda x: x.topk_with_indices(2), lambda x: _values(torch.topk(x, 2))),
        (lambda x: x.topk_with_indices(3, dim=0, largest=False),
         lambda x: _values(torch.topk(x, 3, dim=0, largest=False))),
    ],
    "sort": [
        (lambda x: x.sort(), lambda x: torch.sort(x).values),
        (lambda x: x.sort(dim=0, descending=True),
         lambda x: torch.sort(x, dim=0, descending=True).values),
    ],
    "sort_with_indices": [
        (lambda x: x.sort_with_indices(), lambda x: _values(torch.sort(x))),
        (lambda x: x.sort_with_indices(dim=1, descending=True),
         lambda x: _values(torch.sort(x, dim=1, descending=True))),
    ],
    "argsort": [
        (lambda x: x.argsort(), torch.argsort),
        (lambda x: x.argsort(dim=1, descending=True),
         lambda x: torch.argsort(x, dim=1, descending=True)),
    ],
}
FLOAT_ONLY = {"mean", "var", "std", "logsumexp", "mean_dim"}
#: ops whose int results widen in torch (sum of int32 is int64): ints are checked with int64.
INT64_ONLY = {"sum", "prod", "sum_dim", "prod_dim", "cumsum", "cumprod"}
#: ops that reduce values multiplicatively: inputs near 1 keep them finite in every dtype.
PRODUCTS = {"prod", "prod_dim", "cumprod"}
NOT_DIFFERENTIABLE = {"argmax", "argmin", "argsort"}

FORWARD_DTYPES = [("float32", "contiguous"), ("float64", "transposed"), ("float16", "strided"),
                  ("bfloat16", "contiguous"), ("int64", "transposed"), ("int32", "strided")]


def _data(name: str, rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if name in PRODUCTS:
        if "int" in dtype:
            return rand(rng, shape, dtype, int_range=(-2, 3))
        return rand(rng, shape, dtype, Domain(0.6, 1.4)) * rng.choice([-1, 1], size=shape)
    if name in ("sum", "sum_dim", "mean", "mean_dim", "var", "std", "logsumexp", "cumsum"):
        return rand(rng, shape, dtype)
    return distinct(rng, shape, dtype, spacing=0.25 if "float" in dtype else 1)


def _forward_params() -> list[Any]:
    out = []
    for name in FULL_AND_DIMS:
        for dtype, layout in FORWARD_DTYPES:
            if "int" in dtype and (name in FLOAT_ONLY or (name in INT64_ONLY and dtype != "int64")):
                continue
            out.append(op_param(name, dtype, layout))
    return out


@pytest.mark.parametrize("name,dtype,layout", _forward_params())
def test_reduction_forward(name: str, dtype: str, layout: str, device: burn.Device,
                           rng: np.random.Generator) -> None:
    # float16 / bfloat16 accumulate rounded values: tolerance scaled for the longest sums
    scale = 4.0 if dtype in ("float16", "bfloat16") and name in (
        "sum", "mean", "var", "std", "logsumexp", "cumsum", "prod", "cumprod") else 1.0
    shape = LOW_PRECISION_SHAPE if dtype in ("float16", "bfloat16") else SHAPE
    x = T(_data(name, rng, shape, dtype), dtype, layout)
    for fb, ft in FULL_AND_DIMS[name]:
        check_forward(fb, ft, [x], device, scale=scale)


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in ("sum", "prod", "sum_dim",
                                                                 "mean", "cumsum")
                                        for d in ("float32", "int64") if not (
                                            n == "mean" and d == "int64")])
def test_reduction_empty_and_0d(name: str, dtype: str, device: burn.Device,
                                rng: np.random.Generator) -> None:
    """Reductions of empty tensors give the identity (mean: nan); 0-d tensors reduce to 0-d."""
    empty = T(np.zeros((0, 3)), dtype)
    fb, ft = {"sum": (lambda x: x.sum(), torch.sum), "prod": (lambda x: x.prod(), torch.prod),
              "sum_dim": (lambda x: x.sum_dim(0), lambda x: torch.sum(x, 0, keepdim=True)),
              "mean": (lambda x: x.mean(), torch.mean),
              "cumsum": (lambda x: x.cumsum(0), lambda x: torch.cumsum(x, 0))}[name]
    check_forward(fb, ft, [empty], device)
    check_forward(fb, ft, [T(rand(rng, (), dtype), dtype)], device)


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in FULL_AND_DIMS
                                        if n not in NOT_DIFFERENTIABLE for d in GRAD_DTYPES])
def test_reduction_backward(name: str, dtype: str, grad_device: burn.Device,
                            rng: np.random.Generator) -> None:
    x = T(_data(name, rng, SHAPE, dtype), dtype, "transposed")
    for fb, ft in FULL_AND_DIMS[name]:
        check_backward(lambda a, fb=fb: _first(fb(a)), lambda a, ft=ft: _first(ft(a)), [x],
                       grad_device, rng)


def _first(out: Any) -> Any:
    return out[0] if isinstance(out, (tuple, list)) else out


@pytest.mark.op("topk")
def test_topk_k_equals_size(device: burn.Device, rng: np.random.Generator) -> None:
    x = T(distinct(rng, (2, 4), "float32"), "float32")
    check_forward(lambda a: a.topk(4), lambda a: torch.topk(a, 4).values, [x], device)
    check_forward(lambda a: a.topk(0), lambda a: torch.topk(a, 0).values, [x], device)


@pytest.mark.op("logsumexp")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_logsumexp_infinite_rows(dtype: str, device: burn.Device, grad_device: burn.Device,
                                 rng: np.random.Generator) -> None:
    """Rows of -inf give -inf (not nan) and rows holding +inf give +inf, as torch; large values
    do not overflow; the gradient of finite rows is the softmax."""
    inf = np.inf
    x = T(np.array([[-inf, -inf, -inf], [1.0, inf, 2.0], [1000.0, 1000.0, -inf]]), dtype)
    check_forward(lambda a: a.logsumexp(1), lambda a: torch.logsumexp(a, 1), [x], device)
    big = T(np.array([[1000.0, 999.0, -1000.0], [-1e4, 0.5, 3.0]]), dtype)
    check_backward(lambda a: a.logsumexp(-1), lambda a: torch.logsumexp(a, -1), [big],
                   grad_device, rng)
