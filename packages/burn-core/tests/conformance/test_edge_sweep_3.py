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


# -------------------------------------------------------------------------------- pooling

#: (kernel, stride, padding, dilation): the last ceil-mode window starting inside the padding
#: or past the input, stride past the kernel, dilation.
POOL_GEOMETRIES = [(3, 2, 1, 1), (2, 2, 1, 1), (4, 3, 2, 1), (2, 4, 0, 1), (3, 2, 1, 2)]


@pytest.mark.op("avg_pool2d")
@pytest.mark.parametrize("geometry", POOL_GEOMETRIES[:4], ids=str)
@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("count_include_pad", [False, True])
def test_avg_pool_ceil_mode_and_padding_counts(geometry: tuple[int, int, int, int],
                                               ceil_mode: bool, count_include_pad: bool,
                                               device: burn.Device, grad_device: burn.Device,
                                               rng: np.random.Generator) -> None:
    """A ceil-mode window that starts in the right padding is dropped and one that runs past
    it divides by its taps inside the padded input, as torch; forward and gradient, 1d / 2d."""
    k, s, p, _ = geometry
    x = T(rng.standard_normal((2, 3, 7, 9)), held("float64", device), "transposed")
    for burn_pool, torch_pool, arg in [(F.avg_pool2d, TF.avg_pool2d, x),
                                       (F.avg_pool1d, TF.avg_pool1d,
                                        T(x.data[:, :, 0], x.dtype, "strided"))]:
        def burn_fn(a: Any, pool: Any = burn_pool) -> Any:
            return pool(a, k, s, p, ceil_mode, count_include_pad)

        def torch_fn(a: Any, pool: Any = torch_pool) -> Any:
            return pool(a, k, s, p, ceil_mode, count_include_pad)

        check_forward(burn_fn, torch_fn, [arg], device)
        check_backward(burn_fn, torch_fn, [arg], grad_device, rng)


#: NaN, ties (-0.0 before 0.0 too) and -inf windows for max pooling.
MAX_POOL_LINE = [1.0, 1.0, NAN, 2.0, 2.0, -INF, -INF, -INF, -0.0, 0.0, 3.0, NAN]


@pytest.mark.op("max_pool2d_with_indices")
@pytest.mark.parametrize("geometry", POOL_GEOMETRIES, ids=str)
@pytest.mark.parametrize("ceil_mode", [False, True])
def test_max_pool_indices_of_nan_ties_and_zeros(geometry: tuple[int, int, int, int],
                                                ceil_mode: bool, device: burn.Device) -> None:
    """Max pooling returns torch's values and indices: NaN wins, the first of equal values
    (its own sign: the NumPy backend gave 0.0 where -0.0 came first), a window of -inf names
    its first tap inside the input; 1d and 2d."""
    k, s, p, d = geometry
    line = np.array(MAX_POOL_LINE)
    cases = [(F.max_pool1d_with_indices, TF.max_pool1d, line.reshape(1, 1, 12)),
             (F.max_pool2d_with_indices, TF.max_pool2d, line.reshape(1, 1, 3, 4)),
             (F.max_pool2d_with_indices, TF.max_pool2d, line.reshape(1, 1, 4, 3))]
    for burn_pool, torch_pool, data in cases:
        if (data.shape[-1] + 2 * p - d * (k - 1) - 1) < 0 or p > k // 2:
            continue

        def burn_fn(a: Any, pool: Any = burn_pool) -> Any:
            return pool(a, k, s, p, d, ceil_mode)

        def torch_fn(a: Any, pool: Any = torch_pool) -> Any:
            return pool(a, k, s, p, d, ceil_mode, return_indices=True)

        x = T(data, "float32")
        got = check_forward(burn_fn, torch_fn, [x], device)
        assert_signs(got[0], torch_fn(torch.tensor(data, dtype=torch.float32))[0])


@pytest.mark.op("max_pool2d")
@pytest.mark.parametrize("geometry", POOL_GEOMETRIES, ids=str)
def test_max_pool_gradient_goes_to_the_first_tie(geometry: tuple[int, int, int, int],
                                                 grad_device: burn.Device,
                                                 rng: np.random.Generator) -> None:
    """Overlapping windows over ties send each window's gradient to its first maximum, and
    sum where windows share it, as torch."""
    k, s, p, d = geometry
    data = np.array([[1.0, 1.0, 2.0, 2.0, 0.0], [2.0, 1.0, 2.0, 0.0, 2.0],
                     [0.0, 0.0, 0.0, 0.0, 0.0], [1.0, 2.0, 1.0, 2.0, 2.0]])[None, None]
    x = T(data, held("float64", grad_device), "transposed")

    def burn_fn(a: Any) -> Any:
        return F.max_pool2d(a, k, s, p, d, True)

    def torch_fn(a: Any) -> Any:
        return TF.max_pool2d(a, k, s, p, d, True)

    check_backward(burn_fn, torch_fn, [x], grad_device, rng)


@pytest.mark.op("adaptive_avg_pool2d")
@pytest.mark.parametrize("size", [(1, 1), (3, 4), (4, 5), (5, 9)], ids=str)
def test_adaptive_avg_pool_keeps_non_finite_values_in_their_windows(
        size: tuple[int, int], device: burn.Device, grad_device: burn.Device,
        rng: np.random.Generator) -> None:
    """Overlapping windows of sizes that do not divide the input (4 of 9 columns, 5 of 9):
    a NaN or infinity reaches only the windows holding it (the NumPy backend's dense matrices
    spread it over the plane), -0.0 windows average to 0.0, as torch; gradient of finite
    values."""
    data = rng.standard_normal((1, 2, 5, 9))
    data[0, 0, 1, 2], data[0, 0, 4, 8], data[0, 1, 0, 0] = NAN, INF, -INF
    data[0, 1, 3:, 4:] = -0.0
    x = T(data, "float32", "strided")

    def burn_fn(a: Any) -> Any:
        return F.adaptive_avg_pool2d(a, size)

    def torch_fn(a: Any) -> Any:
        return TF.adaptive_avg_pool2d(a, size)

    got = check_forward(burn_fn, torch_fn, [x], device)
    assert_signs(got, torch_fn(torch.tensor(data, dtype=torch.float32)))
    check_forward(lambda a: F.adaptive_avg_pool1d(a, size[1]),
                  lambda a: TF.adaptive_avg_pool1d(a, size[1]), [T(data[:, :, 1], "float32")],
                  device)
    finite = T(rng.standard_normal((1, 2, 5, 9)), held("float64", device), "transposed")
    check_backward(burn_fn, torch_fn, [finite], grad_device, rng)
