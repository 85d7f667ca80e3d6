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

#: Images holding NaN, both infinities and -0.0 (among finite values), and -0.0 alone.
SPECIAL_IMAGES = {
    "nan-inf": np.array([[1.0, NAN, 3.0, 0.5], [INF, -0.0, 2.0, -0.0],
                         [-INF, 1.0, -0.0, -0.0], [0.25, -0.0, -0.0, -0.0]]),
    "zeros": np.array([[1.0, -2.0, 3.0, 0.5], [-1.0, -0.0, 2.0, -0.0],
                       [0.0, 1.0, -0.0, -0.0], [0.25, -0.0, -0.0, -0.0]]),
}
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
@pytest.mark.parametrize("image", list(SPECIAL_IMAGES))
def test_interpolate_of_nan_inf_and_negative_zero(mode: str, align: bool, size: tuple[int, int],
                                                  dtype: str, image: str,
                                                  device: burn.Device) -> None:
    """Non-finite values spread as in torch (through zero-weight taps too: 0 * inf is NaN) and
    no further (the NumPy backend's dense matrices spread one NaN over the whole image); -0.0
    copied by nearest or summed from -0.0 taps stays -0.0 (the cube kernels gave +0.0)."""
    data = SPECIAL_IMAGES[image]
    x = T(np.stack([data, data.T])[None], dtype, "transposed")
    burn_fn, torch_fn = _resize(mode, align, size=size)
    got = check_forward(burn_fn, torch_fn, [x], device, upcast=True)
    want = torch_fn(torch.tensor(np.stack([data.T, data])[None]).transpose(2, 3))
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


# ---------------------------------------------------------------------------- convolution

#: (groups, kernel, stride, padding, dilation, output_padding, input size): stride past the
#: kernel, 1x1 inputs, depthwise groups, output_padding below the stride or the dilation.
CONV_CASES = [(2, 3, 1, 1, 2, 1, 5), (4, 2, 3, 0, 1, 2, 5), (2, 1, 4, 0, 1, 3, 1),
              (4, 3, 2, 2, 3, 1, 1), (1, 2, 2, 1, 1, 1, 4)]


@pytest.mark.op("conv2d")
@pytest.mark.parametrize("case", CONV_CASES, ids=str)
def test_conv_and_conv_transpose_options(case: tuple[int, ...], device: burn.Device,
                                         grad_device: burn.Device,
                                         rng: np.random.Generator) -> None:
    """conv1d / conv2d / conv_transpose1d / conv_transpose2d with groups, dilation, stride
    past the kernel, output_padding and 1x1 inputs, of non-contiguous inputs and weights:
    forward and the gradients of input, weight and bias, as torch."""
    g, k, s, p, d, op, n = case
    dtype = held("float64", device)
    x = T(rng.standard_normal((2, 4, n, n + 1)), dtype, "transposed")
    bias = T(rng.standard_normal(8), dtype)
    conv_w = T(rng.standard_normal((8, 4 // g, k, k)), dtype, "strided")
    tconv_w = T(rng.standard_normal((4, 8 // g, k, k)), dtype, "transposed")
    cases = [
        (lambda a, w, b: F.conv2d(a, w, b, s, p, d, g),
         lambda a, w, b: TF.conv2d(a, w, b, s, p, d, g), [x, conv_w, bias]),
        (lambda a, w, b: F.conv_transpose2d(a, w, b, s, p, op, g, d),
         lambda a, w, b: TF.conv_transpose2d(a, w, b, s, p, op, g, d), [x, tconv_w, bias]),
        (lambda a, w, b: F.conv1d(a, w, b, s, p, d, g),
         lambda a, w, b: TF.conv1d(a, w, b, s, p, d, g),
         [T(x.data[:, :, 0], dtype, "strided"), T(conv_w.data[:, :, 0], dtype), bias]),
        (lambda a, w, b: F.conv_transpose1d(a, w, b, s, p, op, g, d),
         lambda a, w, b: TF.conv_transpose1d(a, w, b, s, p, op, g, d),
         [T(x.data[:, :, 0], dtype), T(tconv_w.data[:, :, 0], dtype, "strided"), bias]),
    ]
    for i, (burn_fn, torch_fn, args) in enumerate(cases):
        if i % 2 == 0 and args[0].data.shape[-1] + 2 * p < d * (k - 1) + 1:
            continue  # a convolution without an output position
        check_forward(burn_fn, torch_fn, args, device)
        check_backward(burn_fn, torch_fn, args, grad_device, rng)


@pytest.mark.op("conv1d")
@pytest.mark.filterwarnings("ignore:Using padding='same':UserWarning")  # torch's, on its copy
@pytest.mark.parametrize(("kernel", "dilation"), [(4, 1), (2, 2), (5, 2)], ids=str)
def test_same_padding_of_even_kernels(kernel: int, dilation: int, device: burn.Device,
                                      grad_device: burn.Device,
                                      rng: np.random.Generator) -> None:
    """padding="same" pads an odd total one more on the right, as torch (even kernels with odd
    dilation), in conv1d / conv2d with groups; forward and gradients."""
    dtype = held("float64", device)
    x = T(rng.standard_normal((1, 4, 6, 7)), dtype, "transposed")
    w = T(rng.standard_normal((4, 2, kernel, kernel)), dtype)
    for conv, tconv, args in [(F.conv2d, TF.conv2d, [x, w]),
                              (F.conv1d, TF.conv1d, [T(x.data[:, :, 0], dtype, "strided"),
                                                     T(w.data[:, :, 0], dtype)])]:
        def burn_fn(a: Any, b: Any, conv: Any = conv) -> Any:
            return conv(a, b, padding="same", dilation=dilation, groups=2)

        def torch_fn(a: Any, b: Any, conv: Any = tconv) -> Any:
            return conv(a, b, padding="same", dilation=dilation, groups=2)

        check_backward(burn_fn, torch_fn, args, grad_device, rng)


# ------------------------------------------------------------------------ scatter / gather


@pytest.mark.op("scatter_add")
def test_accumulating_scatters_of_duplicate_indices(device: burn.Device,
                                                    grad_device: burn.Device,
                                                    rng: np.random.Generator) -> None:
    """scatter_add / scatter(reduce="add") / select_assign (index_add) / scatter_nd("add")
    sum every duplicate, and gather / select of duplicates sum their gradients, with index
    tensors that are transposed, stepped, flipped or expanded views; as torch."""
    dtype = held("float64", device)
    x = T(rng.standard_normal((4, 5)), dtype, "transposed")
    src = T(rng.standard_normal((5, 2)), dtype, "transposed")
    dup = T(np.array([[0, 0, 3, 3, 0], [1, 1, 1, 1, 1]]).T, "int64", "transposed")
    rows = T(np.array([3, 0, 3, 3, 1, 3])[::-1], "int64", "strided")
    cases = [
        (lambda a, i, v: a.scatter_add(0, i, v), lambda a, i, v: a.scatter_add(0, i, v),
         [x, dup, src]),
        (lambda a, i, v: a.scatter(0, i, v, reduce="add"), lambda a, i, v: a.scatter_add(0, i, v),
         [x, dup, src]),
        (lambda a, i, v: a.select_assign(0, i, v), lambda a, i, v: a.index_add(0, i, v),
         [x, rows, T(rng.standard_normal((6, 5)), dtype, "strided")]),
        (lambda a, i, v: a.scatter_nd(i.unsqueeze(1), v, reduce="add"),
         lambda a, i, v: a.index_put((i,), v, accumulate=True),
         [x, rows, T(rng.standard_normal((6, 5)), dtype)]),
        (lambda a, i: a.gather(1, i.flip((1,))), lambda a, i: a.gather(1, i.flip(1)),
         [x, T(np.array([[0, 4, 1, 1], [2, 2, 3, 0], [4, 4, 4, 4], [1, 1, 0, 0]]), "int64",
               "transposed")]),
        (lambda a, i: a.gather(0, i.expand((3, 5))), lambda a, i: a.gather(0, i.expand(3, 5)),
         [x, T(np.array([[1, 0, 3, 3, 2]]), "int64")]),
        (lambda a, i: a.select(1, i), lambda a, i: a.index_select(1, i), [x, rows]),
    ]
    for burn_fn, torch_fn, args in cases:
        check_backward(burn_fn, torch_fn, args, grad_device, rng)


@pytest.mark.op("gather")
def test_negative_indices_count_from_the_end(device: burn.Device,
                                             rng: np.random.Generator) -> None:
    """select / take / gather / scatter / scatter_add / select_assign / gather_nd / scatter_nd
    read an index in [-size, 0) from the end (numpy's and torch's `x[idx]`; torch's
    index_select, gather and scatter refuse negatives: the reference wraps them first);
    past -size it is a BurnIndexError, as are negative embedding and one_hot indices."""
    x = T(rng.standard_normal((3, 4)), "float32", "transposed")
    neg = np.array([[-1, 0, -4], [-2, -3, 1], [2, -1, -1]])
    wrap = T(neg, "int64", "transposed")

    def wrapped(i: Any, size: int) -> Any:
        return torch.remainder(i, size)

    cases = [
        (lambda a, i: a.select(1, i[0]), lambda a, i: a.index_select(1, wrapped(i[0], 4))),
        (lambda a, i: a.take(1, i), lambda a, i: a[:, wrapped(i, 4)]),
        (lambda a, i: a.gather(1, i), lambda a, i: a.gather(1, wrapped(i, 4))),
        (lambda a, i: a.scatter_add(1, i, a[:, :3]),
         lambda a, i: a.scatter_add(1, wrapped(i, 4), a[:, :3])),
        (lambda a, i: a.select_assign(1, i[1], a[:, :3]),
         lambda a, i: a.index_add(1, wrapped(i[1], 4), a[:, :3])),
        (lambda a, i: a.gather_nd(i[:, :2]),
         lambda a, i: a[wrapped(i[:, 0], 3), wrapped(i[:, 1], 4)]),
        (lambda a, i: a.scatter_nd(i[:1, :1].T, a[:1], reduce="add"),
         lambda a, i: a.index_put((wrapped(i[:1, 0], 3),), a[:1], accumulate=True)),
    ]
    for burn_fn, torch_fn in cases:
        check_forward(burn_fn, torch_fn, [x, wrap], device)
    data = burn.tensor(x.data, device=device)
    for bad in (lambda: data.gather(1, burn.tensor([[-5]], device=device)),
                lambda: data.select(0, burn.tensor([-4], device=device)),
                lambda: F.embedding(data, burn.tensor([-1], device=device)),
                lambda: burn.tensor([1, -1], device=device).one_hot(3)):
        with pytest.raises(burn.errors.BurnIndexError):
            bad().to_numpy()
        burn.sync(device)


@pytest.mark.op("mask_where")
def test_masks_and_values_that_broadcast(device: burn.Device, grad_device: burn.Device,
                                         rng: np.random.Generator) -> None:
    """masked_fill with a 0-d tensor value (-0.0 kept) and NaN, where with broadcast masks and
    0-d / scalar branches, masked_select of a mask wider than the tensor; gradients of where
    and masked_select; as torch."""
    dtype = held("float64", device)
    x = T(rng.standard_normal((4, 5)), dtype, "transposed")
    row_mask = T(rng.random((1, 5)) < 0.5, "bool")
    wide = T(rng.random((3, 4, 5)) < 0.5, "bool", "strided")
    zero = T(np.array(-0.0), dtype)
    forward = [
        (lambda a, m, z: a.masked_fill(m, z), lambda a, m, z: a.masked_fill(m, z)),
        (lambda a, m, z: a.masked_fill(m, NAN), lambda a, m, z: a.masked_fill(m, NAN)),
        (lambda a, m, z: burn.where(m, z, a), lambda a, m, z: torch.where(m, z, a)),
        (lambda a, m, z: burn.where(m, 1.5, a.int()), lambda a, m, z: torch.where(m, 1.5, a.int())),
    ]
    for burn_fn, torch_fn in forward:
        got = check_forward(burn_fn, torch_fn, [x, row_mask, zero], device)
        built = [torch.tensor(x.data).T.contiguous().T, torch.tensor(row_mask.data),
                 torch.tensor(zero.data)]
        if got.dtype.is_float:
            assert_signs(got, torch_fn(*built))
    check_forward(lambda a, m: a.mask_select(m), lambda a, m: a.masked_select(m), [x, wide],
                  device)
    check_backward(lambda a, m: a.mask_select(m), lambda a, m: a.masked_select(m), [x, wide],
                   grad_device, rng)
    check_backward(lambda a, b, m: burn.where(m, a, b), lambda a, b, m: torch.where(m, a, b),
                   [x, T(rng.standard_normal((1, 5)), dtype), row_mask], grad_device, rng)


@pytest.mark.op("embedding")
def test_embedding_and_one_hot_of_index_views(device: burn.Device, grad_device: burn.Device,
                                              rng: np.random.Generator) -> None:
    """embedding of transposed / 0-d / empty index tensors with repeats (gradients summed per
    row), one_hot of transposed and empty int32 / int64 indices, as torch."""
    weight = T(rng.standard_normal((6, 3)), held("float64", device), "strided")
    for indices in (T(np.array([[0, 5, 5], [2, 0, 5]]), "int64", "transposed"),
                    T(np.array(2), "int64"), T(np.zeros((0, 2)), "int64")):
        check_backward(lambda w, i: F.embedding(w, i), lambda w, i: TF.embedding(i, w),
                       [weight, indices], grad_device, rng)
    for dtype in ("int64", "int32"):
        for data in (np.array([[0, 3], [2, 1], [3, 3]]), np.zeros((0,))):
            check_forward(lambda i: i.one_hot(4), lambda i: TF.one_hot(i.long(), 4),
                          [T(data, dtype, "transposed")], device)


# ----------------------------------------------------------------------- cumulative ops

CUMPROD_LINES = [[2.0, 0.0, 3.0, 4.0], [0.0, 2.0, 3.0, 0.0], [2.0, 3.0, 0.0, 0.0],
                 [0.0, 0.0, 0.0, 0.0], [1.0, -0.0, 2.0, -1.5]]


@pytest.mark.op("cumprod")
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_scans_of_views_with_zeros(dim: int, device: burn.Device, grad_device: burn.Device,
                                   rng: np.random.Generator) -> None:
    """cumsum / cumprod over every dim of a transposed or stepped view, cumprod through one
    zero, two zeros and all zeros (torch's gradient keeps the product of the other factors);
    forward and gradient."""
    dtype = held("float64", device)
    lines = np.array(CUMPROD_LINES)  # [5, 4]
    data = np.stack([lines, lines[::-1] * 0.5, -lines])  # [3, 5, 4]
    for layout in ("transposed", "strided"):
        x = T(data, dtype, layout)
        for burn_fn, torch_fn in [(lambda a: a.cumprod(dim), lambda a: a.cumprod(dim)),
                                  (lambda a: a.cumsum(dim), lambda a: a.cumsum(dim))]:
            check_backward(burn_fn, torch_fn, [x], grad_device, rng)


@pytest.mark.op("cumsum")
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "bool"])
def test_int_scans_wrap_and_empty_dims(dim: int, dtype: str, device: burn.Device) -> None:
    """Int cumsum / cumprod wrap in the input's dtype as torch's (int8 100 + 100 is -56; bool
    sums to int64), and scans of empty dims or of a dim beside an empty one are empty."""
    values = np.array([[100, 100, 100, 7], [3, 200, 5, 100]])
    if dtype == "bool":
        values = values > 50
    elif dtype == "int8":
        values = values.astype(np.int16) - 100
    x = T(values, dtype, "transposed")
    check_forward(lambda a: a.cumsum(dim), lambda a: a.cumsum(dim), [x], device)
    if dtype != "bool":
        check_forward(lambda a: a.cumprod(dim), lambda a: a.cumprod(dim), [x], device)
    for shape in ((0, 3), (2, 0)):
        empty = T(np.zeros(shape), dtype)
        check_forward(lambda a: a.cumsum(dim), lambda a: a.cumsum(dim), [empty], device)


#: Bad calls of the ops above: (error type, message pattern naming the op and the values).
BAD_CALLS: dict[str, tuple[type[Exception], str, Any]] = {
    "topk": (burn.errors.ValueRangeError, r"^topk: k out of range .*k=5, shape=\(2, 3, 4\)",
             lambda x: x.topk(5)),
    "sort": (burn.errors.BurnIndexError, r"^sort: dim out of range \(dim=3, ndim=3",
             lambda x: x.sort(3)),
    "cummax": (burn.errors.BurnIndexError, r"^cummax: dim out of range \(dim=3",
               lambda x: x.cummax(3)),
    "interpolate": (burn.errors.ValueRangeError, r"^interpolate: scale_factor must be a positive",
                    lambda x: F.interpolate(x.unsqueeze(0), scale_factor=float("nan"))),
    "avg_pool2d": (burn.errors.ValueRangeError, r"^avg_pool2d: padding must be at most half",
                   lambda x: F.avg_pool2d(x.unsqueeze(0), 2, padding=2)),
    "max_pool2d": (burn.errors.ValueRangeError, r"^max_pool2d: dilation must be an int >= 1",
                   lambda x: F.max_pool2d(x.unsqueeze(0), 2, dilation=0)),
    "adaptive_avg_pool2d": (burn.errors.ShapeError, r"^adaptive_avg_pool2d: output size .*"
                            r"output=\(0, 2\)",
                            lambda x: F.adaptive_avg_pool2d(x.unsqueeze(0), (0, 2))),
    "conv_transpose2d": (burn.errors.ShapeError, r"^conv_transpose2d: need weight.shape\[0\] = "
                         r"C_in", lambda x: F.conv_transpose2d(x.unsqueeze(0),
                                                               burn.ones((3, 1, 1, 1),
                                                                         device=x.device),
                                                               groups=2)),
    "scatter": (burn.errors.ShapeError, r"^scatter: indices must fit .*indices=\(3, 3, 4\)",
                lambda x: x.scatter(0, burn.zeros((3, 3, 4), dtype=burn.int64,
                                                  device=x.device), x)),
    "embedding": (burn.errors.DTypeError, r"^embedding: indices must be an int tensor",
                  lambda x: F.embedding(x[0], x[0])),
    "mask_select": (burn.errors.ShapeError, r"^mask_select: shapes cannot be broadcast",
                    lambda x: x.mask_select(burn.zeros((5,), dtype=burn.bool_,
                                                       device=x.device))),
}


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.op(name))
                                  for name in BAD_CALLS])
def test_bad_options_raise_typed_errors(name: str, device: burn.Device) -> None:
    """Bad k, dims, scale factors, pool and convolution geometry, index shapes and dtypes
    raise the typed error naming the op and the offending values, at the call."""
    error, pattern, call = BAD_CALLS[name]
    x = burn.arange(24, device=device).float().reshape(2, 3, 4)
    with pytest.raises(error, match=pattern):
        call(x)
