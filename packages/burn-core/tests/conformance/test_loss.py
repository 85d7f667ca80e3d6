"""cross_entropy with class-index targets (the backend's `cross_entropy` op and its backward)
against torch.nn.functional.cross_entropy: reductions, class weights, ignore_index, label
smoothing, [N, C], [N, C, *] and [C] inputs, empty batches, non-finite and saturated logits,
kept targets whose class weights sum to 0, non-finite output gradients; with class-probability
targets (weights, smoothing, empty inputs); and nll_loss against torch's over the same cases."""

from __future__ import annotations

from collections.abc import Iterator
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


def _weighted(rng: np.random.Generator, args: list[Any], options: dict[str, Any],
              classes: int, dtype: str) -> tuple[list[Any], dict[str, Any]]:
    """`args` with random class weights (`rand` + 2.5) appended where `options` asks for them
    ("weighted", popped), and the remaining keyword options."""
    if options.pop("weighted", False):
        args.append(T(rand(rng, (classes,), dtype) + 2.5, dtype, grad=False))
    return args, options


def _case(rng: np.random.Generator, xs: tuple[int, ...], ts: tuple[int, ...], dtype: str,
          layout: str, options: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """The arguments (logits, target[, weight]) and keyword options of one call."""
    options = dict(options)
    classes = xs[1] if len(xs) > 1 else xs[0]
    target = _targets(rng, ts, classes, options.get("ignore_index", -100))
    args: list[Any] = [T(rand(rng, xs, dtype) * 3, dtype, layout),  # type: ignore[arg-type]
                       T(target, "int64", grad=False)]
    return _weighted(rng, args, options, classes, dtype)


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


@pytest.mark.parametrize("name,dtype", [op_param("cross_entropy", d)
                                        for d in ("float32", "float64")])
def test_cross_entropy_large_logits(name: str, dtype: str, grad_device: burn.Device) -> None:
    """Logits far larger than the loss (rows offset by 1e7 / 1e8 / 1e15): the loss is
    max - x[target] + log(sum of exp(x - max)), never x[target] subtracted from the row's
    log-sum-exp (1e8 + log 2 rounds to 1e8 in float32, which lost the loss), with and without
    label smoothing."""
    offset = 1e15 if dtype == "float64" else 1e8
    logits = np.array([[offset, offset, -offset, 0.0], [1e7, 1e7, 0.0, 1e7 - 2.0],
                       [1000.0, 1001.0, 1002.0, 999.5], [-offset, -offset, -offset, -offset]],
                      dtype)
    target = np.array([0, 3, 0, 2])
    for kw in ({"reduction": "none"}, {"reduction": "none", "label_smoothing": 0.2}, {}):
        check_forward(lambda a, t, o=kw: F.cross_entropy(a, t, **o),
                      lambda a, t, o=kw: tF.cross_entropy(a, t, **o),
                      [T(logits, dtype), T(target, "int64", grad=False)], grad_device)


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
    return _weighted(rng, args, options, 4, dtype)


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


# Non-finite output gradients: torch never touches an ignored sample's gradient row, so it
# stays 0 whatever the output gradient (NaN / inf for "sum" and "mean", or at the ignored
# samples for "none"); kept rows take NaN / inf as the chain rule gives them.
UPSTREAM_OPTIONS: list[dict[str, Any]] = [
    {"reduction": "none"}, {"reduction": "sum"}, {}, {"weighted": True, "reduction": "none"},
    {"weighted": True, "reduction": "sum", "ignore_index": 1},
    {"label_smoothing": 0.2, "reduction": "sum"},
    {"weighted": True, "label_smoothing": 0.2, "reduction": "none"},
]


def _upstreams(reduction: str) -> list[np.ndarray]:
    """Output gradients of `_upstream_case`'s loss: NaN / inf at the ignored rows 1 and 3 and
    NaN at the kept row 4 for "none", else NaN and inf."""
    if reduction == "none":
        return [np.array([0.5, np.nan, -1.0, np.inf, np.nan, 2.0])]
    return [np.array(np.nan), np.array(np.inf)]


def _upstream_case(rng: np.random.Generator, dtype: str, options: dict[str, Any]
                   ) -> tuple[list[Any], dict[str, Any]]:
    """Finite [6, 4] scores with rows 1 and 3 ignored (and their keyword options)."""
    options = dict(options)
    ignore = options.get("ignore_index", -100)
    args: list[Any] = [T(rand(rng, (6, 4), dtype) * 3, dtype, "transposed"),
                       T(np.array([3, ignore, 0, ignore, 2, 0 if ignore == 1 else 1]), "int64",
                         grad=False)]
    return _weighted(rng, args, options, 4, dtype)


@pytest.mark.parametrize("name,dtype", [op_param(op, d) for op in ("cross_entropy", "nll_loss")
                                        for d in GRAD_DTYPES])
def test_index_loss_nonfinite_output_gradient(name: str, dtype: str, grad_device: burn.Device,
                                              rng: np.random.Generator) -> None:
    for options in UPSTREAM_OPTIONS:
        if name == "nll_loss" and "label_smoothing" in options:
            continue
        args, kw = _upstream_case(rng, dtype, options)
        for g in _upstreams(kw.get("reduction", "mean")):
            check_backward(lambda *a, o=kw: getattr(F, name)(*a, **o),
                           lambda *a, o=kw: getattr(tF, name)(*a, **o), args, grad_device, rng,
                           upstream=g)


# nll_loss: a composite of burn ops over log-probabilities (not the backend's cross_entropy):
# the same shapes, weights and ignore_index; ignored samples give 0 and zero gradient rows
# whatever their values, kept targets whose class weights sum to 0 a NaN mean (+-inf for
# weights of both signs) with NaN / +-inf gradients on kept rows, an all-ignored batch a NaN
# mean with zero gradients, as torch.
NLL_OPTIONS: list[dict[str, Any]] = [
    {}, {"reduction": "sum"}, {"reduction": "none"}, {"weighted": True},
    {"weighted": True, "reduction": "none"}, {"ignore_index": 2},
    {"weighted": True, "reduction": "sum", "ignore_index": 1},
]
NLL_ZERO_SUM_CASES = [(rows, weight, {k: v for k, v in kw.items() if k != "label_smoothing"})
                      for rows, weight, kw in ZERO_SUM_CASES if not kw["label_smoothing"]]


def _nll_cases(rng: np.random.Generator, dtype: str, layout: Layout
               ) -> Iterator[tuple[list[Any], dict[str, Any]]]:
    """The (arguments, options) of nll_loss's checks: `SHAPES` x `NLL_OPTIONS`, kept weights
    summing to 0, and ignored samples holding NaN / inf scores."""
    for xs, ts in SHAPES:
        for options in NLL_OPTIONS:
            yield _case(rng, xs, ts, dtype, layout, options)
    for rows, weight, kw in NLL_ZERO_SUM_CASES:
        yield _zero_sum_case(rows, weight, dtype, layout, rng), kw
    for options in IGNORED_OPTIONS:
        if "label_smoothing" not in options:
            yield _ignored_nonfinite_case(rng, dtype, layout, options)


@pytest.mark.parametrize("name,dtype,layout", [op_param("nll_loss", d, lay)
                                               for d, lay in FORWARD])
def test_nll_loss(name: str, dtype: str, layout: Layout, device: burn.Device,
                  rng: np.random.Generator) -> None:
    for args, kw in _nll_cases(rng, dtype, layout):
        check_forward(lambda *a, o=kw: F.nll_loss(*a, **o),
                      lambda *a, o=kw: tF.nll_loss(*a, **o), args, device, upcast=True)


@pytest.mark.parametrize("name,dtype", [op_param("nll_loss", d)
                                        for d in (*GRAD_DTYPES, "float16")])
def test_nll_loss_backward(name: str, dtype: str, grad_device: burn.Device,
                           rng: np.random.Generator) -> None:
    """Contiguous scores: torch's nll_loss backward refuses transposed ones ("grad_input must
    be contiguous")."""
    for args, kw in _nll_cases(rng, dtype, "contiguous"):
        check_backward(lambda *a, o=kw: F.nll_loss(*a, **o),
                       lambda *a, o=kw: tF.nll_loss(*a, **o), args, grad_device, rng)


# Empty batches (no sample, or no position of a spatial dim): torch's mean is 0 / 0 (NaN), its
# sum 0 and its "none" empty, with empty gradients; class-index and class-probability targets.
EMPTY_SHAPES = [((0, 4), (0,)), ((2, 4, 0), (2, 0)), ((0, 0), (0,))]
EMPTY_OPTIONS: list[dict[str, Any]] = [
    {}, {"reduction": "sum"}, {"reduction": "none"}, {"weighted": True},
    {"weighted": True, "reduction": "none"}, {"ignore_index": 0, "reduction": "sum"},
]


SMOOTHED_EMPTY_OPTIONS: list[dict[str, Any]] = [
    {"label_smoothing": 0.2}, {"weighted": True, "label_smoothing": 0.2, "reduction": "sum"},
    {"label_smoothing": 0.2, "reduction": "none"},
]


@pytest.mark.parametrize("name,dtype", [op_param(op, d) for op in ("cross_entropy", "nll_loss")
                                        for d in GRAD_DTYPES])
def test_index_loss_empty_batch(name: str, dtype: str, device: burn.Device,
                                grad_device: burn.Device, rng: np.random.Generator) -> None:
    """With no classes (C = 0) a smoothed sum is 0, where torch's is 0 * inf (NaN, read as 0
    here; docs/differences.md)."""
    smoothed = SMOOTHED_EMPTY_OPTIONS if name == "cross_entropy" else []
    for xs, ts in EMPTY_SHAPES:
        for options in [*EMPTY_OPTIONS, *smoothed]:
            args, kw = _case(rng, xs, ts, dtype, "contiguous", options)
            zero_nan = xs[1] == 0 and "label_smoothing" in kw and kw.get("reduction") == "sum"

            def reference(*a: Any, o: dict[str, Any] = kw, fix: bool = zero_nan) -> Any:
                out = getattr(tF, name)(*a, **o)
                return out.nan_to_num(0.0) if fix else out

            check_forward(lambda *a, o=kw: getattr(F, name)(*a, **o), reference, args, device)
            check_backward(lambda *a, o=kw: getattr(F, name)(*a, **o), reference, args,
                           grad_device, rng)


# Class-probability targets (float, shaped like the input; [C] scores with [C] targets): the
# weights scale each class's term, smoothing mixes the target with the uniform distribution,
# the mean is over the samples (0 / 0, NaN, for an empty input, as torch); gradients of both
# the scores and the targets.
PROBABILITY_SHAPES = [(6, 4), (3, 4, 5), (5,), *[xs for xs, _ in EMPTY_SHAPES], (2, 0)]
PROBABILITY_OPTIONS: list[dict[str, Any]] = [
    {}, {"reduction": "sum"}, {"reduction": "none"}, {"label_smoothing": 0.3},
    {"weighted": True}, {"weighted": True, "label_smoothing": 0.2, "reduction": "none"},
    {"weighted": True, "label_smoothing": 0.1, "reduction": "sum"},
]


def _probability_case(rng: np.random.Generator, xs: tuple[int, ...], dtype: str,
                      layout: Layout, options: dict[str, Any]
                      ) -> tuple[list[Any], dict[str, Any]]:
    """(logits, target probabilities[, weight]) shaped `xs`, and the keyword options."""
    options = dict(options)
    args: list[Any] = [T(rand(rng, xs, dtype) * 3, dtype, layout),
                       T(rng.uniform(0, 1, xs), dtype)]
    return _weighted(rng, args, options, xs[1] if len(xs) > 1 else xs[0], dtype)


@pytest.mark.parametrize("name,dtype,layout", [op_param("cross_entropy", d, lay)
                                               for d, lay in FORWARD])
def test_cross_entropy_probabilities(name: str, dtype: str, layout: Layout,
                                     device: burn.Device, rng: np.random.Generator) -> None:
    for xs in PROBABILITY_SHAPES:
        for options in PROBABILITY_OPTIONS:
            args, kw = _probability_case(rng, xs, dtype, layout, options)
            check_forward(lambda *a, o=kw: F.cross_entropy(*a, **o),
                          lambda *a, o=kw: tF.cross_entropy(*a, **o), args, device, upcast=True)


@pytest.mark.parametrize("name,dtype", [op_param("cross_entropy", d) for d in GRAD_DTYPES])
def test_cross_entropy_probabilities_backward(name: str, dtype: str, grad_device: burn.Device,
                                              rng: np.random.Generator) -> None:
    for xs in PROBABILITY_SHAPES:
        for options in PROBABILITY_OPTIONS:
            args, kw = _probability_case(rng, xs, dtype, "transposed", options)
            check_backward(lambda *a, o=kw: F.cross_entropy(*a, **o),
                           lambda *a, o=kw: tF.cross_entropy(*a, **o), args, grad_device, rng)


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
