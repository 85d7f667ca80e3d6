"""Edge inputs of a third sweep, against torch: ordering ops on NaN, signed zeros, ties and
saturated ints; interpolation of non-finite values and of sizes PyTorch special-cases;
pooling, convolution, scatter and scan options the other suites leave out."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import burn
import burn.functional as F

from .reference import T, check_backward, check_forward, held
from .test_edge_sweep import assert_signs

NAN, INF = float("nan"), float("inf")

#: Lines that order ambiguously: NaN (largest, as torch), both zeros, ties and infinities.
ORDER_LINES = {
    "nan": [3.0, NAN, 1.0, -INF, NAN, INF, -0.0, 0.0, 2.0, 1.0],
    "zeros": [0.0, -0.0, 0.0, -0.0, 1.0, -1.0],
    "ties": [2.0, 1.0, 2.0, 1.0, 2.0, 0.0],
}


def _order_input(line: str, dtype: str, device: burn.Device) -> T:
    """[n, 2]: the line and its reverse as columns, transposed to a [2, n] view."""
    values = np.array(ORDER_LINES[line])
    return T(np.stack([values, values[::-1]]), held(dtype, device), "transposed")


@pytest.mark.op("sort_with_indices")
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("line", list(ORDER_LINES))
@pytest.mark.parametrize("dtype", ["float64", "float16"])
def test_sort_is_stable_through_nan_zeros_and_ties(descending: bool, line: str, dtype: str,
                                                   device: burn.Device) -> None:
    """sort / argsort put NaN last (first descending), keep -0.0 and 0.0 in input order and
    break ties by index, as torch's stable sort."""
    x = _order_input(line, dtype, device)
    check_forward(lambda a: a.sort_with_indices(dim=1, descending=descending),
                  lambda a: tuple(torch.sort(a, dim=1, descending=descending, stable=True)),
                  [x], device)
    check_forward(lambda a: a.argsort(dim=1, descending=descending),
                  lambda a: torch.argsort(a, dim=1, descending=descending, stable=True),
                  [x], device)


@pytest.mark.op("topk_with_indices")
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("line", list(ORDER_LINES))
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_topk_breaks_ties_by_index(largest: bool, line: str, dtype: str,
                                   device: burn.Device) -> None:
    """topk's values are torch's for every k (0 and n too), NaN the largest; among equal
    values the lower index comes first, as the stable sort (torch leaves the order of ties
    unspecified and its CPU kernel gives [2, 4, 0] for the 2s of [2, 1, 2, 1, 2, 0])."""
    x = _order_input(line, dtype, device)
    n = len(ORDER_LINES[line])
    for k in (0, 1, 3, n):
        def burn_fn(a: Any, k: int = k) -> Any:
            return a.topk_with_indices(k, dim=1, largest=largest)

        def torch_fn(a: Any, k: int = k) -> Any:
            values, indices = torch.sort(a, dim=1, descending=largest, stable=True)
            assert torch.equal(torch.topk(a, k, dim=1, largest=largest).values.isnan(),
                               values[:, :k].isnan())
            return values[:, :k], indices[:, :k]

        got = check_forward(burn_fn, torch_fn, [x], device)
        line_t = torch.tensor(ORDER_LINES[line])
        assert_signs(got[0][0], torch.sort(line_t, descending=largest, stable=True).values[:k])


@pytest.mark.op("argmax")
@pytest.mark.parametrize("line", list(ORDER_LINES))
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_extremes_and_their_indices_with_nan_and_ties(line: str, dtype: str,
                                                      device: burn.Device) -> None:
    """argmax / argmin, max / min with indices, cummax / cummin and the median take NaN as
    the extreme and the first index of a tie, as torch (dim 1 of a transposed view)."""
    x = _order_input(line, dtype, device)
    cases = [
        (lambda a: a.argmax(1), lambda a: a.argmax(1)),
        (lambda a: a.argmin(1), lambda a: a.argmin(1)),
        (lambda a: a.max_dim_with_indices(1), lambda a: tuple(torch.max(a, 1, keepdim=True))),
        (lambda a: a.min_dim_with_indices(1), lambda a: tuple(torch.min(a, 1, keepdim=True))),
        (lambda a: a.cummax(1), lambda a: tuple(torch.cummax(a, 1))),
        (lambda a: a.cummin(1), lambda a: tuple(torch.cummin(a, 1))),
        (lambda a: a.median_with_indices(1), lambda a: tuple(torch.median(a, 1, keepdim=True))),
    ]
    for burn_fn, torch_fn in cases:
        check_forward(burn_fn, torch_fn, [x], device)


@pytest.mark.op("sort_with_indices")
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64"])
def test_ordering_of_saturated_ints(dtype: str, device: burn.Device) -> None:
    """The dtype's limits sort, rank and accumulate as torch's (no overflow in comparisons)."""
    info = np.iinfo(dtype)
    x = T(np.array([info.max, info.min, 0, info.max, 1, info.min]), dtype, "strided")
    cases = [
        (lambda a: a.sort_with_indices(descending=True),
         lambda a: tuple(torch.sort(a, descending=True, stable=True))),
        (lambda a: a.topk_with_indices(3),
         lambda a: tuple(t[:3] for t in torch.sort(a, descending=True, stable=True))),
        (lambda a: a.argmax(), torch.argmax),
        (lambda a: a.argmin(), torch.argmin),
        (lambda a: a.cummax(0), lambda a: tuple(torch.cummax(a, 0))),
        (lambda a: a.cummin(0), lambda a: tuple(torch.cummin(a, 0))),
    ]
    for burn_fn, torch_fn in cases:
        check_forward(burn_fn, torch_fn, [x], device)


# ---------------------------------------------------------------------------- interpolate

#: An image holding NaN, both infinities and -0.0 (among finite values).
SPECIAL_IMAGE = np.array([[1.0, NAN, 3.0, 0.5], [INF, -0.0, 2.0, -0.0],
                          [-INF, 1.0, -0.0, -0.0], [0.25, -0.0, -0.0, -0.0]])
RESIZE_MODES = [("nearest", False), ("bilinear", False), ("bilinear", True),
                ("bicubic", False), ("bicubic", True)]


def _resize(mode: str, align: bool, **size: Any) -> tuple[Any, Any]:
    extra = {} if mode == "nearest" else {"align_corners": align}

    def burn_fn(a: Any) -> Any:
        return F.interpolate(a, mode=mode, **extra, **size)

    def torch_fn(a: Any) -> Any:
        return TF.interpolate(a, mode=mode, **extra, **size)

    return burn_fn, torch_fn


@pytest.mark.op("interpolate")
@pytest.mark.parametrize(("mode", "align"), RESIZE_MODES)
@pytest.mark.parametrize("size", [(4, 4), (8, 8), (3, 5), (7, 2)])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_interpolate_of_nan_inf_and_negative_zero(mode: str, align: bool, size: tuple[int, int],
                                                  dtype: str, device: burn.Device) -> None:
    """Non-finite values spread as in torch (through zero-weight taps too: 0 * inf is NaN) and
    no further (the NumPy backend's dense matrices spread one NaN over the whole image); -0.0
    copied by nearest or summed from -0.0 taps stays -0.0 (the cube kernels gave +0.0)."""
    x = T(np.stack([SPECIAL_IMAGE, SPECIAL_IMAGE.T])[None], dtype, "transposed")
    burn_fn, torch_fn = _resize(mode, align, size=size)
    got = check_forward(burn_fn, torch_fn, [x], device, upcast=True)
    want = torch_fn(torch.tensor(np.stack([SPECIAL_IMAGE.T, SPECIAL_IMAGE])[None]).transpose(2, 3))
    assert_signs(got, want.to(torch.float32))


@pytest.mark.op("interpolate")
@pytest.mark.parametrize(("mode", "align"), RESIZE_MODES)
@pytest.mark.parametrize("scale", [1.19, (2.19, 0.97), 0.5, (0.3, 1.7)])
def test_interpolate_scale_factors_torch_special_cases(mode: str, align: bool,
                                                       scale: float | tuple[float, float],
                                                       device: burn.Device,
                                                       grad_device: burn.Device,
                                                       rng: np.random.Generator) -> None:
    """An output of the input's size copies it (nearest, bilinear) and nearest's doubled
    size takes index // 2, whatever the scale factor, as torch (1.19 on 5 rows read rows
    0, 0, 1, 2, 3); downsampling by non-integer factors; forward and gradient."""
    if align and mode != "nearest" and isinstance(scale, float) and scale < 1:
        scale = 0.6
    x = T(rng.standard_normal((1, 2, 5, 7)), held("float64", device), "strided")
    burn_fn, torch_fn = _resize(mode, align, scale_factor=scale)
    check_forward(burn_fn, torch_fn, [x], device)
    check_backward(burn_fn, torch_fn, [x], grad_device, rng)
