"""Burn's names for ops the API has under PyTorch's names (var_bias, var_mean, dot, deg2rad,
sort_descending, argtopk, squeeze_dims, unsqueeze_dims, split_with_sizes, ...) against torch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import burn
from burn.errors import ShapeError, ValueRangeError

from .reference import GRAD_DTYPES, T, check_backward, check_forward, distinct, op_param, rand

#: op -> (burn fn, torch fn, number of inputs, float-only, differentiable)
NAMES: dict[str, tuple[Callable[..., Any], Callable[..., Any], int, bool, bool]] = {
    "var_bias": (lambda x: x.var_bias(1), lambda x: x.var(1, correction=0, keepdim=True), 1,
                 True, True),
    "var_mean": (lambda x: x.var_mean(0), lambda x: torch.var_mean(x, 0, keepdim=True), 1, True,
                 False),
    "var_mean_bias": (lambda x: x.var_mean_bias(-1),
                      lambda x: torch.var_mean(x, -1, correction=0, keepdim=True), 1, True,
                      False),
    "dot": (lambda x, y: x.dot(y), lambda x, y: (x * y).sum(), 2, False, True),
    "deg2rad": (lambda x: x.deg2rad(), torch.deg2rad, 1, False, True),
    "rad2deg": (lambda x: x.rad2deg(), torch.rad2deg, 1, False, True),
    "sort_descending": (lambda x: x.sort_descending(1),
                        lambda x: x.sort(1, descending=True).values, 1, False, True),
    "sort_descending_with_indices": (lambda x: x.sort_descending_with_indices(0),
                                     lambda x: tuple(x.sort(0, descending=True)), 1, False,
                                     False),
    "argsort_descending": (lambda x: x.argsort_descending(),
                           lambda x: x.argsort(-1, descending=True), 1, False, False),
    "argtopk": (lambda x: x.argtopk(2, 1), lambda x: x.topk(2, 1).indices, 1, False, False),
    "squeeze_dim": (lambda x: x.reshape(3, 1, 4).squeeze_dim(-2),
                    lambda x: x.reshape(3, 1, 4).squeeze(-2), 1, False, True),
    "squeeze_dims": (lambda x: x.reshape(1, 3, 4, 1).squeeze_dims([0, -1]),
                     lambda x: x.reshape(3, 4), 1, False, True),
    "unsqueeze_dim": (lambda x: x.unsqueeze_dim(1), lambda x: x.unsqueeze(1), 1, False, True),
    "unsqueeze_dims": (lambda x: x.unsqueeze_dims([0, -1, 2]),
                       lambda x: x.reshape(1, 3, 1, 4, 1), 1, False, True),
    "split_with_sizes": (lambda x: x.split_with_sizes([1, 0, 3], 1),
                         lambda x: list(x.split([1, 3], 1)), 1, False, False),
    "sum_dims": (lambda x: x.sum_dims([0, 1]), lambda x: x.sum((0, 1), keepdim=True), 1, False,
                 True),
    "sum_dims_squeeze": (lambda x: x.sum_dims_squeeze([1]), lambda x: x.sum(1), 1, False, True),
    "mean_dims": (lambda x: x.mean_dims([1, 0]), lambda x: x.mean((0, 1), keepdim=True), 1, True,
                  True),
    "prod_dims": (lambda x: x.prod_dims([-1]), lambda x: x.prod(-1, keepdim=True), 1, False,
                  True),
    "max_dims": (lambda x: x.max_dims([0, 1]), lambda x: x.amax((0, 1), keepdim=True), 1, False,
                 True),
    "min_dims": (lambda x: x.min_dims([1]), lambda x: x.amin(1, keepdim=True), 1, False, True),
    "max_abs_dims": (lambda x: (x + 50).max_abs_dims([0]),  # shifted: no ties of |x|
                     lambda x: (x + 50).abs().amax(0, keepdim=True), 1, False, True),
    "t": (lambda x: x.t(), lambda x: x.t(), 1, False, True),
    "slice_dim": (lambda x: x.slice_dim(1, slice(-1, 0, -2)), lambda x: x[:, [3, 1]], 1, False,
                  True),
    "select_dim": (lambda x: x.select_dim(-2, -1), lambda x: x[-1], 1, False, True),
    "slice_fill": (lambda x: x.slice_fill([slice(1, 3), 2], 5), lambda x: x.index_fill(
        1, torch.tensor([2]), 5).where(torch.arange(3).view(3, 1) >= 1, x), 1, False, True),
}
DTYPES = [("float32", "contiguous"), ("float64", "transposed"), ("int64", "strided"),
          ("int8", "transposed")]


@pytest.mark.parametrize("name,dtype,layout", [op_param(n, d, lay) for n in NAMES
                                               for d, lay in DTYPES
                                               if not NAMES[n][3] or "float" in d])
def test_burn_name(name: str, dtype: str, layout: str, device: burn.Device,
                   rng: np.random.Generator) -> None:
    fb, ft, arity, _, _ = NAMES[name]
    args = [T(distinct(rng, (3, 4), dtype), dtype, layout) for _ in range(arity)]
    check_forward(fb, ft, args, device)


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in NAMES if NAMES[n][4]
                                        for d in GRAD_DTYPES])
def test_burn_name_backward(name: str, dtype: str, grad_device: burn.Device,
                            rng: np.random.Generator) -> None:
    fb, ft, arity, _, _ = NAMES[name]
    args = [T(distinct(rng, (3, 4), dtype), dtype, "transposed") for _ in range(arity)]
    check_backward(fb, ft, args, grad_device, rng)


@pytest.mark.op("t")
def test_transpose_takes_both_dims_or_neither(device: burn.Device,
                                              rng: np.random.Generator) -> None:
    """transpose() is Burn's (the last two dims, as `t`); transpose(d0, d1) torch's."""
    x = T(distinct(rng, (2, 3, 4), "float32"), "float32", "transposed")
    check_forward(lambda t: t.transpose(), lambda t: t.transpose(-2, -1), [x], device)
    check_forward(lambda t: t.transpose(0, 2), lambda t: t.transpose(0, 2), [x], device)
    assert burn.zeros(3, device=device).transpose().shape == (3,)
    with pytest.raises(ValueRangeError, match="transpose"):
        burn.zeros(2, 3, device=device).transpose(1)


@pytest.mark.op("rank")
def test_rank_dims(device: burn.Device) -> None:
    x = burn.zeros(2, 3, 4, device=device)
    assert (x.rank(), x.dims()) == (3, [2, 3, 4])
    assert (burn.zeros((), device=device).rank(), burn.zeros(0, device=device).dims()) == (0, [0])
    assert burn.ones(3, device=device).t().shape == (3,)


@pytest.mark.op("squeeze_dims")
def test_squeeze_dims_refuses_sizes(device: burn.Device, rng: np.random.Generator) -> None:
    x = burn.tensor(rand(rng, (2, 1, 3), "float32"), device=device)
    for fn in (lambda: x.squeeze_dim(0), lambda: x.squeeze_dims([1, 2])):
        with pytest.raises(ShapeError, match="squeeze_dims"):
            fn()
