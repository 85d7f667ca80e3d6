"""Backward rules of the Autodiff backend against torch.autograd, one or two cases per family."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from burn import Device, float32, float64
from burn.autodiff import Autodiff, BalancedCheckpointing
from burn.backend.options import (
    ConvOptions,
    ConvTransposeOptions,
    GridSampleOptions,
    InterpolateOptions,
    PoolOptions,
)
from burn.backends.numpy import NumpyBackend

DEV = Device("numpy").autodiff()
rng = np.random.default_rng(0)


def r(*shape: int, low: float = -2.0, high: float = 2.0) -> np.ndarray:
    return rng.uniform(low, high, shape)


def pos(*shape: int) -> np.ndarray:
    return r(*shape, low=0.5, high=2.0)


def idx(values: Any) -> Callable[[Any], Any]:
    """An int64 index primitive of the backend (made lazily, per backend)."""
    return lambda ad: ad.int_from_data(np.asarray(values, dtype=np.int64), DEV)


def mask(values: Any) -> Callable[[Any], Any]:
    return lambda ad: ad.bool_from_data(np.asarray(values, dtype=bool), DEV)


def check(burn_fn: Callable[..., Any], torch_fn: Callable[..., Any], *inputs: np.ndarray,
          ad: Autodiff | None = None, rtol: float = 1e-7, atol: float = 1e-9) -> None:
    """Gradients of sum(f(inputs) * w) for a random w, burn vs torch (float64)."""
    ad = ad or DEV.backend
    xs = [ad.float_require_grad(ad.float_from_data(np.asarray(a, np.float64), DEV))
          for a in inputs]
    out = burn_fn(ad, *xs)
    out = out[0] if isinstance(out, tuple) else out
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in inputs]
    t_out = torch_fn(*ts)
    t_out = t_out[0] if isinstance(t_out, tuple) else t_out
    assert ad.shape(out) == tuple(t_out.shape)
    np.testing.assert_allclose(ad.float_into_data(out), t_out.detach().numpy(), rtol, atol)
    w = rng.uniform(0.5, 1.5, tuple(t_out.shape))
    loss = ad.float_sum(ad.float_mul(out, ad.float_from_data(w, DEV)))
    grads = ad.backward(loss)
    (t_out * torch.tensor(w)).sum().backward()
    for x, t in zip(xs, ts, strict=True):
        g = ad.grad(x, grads)
        expected = np.zeros(t.shape) if t.grad is None else t.grad.numpy()
        assert g is not None
        inner = ad.inner
        assert inner.shape(g) == tuple(t.shape) and inner.dtype(g) == float64
        np.testing.assert_allclose(inner.float_into_data(g), expected, rtol, atol)


def _binary(name: str) -> Callable[..., Any]:
    return lambda ad, a, b: getattr(ad, f"float_{name}")(a, b)


@pytest.mark.parametrize(("name", "torch_fn", "a", "b"), [
    ("add", torch.add, r(2, 3), r(3)),
    ("sub", torch.sub, r(2, 1, 3), r(4, 1)),
    ("mul", torch.mul, r(2, 3), r(2, 1)),
    ("div", torch.div, r(3, 4), pos(4)),
    ("remainder", torch.remainder, r(3, 4), pos(3, 4)),
    ("powf", torch.pow, pos(3, 4), r(4)),
    ("atan2", torch.atan2, r(3, 4), r(3, 4)),
    ("matmul", torch.matmul, r(2, 1, 3, 4), r(5, 4, 2)),
])
def test_binary(name: str, torch_fn: Any, a: np.ndarray, b: np.ndarray) -> None:
    check(_binary(name), torch_fn, a, b)


def test_powf_zero_base_and_exponent() -> None:
    a, b = np.array([0.0, 0.0, 2.0, 1.5]), np.array([0.0, 2.0, 0.0, -1.0])
    check(_binary("powf"), torch.pow, a, b)


@pytest.mark.parametrize(("op", "scalar", "torch_fn"), [
    ("add_scalar", 1.5, lambda x: x + 1.5),
    ("sub_scalar", 1.5, lambda x: x - 1.5),
    ("mul_scalar", -2.0, lambda x: x * -2.0),
    ("div_scalar", 4.0, lambda x: x / 4.0),
    ("remainder_scalar", 0.7, lambda x: torch.remainder(x, 0.7)),
    ("powf_scalar", 3.0, lambda x: x ** 3.0),
    ("powf_scalar", 0.0, lambda x: x ** 0.0),
])
def test_scalar(op: str, scalar: float, torch_fn: Any) -> None:
    check(lambda ad, x: getattr(ad, f"float_{op}")(x, scalar), torch_fn, r(3, 4))


_MATH: dict[str, tuple[Any, np.ndarray]] = {
    "exp": (torch.exp, r(3, 4)), "log": (torch.log, pos(3, 4)), "log1p": (torch.log1p, pos(3, 4)),
    "sqrt": (torch.sqrt, pos(3, 4)), "abs": (torch.abs, r(3, 4)), "sin": (torch.sin, r(3, 4)),
    "cos": (torch.cos, r(3, 4)), "tan": (torch.tan, r(3, 4, low=-1, high=1)),
    "sinh": (torch.sinh, r(3, 4)), "cosh": (torch.cosh, r(3, 4)), "tanh": (torch.tanh, r(3, 4)),
    "asin": (torch.asin, r(3, 4, low=-0.9, high=0.9)),
    "acos": (torch.acos, r(3, 4, low=-0.9, high=0.9)), "atan": (torch.atan, r(3, 4)),
    "asinh": (torch.asinh, r(3, 4)), "acosh": (torch.acosh, r(3, 4, low=1.1, high=3)),
    "atanh": (torch.atanh, r(3, 4, low=-0.9, high=0.9)), "erf": (torch.erf, r(3, 4)),
    "sign": (torch.sign, r(3, 4)), "round": (torch.round, r(3, 4)),
    "floor": (torch.floor, r(3, 4)), "ceil": (torch.ceil, r(3, 4)),
    "trunc": (torch.trunc, r(3, 4)), "neg": (torch.neg, r(3, 4)),
    "recip": (torch.reciprocal, pos(3, 4)),
}


@pytest.mark.parametrize("name", sorted(_MATH))
@pytest.mark.parametrize("balanced", [False, True])
def test_math(name: str, balanced: bool) -> None:
    torch_fn, x = _MATH[name]
    ad = Autodiff(NumpyBackend(), BalancedCheckpointing()) if balanced else None
    check(lambda ad, x: getattr(ad, f"float_{name}")(x), torch_fn, x, ad=ad)


@pytest.mark.parametrize(("lo", "hi"), [(-0.5, 0.5), (0.0, None), (None, 1.0)])
def test_clamp(lo: float | None, hi: float | None) -> None:
    x = np.array([-1.0, -0.5, 0.0, 0.25, 0.5, 1.0, 2.0])
    check(lambda ad, x: ad.float_clamp(x, lo, hi), lambda x: torch.clamp(x, lo, hi), x)


def test_activations_through_primitives() -> None:
    x = r(3, 5, low=-6, high=6)
    check(lambda ad, x: ad.sigmoid(x), torch.sigmoid, x)
    check(lambda ad, x: ad.gelu(x, "none"), F.gelu, x)
    check(lambda ad, x: ad.gelu(x, "tanh"), lambda t: F.gelu(t, approximate="tanh"), x)
    check(lambda ad, x: ad.softmax(x, 1), lambda t: torch.softmax(t, 1), x)
    check(lambda ad, x: ad.log_softmax(x, 0), lambda t: torch.log_softmax(t, 0), x)
    check(lambda ad, x: ad.softplus(x, 2.0, 3.0), lambda t: F.softplus(t, 2.0, 3.0), x)
    check(lambda ad, x: ad.silu(x), F.silu, x)
    check(lambda ad, x: ad.elu(x, 1.0), F.elu, x)


@pytest.mark.parametrize(("fn", "torch_fn", "x"), [
    (lambda ad, x: ad.float_reshape(x, (4, 3)), lambda t: t.reshape(4, 3), r(2, 6)),
    (lambda ad, x: ad.float_swap_dims(x, 0, 2), lambda t: t.transpose(0, 2), r(2, 3, 4)),
    (lambda ad, x: ad.float_permute(x, (1, 2, 0)), lambda t: t.permute(1, 2, 0), r(2, 3, 4)),
    (lambda ad, x: ad.float_flip(x, (0, 2)), lambda t: t.flip((0, 2)), r(2, 3, 4)),
    (lambda ad, x: ad.float_expand(x, (2, 3, 4)), lambda t: t.expand(2, 3, 4), r(3, 1)),
    (lambda ad, x: ad.float_repeat_dim(x, 1, 3), lambda t: t.repeat(1, 3, 1), r(2, 2, 3)),
    (lambda ad, x: ad.float_unfold(x, 1, 3, 2), lambda t: t.unfold(1, 3, 2), r(2, 8, 3)),
    (lambda ad, x: ad.float_unfold(x, 0, 2, 1), lambda t: t.unfold(0, 2, 1), r(5)),
])
def test_layout(fn: Any, torch_fn: Any, x: np.ndarray) -> None:
    check(fn, torch_fn, x)


def test_cat() -> None:
    check(lambda ad, a, b, c: ad.float_cat([a, b, c], 1),
          lambda a, b, c: torch.cat([a, b, c], 1), r(2, 1, 3), r(2, 3, 3), r(2, 2, 3))


def test_cat_with_untracked_part() -> None:
    ad = DEV.backend
    x = ad.float_require_grad(ad.float_from_data(np.ones((2,)), DEV))
    c = ad.float_from_data(np.zeros((3,)), DEV)
    g = ad.grad(x, ad.backward(ad.float_sum(ad.float_mul(ad.float_cat([c, x], 0),
                                                          ad.float_cat([c, x], 0)))))
    np.testing.assert_allclose(ad.inner.float_into_data(g), [2.0, 2.0])


def test_indexing_slices() -> None:
    check(lambda ad, x: ad.float_slice(x, [slice(1, 3, 1), slice(4, None, -2)]),
          lambda t: t[1:3].flip(1)[:, 0::2], r(4, 5))
    check(lambda ad, x, v: ad.float_slice_assign(x, [slice(0, 4, 2), slice(1, 3, 1)], v),
          lambda x, v: _torch_slice_assign(x, v), r(4, 5), r(2, 2))


def _torch_slice_assign(x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    out[0:4:2, 1:3] = v
    return out


def test_indexing_select_gather_scatter() -> None:
    i = [2, 0, 2]
    ti = torch.tensor(i)
    check(lambda ad, x: ad.float_select(x, 1, idx(i)(ad)), lambda t: t.index_select(1, ti),
          r(2, 3))
    check(lambda ad, x, v: ad.float_select_assign(x, 0, idx(i)(ad), v),
          lambda x, v: x.index_add(0, ti, v), r(4, 2), r(3, 2))
    gi = [[0, 1, 1], [2, 2, 0]]
    tgi = torch.tensor(gi)
    check(lambda ad, x: ad.float_gather(1, x, idx(gi)(ad)), lambda t: t.gather(1, tgi), r(2, 4))
    si = [[0, 3], [1, 2]]
    tsi = torch.tensor(si)
    for reduce in ("assign", "add"):
        check(lambda ad, x, v, reduce=reduce: ad.float_scatter(1, x, idx(si)(ad), v, reduce),
              lambda x, v, reduce=reduce: x.scatter(1, tsi, v) if reduce == "assign"
              else x.scatter_add(1, tsi, v), r(2, 4), r(2, 2))


def test_indexing_masks() -> None:
    m = [[True, False, True]]
    tm = torch.tensor(m)
    check(lambda ad, x, v: ad.float_mask_where(x, mask(m)(ad), v),
          lambda x, v: torch.where(tm, v, x), r(2, 3), r(3))
    check(lambda ad, x: ad.float_mask_fill(x, mask(m)(ad), 7.0),
          lambda x: x.masked_fill(tm, 7.0), r(2, 3))


@pytest.mark.parametrize(("fn", "torch_fn", "x"), [
    (lambda ad, x: ad.float_sum(x), torch.sum, r(2, 3)),
    (lambda ad, x: ad.float_sum_dim(x, 1), lambda t: t.sum(1, keepdim=True), r(2, 3)),
    (lambda ad, x: ad.float_mean_dim(x, 0), lambda t: t.mean(0, keepdim=True), r(2, 3)),
    (lambda ad, x: ad.float_prod(x), torch.prod, r(2, 3)),
    (lambda ad, x: ad.float_prod(x), torch.prod, np.array([[1.0, 0.0, 3.0], [2.0, 4.0, 5.0]])),
    (lambda ad, x: ad.float_prod(x), torch.prod, np.array([[1.0, 0.0, 3.0], [2.0, 0.0, 5.0]])),
    (lambda ad, x: ad.float_prod_dim(x, 1), lambda t: t.prod(1, keepdim=True),
     np.array([[1.0, 0.0, 3.0], [2.0, 4.0, 5.0], [0.0, 0.0, 2.0]])),
    (lambda ad, x: ad.float_max(x), torch.max, np.array([[1.0, 3.0, 3.0], [0.0, 3.0, 2.0]])),
    (lambda ad, x: ad.float_min(x), torch.min, np.array([[1.0, 3.0, 3.0], [0.0, 3.0, 2.0]])),
    (lambda ad, x: ad.float_max_dim_with_indices(x, 1), lambda t: t.max(1, keepdim=True),
     r(3, 4)),
    (lambda ad, x: ad.float_min_dim_with_indices(x, 0), lambda t: t.min(0, keepdim=True),
     r(3, 4)),
    (lambda ad, x: ad.float_cumsum(x, 1), lambda t: t.cumsum(1), r(3, 4)),
    (lambda ad, x: ad.float_cumprod(x, 1), lambda t: t.cumprod(1), r(3, 7)),
    (lambda ad, x: ad.float_cumprod(x, 0), lambda t: t.cumprod(0),
     np.array([[1.5, 0.0], [0.0, 2.0], [3.0, 0.0], [2.0, -1.0], [0.5, 4.0]])),
    (lambda ad, x: ad.float_cumprod(x, 0), lambda t: t.cumprod(0), r(1, 3)),
    (lambda ad, x: ad.float_cummax(x, 1), lambda t: t.cummax(1), r(3, 5)),
    (lambda ad, x: ad.float_cummin(x, 0), lambda t: t.cummin(0), r(4, 3)),
    (lambda ad, x: ad.float_sort_with_indices(x, 1, True),
     lambda t: t.sort(dim=1, descending=True, stable=True), r(3, 5)),
])
def test_reductions(fn: Any, torch_fn: Any, x: np.ndarray) -> None:
    check(fn, torch_fn, x)


def test_cast_round_trip() -> None:
    ad = DEV.backend
    x = ad.float_require_grad(ad.float_from_data(np.ones((2, 2), np.float64), DEV))
    y = ad.float_cast(x, float32)
    assert ad.dtype(y) == float32
    g = ad.grad(x, ad.backward(ad.float_sum(ad.float_mul_scalar(y, 3.0))))
    assert ad.inner.dtype(g) == float64
    np.testing.assert_allclose(ad.inner.float_into_data(g), np.full((2, 2), 3.0))


# --- module ops ---
def test_conv_and_transpose() -> None:
    opt = ConvOptions(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)
    check(lambda ad, x, w, b: ad.conv(x, w, b, opt),
          lambda x, w, b: F.conv2d(x, w, b, (2, 1), (1, 0), (1, 2), 2),
          r(2, 4, 6, 7), r(6, 2, 3, 2), r(6), rtol=1e-6)
    topt = ConvTransposeOptions(stride=(2,), padding=(1,), padding_out=(1,), dilation=(1,))
    check(lambda ad, x, w: ad.conv_transpose(x, w, None, topt),
          lambda x, w: F.conv_transpose1d(x, w, None, 2, 1, 1), r(2, 3, 5), r(3, 4, 3),
          rtol=1e-6)


@pytest.mark.parametrize(("k", "stride", "pad", "dil"), [
    ((2, 3), (1, 1), (0, 0), (1, 1)),
    ((3, 2), (2, 3), (1, 1), (2, 1)),
])
def test_unfold4d(k: tuple[int, int], stride: tuple[int, int], pad: tuple[int, int],
                  dil: tuple[int, int]) -> None:
    opt = ConvOptions(stride=stride, padding=pad, dilation=dil)
    check(lambda ad, x: ad.unfold4d(x, k, opt),
          lambda x: F.unfold(x, k, dil, pad, stride), r(2, 3, 7, 8))


def test_pools_interpolate_grid_sample() -> None:
    popt = PoolOptions(kernel_size=(2, 3), stride=(2, 2), padding=(1, 1), dilation=(1, 1))
    check(lambda ad, x: ad.avg_pool(x, popt),
          lambda x: F.avg_pool2d(x, (2, 3), (2, 2), (1, 1)), r(2, 3, 6, 7))
    check(lambda ad, x: ad.max_pool_with_indices(x, popt),
          lambda x: F.max_pool2d(x, (2, 3), (2, 2), (1, 1)), r(2, 3, 6, 7))
    check(lambda ad, x: ad.adaptive_avg_pool(x, (3, 2)),
          lambda x: F.adaptive_avg_pool2d(x, (3, 2)), r(2, 3, 7, 5))
    iopt = InterpolateOptions(mode="bilinear", align_corners=False)
    check(lambda ad, x: ad.interpolate(x, (5, 9), iopt),
          lambda x: F.interpolate(x, (5, 9), mode="bilinear", align_corners=False),
          r(2, 3, 4, 6))
    gopt = GridSampleOptions()
    check(lambda ad, x, g: ad.grid_sample_2d(x, g, gopt),
          lambda x, g: F.grid_sample(x, g, "bilinear", "zeros", False),
          r(1, 2, 4, 5), r(1, 3, 3, 2, low=-0.9, high=0.9), rtol=1e-6)


def test_embedding_and_attention_defaults() -> None:
    ids = [[0, 2], [2, 1]]
    check(lambda ad, w: ad.embedding(w, idx(ids)(ad)),
          lambda w: F.embedding(torch.tensor(ids), w), r(3, 4))
    check(lambda ad, q, k, v: ad.attention(q, k, v, None, None, True),
          lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
          r(2, 3, 4), r(2, 3, 4), r(2, 3, 5))


def test_deform_conv2d_with_zero_offsets_is_conv() -> None:
    """No torchvision here: with zero offsets and a unit mask, deform_conv2d is conv2d."""
    from burn.backend.options import DeformConvOptions

    opt = DeformConvOptions(stride=(1, 2), padding=(1, 0), dilation=(1, 1))
    ad = DEV.backend
    offset = ad.float_require_grad(ad.float_from_data(np.zeros((2, 18, 5, 2)), DEV))
    check(lambda ad, x, w, m, b: ad.deform_conv2d(x, offset, w, m, b, opt), _masked_conv,
          r(2, 2, 5, 6), r(3, 2, 3, 3), r(2, 9, 5, 2), r(3), rtol=1e-6)


def _masked_conv(x: torch.Tensor, w: torch.Tensor, m: torch.Tensor,
                 b: torch.Tensor) -> torch.Tensor:
    """deform_conv2d with zero offsets: each kernel tap's sample scaled by the mask."""
    n, c = x.shape[:2]
    cols = F.unfold(x, 3, padding=(1, 0), stride=(1, 2)).reshape(n, c, 9, -1)
    cols = (cols * m.reshape(n, 1, 9, -1)).reshape(n, c * 9, -1)
    return (w.reshape(w.shape[0], -1) @ cols + b[:, None]).reshape(n, -1, 5, 2)
