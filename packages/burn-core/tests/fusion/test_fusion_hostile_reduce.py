"""Hostile inputs through the reduce and matmul fusers against PyTorch: 0-d tensors, empty and
size-1 dims, every dim with keepdim and negative dims, non-contiguous inputs and operands
(transposed, stepped, expanded, sliced batches), batched and broadcast products, K / M / N of
0 or 1, saturated rows (NaN, infinities, exp overflow), float16 / bfloat16 accumulation and
rounding, int and bool sums, several written results and later reads of pending tensors,
reduced values broadcast the other way, changing row lengths under one plan, the stream's
length bound cutting a chain, and gradients through fused reductions and epilogues. Each
case runs on the fusion device and on its inner backend unfused (they must agree with torch
both); every block is fused however short (`fuse_small_blocks`). wgpu
(llvmpipe here: slow) runs a representative subset. (`test_fusion_hostile.py` holds the
elementwise sweep.)"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
import torch
from fusion_testing import DEVICES, check, folds_half_rounding, gradients_agree

import burn
import burn.functional as F
from burn.errors import BurnIndexError, UnsupportedDTypeError, ValueRangeError
from burn.fusion import stream

pytestmark = pytest.mark.usefixtures("empty_stream", "fuse_small_blocks")
torch.set_num_threads(1)

#: Every fusion device, and the cpu alone (wgpu on llvmpipe compiles and runs slowly).
ALL = pytest.mark.parametrize("base", DEVICES)
CPU = pytest.mark.parametrize("base", [d for d in DEVICES if d == "cpu"])


def rand(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def ours(x: Any) -> bool:
    return isinstance(x, burn.Tensor)


# --- the ops spelled for both libraries ---
def amax(x: Any, d: int, keepdim: bool = True) -> Any:
    if ours(x):
        return x.max_dim(d) if keepdim else x.max(d)
    return x.amax(d, keepdim=keepdim)


def amin(x: Any, d: int, keepdim: bool = True) -> Any:
    if ours(x):
        return x.min_dim(d) if keepdim else x.min(d)
    return x.amin(d, keepdim=keepdim)


def max_idx(x: Any, d: int) -> tuple[Any, Any]:
    return x.max_dim_with_indices(d) if ours(x) else tuple(x.max(d, keepdim=True))


def min_idx(x: Any, d: int) -> tuple[Any, Any]:
    return x.min_dim_with_indices(d) if ours(x) else tuple(x.min(d, keepdim=True))


def first_max(x: Any, d: int) -> Any:
    """The max along `d` (kept) whose gradient goes to the first extreme or NaN: Burn's
    `max_dim`, torch's `max(dim).values` (`torch.amax` splits it between ties and gives every
    element of a line holding NaN a NaN: docs/differences.md)."""
    return x.max_dim(d) if ours(x) else x.max(d, keepdim=True).values


def softmax(x: Any, d: int) -> Any:
    return F.softmax(x, d) if ours(x) else torch.softmax(x, d)


def log_softmax(x: Any, d: int) -> Any:
    return F.log_softmax(x, d) if ours(x) else torch.log_softmax(x, d)


def relu(x: Any) -> Any:
    return F.relu(x) if ours(x) else torch.relu(x)


def gelu(x: Any) -> Any:
    return F.gelu(x) if ours(x) else torch.nn.functional.gelu(x)


def expand(x: Any, *shape: int) -> Any:
    return x.expand(shape) if ours(x) else x.expand(*shape)


def reshape(x: Any, *shape: int) -> Any:
    return x.reshape(shape) if ours(x) else x.reshape(*shape)


#: Whether torch's casts to float16 are left out (`agree`'s unrounded reference).
_UNROUNDED = [False]


def cast(x: Any, name: str) -> Any:
    if ours(x):
        return x.cast(getattr(burn, name))
    if _UNROUNDED[0] and name == "float16":
        return x.float()
    return x.to(getattr(torch, name))


def prim_softmax(x: Any, d: int) -> Any:
    """Softmax from primitives: exp(x - max) / sum."""
    e = (x - amax(x, d)).exp()
    return e / e.sum(d, keepdim=True)


def prim_layer_norm(x: Any, d: int) -> Any:
    """Layer norm from primitives (mean, centred squares' mean, rsqrt)."""
    centred = x - x.mean(d, keepdim=True)
    return centred / ((centred * centred).mean(d, keepdim=True) + 1e-5).sqrt()


# --- comparison ---
def same(got: burn.Tensor, want: torch.Tensor, rtol: float, atol: float) -> None:
    """`check` (shape, dtype, values, NaN where torch has NaN), and the signs of zeros
    where torch has zeros."""
    check(got, want, rtol=rtol, atol=atol)
    expected = want.detach().numpy()
    if expected.dtype.kind == "f":
        values = got.to_numpy()
        zero = expected == 0
        np.testing.assert_array_equal(np.signbit(values[zero]), np.signbit(expected[zero]))


def torch_results(fn: Callable[..., Any], arrays: Sequence[np.ndarray], unrounded: bool = False
                  ) -> tuple[Any, ...]:
    """`fn`'s results on torch tensors of `arrays`, its float16 casts left out if `unrounded`."""
    _UNROUNDED[0] = unrounded
    try:
        want = fn(*(torch.from_numpy(np.array(a, copy=True)) for a in arrays))
    finally:
        _UNROUNDED[0] = False
    return want if isinstance(want, tuple) else (want,)


def agree(fn: Callable[..., Any], base: str, *arrays: np.ndarray, rtol: float = 1e-5,
          atol: float = 1e-6, fused_only: bool = False, unrounded: bool = False) -> None:
    """`fn` on the fusion device (and on its inner backend unless `fused_only`) against
    torch: each result's shape, dtype and values; with `unrounded`, each value may instead be
    torch's without float16 rounding (a device that folds float16 round trips in a kernel,
    `folds_half_rounding`: NVIDIA's Vulkan driver, where a fused sum's rounding is folded and
    its float16 products are not; docs/differences.md)."""
    wants = torch_results(fn, arrays)
    others = torch_results(fn, arrays, unrounded=True) if unrounded else wants
    for dev in (f"{base}+fusion",) if fused_only else (f"{base}+fusion", base):
        got = fn(*(burn.tensor(a, device=dev) for a in arrays))
        gots = got if isinstance(got, tuple) else (got,)
        assert len(gots) == len(wants)
        for g, w, other in zip(gots, wants, others, strict=True):
            if other is w:
                same(g, w, rtol, atol)
                continue
            values, one, two = g.to_numpy(), w.detach().numpy(), other.detach().numpy()
            assert values.shape == one.shape and values.dtype == one.dtype
            either = np.isclose(values, one, rtol, atol, equal_nan=True) | \
                np.isclose(values, two, rtol, atol, equal_nan=True)
            assert either.all(), f"{values} is neither {one} nor {two}"


# --- 0-d, empty and size-1 dims, every dim ---
@ALL
def test_zero_dim_reductions(base: str) -> None:
    s = np.array(-2.5, np.float32)
    for d in (0, -1):
        for keepdim in (True, False):
            agree(lambda x, d=d, keepdim=keepdim: ((x * 2.0).sum(d, keepdim=keepdim) + 1.0,
                             (x * 2.0).mean(d, keepdim=keepdim),
                             (x * 2.0).prod(d, keepdim=keepdim),
                             amax(x * 2.0, d, keepdim), amin(x * 2.0, d, keepdim),
                             (x * 2.0).argmax(d, keepdim=keepdim),
                             (x * 2.0).logsumexp(d, keepdim=keepdim)), base, s)
        agree(lambda x, d=d: (softmax(x * 2.0, d), log_softmax(x * 2.0, d), *max_idx(x * 2.0, d)),
              base, s)
    x = burn.tensor(s, device=f"{base}+fusion") * 2.0
    for reduce in (lambda t: t.sum(1), lambda t: t.sum_dim(1), lambda t: t.max_dim(-2),
                   lambda t: t.argmax(1), lambda t: F.softmax(t, 1)):
        with pytest.raises(BurnIndexError):  # (torch: IndexError, dim out of range)
            reduce(x)


@ALL
@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4), (2, 0, 3)])
def test_reductions_over_empty_dims(base: str, shape: tuple[int, ...]) -> None:
    """Over an empty dim: a sum is 0, a mean NaN, a product 1, logsumexp -inf (as torch);
    over another dim of an empty tensor, empty results."""
    e = np.zeros(shape, np.float32)
    for d in range(-len(shape), len(shape)):
        for keepdim in (True, False):
            agree(lambda x, d=d, keepdim=keepdim: ((x * 2.0).sum(d, keepdim=keepdim) + 1.0,
                             (x * 2.0).mean(d, keepdim=keepdim) * 2.0,
                             (x * 2.0).prod(d, keepdim=keepdim) - 1.0,
                             (x * 2.0).logsumexp(d, keepdim=keepdim)), base, e)
            if shape[d]:
                agree(lambda x, d=d, keepdim=keepdim: (
                    amax(x * 2.0, d, keepdim), (x * 2.0).argmax(d, keepdim=keepdim),
                    softmax(x * 2.0, d), *min_idx(x * 2.0, d)), base, e)
    agree(lambda x: ((x * 2.0).sum() + 1.0, (x * 2.0).mean(), (x * 2.0).prod()), base, e)


@ALL
def test_extremes_of_an_empty_dim_raise(base: str) -> None:
    """max / min / argmax of an empty extent raise ValueRangeError (the Tensor API's
    documented error; torch raises an IndexError), on the fusion device and unfused."""
    for dev in (f"{base}+fusion", base):
        x = burn.tensor(np.zeros((3, 0), np.float32), device=dev) * 2.0
        for reduce in (lambda t: t.max(1), lambda t: t.max_dim(1), lambda t: t.argmax(-1),
                       lambda t: t.min_dim_with_indices(1), lambda t: t.max()):
            with pytest.raises(ValueRangeError):
                reduce(x)
        with pytest.raises(IndexError):
            torch.zeros(3, 0).amax(1)


@ALL
def test_every_dim_keepdim_and_negative_dims(base: str) -> None:
    a = rand(np.random.default_rng(0), 3, 4, 5)
    dims = range(-3, 3) if base == "cpu" else (0, 1, -1)
    for d in dims:
        for keepdim in (True, False):
            agree(lambda x, d=d, keepdim=keepdim: ((x * x).sum(d, keepdim=keepdim) * 2.0,
                             (x * x).mean(d, keepdim=keepdim) + 1.0,
                             amax(x * 2.0, d, keepdim) + 1.0, amin(x * 2.0, d, keepdim),
                             (x * 2.0).argmax(d, keepdim=keepdim),
                             (x * 2.0).argmin(d, keepdim=keepdim),
                             (x * 1.5).prod(d, keepdim=keepdim) + 1.0), base, a, atol=1e-5)
        agree(lambda x, d=d: (prim_softmax(x * 2.0, d), prim_layer_norm(x * 2.0, d)), base, a,
              rtol=1e-4, atol=1e-5)


@ALL
def test_size_one_dims(base: str) -> None:
    rng = np.random.default_rng(1)
    for shape in [(3, 1, 5), (1, 5), (5, 1), (1, 1), (3, 5, 1, 1)]:
        a = rand(rng, *shape)
        for d in range(len(shape)):
            agree(lambda x, d=d: ((x * 2.0).sum(d, keepdim=True) + x, (x * 2.0).argmax(d),
                             *max_idx(x * 2.0, d), softmax(x * 2.0, d),
                             prim_layer_norm(x * 2.0, d)), base, a, atol=1e-5)


# --- non-contiguous inputs ---
@ALL
def test_strided_views_feed_fused_reductions(base: str) -> None:
    rng = np.random.default_rng(2)
    a, cube = rand(rng, 6, 8), rand(rng, 3, 4, 5)
    row, col = rand(rng, 1, 8), rand(rng, 6, 1)
    for d in (0, 1, -1):
        agree(lambda x, d=d: ((x.transpose(0, 1) * 2.0).sum(d, keepdim=True) + 1.0,
                         (x.transpose(0, 1) ** 2).mean(d),
                         (x[::2, 1::3] * 2.0).argmax(d), *max_idx(x[::2, 1::3] * 2.0, d),
                         softmax(x.transpose(0, 1), d), x.transpose(0, 1).logsumexp(d)),
              base, a, atol=1e-5)
        agree(lambda r, d=d: ((expand(r, 6, 8) * 1.0).sum(d, keepdim=True),
                         expand(r, 6, 8).sum(d, keepdim=True) * 2.0,  # a raw view reduced
                         prim_softmax(expand(r, 6, 8) * 2.0, d)), base, row, atol=1e-5)
        agree(lambda c, d=d: ((expand(c, 6, 8) + 0.0).argmax(d), amax(expand(c, 6, 8), d) * 2.0,
                         *min_idx(expand(c, 6, 8) * 1.0, d)), base, col)
    for d in range(3):
        agree(lambda x, d=d: ((x.permute(2, 0, 1) * 1.1).prod(d, keepdim=True),
                         (x.permute(2, 0, 1) * 1.1).mean(d, keepdim=True) - x.permute(2, 0, 1),
                         x.permute(1, 2, 0).var(d), prim_layer_norm(x.permute(1, 2, 0), d)),
              base, cube, rtol=1e-4, atol=1e-5)


@ALL
def test_matmul_operand_views_and_bias_broadcasts(base: str) -> None:
    rng = np.random.default_rng(3)
    a, b, bias = rand(rng, 5, 7), rand(rng, 7, 4), rand(rng, 4)
    agree(lambda x, w, c: relu(x.matmul(w) + c), base, a, b, bias, atol=1e-5)
    agree(lambda x, w, c: relu(x.transpose(0, 1).matmul(w) + c), base, rand(rng, 7, 5), b,
          bias, atol=1e-5)
    agree(lambda x, w, c: relu(x.matmul(w.transpose(0, 1)) + c), base, a, rand(rng, 4, 7),
          bias, atol=1e-5)
    agree(lambda x, w, c: gelu(x.transpose(0, 1).matmul(w.transpose(0, 1)) * 0.5 + c), base,
          rand(rng, 7, 5), rand(rng, 4, 7), bias, atol=1e-5)
    agree(lambda x, w, c: relu(x[::2, ::3].matmul(w[1::2]) + c), base, rand(rng, 10, 21),
          rand(rng, 14, 4), bias, atol=1e-5)
    agree(lambda x, w, c: relu(expand(x, 5, 7).matmul(w) + c), base, rand(rng, 1, 7), b,
          bias, atol=1e-5)  # lhs rows broadcast (stride 0 along M)
    agree(lambda x, w, c: relu(expand(x, 5, 7).matmul(w) + c), base, rand(rng, 5, 1), b,
          bias, atol=1e-5)  # stride 0 along K
    agree(lambda x, w, c: relu(x.matmul(expand(w, 7, 4)) + c), base, a, rand(rng, 7, 1),
          bias, atol=1e-5)  # stride 0 along N
    agree(lambda x, w, c: relu(x.matmul(w) + c), base, a, b, rand(rng, 5, 1), atol=1e-5)
    agree(lambda x, w, c: relu(x.matmul(w) + expand(c, 5, 4)), base, a, b, rand(rng, 1, 4),
          atol=1e-5)
    agree(lambda x, w, r: x.matmul(w) + r.transpose(0, 1) + 1.0, base, a, b, rand(rng, 4, 5),
          atol=1e-5)  # a transposed residual

    def self_residual(x: Any, w: Any) -> tuple[Any, Any]:
        y = x * 2.0  # read by the product and by its epilogue
        return y.matmul(w) + y, y.matmul(y.transpose(0, 1)) * 0.5

    agree(self_residual, base, rand(rng, 4, 4), rand(rng, 4, 4), atol=1e-5)


@ALL
def test_batched_products_with_broadcast_and_strided_batches(base: str) -> None:
    rng = np.random.default_rng(4)
    agree(lambda x, w, c: relu(x.matmul(w) + c), base, rand(rng, 2, 1, 3, 5),
          rand(rng, 1, 4, 5, 6), rand(rng, 6), atol=1e-5)
    agree(lambda x, w, c: x.matmul(w) * c, base, rand(rng, 3, 5), rand(rng, 2, 5, 6),
          rand(rng, 2, 1, 6), atol=1e-5)
    agree(lambda x, w: (x.matmul(w) + 1.0).exp(), base, rand(rng, 2, 3, 3, 5), rand(rng, 5, 2),
          atol=1e-5)
    agree(lambda x, w: expand(x, 3, 4, 5).matmul(w) - 1.0, base, rand(rng, 1, 4, 5),
          rand(rng, 3, 5, 2), atol=1e-5)
    agree(lambda x, w: x.matmul(expand(w, 3, 5, 2)) - 1.0, base, rand(rng, 3, 4, 5),
          rand(rng, 5, 2), atol=1e-5)
    agree(lambda x, w: x.permute(1, 0, 2).matmul(w) * 2.0, base, rand(rng, 4, 3, 5),
          rand(rng, 3, 5, 2), atol=1e-5)
    agree(lambda x, w: x[::2].matmul(w[:, ::2]) * 2.0 + 1.0, base, rand(rng, 4, 3, 5),
          rand(rng, 2, 10, 3), atol=1e-5)
    agree(lambda x, w: (x[1::2].transpose(1, 2).matmul(w) - 1.0).exp(), base,
          rand(rng, 4, 5, 3), rand(rng, 2, 5, 3), atol=1e-5)


@ALL
@pytest.mark.parametrize("mkn", [(1, 5, 4), (5, 1, 4), (5, 4, 1), (1, 1, 1), (1, 7, 1),
                                 (0, 3, 4), (3, 0, 4), (3, 4, 0), (0, 0, 0)])
def test_matmul_edge_shapes(base: str, mkn: tuple[int, int, int]) -> None:
    """[1, n] / [n, 1] shapes, and K = 0 (zeros, as torch), M or N = 0 (empty), plain, with
    an epilogue, batched and reduced after."""
    m, k, n = mkn
    rng = np.random.default_rng(5)
    lhs, rhs, bias = rand(rng, m, k), rand(rng, k, n), rand(rng, n)
    for _ in range(2):  # planned, then from the plan
        agree(lambda x, w, c: (x.matmul(w), relu(x.matmul(w) + c) * 2.0), base, lhs, rhs, bias,
              atol=1e-5)
    agree(lambda x, w, c: (x.matmul(w) + c).sum(-1, keepdim=True), base, rand(rng, 2, m, k),
          rhs, bias, atol=1e-5)


# --- saturated values, half precision, ints ---
SATURATED = np.array([[1.0, 2.0, np.inf, 3.0], [np.inf, np.inf, 1.0, 2.0], [-np.inf] * 4,
                      [3e38] * 4, [np.nan, 1.0, 2.0, 3.0], [1.0, np.nan, 5.0, np.nan],
                      [-np.inf, np.nan, np.inf, 0.0], [1e30, 2e30, -1e30, 100.0],
                      [89.0, 90.0, 100.0, 0.0], [2.0, 2.0, -2.0, -2.0]], np.float32)


@ALL
def test_saturated_rows_through_fused_reductions(base: str) -> None:
    """NaN propagates through max / min and argmax points at the first NaN; softmax of a row
    with inf, of a row of -inf and of values whose exp overflows; squares past float32."""
    for d, data in ((1, SATURATED), (0, np.ascontiguousarray(SATURATED.T))):
        agree(lambda x, d=d: ((x * 1.0).argmax(d), (x * 1.0).argmin(d), amax(x * 1.0, d, False),
                         amin(x * 1.0, d), *max_idx(x * 1.0, d), *min_idx(x * 1.0, d),
                         (x * 1.0).prod(d), (x * x).sum(d), (x * x).mean(d, keepdim=True)),
              base, data)
        agree(lambda x, d=d: (prim_softmax(x * 1.0, d), (x * 1.0).exp() / (x * 1.0).exp().sum(
            d, keepdim=True), (x * 1.0).logsumexp(d), softmax(x * 1.0, d),
            log_softmax(x * 1.0, d)), base, data)
        agree(lambda x: ((x * 1.0).max(), (x * 1.0).argmax(), (x * 1.0).sum()), base, data)


@ALL
def test_signed_zero_sums(base: str) -> None:
    """Rows of -0.0 sum to +0.0 (torch's sums start from +0.0), and products keep the sign."""
    z = np.full((3, 70), -0.0, np.float32)
    for d in (0, 1):
        agree(lambda x, d=d: ((x * 1.0).sum(d), (x * 1.0).mean(d), x.sum(d, keepdim=True) * 1.0,
                         (x[:, :5] * 1.0).prod(d)), base, z)
    agree(lambda x: ((x * 1.0).sum(), (x[:, :5] * 1.0).matmul(x[:2, :5].transpose(0, 1) * 1.0)),
          base, z)


@ALL
@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_half_precision_reductions(base: str, name: str) -> None:
    """float16 / bfloat16 reductions accumulate in float32 (a row of 3000 values, a mean of
    values whose sum overflows float16), and what a fused op computes is rounded to the
    dtype before it is reduced or compared (x + big - big; argmax of values that round
    equal takes the first)."""
    if not burn.Device(base).backend.supports(getattr(burn, name)):  # (docs/differences.md)
        with pytest.raises(UnsupportedDTypeError, match=name):
            burn.tensor(np.ones(3, np.float32), device=f"{base}+fusion").cast(
                getattr(burn, name))
        return
    folds = name == "float16" and folds_half_rounding(base)
    agree_half = functools.partial(agree, unrounded=folds)
    rng = np.random.default_rng(6)
    big_rows = (rng.standard_normal((4, 3000)) + 3.0).astype(np.float32)
    agree_half(lambda x: (cast(cast(x, name) * 1.0, "float32").sum(1, keepdim=True),
                          cast((cast(x, name) * 1.0).mean(1), "float32"),
                          cast((cast(x, name) ** 2).mean(1), "float32"),
                          cast(softmax(cast(x, name) * 1.0, 1), "float32")),
               base, big_rows, rtol=1e-2, atol=1e-6, fused_only=True)
    scale = 20000.0 if name == "float16" else 1e30
    agree_half(lambda x: (cast((cast(x, name) * scale).sum(1, keepdim=True), "float32"),
                          cast((cast(x, name) * scale).mean(1, keepdim=True), "float32")),
               base, big_rows[:, :8], rtol=1e-2)
    big = 1000.0 if name == "float16" else 100.0
    data = np.array([[0.0, 0.125, 0.25, 0.125], [0.5, 0.50390625, 0.1, 0.2]], np.float32)

    def rounded(x: Any) -> tuple[Any, ...]:
        y = cast(x, name)
        z = (y + big) - big
        return (cast(z, "float32").sum(1, keepdim=True), max_idx(z, 1)[1], (y + big).argmax(1),
                max_idx(y + big, 1)[1], cast(z.mean(1, keepdim=True), "float32"),
                cast(softmax(z, 1), "float32"))

    agree_half(rounded, base, data, rtol=0, atol=0)
    eye, rhs = np.eye(2, dtype=np.float32), np.array([[0.125, 0.25], [0.5, 0.0]], np.float32)
    agree_half(lambda x, w: (cast((cast(x, name).matmul(cast(w, name)) + big - big) * 2.0,
                                  "float32"),
                             cast((cast(x, name).matmul(cast(w, name)) + big - big).sum(
                                 1, keepdim=True), "float32")), base, eye, rhs, rtol=0, atol=0)
    agree_half(lambda x, w, c: relu(cast(x, name).matmul(cast(w, name)) + c), base,
               rand(rng, 4, 9), rand(rng, 9, 3), rand(rng, 3), rtol=1e-2, atol=1e-2)


@ALL
def test_int_and_bool_reductions(base: str) -> None:
    """int32 sums and products are int64 (no wrap at 2**31, as torch's promotion); int64
    sums wrap; bool sums count; int maxima and arg-extremes; ints cast to float reduce."""
    ints = np.array([[2**31 - 1, 2**31 - 1, 5], [-2**31, -1, -7], [3, 4, 5]], np.int32)
    for d in (0, 1, -1):
        agree(lambda x, d=d: ((x * 1).sum(d), (x * 1).sum(d, keepdim=True), (x * 1).prod(d),
                         amax(x * 1, d, False), (x * 1).argmax(d), (x * 1).argmin(d),
                         (x > 0).sum(d), (x * 1).float().sum(d, keepdim=True)), base, ints)
    agree(lambda x: ((x * 1).sum(), (x * 1).prod(), (x > 0).sum()), base, ints)
    if burn.Device(base).backend.supports(burn.int64):
        agree(lambda x: (cast(x, "int64") * 2**32).sum(1), base, ints)  # wraps past 2**63


@ALL
def test_int_mean_is_burns_floor_mean(base: str) -> None:
    """The int mean is the floor of sum / count in the input's dtype (docs/differences.md;
    torch refuses ints)."""
    ints = np.array([[-7, 0], [7, 0], [2**31 - 1, 2**31 - 1]], np.int32)
    for dev in (f"{base}+fusion", base):
        got = (burn.tensor(ints, device=dev) * 1).mean(1)
        assert got.dtype == burn.int32
        np.testing.assert_array_equal(got.to_numpy(), np.array([-4, 3, 2**31 - 1], np.int32))


@CPU
def test_float64_and_mixed_dtype_blocks(base: str) -> None:
    """float64 reductions next to float32 ones in one block (the cpu kernel's scratch rows
    widen to float64) and a float32 product with a float64 epilogue input."""
    rng = np.random.default_rng(7)
    a = rand(rng, 4, 9)
    agree(lambda x: (softmax(cast(x, "float64") * 1.0, 1), softmax(x * 1.0, 1),
                     amax(x * 1.0, 1), cast(x, "float64").sum(1, keepdim=True) * 1.0,
                     (cast(x, "float64") * 1e-300).sum(1, keepdim=True) * 1e300,
                     (cast(x, "float64") * 1.1).sum(1, keepdim=True) + (x * 1.0).sum(
                         1, keepdim=True)), base, a, rtol=1e-6)
    agree(lambda x, w, c: relu(x.matmul(w) + c), base, a, rand(rng, 9, 3),
          rng.standard_normal(3), atol=1e-5)


@ALL
def test_row_lengths_across_schedules(base: str) -> None:
    """Rows around the cpu kernel's partial blocks and the GPU schedules' group sizes,
    register chunks and loops (`reduce_gpu`), with a NaN and ties placed late."""
    rng = np.random.default_rng(8)
    lengths = [2, 3, 9, 33, 65, 129, 257, 1025, 4097, 5000] if base == "cpu" else \
        [2, 5, 63, 129, 1025, 4097]
    for n in lengths:
        a = rand(rng, 3, n)
        a[1, n // 2] = np.nan
        a[2, n - 1] = a[2, n // 3] = 50.0
        agree(lambda x: (*max_idx(x * 2.0, 1), *min_idx(x * -2.0, 1), softmax(x * 2.0, 1),
                         (x * x).mean(1, keepdim=True)), base, a, rtol=1e-5, fused_only=True)
        agree(lambda x: (*max_idx(x * 2.0, 0), softmax(x * 2.0, 0), (x * 2.0).sum(0)), base,
              np.ascontiguousarray(a.T), rtol=1e-4, atol=1e-4, fused_only=True)


# --- several results, later reads, other orientations, plans ---
def several(x: Any) -> tuple[Any, ...]:
    """A softmax and logsumexp from primitives with every intermediate kept."""
    y = x * 2.0 + 1.0
    m = amax(y, -1)
    e = (y - m).exp()
    s = e.sum(-1, keepdim=True)
    return e / s, s.log() + m, y, e, m, s


@ALL
def test_several_results_and_later_reads(base: str) -> None:
    rng = np.random.default_rng(9)
    agree(several, base, rand(rng, 5, 9), atol=1e-5)

    def normed(x: Any) -> tuple[Any, ...]:
        y = x * 2.0 + 1.0
        mu = y.mean(1, keepdim=True)
        d = y - mu
        v = (d * d).mean(1, keepdim=True)
        out = d / (v + 1e-5).sqrt()
        return out, mu, v, y.exp(), (out * 3.0 + mu).sum(1)

    agree(normed, base, rand(rng, 4, 7), rtol=1e-5, atol=1e-5)

    def eager_reads(x: Any, w: Any) -> tuple[Any, ...]:
        y = (x * 2.0).tanh()  # pending: read by a reduction, then by eager ops
        s = y.mean(0, keepdim=True)
        t = y.sum(1, keepdim=True)
        return y.matmul(w), s, y.argmax(1), y - s, y.cumsum(1), y / t, y.flip((1,))

    agree(eager_reads, base, rand(rng, 4, 6), rand(rng, 6, 3), atol=1e-5)

    def indices(x: Any) -> tuple[Any, ...]:
        y = x * 2.0
        v, i = max_idx(y, 1)
        w, j = min_idx(y, 1)
        return (i.float() + v, (i * 3 - j) % 4, i == j, (y - v) * (i.float() + 1.0),
                w + j.float(), y.sum(1, keepdim=True) + i)

    special = rand(rng, 5, 9)
    special[0], special[1, 3], special[2] = 1.0, np.nan, -np.inf
    agree(indices, base, special)

    def two_dims(x: Any) -> tuple[Any, ...]:
        y = x * x
        return y.sum(0, keepdim=True) + y.sum(1, keepdim=True), amax(y, 1), amin(y, 0)

    agree(two_dims, base, rand(rng, 5, 6), atol=1e-5)


@ALL
def test_reduced_values_read_in_other_orientations(base: str) -> None:
    """A reduced result squeezed, reshaped, transposed or expanded before it is broadcast
    again: it must not be read as the block's per-row value."""
    rng = np.random.default_rng(10)
    sq = rand(rng, 4, 4)

    def squeezed(x: Any) -> tuple[Any, ...]:
        y = x * 2.0
        s = y.sum(1)  # [4]: broadcast along the last dim, not per row
        m = amax(y, 0, False)
        return y + s, s, (y - m).exp() / (y - m).exp().sum(0), y * reshape(
            y.sum(1, keepdim=True), 1, 4), y * y.sum(1, keepdim=True).transpose(0, 1)

    agree(squeezed, base, sq, atol=1e-5)

    def outer(x: Any) -> tuple[Any, ...]:
        s = (x * 2.0).sum(1, keepdim=True)
        return s + reshape(s, 1, 4), s * x[:1, :], expand(s, 4, 4) * x

    agree(outer, base, sq, atol=1e-5)
    agree(lambda x: (lambda y: y / y.sum(-1).unsqueeze(1))(x.exp()), base, rand(rng, 3, 4, 4),
          atol=1e-5)
    agree(lambda x, c: (lambda y: ((y.sum(1, keepdim=True) + c), y / y.sum(1, keepdim=True)))(
        x * c), base, rand(rng, 4), rand(rng, 4, 1), atol=1e-5)
    agree(lambda x, c: (lambda y: (y.sum(0, keepdim=True) + c, y - y.sum(0, keepdim=True)))(
        x * c), base, sq, rand(rng, 4, 1), atol=1e-5)


@ALL
def test_one_plan_with_changing_row_lengths(base: str) -> None:
    """One structure (a softmax from primitives with its intermediates, a linear + ReLU, an
    argmax) over rows of changing lengths and ranks: each planned, the first reused."""
    rng = np.random.default_rng(11)
    shapes = [(4, 6), (4, 7), (4, 2), (1, 9), (3, 65), (2, 1000), (4, 6), (2, 3, 5), (4, 7)]
    for shape in shapes if base == "cpu" else shapes[:4] + shapes[6:]:
        a = rand(rng, *shape)
        agree(several, base, a, atol=1e-5, fused_only=True)
        agree(lambda x, w, c: (relu(x.matmul(w) + c), (x * 2.0).argmax(-1)), base, a,
              rand(rng, shape[-1], 3), rand(rng, 3), atol=1e-5, fused_only=True)


@CPU
def test_length_bound_cuts_a_reduce_chain(base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stream's length bound (`MAX_PENDING`) falling anywhere in a chain of fused
    reductions and a product leaves its values as torch's."""
    rng = np.random.default_rng(12)
    a, w, c = rand(rng, 4, 7), rand(rng, 7, 5), rand(rng, 5)

    def chain(x: Any, w: Any, c: Any) -> tuple[Any, ...]:
        y = x
        for _ in range(3):
            y = y * 1.01 + 0.01
        p = prim_softmax(y, 1)
        return prim_layer_norm(relu(p.matmul(w) + c), 1), p

    for bound in (3, 4, 5, 7, 9, 12):
        monkeypatch.setattr(stream, "MAX_PENDING", bound)
        agree(chain, base, a, w, c, rtol=1e-4, atol=1e-5, fused_only=True)


# --- gradients ---
def subset(cases: dict[str, Any], gpu: tuple[str, ...]) -> list[tuple[str, str]]:
    """(device, case) pairs: every case on the cpu, those in `gpu` on wgpu (llvmpipe)."""
    return [(base, name) for base in DEVICES for name in cases
            if base == "cpu" or name in gpu]


TIES = np.array([[1.0, 3.0, 3.0, 0.0], [np.nan, 2.0, np.nan, 1.0],
                 [-np.inf, -np.inf, -np.inf, -np.inf], [2.0, 2.0, 2.0, 2.0]], np.float32)

REDUCE_LOSSES: dict[str, tuple[Callable[..., Any], Callable[[np.random.Generator],
                                                            Sequence[np.ndarray]]]] = {
    "prim_softmax": (lambda x, w: (prim_softmax(x, 1) * w).sum(),
                     lambda r: (rand(r, 5, 7), rand(r, 7))),
    "prim_softmax_dim0": (lambda x, w: (prim_softmax(x, 0) * w).sum(),
                          lambda r: (rand(r, 5, 7), rand(r, 7))),
    "layer_norm": (lambda x, w: (prim_layer_norm(x, -1) * w).pow(2).sum(),
                   lambda r: (rand(r, 5, 7), rand(r, 7))),
    "mean_of_squares": (lambda x, w: ((x * w) ** 2).mean(1).sqrt().sum(),
                        lambda r: (rand(r, 5, 7), rand(r, 7))),
    "max_min": (lambda x, w: (amax(x * w, 1) * 2.0).sum() + amin(x * w, 0).exp().sum(),
                lambda r: (rand(r, 5, 7), rand(r, 7))),
    "max_ties_and_nan": (lambda x, w: (first_max(x * w, 1) * 2.0).sum(),
                         lambda r: (TIES, np.ones(4, np.float32))),
    "prod_with_zeros": (lambda x, w: (x * w).prod(1).sum(),
                        lambda r: (np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 1.0], [1.0, 2.0, 3.0]],
                                            np.float32), np.ones(3, np.float32))),
    "logsumexp_rows_of_-inf": (lambda x, w: ((x * w).logsumexp(1) * 2.0).sum(),
                               lambda r: (TIES[2:], np.ones(4, np.float32))),
    "softmax_with_inf": (lambda x, w: (softmax(x * w, 1) * w).sum(),
                         lambda r: (np.array([[1.0, np.inf, 2.0], [-np.inf, -np.inf, 0.0],
                                              [3e38, 1.0, 2.0]], np.float32),
                                    np.ones(3, np.float32))),
    "constant_row_layer_norm": (lambda x, w: (prim_layer_norm(x, 1) * w).sum(),
                                lambda r: (TIES[3:], np.arange(4, dtype=np.float32))),
    "empty_dim_mean": (lambda x, w: ((x * 2.0).mean(1) * w).sum(),
                       lambda r: (np.zeros((4, 0), np.float32), np.ones(4, np.float32))),
    "zero_dim_softmax": (lambda x, w: (softmax(x * 2.0, 0) * w).sum() + (x * w).sum(),
                         lambda r: (np.array(3.0, np.float32), np.ones(4, np.float32))),
    "strided_and_expanded_leaves": (
        lambda x, w: (softmax(x.transpose(0, 1)[:, ::2] * w, 1) * w).sum()
        + (expand(w[:1], 5, 1) * x[:5, :1]).sum(0).pow(2).sum(),
        lambda r: (rand(r, 8, 5), rand(r, 4))),
    "several_outputs": (lambda x, w: (lambda y: (y / y.sum(1, keepdim=True)).sum()
                                      + y.sum(1).pow(2).sum() + amax(y, 1).sum())(
                            (x * w).exp()), lambda r: (rand(r, 4, 6), rand(r, 6))),
}


@pytest.mark.parametrize(("base", "name"), subset(
    REDUCE_LOSSES, ("prim_softmax", "layer_norm", "max_ties_and_nan")))
def test_gradients_through_fused_reductions(base: str, name: str) -> None:
    fn, inputs = REDUCE_LOSSES[name]
    gradients_agree(fn, base, *inputs(np.random.default_rng(13)))


MATMUL_LOSSES: dict[str, tuple[Callable[..., Any], Callable[[np.random.Generator],
                                                            Sequence[np.ndarray]]]] = {
    "linear_relu": (lambda a, w, c: relu(a.matmul(w) + c).sum(),
                    lambda r: (rand(r, 4, 6), rand(r, 6, 3), rand(r, 3))),
    "gelu_residual": (lambda a, w, c, s: (gelu(a.matmul(w) + c) + s).pow(2).sum(),
                      lambda r: (rand(r, 4, 6), rand(r, 6, 3), rand(r, 3), rand(r, 4, 3))),
    "transposed_operands": (
        lambda a, w, c: relu(a.transpose(0, 1).matmul(w.transpose(0, 1)) + c).pow(2).sum(),
        lambda r: (rand(r, 5, 3), rand(r, 2, 5), rand(r, 2))),
    "batched_broadcast": (lambda a, w, c: (relu(a.matmul(w) + c) * 2.0).sum(),
                          lambda r: (rand(r, 2, 1, 4, 6), rand(r, 3, 6, 3), rand(r, 3))),
    "one_row_batched": (lambda a, w, c: relu(a.matmul(w) + c).pow(2).sum(),
                        lambda r: (rand(r, 1, 5), rand(r, 3, 5, 2), rand(r, 2))),
    "one_column": (lambda a, w, c: (relu(a.matmul(w) + c) * a[:, :1]).sum(),
                   lambda r: (rand(r, 3, 5), rand(r, 5, 1), rand(r, 1))),
    "k_zero": (lambda a, w, c: relu(a.matmul(w) + c).sum(),
               lambda r: (rand(r, 3, 0), rand(r, 0, 4), rand(r, 4))),
    "square_residual": (lambda a, w: (a.matmul(w) + a).tanh().sum(),
                        lambda r: (rand(r, 4, 4), rand(r, 4, 4))),
    "attention": (lambda q, k, v: softmax(q.matmul(k.transpose(0, 1)) * 0.5, -1).matmul(
        v).pow(2).sum(), lambda r: (rand(r, 4, 6), rand(r, 5, 6), rand(r, 5, 3))),
}


@pytest.mark.parametrize(("base", "name"), subset(MATMUL_LOSSES,
                                                   ("linear_relu", "attention")))
def test_gradients_through_fused_matmul_epilogues(base: str, name: str) -> None:
    fn, inputs = MATMUL_LOSSES[name]
    gradients_agree(fn, base, *inputs(np.random.default_rng(14)))
