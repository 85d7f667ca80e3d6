"""Ops taking a dim on 0-d tensors: dim 0 and -1 are accepted (the tensor counts as one dim of
size 1, as torch), other dims are refused with BurnIndexError."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import burn
import burn.functional as F

from .reference import T, check_backward, check_forward, held, op_param

Fn = Callable[..., Any]


def _plain(out: Any) -> Any:
    return tuple(out) if isinstance(out, tuple) else out


#: op -> (burn fn(x, dim), torch fn(x, dim), input dtype, differentiable)
OPS: dict[str, tuple[Fn, Fn, str, bool]] = {
    "sum": (lambda x, d: x.sum(d), lambda x, d: x.sum(d), "float32", True),
    "mean": (lambda x, d: x.mean(d, keepdim=True), lambda x, d: x.mean(d, keepdim=True),
             "float32", True),
    "prod": (lambda x, d: x.prod((d,)), lambda x, d: x.prod(d), "int64", False),
    "max": (lambda x, d: x.max(d), lambda x, d: x.amax(d), "float32", True),
    "min": (lambda x, d: x.min(d, keepdim=True), lambda x, d: x.amin(d, keepdim=True),
            "float64", True),
    "max_dim_with_indices": (lambda x, d: x.max_dim_with_indices(d),
                             lambda x, d: _plain(x.max(d, keepdim=True)), "float32", False),
    "min_dim": (lambda x, d: x.min_dim(d), lambda x, d: x.amin(d, keepdim=True), "int32",
                False),
    "argmax": (lambda x, d: x.argmax(d), lambda x, d: x.argmax(d), "float32", False),
    "argmin": (lambda x, d: x.argmin(d, keepdim=True), lambda x, d: x.argmin(d, keepdim=True),
               "int64", False),
    "var": (lambda x, d: x.var(d, correction=0), lambda x, d: x.var(d, correction=0),
            "float64", False),
    "std": (lambda x, d: x.std(d, correction=0), lambda x, d: x.std(d, correction=0),
            "float32", False),
    "logsumexp": (lambda x, d: x.logsumexp(d), lambda x, d: x.logsumexp(d), "float32", True),
    "softmax": (lambda x, d: F.softmax(x, d), lambda x, d: x.softmax(d), "float32", True),
    "log_softmax": (lambda x, d: F.log_softmax(x, d), lambda x, d: x.log_softmax(d),
                    "float64", True),
    "cummax": (lambda x, d: x.cummax(d), lambda x, d: _plain(x.cummax(d)), "float32", False),
    "cummin": (lambda x, d: x.cummin(d), lambda x, d: _plain(x.cummin(d)), "int64", False),
    "cumsum": (lambda x, d: x.cumsum(d), lambda x, d: x.cumsum(d), "float32", True),
    "cumprod": (lambda x, d: x.cumprod(d), lambda x, d: x.cumprod(d), "int32", False),
    "topk_with_indices": (lambda x, d: x.topk_with_indices(1, d),
                          lambda x, d: _plain(x.topk(1, d)), "float32", False),
    "sort_with_indices": (lambda x, d: x.sort_with_indices(d),
                          lambda x, d: _plain(x.sort(d)), "float32", False),
    "argsort": (lambda x, d: x.argsort(d), lambda x, d: x.argsort(d), "float32", False),
    "squeeze": (lambda x, d: x.squeeze(d), lambda x, d: x.squeeze(d), "float32", True),
    "flip": (lambda x, d: x.flip(d), lambda x, d: x.flip(d), "float32", True),
    "any": (lambda x, d: x.any(d), lambda x, d: x.any(d), "bool", False),
    "all": (lambda x, d: x.all(d, keepdim=True), lambda x, d: x.all(d, keepdim=True), "int32",
            False),
    "any_dim": (lambda x, d: x.any_dim(d), lambda x, d: x.any(d, keepdim=True), "float32",
                False),
}


@pytest.mark.parametrize("name", [op_param(n) for n in OPS])
def test_zero_dim_accepts_dim_0_and_minus_1(name: str, device: burn.Device) -> None:
    fb, ft, dtype, _ = OPS[name]
    dtype = held(dtype, device)
    x = T(np.array(1.5 if "float" in dtype else 3), dtype)
    for d in (0, -1):
        check_forward(lambda a, d=d: fb(a, d), lambda a, d=d: ft(a, d), [x], device)


@pytest.mark.parametrize("name", [op_param(n) for n in OPS])
def test_zero_dim_refuses_other_dims(name: str, device: burn.Device) -> None:
    fb, ft, dtype, _ = OPS[name]
    dtype = held(dtype, device)
    xt = torch.tensor(1.5).to(getattr(torch, dtype))
    with pytest.raises(IndexError):
        ft(xt, 1)
    x = burn.tensor(np.array(1.5 if "float" in dtype else 3), device=device,
                    dtype=getattr(burn, dtype if dtype != "bool" else "bool_"))
    expected = name.split("_with")[0].replace("argsort", "sort")  # argsort is sort's indices
    with pytest.raises(burn.errors.BurnIndexError, match=expected):
        fb(x, 1)


@pytest.mark.parametrize("name", [op_param(n) for n, v in OPS.items() if v[3]])
def test_zero_dim_backward(name: str, grad_device: burn.Device,
                           rng: np.random.Generator) -> None:
    fb, ft, dtype, _ = OPS[name]
    x = T(np.array(0.75), held(dtype, grad_device))
    check_backward(lambda a: fb(a, -1), lambda a: ft(a, -1), [x], grad_device, rng)
