"""cross_entropy with class-index targets (the backend's `cross_entropy` op and its backward)
against torch.nn.functional.cross_entropy: reductions, class weights, ignore_index, label
smoothing, [N, C], [N, C, *] and [C] inputs, empty batches, non-finite and saturated logits,
kept targets whose class weights sum to 0 (and class-probability targets with zero weights)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import burn
import burn.functional as F
from burn.errors import BurnIndexError, DTypeError, ShapeError, ValueRangeError

from .reference import GRAD_DTYPES, Layout, T, check_backward, check_forward, op_param, rand

FORWARD = [("float32", "contiguous"), ("float64", "transposed"), ("bfloat16", "strided"),
           ("float16", "contiguous")]
# (input shape, target shape): classes on dim 1 (or 0 for 1-d input)
SHAPES = [((6, 4), (6,)), ((3, 4, 5), (3, 5)), ((2, 3, 2, 2), (2, 2, 2)), ((5,), ()),
          ((0, 4), (0,))]
OPTIONS: list[dict[str, Any]] = [
    {}, {"reduction": "sum"}, {"reduction": "none"}, {"label_smoothing": 0.3},
    {"weighted": True}, {"weighted": True, "label_smoothing": 0.2, "reduction": "none"},
    {"weighted": True, "reduction": "sum", "ignore_index": 1}, {"ignore_index": 2},
]


def _targets(rng: np.random.Generator, shape: tuple[int, ...], classes: int,
             ignore: int | None = None) -> np.ndarray:
    t = rng.integers(0, classes, size=shape)
    if ignore is not None and t.size:
        t.reshape(-1)[0] = ignore
    return t


def _case(rng: np.random.Generator, xs: tuple[int, ...], ts: tuple[int, ...], dtype: str,
          layout: str, options: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """The arguments (logits, target[, weight]) and keyword options of one call."""
    options = dict(options)
    classes = xs[1] if len(xs) > 1 else xs[0]
    target = _targets(rng, ts, classes, options.get("ignore_index", -100))
    args: list[Any] = [T(rand(rng, xs, dtype) * 3, dtype, layout),  # type: ignore[arg-type]
                       T(target, "int64", grad=False)]
    if options.pop("weighted", False):
        args.append(T(rand(rng, (classes,), dtype) + 2.5, dtype, grad=False))
    return args, options


@pytest.mark.parametrize("name,dtype,layout", [op_param("cross_entropy", d, lay)
                                               for d, lay in FORWARD])
def test_cross_entropy(name: str, dtype: str, layout: str, device: burn.Device,
                       rng: np.random.Generator) -> None:
    for xs, ts in SHAPES:
        for options in OPTIONS:
            args, kw = _case(rng, xs, ts, dtype, layout, options)
            check_forward(lambda *a, o=kw: F.cross_entropy(*a, **o),
                          lambda *a, o=kw: tF.cross_entropy(*a, **o), args, device, upcast=True)


@pytest.mark.parametrize("name,dtype", [op_param("cross_entropy", d) for d in GRAD_DTYPES])
def test_cross_entropy_backward(name: str, dtype: str, grad_device: burn.Device,
                                rng: np.random.Generator) -> None:
    for xs, ts in SHAPES[:4]:
        for options in OPTIONS:
            args, kw = _case(rng, xs, ts, dtype, "transposed", options)
            check_backward(lambda *a, o=kw: F.cross_entropy(*a, **o),
                           lambda *a, o=kw: tF.cross_entropy(*a, **o), args, grad_device, rng)


@pytest.mark.parametrize("name,dtype", [op_param("cross_entropy", d) for d in GRAD_DTYPES])
def test_cross_entropy_special_logits(name: str, dtype: str, grad_device: burn.Device,
                                      rng: np.random.Generator) -> None:
    """Saturated logits (1e4 apart: the loss is exact, the softmax one-hot) in forward and
    backward; nan / inf logits give nan in their row's loss, as torch."""
    logits = rand(rng, (4, 5), dtype)
    logits[0, 2], logits[1, 0] = 1e4, -1e4
    target = np.array([2, 3, 0, 1])
    check_backward(lambda a, t: F.cross_entropy(a, t, reduction="none"),
                   lambda a, t: tF.cross_entropy(a, t, reduction="none"),
                   [T(logits, dtype), T(target, "int64", grad=False)], grad_device, rng)
    logits[2, 1], logits[3, 4] = np.nan, np.inf
    for reduction in ("none", "mean"):
        check_forward(lambda a, t, r=reduction: F.cross_entropy(a, t, reduction=r),
                      lambda a, t, r=reduction: tF.cross_entropy(a, t, reduction=r),
                      [T(logits, dtype), T(target, "int64")], grad_device)


# Ignored rows hold nan / +-inf logits, kept rows are finite: torch skips ignored samples, so
# the loss is finite (and their "none" losses 0); their gradient rows stay what the log-softmax
# backward gives (nan for nan / +inf logits, 0 for -inf), as torch.
IGNORED_OPTIONS: list[dict[str, Any]] = [
    {"reduction": "none"}, {"reduction": "sum"}, {}, {"label_smoothing": 0.25},
    {"weighted": True, "reduction": "none"}, {"weighted": True, "label_smoothing": 0.2},
    {"weighted": True, "label_smoothing": 0.1, "reduction": "sum", "ignore_index": 1},
]


def _ignored_nonfinite_case(rng: np.random.Generator, dtype: str, layout: Layout,
                            options: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """[6, 4] logits: rows 1, 2, 3, 5 ignored with nan, +inf, -inf, and -inf and +inf logits;
    rows 0 and 4 kept and finite."""
    options = dict(options)
    ignore = options.get("ignore_index", -100)
    logits = rand(rng, (6, 4), dtype) * 3
    logits[1, 2], logits[2, 0], logits[3, 3] = np.nan, np.inf, -np.inf
    logits[5, 0], logits[5, 1] = -np.inf, np.inf
    target = np.array([3, ignore, ignore, ignore, 0 if ignore == 1 else 1, ignore])
    args: list[Any] = [T(logits, dtype, layout), T(target, "int64", grad=False)]
    if options.pop("weighted", False):
        args.append(T(rand(rng, (4,), dtype) + 2.5, dtype, grad=False))
    return args, options


@pytest.mark.parametrize("name,dtype,layout", [op_param("cross_entropy", d, lay)
                                               for d, lay in FORWARD])
def test_cross_entropy_ignored_nonfinite(name: str, dtype: str, layout: Layout,
                                         device: burn.Device, rng: np.random.Generator) -> None:
    for options in IGNORED_OPTIONS:
        args, kw = _ignored_nonfinite_case(rng, dtype, layout, options)
        out = check_forward(lambda *a, o=kw: F.cross_entropy(*a, **o),
                            lambda *a, o=kw: tF.cross_entropy(*a, **o), args, device,
                            upcast=True)
        assert np.isfinite(np.asarray(out.to_numpy(), dtype=np.float64)).all(), kw


@pytest.mark.parametrize("name,dtype", [op_param("cross_entropy", d) for d in GRAD_DTYPES])
def test_cross_entropy_ignored_nonfinite_backward(name: str, dtype: str,
                                                  grad_device: burn.Device,
                                                  rng: np.random.Generator) -> None:
    for options in IGNORED_OPTIONS:
        args, kw = _ignored_nonfinite_case(rng, dtype, "transposed", options)
        check_backward(lambda *a, o=kw: F.cross_entropy(*a, **o),
                       lambda *a, o=kw: tF.cross_entropy(*a, **o), args, grad_device, rng)


@pytest.mark.op("cross_entropy")
def test_cross_entropy_all_ignored_mean_is_nan(device: burn.Device) -> None:
    logits = np.ones((2, 3), dtype=np.float32)
    check_forward(F.cross_entropy, tF.cross_entropy,
                  [T(logits, "float32"), T(np.array([-100, -100]), "int64")], device)


# Kept targets whose class weights sum to 0: torch's mean is 0 / 0 (NaN, with smoothing too:
# its NLL and smoothing means are divided apart), its backward divides each kept row by the
# zero total (NaN rows; unsmoothed, +-inf and NaN for weights 1 and -1) and leaves ignored
# rows 0, where a batch with every target ignored keeps zero gradients. Weights of both signs
# with smoothing below 1 are left out: torch's mean may be +-inf there (docs/differences.md).
# (target rows, weights, options)
ZERO_SUM_WEIGHTS = np.array([0.0, 1.5, 0.0])
ZERO_SUM_CASES: list[tuple[list[int], np.ndarray | None, dict[str, Any]]] = [
    *[(rows, ZERO_SUM_WEIGHTS, {"reduction": r, "label_smoothing": s})
      for rows in ([0, 2, 0, 2, 0], [0, -100, 2, -100, 2])
      for r in ("mean", "sum", "none") for s in (0.0, 0.1, 1.0)],
    ([0, 1, 2, 1, 0], ZERO_SUM_WEIGHTS, {"ignore_index": 1, "label_smoothing": 0.2}),
    *[([0, -100, 1, 1, 0], np.array([1.0, -1.0, 0.5]), {"label_smoothing": s})
      for s in (0.0, 1.0)],
    ([0, -100, 1, 1, 0], np.array([1.0, -1.0, 0.5]), {"reduction": "sum", "label_smoothing": 0.3}),
    *[([-100] * 5, w, {"reduction": r, "label_smoothing": s}) for w in (ZERO_SUM_WEIGHTS, None)
      for r in ("mean", "sum") for s in (0.0, 0.1)],
]


def _zero_sum_case(rows: list[int], weight: np.ndarray | None, dtype: str, layout: Layout,
                   rng: np.random.Generator) -> list[Any]:
    """(logits [5, 3], targets[, weight]) of one `ZERO_SUM_CASES` entry."""
    args: list[Any] = [T(rand(rng, (5, 3), dtype) * 3, dtype, layout),
                       T(np.array(rows), "int64", grad=False)]
    return args if weight is None else [*args, T(weight, dtype, grad=False)]


@pytest.mark.parametrize("name,dtype,layout", [op_param("cross_entropy", d, lay)
                                               for d, lay in FORWARD])
def test_cross_entropy_kept_weights_sum_to_zero(name: str, dtype: str, layout: Layout,
                                                device: burn.Device,
                                                rng: np.random.Generator) -> None:
    for rows, weight, kw in ZERO_SUM_CASES:
        check_forward(lambda *a, o=kw: F.cross_entropy(*a, **o),
                      lambda *a, o=kw: tF.cross_entropy(*a, **o),
                      _zero_sum_case(rows, weight, dtype, layout, rng), device, upcast=True)


@pytest.mark.parametrize("name,dtype", [op_param("cross_entropy", d)
                                        for d in (*GRAD_DTYPES, "float16")])
def test_cross_entropy_kept_weights_sum_to_zero_backward(name: str, dtype: str,
                                                         grad_device: burn.Device,
                                                         rng: np.random.Generator) -> None:
    for rows, weight, kw in ZERO_SUM_CASES:
        check_backward(lambda *a, o=kw: F.cross_entropy(*a, **o),
                       lambda *a, o=kw: tF.cross_entropy(*a, **o),
                       _zero_sum_case(rows, weight, dtype, "transposed", rng), grad_device, rng)


@pytest.mark.parametrize("name,dtype", [op_param("cross_entropy", d) for d in GRAD_DTYPES])
def test_cross_entropy_probabilities_zero_weights(name: str, dtype: str,
                                                  grad_device: burn.Device,
                                                  rng: np.random.Generator) -> None:
    """Class-probability targets are averaged over samples, not weights: zero class weights
    give a finite loss and gradients, as torch."""
    logits = rand(rng, (4, 3), dtype) * 3
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    for weight in (np.zeros(3), ZERO_SUM_WEIGHTS):
        for kw in ({}, {"label_smoothing": 0.1}, {"reduction": "none"}):
            check_backward(lambda *a, o=kw: F.cross_entropy(*a, **o),
                           lambda *a, o=kw: tF.cross_entropy(*a, **o),
                           [T(logits, dtype), T(probs[::-1], dtype, grad=False),
                            T(weight, dtype, grad=False)], grad_device, rng)


@pytest.mark.op("cross_entropy")
def test_cross_entropy_errors(device: burn.Device) -> None:
    x = burn.zeros(3, 5, device=device)
    target = burn.tensor([0, 1, 2], device=device)
    with pytest.raises(BurnIndexError, match=r"cross_entropy: index 5 out of range \[0, 5\)"):
        F.cross_entropy(x, burn.tensor([0, 5, 2], device=device))
        burn.sync(device)
    with pytest.raises(BurnIndexError, match=r"cross_entropy: index -1 out of range"):
        F.cross_entropy(x, burn.tensor([0, -1, 2], device=device), ignore_index=-100)
        burn.sync(device)
    with pytest.raises(ShapeError, match="cross_entropy"):
        F.cross_entropy(x, burn.tensor([0, 1], device=device))
    with pytest.raises(ShapeError, match="cross_entropy"):  # 0-d logits have no class dim
        F.cross_entropy(burn.tensor(1.0, device=device), burn.tensor(0, device=device))
    with pytest.raises(ShapeError, match="weight"):
        F.cross_entropy(x, target, burn.ones(4, device=device))
    with pytest.raises(DTypeError, match="cross_entropy: a class-index target must be an int"):
        F.cross_entropy(x, burn.tensor([0.0, 1.0, 2.0], device=device))
    with pytest.raises(DTypeError, match="weight"):
        F.cross_entropy(x, target, burn.ones(5, dtype=burn.int32, device=device))
    with pytest.raises(ValueRangeError, match="reduction"):
        F.cross_entropy(x, target, reduction="avg")  # type: ignore[arg-type]
    with pytest.raises(ValueRangeError, match="label_smoothing"):
        F.cross_entropy(x, target, label_smoothing=1.5)
    with pytest.raises(IndexError):  # torch refuses an out-of-range class as well
        tF.cross_entropy(torch.zeros(3, 5), torch.tensor([0, 5, 2]))
