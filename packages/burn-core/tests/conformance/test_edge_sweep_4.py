"""Edge inputs of a fourth sweep, against torch: gradients of extremes over NaN and of
products and running products through zeros, infinities and NaN; float index tensors; sort's
stable keyword; matvec's batch broadcast; lanczos3 and adaptive pooling of non-finite pixels;
norms with no channels, one value, eps edges; convolutions of no channels; losses with their
options together; clamp, where, pow and fmod with odd arguments."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch

import burn
import burn.functional as F

from .reference import BURN_TO_TORCH, T, assert_same, check_backward, check_forward, dtype_of, held
from .test_edge_sweep import assert_signs

NAN, INF = float("nan"), float("inf")

#: [2, 3] inputs of max / min: NaN once, NaN twice (in both rows), ties without NaN, infinities.
EXTREME_INPUTS = {
    "one_nan": [[3.0, NAN, 1.0], [0.5, -2.0, 4.0]],
    "two_nans": [[3.0, NAN, 1.0], [NAN, -2.0, INF]],
    "ties": [[1.0, 3.0, 3.0], [3.0, -1.0, 3.0]],
    "infinities": [[-INF, INF, 1.0], [INF, -INF, -INF]],
}


@pytest.mark.op("max")
@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("values", list(EXTREME_INPUTS))
def test_full_extreme_splits_its_gradient_between_ties_and_nans(
        op: str, values: str, grad_device: burn.Device, rng: np.random.Generator) -> None:
    """max() / min() over every element send the gradient evenly to the elements equal to the
    result, and to the NaNs when the result is NaN (torch's evenly_distribute_backward)."""
    x = T(np.array(EXTREME_INPUTS[values]), held("float64", grad_device), "transposed")
    check_backward(lambda a: getattr(a, op)(), lambda a: getattr(a, op)(), [x], grad_device,
                   rng)


@pytest.mark.op("max_dim_with_indices")
@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("values", list(EXTREME_INPUTS))
@pytest.mark.parametrize("dim", [0, 1])
def test_extreme_along_a_dim_sends_its_gradient_to_the_first_nan_or_tie(
        op: str, values: str, dim: int, device: burn.Device, grad_device: burn.Device,
        rng: np.random.Generator) -> None:
    """max(dim) / max_dim_with_indices pick the first NaN of a line (else the first extreme),
    values and indices as torch.max(dim); the gradient goes there alone, as torch.max(dim)'s
    (torch.amax gives every element of a line holding NaN a NaN gradient)."""
    x = T(np.array(EXTREME_INPUTS[values]), held("float64", device), "transposed")
    check_forward(lambda a: getattr(a, f"{op}_dim_with_indices")(dim),
                  lambda a: tuple(getattr(torch, op)(a, dim, keepdim=True)), [x], device)
    check_backward(lambda a: getattr(a, op)(dim), lambda a: getattr(torch, op)(a, dim).values,
                   [x], grad_device, rng)


# ------------------------------------------------------- products through zeros, inf and NaN

#: Lines of running products and products where torch's gradient is the zero-safe product's:
#: each holds a zero, infinities and NaN only after the first one.
ZERO_LINES = {
    "one_zero": [2.0, 0.0, 3.0, -1.5],
    "two_zeros": [0.0, 2.0, -0.0, 3.0],
    "zero_last": [2.0, -3.0, -1.0, 0.0],
    "negative_zero_first": [-0.0, 3.0, -1.0, 2.0],
    "zero_then_inf": [3.0, 0.0, 2.0, INF],
    "zero_then_nan": [-2.0, 0.0, NAN, 2.0],
    "inf_after_two_zeros": [0.0, 2.0, 0.0, -INF],
}


def _grads(burn_fn: Any, torch_fn: Any, data: np.ndarray, grad_device: burn.Device,
           rng: np.random.Generator) -> tuple[burn.Tensor, torch.Tensor]:
    """Gradients of `(fn(x) * g).sum()` in burn and torch, x the transposed view of `data.T`."""
    x = T(data, held("float64", grad_device), "transposed")
    leaf_b, leaf_t = burn.tensor(x.base(), device=grad_device).require_grad(), torch.tensor(
        x.base(), requires_grad=True)
    out_b, out_t = burn_fn(leaf_b.swap_dims(0, 1)), torch_fn(leaf_t.transpose(0, 1))
    g = rng.standard_normal(tuple(out_t.shape))
    (out_t * torch.tensor(g)).sum().backward()
    grads = (out_b * burn.tensor(g, dtype=out_b.dtype, device=grad_device)).sum().backward()
    got = leaf_b.grad(grads)
    assert got is not None
    return got, leaf_t.grad.to(BURN_TO_TORCH[got.dtype])


@pytest.mark.op("cumprod")
@pytest.mark.parametrize("line", list(ZERO_LINES))
@pytest.mark.parametrize("dim", [0, 1])
def test_cumprod_gradient_through_zeros(line: str, dim: int, grad_device: burn.Device,
                                        rng: np.random.Generator) -> None:
    """cumprod's gradient with one or several zeros in a line: exact +0.0 after the first zero
    (infinities and NaN there too), products before it, as torch; signs of zeros as torch's."""
    values = np.array(ZERO_LINES[line])
    data = np.stack([values, [0.5, 0.0, -2.0, -0.0], [1.0, -2.0, 0.5, 4.0]])
    if dim == 0:
        data = np.ascontiguousarray(data.T)
    got, want = _grads(lambda a: a.cumprod(dim), lambda a: a.cumprod(dim), data, grad_device,
                       rng)
    assert_same(got, want, phase="backward", what="cumprod grad")
    assert_signs(got, want)


@pytest.mark.op("prod")
@pytest.mark.parametrize("line", list(ZERO_LINES))
@pytest.mark.parametrize("dim", [0, 1, None])
def test_prod_gradient_through_zeros(line: str, dim: int | None, grad_device: burn.Device,
                                     rng: np.random.Generator) -> None:
    """prod(dim)'s gradient is the product of the others (±0.0, NaN for 0 * inf, as torch);
    prod() of two zeros or more gives +0.0 everywhere (torch's zeros_like), of one zero the
    product of the others."""
    values = np.array(ZERO_LINES[line])
    data = np.stack([values, [1.0, -2.0, 0.5, 4.0], [-0.5, 3.0, 2.0, -1.0]])
    if dim is None and line in ("one_zero", "zero_last", "zero_then_inf", "zero_then_nan"):
        data = data[:1] if line == "zero_then_nan" else data  # a NaN and one zero: products
    got, want = _grads(lambda a: a.prod(dim), lambda a: a.prod() if dim is None else a.prod(dim),
                       data, grad_device, rng)
    assert_same(got, want, phase="backward", what="prod grad")
    assert_signs(got, want)


def _running_product_grad(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """cumprod's gradient along the last dim without division, one element at a time:
    prod_{j<i} x_j * s_i with s_i = g_i + x_{i+1} s_{i+1}, a zero ending the sum."""
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape[:-1]):
        line, up, s = x[idx], g[idx], 0.0
        for i in reversed(range(len(line))):
            s = up[i] + (line[i + 1] * s if i + 1 < len(line) and line[i + 1] != 0 else 0.0)
            before = line[:i]
            out[idx + (i,)] = 0.0 if (before == 0).any() else np.prod(before) * s
    return out


def _product_grad(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """prod's gradient along the last dim: g times the product of the others."""
    n = x.shape[-1]
    others = np.stack([np.prod(np.delete(x, i, axis=-1), axis=-1) for i in range(n)], -1)
    return others * g[..., None]


@pytest.mark.op("cumprod")
@pytest.mark.parametrize("op", ["cumprod", "prod"])
def test_product_gradients_of_infinities_and_nan_are_products_not_quotients(
        op: str, grad_device: burn.Device) -> None:
    """Without zeros, an infinite element's gradient is the (finite) product of the others and a
    NaN reaches only the gradients whose products hold it; torch divides the result by the
    input there (inf / inf = NaN, a NaN line all NaN): equal to torch wherever torch is not
    NaN (docs/differences.md)."""
    data = np.array([[2.0, INF, 3.0, 0.5], [-1.5, 2.0, NAN, 4.0], [1.0, -2.0, 0.5, -INF]])
    # positive: the scan's partial sums of infinite terms have one sign (no inf - inf)
    g = np.array([[0.5, 1.0, 2.0, 1.5], [1.0, 0.25, 0.5, 2.0], [1.0, 0.5, 1.5, 2.0]])
    dtype = held("float64", grad_device)
    x = burn.tensor(data, dtype=dtype, device=grad_device).require_grad()
    xt = torch.tensor(data, requires_grad=True)
    if op == "cumprod":
        out, out_t, upstream = x.cumprod(1), xt.cumprod(1), g
    else:
        out, out_t, upstream = x.prod(1), xt.prod(1), g[:, 0]
    (out_t * torch.tensor(upstream)).sum().backward()
    got = x.grad((out * burn.tensor(upstream, dtype=dtype, device=grad_device)).sum().backward())
    assert got is not None and got.shape == data.shape and got.dtype == dtype_of(dtype)
    ref = _running_product_grad(data, g) if op == "cumprod" else _product_grad(data, upstream)
    want = xt.grad.numpy()
    np.testing.assert_allclose(got.to_numpy(), ref, rtol=1e-6, equal_nan=True)
    torch_defined = ~np.isnan(want)
    np.testing.assert_allclose(got.to_numpy()[torch_defined], want[torch_defined], rtol=1e-6)
    assert np.isnan(want[~torch_defined]).all() and (~torch_defined).any()


# ------------------------------------------------------------------- float index tensors

#: op -> (burn call, torch call) with a float index; torch raises IndexError for `t[...]`
#: (burn: BurnIndexError) and RuntimeError for the index ops (burn: DTypeError).
FLOAT_INDEX_CALLS: dict[str, tuple[Any, Any]] = {
    "getitem": (lambda x, i: x[i], lambda x, i: x[i]),
    "setitem": (lambda x, i: x.__setitem__(i, 1.0), lambda x, i: x.__setitem__(i, 1.0)),
    "select": (lambda x, i: x.select(0, i), lambda x, i: x.index_select(0, i)),
    "take": (lambda x, i: x.take(0, i), lambda x, i: torch.take(x, i)),
    "select_assign": (lambda x, i: x.select_assign(0, i, x[:2]),
                      lambda x, i: x.index_add(0, i, x[:2])),
    "gather": (lambda x, i: x.gather(0, i.reshape(2, 1)),
               lambda x, i: x.gather(0, i.reshape(2, 1))),
    "scatter": (lambda x, i: x.scatter(0, i.reshape(2, 1), x[:2, :1]),
                lambda x, i: x.scatter(0, i.reshape(2, 1), x[:2, :1])),
}


@pytest.mark.parametrize("op", [pytest.param(op, marks=pytest.mark.op(op))
                                for op in FLOAT_INDEX_CALLS])
def test_float_index_tensor_raises_torchs_kind_of_error(op: str, device: burn.Device) -> None:
    """A float index raises BurnIndexError (an IndexError) where torch raises IndexError and
    DTypeError where torch raises RuntimeError, the message naming the op and the dtype."""
    burn_call, torch_call = FLOAT_INDEX_CALLS[op]
    data = np.arange(12.0).reshape(3, 4)
    with pytest.raises((IndexError, RuntimeError)) as torch_error:
        torch_call(torch.tensor(data), torch.tensor([0.0, 1.0]))
    expected = (burn.errors.BurnIndexError if torch_error.type is IndexError
                else burn.errors.DTypeError)
    x = burn.tensor(data, dtype=held("float64", device), device=device)
    with pytest.raises(expected, match=rf"^{op}: .*int.*\(dtype=float32\)"):
        burn_call(x, burn.tensor([0.0, 1.0], device=device))


# ---------------------------------------------------------------------- sort(stable=...)

@pytest.mark.op("sort_with_indices")
@pytest.mark.parametrize("stable", [True, False, None])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_sort_takes_torchs_stable_keyword(stable: bool | None, descending: bool, dtype: str,
                                          device: burn.Device) -> None:
    """sort / sort_with_indices / argsort take torch's keyword-only `stable`; whatever it says
    the sort is stable: ties (and NaN, the largest) in index order, as torch's stable sort."""
    line = [2.0, 1.0, 2.0, NAN, 1.0, 2.0, NAN, 0.0] if dtype == "float32" else [
        2, 1, 2, 3, 1, 2, 3, 0]
    x = T(np.stack([line, line[::-1]]), dtype, "transposed")

    def torch_sort(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return tuple(torch.sort(a, dim=0, descending=descending, stable=True))

    check_forward(lambda a: a.sort_with_indices(0, descending, stable=stable), torch_sort, [x],
                  device)
    check_forward(lambda a: a.sort(0, descending, stable=stable), lambda a: torch_sort(a)[0],
                  [x], device)
    check_forward(lambda a: a.argsort(0, descending, stable=stable), lambda a: torch_sort(a)[1],
                  [x], device)


# --------------------------------------------------------------- matvec batch broadcast

@pytest.mark.op("matvec")
@pytest.mark.parametrize("shapes", [((2, 3, 4), (4,)), ((2, 3, 4), (5, 1, 4)),
                                    ((1, 3, 4), (2, 4)), ((3, 4), (2, 4)), ((0, 3, 4), (4,))],
                         ids=str)
def test_matvec_broadcasts_batch_dims_as_matmul(shapes: tuple[tuple[int, ...], ...],
                                                device: burn.Device, grad_device: burn.Device,
                                                rng: np.random.Generator) -> None:
    """matvec(matrix [..., m, n], vector [..., n]) broadcasts the batch dims as torch.matmul:
    a vector [n] with a matrix [b, m, n] gives [b, m], as `matrix @ vector`."""
    dtype = held("float64", device)
    m = T(rng.standard_normal(shapes[0]), dtype, "transposed")
    v = T(rng.standard_normal(shapes[1]), dtype)

    def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b.unsqueeze(-1)).squeeze(-1)

    check_forward(burn.linalg.matvec, reference, [m, v], device)
    if len(shapes[1]) == 1:
        check_forward(lambda a, b: a @ b, lambda a, b: a @ b, [m, v], device)
    check_backward(burn.linalg.matvec, reference, [m, v], grad_device, rng)


@pytest.mark.op("matvec")
def test_matvec_refuses_batch_dims_that_do_not_broadcast(device: burn.Device) -> None:
    with pytest.raises(burn.errors.ShapeError, match=r"^matvec: "):
        burn.linalg.matvec(burn.ones((2, 3, 4), device=device), burn.ones((3, 4), device=device))


# ------------------------------------------------------------------ lanczos3 of NaN / inf

def _lanczos3_per_pixel(x: np.ndarray, out_hw: tuple[int, int]) -> np.ndarray:
    """Burn's lanczos3 one output pixel at a time: the 6 x 6 input pixels around the source
    coordinate that lie inside the image, weights L(dy) L(dx) divided by their sum."""
    from .test_lanczos3 import _source, _weight

    n, c, h, w = x.shape
    out = np.zeros((n, c, *out_hw))
    for oh in range(out_hw[0]):
        sy = _source(oh, h, out_hw[0], False)
        for ow in range(out_hw[1]):
            sx = _source(ow, w, out_hw[1], False)
            taps = [(iy, ix, _weight(sy - iy) * _weight(sx - ix))
                    for iy in range(math.floor(sy) - 2, math.floor(sy) + 4)
                    for ix in range(math.floor(sx) - 2, math.floor(sx) + 4)
                    if 0 <= iy < h and 0 <= ix < w]
            total = sum(t[2] for t in taps) or 1.0
            out[:, :, oh, ow] = sum(x[:, :, iy, ix] * (wt / total) for iy, ix, wt in taps)
    return out


@pytest.mark.op("interpolate")
@pytest.mark.parametrize("value", [NAN, INF])
@pytest.mark.parametrize("out_hw", [(16, 16), (5, 3)], ids=str)
def test_lanczos3_spreads_a_non_finite_pixel_only_over_its_window(
        value: float, out_hw: tuple[int, int], device: burn.Device) -> None:
    """A NaN or infinite pixel reaches only the outputs whose 6 x 6 window holds it (as a
    per-pixel resampler: Burn's kernels, OpenCV, Pillow), the others keep their values."""
    x = np.arange(2 * 64, dtype=np.float64).reshape(1, 2, 8, 8) / 16.0
    x[0, 1, 2, 5] = value
    want = _lanczos3_per_pixel(x, out_hw)
    dtype = held("float64", device)
    got = F.interpolate(burn.tensor(x, dtype=dtype, device=device), out_hw, "lanczos3")
    assert got.shape == want.shape and got.dtype == dtype_of(dtype)
    np.testing.assert_array_equal(np.isnan(got.to_numpy()), np.isnan(want))
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-5, atol=1e-6)
    spread = ~np.isfinite(want)
    assert 0 < spread.sum() < want[0, 1].size and not spread[0, 0].any()


# ------------------------------------------------------- norms: no channels, one value

@pytest.mark.op("batch_norm")
@pytest.mark.parametrize("shape", [(0, 3, 4), (1, 3, 2), (2, 0, 4)], ids=str)
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_of_empty_batches_channels_and_batch_one(
        shape: tuple[int, ...], momentum: float | None, device: burn.Device,
        rng: np.random.Generator) -> None:
    """Training BatchNorm on an empty batch gives an empty output, counts the batch and keeps
    the running statistics (torch); a batch of one with 2 positions normalises as torch; no
    channels give an empty output (torch's F.batch_norm; its nn.BatchNorm1d(0) fails inside)."""
    x = rng.standard_normal(shape)
    layer = burn.nn.BatchNormConfig(shape[1], momentum=momentum).init(device)
    ref = torch.nn.BatchNorm1d(shape[1], momentum=momentum, dtype=torch.float64)
    want = (ref(torch.tensor(x)) if shape[1] else torch.nn.functional.batch_norm(
        torch.tensor(x), torch.zeros(0), torch.ones(0), training=True)).detach()
    got = layer(burn.tensor(x, dtype=burn.float32, device=device))
    assert got.shape == tuple(want.shape) and got.dtype == burn.float32
    np.testing.assert_allclose(got.to_numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(layer.running_mean.value().to_numpy(), ref.running_mean,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer.running_var.value().to_numpy(), ref.running_var,
                               rtol=1e-5, atol=1e-6)
    if momentum is None and shape[1]:
        assert int(layer.num_batches_tracked.value().item()) == int(ref.num_batches_tracked)


@pytest.mark.op("batch_norm")
@pytest.mark.parametrize("shape", [(1, 3), (1, 3, 1)], ids=str)
def test_batch_norm_refuses_one_value_per_channel_in_training(
        shape: tuple[int, ...], device: burn.Device) -> None:
    """One value per channel in training raises ValueRangeError (a ValueError, as torch's
    'Expected more than 1 value per channel when training'); eval takes it."""
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        torch.nn.BatchNorm1d(3)(torch.ones(shape))
    layer = burn.nn.BatchNormConfig(3).init(device)
    with pytest.raises(burn.errors.ValueRangeError, match=r"^BatchNorm: expected more than 1"):
        layer(burn.ones(shape, device=device))
    assert layer.eval()(burn.ones(shape, device=device)).shape == shape


@pytest.mark.op("layer_norm")
@pytest.mark.parametrize("layer", ["instance", "group"])
def test_instance_and_group_norm_of_no_channels_and_one_position(
        layer: str, device: burn.Device, rng: np.random.Generator) -> None:
    """InstanceNorm / GroupNorm of [N, 0, L] give an empty output (torch); InstanceNorm of one
    spatial element raises ValueRangeError (torch's ValueError), GroupNorm takes it (torch)."""
    def make(channels: int) -> Any:
        return (burn.nn.InstanceNormConfig(channels) if layer == "instance"
                else burn.nn.GroupNormConfig(1, channels)).init(device)

    def reference(channels: int) -> torch.nn.Module:
        return (torch.nn.InstanceNorm1d(channels) if layer == "instance"
                else torch.nn.GroupNorm(1, channels, dtype=torch.float64))

    empty = make(0)(burn.zeros((2, 0, 4), device=device))
    assert empty.shape == tuple(reference(0)(torch.zeros(2, 0, 4, dtype=torch.float64)).shape)
    x = rng.standard_normal((2, 3, 1))
    if layer == "instance":
        with pytest.raises(ValueError, match="more than 1 spatial element"):
            reference(3)(torch.tensor(x))
        with pytest.raises(burn.errors.ValueRangeError, match=r"^InstanceNorm: expected more"):
            make(3)(burn.tensor(x, dtype=burn.float32, device=device))
    else:
        want = reference(3)(torch.tensor(x)).detach().numpy()
        got = make(3)(burn.tensor(x, dtype=burn.float32, device=device))
        np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.op("layer_norm")
@pytest.mark.parametrize("layer", ["instance", "group"])
@pytest.mark.parametrize("shape", [(0, 4, 2, 2), (0, 4, 3), (2, 4, 0)])
def test_instance_and_group_norm_of_an_empty_batch_or_extent(
        layer: str, shape: tuple[int, ...], grad_device: burn.Device) -> None:
    """GroupNorm / InstanceNorm (affine) of a batch of 0 or no positions give an empty output
    and zero parameter gradients (the grouping reshape could not infer its -1), as torch's
    GroupNorm (InstanceNorm's reference: GroupNorm of one channel a group, the same function;
    torch's affine InstanceNorm of a batch of 0 fails); no positions: the empty sums, where
    torch's weight gradient is NaN (docs/differences.md)."""
    groups = 4 if layer == "instance" else 2
    ours = (burn.nn.InstanceNormConfig(4, affine=True) if layer == "instance"
            else burn.nn.GroupNormConfig(2, 4)).init(grad_device)
    ref = torch.nn.GroupNorm(groups, 4)
    x = burn.zeros(shape, device=grad_device).require_grad()
    tx = torch.zeros(shape, requires_grad=True)
    out, want = ours(x), ref(tx)
    assert out.shape == tuple(want.shape) and out.dtype == burn.float32
    grads = out.sum().backward()
    want.sum().backward()
    assert x.grad(grads).shape == shape
    for name, param in ours.named_parameters():
        expected = dict(ref.named_parameters())[name].grad.numpy()
        if shape[-1] == 0:  # (torch: NaN for the weight)
            expected = np.zeros_like(expected)
        got = param.grad(grads)
        assert got.shape == expected.shape
        np.testing.assert_array_equal(got.to_numpy(), expected)


@pytest.mark.op("conv2d")
@pytest.mark.parametrize("op", ["conv2d", "conv_transpose2d"])
@pytest.mark.parametrize("empty", ["in", "out"])
def test_convolution_of_no_channels_is_the_empty_sum(op: str, empty: str,
                                                     device: burn.Device) -> None:
    """No input channels: every output is the empty sum plus the bias, [N, C_out, ...] (torch's
    conv2d gives [N, 0, ...] there); no output channels: an empty [N, 0, ...] (torch refuses
    the weight). The reference is torch's op on one channel of zeros."""
    c_in, c_out = (0, 3) if empty == "in" else (2, 0)
    w_shape = (c_out, c_in, 3, 3) if op == "conv2d" else (c_in, c_out, 3, 3)
    ref_w = torch.zeros((c_out, 1, 3, 3) if op == "conv2d" else (1, c_out, 3, 3))
    bias = np.arange(c_out, dtype=np.float32) - 1.0
    fn = getattr(F, op)
    got = fn(burn.zeros((2, c_in, 5, 4), device=device), burn.zeros(w_shape, device=device),
             burn.tensor(bias, device=device), padding=1)
    if c_out:
        want = getattr(torch.nn.functional, op)(torch.zeros(2, 1, 5, 4), ref_w,
                                                torch.tensor(bias), padding=1)
    else:
        want = torch.zeros(2, 0, 5, 4)
    assert got.shape == tuple(want.shape) and got.dtype == burn.float32
    np.testing.assert_array_equal(got.to_numpy(), want.numpy())


@pytest.mark.op("adaptive_avg_pool2d")
@pytest.mark.parametrize("size", [(1, 1), (2, 2), (4, 6), (5, 7)], ids=str)
@pytest.mark.parametrize("values", [(INF, -INF), (NAN, 1.0), (INF, INF)], ids=str)
def test_adaptive_avg_pool_of_opposite_infinities_and_identity_windows(
        size: tuple[int, int], values: tuple[float, float], device: burn.Device,
        rng: np.random.Generator) -> None:
    """+inf and -inf in one window average to NaN, in separate windows to +-inf; the identity
    size (5, 7 of 5 x 7) copies every value: as torch, whatever path the backend takes."""
    data = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    data[1, 2, 0, 1], data[1, 2, 4, 5] = values
    check_forward(lambda a: F.adaptive_avg_pool2d(a, size),
                  lambda a: torch.nn.functional.adaptive_avg_pool2d(a, size),
                  [T(data, "float32", "transposed")], device)


# ------------------------------------------------------------------------- loss options

def _loss_cases(rng: np.random.Generator, dtype: str) -> dict[str, tuple[list[Any], dict]]:
    """Per case: (tensor arguments, keyword options), the same for burn and torch."""
    logits = T(rng.standard_normal((5, 4)), dtype)
    probs = T(rng.uniform(0.05, 0.95, (5, 4)), dtype)
    labels = T(np.array([0, 3, 1, 1, 2]), "int64")
    half = T(np.array([0.0, 1.0, 0.5, 1.0, 0.0] * 4).reshape(5, 4), dtype)
    near = T(rng.standard_normal((5, 4)), dtype)
    class_weight = T(np.array([0.5, 2.0, 1.0, 0.0]), dtype, grad=False)
    return {
        "ce_ignore_weight_smooth": ([logits, T(np.array([0, 3, -100, 1, 2]), "int64"),
                                     class_weight], {"label_smoothing": 0.2}),
        "ce_ignore_other_index": ([logits, labels], {"ignore_index": 1}),
        "ce_weight_sum_smooth": ([logits, labels, class_weight],
                                 {"reduction": "sum", "label_smoothing": 0.1}),
        "ce_probabilities_smooth": ([logits, probs], {"label_smoothing": 0.3}),
        "ce_empty_none": ([T(np.zeros((0, 4)), dtype), T(np.zeros(0), "int64")],
                          {"reduction": "none"}),
        "ce_empty_sum": ([T(np.zeros((0, 4)), dtype), T(np.zeros(0), "int64")],
                         {"reduction": "sum"}),
        "ce_spatial_ignore": ([T(rng.standard_normal((2, 4, 3)), dtype),
                               T(np.array([[0, -100, 3], [2, 1, -100]]), "int64")], {}),
        "nll_weight_ignore": ([logits, labels, class_weight], {"ignore_index": 3}),
        "nll_none": ([logits, labels], {"reduction": "none"}),
        "bce_logits_pos_weight": ([logits, half], {"pos_weight": T(
            np.array([1.0, 3.0, 0.5, 0.0]), dtype, grad=False)}),
        "bce_logits_weight_none": ([logits, half, T(rng.uniform(0, 2, (4,)), dtype, grad=False)],
                                   {"reduction": "none"}),
        "bce_weight_sum": ([probs, half, T(rng.uniform(0, 2, (5, 1)), dtype, grad=False)],
                           {"reduction": "sum"}),
        "huber_delta_small": ([logits, near], {"delta": 1e-3}),
        "smooth_l1_beta_zero": ([logits, near], {"beta": 0.0}),
        "smooth_l1_beta_sum": ([logits, near], {"beta": 0.5, "reduction": "sum"}),
    }


LOSS_CASES = {
    "ce": "cross_entropy", "nll": "nll_loss", "bce_logits": "binary_cross_entropy_with_logits",
    "bce": "binary_cross_entropy", "huber": "huber_loss", "smooth_l1": "smooth_l1_loss",
}
LOSS_CASE_NAMES = list(_loss_cases(np.random.default_rng(0), "float64"))


def _loss_of(case: str) -> str:
    return next(LOSS_CASES[k] for k in sorted(LOSS_CASES, key=len, reverse=True)
                if case.startswith(k + "_"))


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.op(_loss_of(c)))
                                  for c in LOSS_CASE_NAMES])
def test_loss_options_against_torch(case: str, device: burn.Device, grad_device: burn.Device,
                                    rng: np.random.Generator) -> None:
    """Losses with their options together: ignore_index with class weights and label
    smoothing, probability targets, spatial targets, empty batches, pos_weight, broadcast
    weights, huber's small delta and smooth_l1's beta 0 (plain L1), forward and backward."""
    name = _loss_of(case)
    args, options = _loss_cases(rng, held("float64", device))[case]
    burn_options = {k: v for k, v in options.items() if not isinstance(v, T)}
    tensor_options = {k: v for k, v in options.items() if isinstance(v, T)}
    keys = list(tensor_options)

    def burn_fn(*a: Any) -> Any:
        return getattr(F, name)(*a[:len(args)], **burn_options,
                                **dict(zip(keys, a[len(args):], strict=True)))

    def torch_fn(*a: Any) -> Any:
        return getattr(torch.nn.functional, name)(*a[:len(args)], **burn_options,
                                                  **dict(zip(keys, a[len(args):], strict=True)))

    every = [*args, *tensor_options.values()]
    check_forward(burn_fn, torch_fn, every, device)
    if not case.endswith(("empty_none", "empty_sum")):
        check_backward(burn_fn, torch_fn, every, grad_device, rng)


# ----------------------------------------------- clamp, where, pow, fmod: odd arguments

@pytest.mark.op("clamp")
@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8"])
def test_clamp_with_min_above_max_gives_max(dtype: str, device: burn.Device,
                                            grad_device: burn.Device,
                                            rng: np.random.Generator) -> None:
    """clamp(min=6, max=3) is max everywhere (torch: min then max, max wins); the gradient is
    zero everywhere, as torch's."""
    x = T(np.array([[0, 5, 10], [3, 6, 4]]), dtype, "transposed")
    check_forward(lambda a: a.clamp(6, 3), lambda a: a.clamp(6, 3), [x], device)
    if dtype == "float32":
        check_backward(lambda a: a.clamp(6.0, 3.0), lambda a: a.clamp(6.0, 3.0), [x],
                       grad_device, rng)


#: where(cond, a, b) operand pairs of mixed kinds (tensors and host numbers) torch promotes.
WHERE_OPERANDS: dict[str, tuple[Any, Any]] = {
    "int_bool": (T(np.array([1, 2, 3]), "int32"), T(np.array([True, True, False]), "bool")),
    "bool_int": (T(np.array([True, False, True]), "bool"), T(np.array([4, 5, 6]), "int32")),
    "int_float_scalar": (T(np.array([1, 2, 3]), "int32"), 2.5),
    "bool_int_scalar": (T(np.array([True, True, False]), "bool"), 7),
    "bool_bool": (T(np.array([True, False, False]), "bool"), T(np.array([False, True, True]),
                                                                 "bool")),
    "int_float": (T(np.array([1, 2, 3]), "int64"), T(np.array([0.5, 1.5, 2.5]), "float32")),
    "uint8_negative_scalar": (T(np.array([200, 1, 2]), "uint8"), -1),
    "scalar_int": (True, T(np.array([4, 5, 6]), "int32")),
}


@pytest.mark.op("where")
@pytest.mark.parametrize("pair", list(WHERE_OPERANDS))
def test_where_promotes_int_bool_and_scalar_mixes_as_torch(pair: str,
                                                          device: burn.Device) -> None:
    cond = T(np.array([True, False, True]), "bool")
    a, b = WHERE_OPERANDS[pair]
    check_forward(burn.where, torch.where, [cond, a, b], device)


@pytest.mark.op("powf")
@pytest.mark.parametrize("exponent", [2.0, 3.0, -1.0, -2.0, 0.5, 1.5, 0.0])
def test_pow_of_negative_bases(exponent: float, device: burn.Device, grad_device: burn.Device,
                               rng: np.random.Generator) -> None:
    """Negative bases: integral exponents keep the sign rule ((-2)^3 = -8), fractional ones
    give NaN; forward (signs of zeros too) and backward against torch."""
    values = np.array([[-2.0, -0.5, -3.0], [-1.0, 2.0, -0.0]])
    x = T(values, held("float64", device), "transposed")
    got = check_forward(lambda a: a ** exponent, lambda a: a ** exponent, [x], device)
    assert_signs(got, torch.tensor(values) ** exponent)
    finite = T(values[:, :2] - 0.25, held("float64", device))  # no zero: finite gradients
    check_backward(lambda a: a ** exponent, lambda a: a ** exponent, [finite], grad_device, rng)


@pytest.mark.op("fmod")
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
def test_int_fmod_by_zero_raises_naming_fmod(dtype: str, device: burn.Device) -> None:
    """An int zero divisor raises DivisionByZeroError naming fmod (torch: ZeroDivisionError),
    for a tensor or a host divisor; other divisors give C's fmod, as torch."""
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.fmod(torch.tensor([5, 3]), torch.tensor([0, 1]))
    x = burn.tensor(np.array([5, 3], dtype=np.int64), dtype=burn.DType(dtype), device=device)
    for divisor in (burn.tensor(np.array([0, 1]), dtype=burn.DType(dtype), device=device), 0):
        with pytest.raises(burn.errors.DivisionByZeroError, match=r"^fmod: "):
            x.fmod(divisor)
            burn.sync(device)
    signed = T(np.array([5, -5, 7, -7]), dtype if dtype != "uint8" else "int8")
    check_forward(lambda a: a.fmod(3), lambda a: torch.fmod(a, 3), [signed], device)


@pytest.mark.op("batch_norm")
@pytest.mark.parametrize("eps", [0.0, -1.0])
def test_batch_norm_refuses_an_eps_that_is_not_positive_with_batch_statistics(
        eps: float, device: burn.Device) -> None:
    """eps <= 0 with batch statistics (training, or no running statistics in eval) raises
    ValueRangeError, as torch's ValueError; eval with running statistics takes it; so does
    one value per channel without running statistics in eval (refused as torch)."""
    x = np.random.default_rng(0).standard_normal((2, 3))
    with pytest.raises(ValueError, match="eps must be positive"):
        torch.nn.BatchNorm1d(3, eps=eps)(torch.tensor(x, dtype=torch.float32))
    for layer in (burn.nn.BatchNormConfig(3, eps=eps).init(device),
                  burn.nn.BatchNormConfig(3, eps=eps, track_running_stats=False).init(
                      device).eval()):
        with pytest.raises(burn.errors.ValueRangeError, match=r"^BatchNorm: eps must be"):
            layer(burn.tensor(x, dtype=burn.float32, device=device))
    running = burn.nn.BatchNormConfig(3, eps=eps).init(device).eval()
    assert running(burn.tensor(x, dtype=burn.float32, device=device)).shape == (2, 3)
    stateless = burn.nn.BatchNormConfig(3, track_running_stats=False).init(device).eval()
    with pytest.raises(burn.errors.ValueRangeError, match="more than 1 value per channel"):
        stateless(burn.ones((1, 3), device=device))


@pytest.mark.op("layer_norm")
@pytest.mark.parametrize("eps", [0.0, 1e-5, 1e6])
def test_layer_and_group_norm_eps_edges(eps: float, device: burn.Device,
                                        grad_device: burn.Device,
                                        rng: np.random.Generator) -> None:
    """eps 0 makes constant rows NaN (0 / 0) and leaves the others exact, a huge eps shrinks
    everything towards 0; group norm of one-channel groups of one position is 0 (or NaN for
    eps 0): forward and backward against torch."""
    rows = np.array([[1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.5], [0.0, -0.0, 0.0, 0.0],
                     [-2.0, 5.0, 0.5, 3.0]])
    x = T(rows, held("float64", device), "transposed")
    check_forward(lambda a: F.layer_norm(a, 4, eps=eps),
                  lambda a: torch.nn.functional.layer_norm(a, (4,), eps=eps), [x], device)
    check_backward(lambda a: F.layer_norm(a, 4, eps=eps),
                   lambda a: torch.nn.functional.layer_norm(a, (4,), eps=eps), [x],
                   grad_device, rng)
    layer = burn.nn.GroupNormConfig(4, 4, eps=eps, affine=False).init(device)
    got = layer(burn.tensor(rows.reshape(4, 4, 1), dtype=burn.float32, device=device))
    want = torch.nn.functional.group_norm(torch.tensor(rows, dtype=torch.float32).reshape(
        4, 4, 1), 4, eps=eps)
    np.testing.assert_allclose(got.to_numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
