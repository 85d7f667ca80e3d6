"""Every name of docs/tensor-api.md exists and runs; shapes and dtypes match torch."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import burn
import burn.functional as F

rng = np.random.default_rng(0)
XN = rng.standard_normal((2, 3, 4)).astype(np.float32)
IN = rng.integers(-5, 5, (2, 3, 4))
XP = np.abs(XN) + 0.5
X, I, P = burn.tensor(XN), burn.tensor(IN), burn.tensor(XP)
TX, TI, TP = torch.tensor(XN), torch.tensor(IN), torch.tensor(XP)
TORCH_DTYPE = {torch.float32: burn.float32, torch.float64: burn.float64,
               torch.int64: burn.int64, torch.int32: burn.int32, torch.bool: burn.bool_}


def _check(out: Any, ref: Any) -> None:
    if isinstance(ref, tuple | list):
        assert len(out) == len(ref)
        for o, r in zip(out, ref, strict=True):
            _check(o, r)
        return
    assert isinstance(out, burn.Tensor)
    assert out.shape == tuple(ref.shape), (out.shape, ref.shape)
    assert out.dtype == TORCH_DTYPE[ref.dtype], (out.dtype, ref.dtype)
    np.testing.assert_allclose(out.to_numpy().astype(np.float64),
                               ref.detach().numpy().astype(np.float64), rtol=1e-4, atol=1e-5,
                               equal_nan=True)


# (name, burn fn, torch fn)
PAIRS: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
    ("add", lambda: X + I, lambda: TX + TI), ("radd", lambda: 2 + I, lambda: 2 + TI),
    ("sub", lambda: X.sub(1), lambda: TX.sub(1)), ("rsub", lambda: 1.5 - I, lambda: 1.5 - TI),
    ("mul", lambda: X * X[0], lambda: TX * TX[0]), ("div", lambda: I / 2, lambda: TI / 2),
    ("rdiv", lambda: 1 / P, lambda: 1 / TP), ("floordiv", lambda: X // 0.3, lambda: TX // 0.3),
    ("int floordiv", lambda: I // 3, lambda: TI // 3), ("mod", lambda: X % 0.7, lambda: TX % 0.7),
    ("int mod", lambda: I % 3, lambda: TI % 3), ("pow", lambda: P ** 1.5, lambda: TP ** 1.5),
    ("int pow", lambda: I ** 2, lambda: TI ** 2), ("rpow", lambda: 2 ** X, lambda: 2 ** TX),
    ("powf", lambda: P.powf(P), lambda: TP.pow(TP)), ("powi", lambda: I.powi(3),
                                                      lambda: TI.pow(3)),
    ("pow tensor", lambda: P.pow(I), lambda: TP.pow(TI)), ("square", lambda: I.square(),
                                                           lambda: TI.square()),
    ("neg", lambda: -X, lambda: -TX), ("recip", lambda: P.recip(), lambda: TP.reciprocal()),
    ("abs", lambda: abs(I), lambda: abs(TI)),
    ("matmul", lambda: X @ X.swap_dims(1, 2), lambda: TX @ TX.transpose(1, 2)),
    ("matmul 1d-1d", lambda: X[0, 0] @ X[0, 1], lambda: TX[0, 0] @ TX[0, 1]),
    ("matmul 1d-nd", lambda: X[0, 0, :3] @ X, lambda: TX[0, 0, :3] @ TX),
    ("matmul nd-1d", lambda: X @ X[0, 0], lambda: TX @ TX[0, 0]),
    ("int matmul", lambda: I[0] @ I[0].transpose(0, 1), lambda: TI[0] @ TI[0].T),
    ("cross", lambda: X[..., :3].cross(X[..., 1:]), lambda: torch.cross(TX[..., :3],
                                                                        TX[..., 1:], dim=-1)),
    ("clamp", lambda: X.clamp(-0.5, 0.5), lambda: TX.clamp(-0.5, 0.5)),
    ("clamp int float bound", lambda: I.clamp(min=0.5), lambda: TI.clamp(min=0.5)),
    ("clamp_min", lambda: I.clamp_min(0), lambda: TI.clamp_min(0)),
    ("clamp_max", lambda: X.clamp_max(0), lambda: TX.clamp_max(0)),
    *[(f, lambda f=f: getattr(P, f)(), lambda f=f: getattr(TP, f)()) for f in (
        "exp", "log", "log1p", "sqrt", "sign", "sin", "cos", "tan", "sinh", "cosh", "tanh",
        "atan", "asinh", "erf", "round", "floor", "ceil", "trunc")],
    *[(f, lambda f=f: getattr(X.clamp(-0.9, 0.9), f)(),
       lambda f=f: getattr(TX.clamp(-0.9, 0.9), f)()) for f in ("asin", "acos", "atanh")],
    ("acosh", lambda: (P + 1).acosh(), lambda: (TP + 1).acosh()),
    ("sin int", lambda: I.sin(), lambda: TI.sin()), ("floor int", lambda: I.floor(),
                                                      lambda: TI.floor()),
    ("atan2", lambda: X.atan2(P), lambda: TX.atan2(TP)),
    ("hypot", lambda: X.hypot(P), lambda: TX.hypot(TP)),
    ("isnan", lambda: (X / 0 * 0).is_nan(), lambda: (TX / 0 * 0).isnan()),
    ("isinf", lambda: (X / 0).isinf(), lambda: (TX / 0).isinf()),
    ("reshape", lambda: X.reshape(4, -1), lambda: TX.reshape(4, -1)),
    ("transpose", lambda: X.transpose(0, 2), lambda: TX.transpose(0, 2)),
    ("permute", lambda: X.permute(2, 0, 1), lambda: TX.permute(2, 0, 1)),
    ("flip", lambda: X.flip((0, 2)), lambda: TX.flip((0, 2))),
    ("expand", lambda: X[:, :1].expand(3, -1, 5, 4), lambda: TX[:, :1].expand(3, -1, 5, 4)),
    ("repeat_dim", lambda: X.repeat_dim(1, 2), lambda: TX.repeat(1, 2, 1)),
    ("repeat", lambda: X.repeat(2, 1, 2, 1), lambda: TX.repeat(2, 1, 2)),
    ("unfold", lambda: X.unfold(2, 2, 1), lambda: TX.unfold(2, 2, 1)),
    ("squeeze", lambda: X[:1].squeeze(), lambda: TX[:1].squeeze()),
    ("squeeze dim", lambda: X[:1].squeeze(0), lambda: TX[:1].squeeze(0)),
    ("unsqueeze", lambda: X.unsqueeze(-1), lambda: TX.unsqueeze(-1)),
    ("flatten", lambda: X.flatten(1), lambda: TX.flatten(1)),
    ("narrow", lambda: X.narrow(2, 1, 2), lambda: TX.narrow(2, 1, 2)),
    ("chunk", lambda: X.chunk(3, 2), lambda: TX.chunk(3, 2)),
    ("split", lambda: X.split([1, 3], 2), lambda: TX.split([1, 3], 2)),
    ("split size", lambda: X.split(3, -1), lambda: TX.split(3, -1)),
    ("roll", lambda: X.roll((1, -1), (0, 2)), lambda: TX.roll((-1, 1), (0, 2))),
    ("roll flat", lambda: X.roll(3), lambda: TX.roll(-3)),
    ("pad", lambda: X.pad((1, 2, -1, 1), 0.5),
     lambda: torch.nn.functional.pad(TX, (1, 2, -1, 1), value=0.5)),
    ("tril", lambda: X.tril(1), lambda: TX.tril(1)), ("triu", lambda: I.triu(-1),
                                                      lambda: TI.triu(-1)),
    ("cat", lambda: burn.cat([X, I], 1), lambda: torch.cat([TX, TI], 1)),
    ("stack", lambda: burn.stack([X, X], -1), lambda: torch.stack([TX, TX], -1)),
    ("select", lambda: X.select(2, burn.tensor([3, 0])),
     lambda: TX.index_select(2, torch.tensor([3, 0]))),
    ("select_assign", lambda: X.select_assign(1, burn.tensor([0, 0]), X[:, :2]),
     lambda: TX.index_add(1, torch.tensor([0, 0]), TX[:, :2])),
    ("gather", lambda: X.gather(2, I.abs() % 4), lambda: TX.gather(2, TI.abs() % 4)),
    ("scatter", lambda: X.scatter(2, burn.tensor([[[0, 1]]]).expand(2, 3, 2), X),
     lambda: TX.scatter(2, torch.tensor([[[0, 1]]]).expand(2, 3, 2), TX)),
    ("scatter_add", lambda: X.scatter_add(2, I.abs() % 4, X),
     lambda: TX.scatter_add(2, TI.abs() % 4, TX)),
    ("mask_where", lambda: X.mask_where(X > 0, I), lambda: torch.where(TX > 0, TI, TX)),
    ("where", lambda: burn.where(X > 0, X, 0.0), lambda: torch.where(TX > 0, TX, 0.0)),
    ("masked_fill", lambda: I.masked_fill(I > 0, 7), lambda: TI.masked_fill(TI > 0, 7)),
    ("mask_select", lambda: X.mask_select(X > 0), lambda: TX.masked_select(TX > 0)),
    ("argwhere", lambda: X.argwhere(), lambda: torch.argwhere(TX)),
    ("nonzero", lambda: I.nonzero(), lambda: list(TI.nonzero(as_tuple=True))),
    ("one_hot", lambda: burn.one_hot(I.abs(), 6),
     lambda: torch.nn.functional.one_hot(TI.abs(), 6)),
    ("equal", lambda: I == 2, lambda: TI == 2), ("not_equal", lambda: I.not_equal(I.flip(0)),
                                                  lambda: TI != TI.flip(0)),
    ("greater", lambda: X > I, lambda: TX > TI), ("greater_equal", lambda: X >= 0,
                                                  lambda: TX >= 0),
    ("lower", lambda: I.lower(1.5), lambda: TI < 1.5), ("lower_equal", lambda: X <= X[0],
                                                         lambda: TX <= TX[0]),
    ("any", lambda: (X > 1).any(), lambda: (TX > 1).any()),
    ("all dims", lambda: (X > -1).all((0, 2), keepdim=True),
     lambda: (TX > -1).all(2, keepdim=True).all(0, keepdim=True)),
    ("any_dim", lambda: I.any_dim(1), lambda: TI.bool().any(1, keepdim=True)),
    ("all_dim", lambda: I.all_dim(-1), lambda: TI.bool().all(-1, keepdim=True)),
    ("sum", lambda: X.sum(), lambda: TX.sum()), ("sum dims", lambda: I.sum((0, -1)),
                                                 lambda: TI.sum((0, -1))),
    ("mean", lambda: X.mean(1, keepdim=True), lambda: TX.mean(1, keepdim=True)),
    ("prod", lambda: P.prod(2), lambda: TP.prod(2)),
    ("max", lambda: X.max(), lambda: TX.max()), ("min dims", lambda: I.min((1, 2)),
                                                 lambda: TI.amin((1, 2))),
    ("var", lambda: X.var(), lambda: TX.var()),
    ("var dims", lambda: X.var((0, 2), correction=0, keepdim=True),
     lambda: TX.var((0, 2), correction=0, keepdim=True)),
    ("sum_dim", lambda: X.sum_dim(1), lambda: TX.sum(1, keepdim=True)),
    ("mean_dim", lambda: X.mean_dim(-1), lambda: TX.mean(-1, keepdim=True)),
    ("prod_dim", lambda: I.prod_dim(0), lambda: TI.prod(0, keepdim=True)),
    ("max_dim", lambda: X.max_dim(1), lambda: TX.amax(1, keepdim=True)),
    ("min_dim", lambda: X.min_dim(1), lambda: TX.amin(1, keepdim=True)),
    ("max_dim_with_indices", lambda: X.max_dim_with_indices(2),
     lambda: tuple(TX.max(2, keepdim=True))),
    ("min_dim_with_indices", lambda: I.min_dim_with_indices(0),
     lambda: tuple(TI.min(0, keepdim=True))),
    ("argmax", lambda: X.argmax(1), lambda: TX.argmax(1)),
    ("argmax flat", lambda: X.argmax(), lambda: TX.argmax()),
    ("argmin", lambda: X.argmin(2, keepdim=True), lambda: TX.argmin(2, keepdim=True)),
    ("cumsum", lambda: I.cumsum(1), lambda: TI.cumsum(1)),
    ("cumprod", lambda: X.cumprod(2), lambda: TX.cumprod(2)),
    ("cummax", lambda: X.cummax(2), lambda: tuple(TX.cummax(2))),
    ("cummin", lambda: X.cummin(0), lambda: tuple(TX.cummin(0))),
    ("topk", lambda: X.topk(2), lambda: TX.topk(2).values),
    ("topk_with_indices", lambda: X.topk_with_indices(2, 1, largest=False),
     lambda: tuple(TX.topk(2, 1, largest=False))),
    ("sort", lambda: X.sort(0, descending=True), lambda: TX.sort(0, descending=True).values),
    ("sort_with_indices", lambda: X.sort_with_indices(), lambda: tuple(TX.sort(stable=True))),
    ("argsort", lambda: X.argsort(1), lambda: TX.argsort(dim=1, stable=True)),
    ("bitwise_and", lambda: I & 3, lambda: TI & 3), ("bitwise_or", lambda: I | I.flip(0),
                                                      lambda: TI | TI.flip(0)),
    ("bitwise_xor", lambda: I.bitwise_xor(5), lambda: TI.bitwise_xor(5)),
    ("bitwise_not", lambda: ~I, lambda: ~TI),
    ("shifts", lambda: (I.abs() << 2) >> 1, lambda: (TI.abs() << 2) >> 1),
    ("bool ops", lambda: (X > 0) & ~(I > 0) | (X < -1) ^ (I == 0),
     lambda: (TX > 0) & ~(TI > 0) | (TX < -1) ^ (TI == 0)),
    ("logical", lambda: (X > 0).bool_and(I).bool_or(X < 0).bool_xor(I > 1).logical_not(),
     lambda: (TX > 0).logical_and(TI).logical_or(TX < 0).logical_xor(TI > 1).logical_not()),
    ("bool_not", lambda: (X > 0).bool_not(), lambda: ~(TX > 0)),
    ("cast", lambda: X.cast(burn.int32), lambda: TX.to(torch.int32)),
    ("to dtype", lambda: I.to("float64"), lambda: TI.double()),
    ("float", lambda: I.float(), lambda: TI.float()), ("int", lambda: X.int(),
                                                       lambda: TX.long()),
    ("bool", lambda: I.bool(), lambda: TI.bool()),
    ("detach", lambda: X.detach(), lambda: TX.detach()),
]


@pytest.mark.parametrize(("name", "fn", "ref"), PAIRS, ids=[p[0] for p in PAIRS])
def test_op_matches_torch(name: str, fn: Callable[[], Any], ref: Callable[[], Any]) -> None:
    _check(fn(), ref())


def test_attributes_and_conversion() -> None:
    assert X.shape == (2, 3, 4) and X.ndim == 3 and X.numel() == 24
    assert X.size() == (2, 3, 4) and X.size(-1) == 4
    assert X.kind is burn.Kind.FLOAT and I.kind is burn.Kind.INT
    assert X.device == burn.Device("numpy")
    np.testing.assert_array_equal(np.asarray(X), XN)
    np.testing.assert_array_equal(np.from_dlpack(X), XN)
    np.testing.assert_array_equal(torch.from_dlpack(I).numpy(), IN)
    assert burn.tensor([[2.5]]).item() == 2.5 and isinstance(I[0, 0, 0].item(), int)
    assert I.tolist() == IN.tolist()
    assert repr(burn.tensor([[1.0, 2.0]])) == "Tensor([[1., 2.]], dtype=float32, device=numpy)"
    assert float(burn.tensor(1.5)) == 1.5 and bool(burn.tensor([True]))
    assert len(X) == 2 and [t.shape for t in X] == [(3, 4), (3, 4)]
    assert X.to(burn.Device("numpy").autodiff()).device.is_autodiff
    assert X.to_device("numpy+autodiff").to_device("numpy").device == burn.Device("numpy")
    restored = pickle.loads(pickle.dumps(X))
    np.testing.assert_array_equal(restored.to_numpy(), XN)
    assert burn.Tensor([1, 2]).dtype == burn.int64


@pytest.mark.parametrize("spec", ["numpy+autodiff", "cpu+autodiff", "cpu+fusion+autodiff"])
def test_pickle_keeps_requires_grad_of_a_leaf(spec: str) -> None:
    """A pickled leaf that requires grad comes back requiring grad, as torch's; a result of
    ops (not a leaf) and a plain tensor come back as tensors that do not."""
    leaf = burn.tensor(XN, device=spec).require_grad()
    reference = torch.tensor(XN, requires_grad=True)
    restored = pickle.loads(pickle.dumps(leaf))
    back = pickle.loads(pickle.dumps(reference))
    assert restored.shape == leaf.shape and restored.dtype == leaf.dtype
    assert restored.device == leaf.device
    assert restored.is_require_grad() == back.requires_grad is True
    np.testing.assert_array_equal(restored.to_numpy(), XN)
    grad = restored.grad((restored * restored).sum().backward())
    assert grad is not None
    np.testing.assert_allclose(grad.to_numpy(), 2 * XN, rtol=1e-6)
    assert not pickle.loads(pickle.dumps(leaf * 2)).is_require_grad()
    assert not pickle.loads(pickle.dumps(leaf.detach())).is_require_grad()


def test_creation() -> None:
    assert burn.tensor([1, 2]).dtype == burn.int64
    assert burn.tensor([1.0]).dtype == burn.float32
    assert burn.tensor([True]).dtype == burn.bool_
    assert burn.tensor(np.zeros(2)).dtype == burn.float64
    assert burn.from_numpy(np.zeros(2, np.int32)).dtype == burn.int32
    assert burn.from_dlpack(torch.ones(2, 3)).shape == (2, 3)
    assert burn.tensor(3.0).shape == () and burn.tensor([]).shape == (0,)
    assert burn.tensor([1, 2], dtype=burn.bfloat16).dtype == burn.bfloat16
    assert burn.zeros(2, 3).shape == burn.zeros((2, 3)).shape == (2, 3)
    assert burn.ones(2, dtype=burn.int32).tolist() == [1, 1]
    assert burn.empty(0, 3).shape == (0, 3)
    assert burn.full((2,), 7).dtype == burn.int64 and burn.full(2, True).dtype == burn.bool_
    _check(burn.arange(5), torch.arange(5))
    _check(burn.arange(1, 2, 0.25), torch.arange(1, 2, 0.25))
    _check(burn.arange(5, 0, -2), torch.arange(5, 0, -2))
    _check(burn.eye(2, 3), torch.eye(2, 3))
    for like, ref in [(burn.zeros_like(I), torch.zeros_like(TI)),
                      (burn.ones_like(X), torch.ones_like(TX)),
                      (burn.full_like(X, 2.0), torch.full_like(TX, 2.0))]:
        _check(like, ref)
    assert burn.empty_like(I).dtype == burn.int64
    burn.seed(3)
    a = burn.rand(100)
    burn.seed(3)
    np.testing.assert_array_equal(a.to_numpy(), burn.rand(100).to_numpy())
    assert 0 <= a.min().item() and a.max().item() < 1
    assert burn.randn(2, 3).shape == (2, 3)
    u = burn.uniform((1000,), -2.0, -1.0)
    assert -2 <= u.min().item() and u.max().item() < -1
    assert abs(burn.normal((4000,), 5.0, 0.1).mean().item() - 5.0) < 0.05
    assert set(burn.bernoulli((50,), 0.5).tolist()) <= {0.0, 1.0}
    assert burn.bernoulli(burn.ones(3, dtype=burn.float64)).tolist() == [1.0, 1.0, 1.0]
    r = burn.randint(2, 5, (100,))
    assert r.dtype == burn.int64 and 2 <= r.min().item() and r.max().item() < 5


def test_zero_dim_and_empty() -> None:
    s = burn.tensor(2.0)
    assert (s + s).shape == () and s.sum().shape == () and (s * X).shape == (2, 3, 4)
    e = burn.zeros(0, 3)
    assert (e + 1).shape == (0, 3) and e.sum().item() == 0 and e.sum(0).shape == (3,)
    assert burn.cat([e, burn.ones(1, 3)]).shape == (1, 3)


def test_promotion_rules() -> None:
    f64 = burn.ones(2, dtype=burn.float64)
    assert (burn.ones(2) + f64).dtype == burn.float64
    assert (burn.ones(2, dtype=burn.int32) + 1.5).dtype == burn.float32
    assert (burn.ones(2, dtype=burn.float16) + 1.0).dtype == burn.float16
    assert (burn.ones(2, dtype=burn.int32) + 1).dtype == burn.int32
    assert (burn.ones(2, dtype=burn.int8) + burn.ones(2, dtype=burn.int64)).dtype == burn.int64
    assert (burn.ones(2, dtype=burn.bool_) + 1).dtype == burn.int64


FUNCTIONAL: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = []
_x = rng.standard_normal((2, 4, 6, 6)).astype(np.float32)
_w = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
_b = rng.standard_normal(6).astype(np.float32)
BX, BW, BB = burn.tensor(_x), burn.tensor(_w), burn.tensor(_b)
TXX, TW, TB = torch.tensor(_x), torch.tensor(_w), torch.tensor(_b)
tf = torch.nn.functional
FUNCTIONAL += [
    ("conv1d", lambda: F.conv1d(BX[:, :, 0], BW[..., 0], BB, 2, 1, 1, 2),
     lambda: tf.conv1d(TXX[:, :, 0], TW[..., 0], TB, 2, 1, 1, 2)),
    ("conv2d", lambda: F.conv2d(BX, BW, BB, 1, 1, 2, 2),
     lambda: tf.conv2d(TXX, TW, TB, 1, 1, 2, 2)),
    ("conv3d", lambda: F.conv3d(BX[None], BW[None].permute(1, 2, 0, 3, 4), None, 1, 1),
     lambda: tf.conv3d(TXX[None], TW[None].permute(1, 2, 0, 3, 4), None, 1, 1)),
    ("conv_transpose1d", lambda: F.conv_transpose1d(BX[:, :, 0], BW[:4, :, 0], None, 2, 1, 1),
     lambda: tf.conv_transpose1d(TXX[:, :, 0], TW[:4, :, 0], None, 2, 1, 1)),
    ("conv_transpose2d", lambda: F.conv_transpose2d(BX, BW[:4], BB[:4], 2, 1, 1, 2),
     lambda: tf.conv_transpose2d(TXX, TW[:4], TB[:4], 2, 1, 1, 2)),
    ("conv_transpose3d", lambda: F.conv_transpose3d(BX[None], BX[:, :3, :2, :2, None], None, 2),
     lambda: tf.conv_transpose3d(TXX[None], TXX[:, :3, :2, :2, None], None, 2)),
    ("avg_pool1d", lambda: F.avg_pool1d(BX[0], 3, 2, 1, True, False),
     lambda: tf.avg_pool1d(TXX[0], 3, 2, 1, True, False)),
    ("avg_pool2d", lambda: F.avg_pool2d(BX, 2), lambda: tf.avg_pool2d(TXX, 2)),
    ("max_pool1d", lambda: F.max_pool1d(BX[:, 0], 2), lambda: tf.max_pool1d(TXX[:, 0], 2)),
    ("max_pool2d", lambda: F.max_pool2d(BX, 3, 2, 1), lambda: tf.max_pool2d(TXX, 3, 2, 1)),
    ("max_pool1d_with_indices", lambda: F.max_pool1d_with_indices(BX[:, 0], 3, 1, 1),
     lambda: tf.max_pool1d(TXX[:, 0], 3, 1, 1, return_indices=True)),
    ("max_pool2d_with_indices", lambda: F.max_pool2d_with_indices(BX, 2, dilation=2),
     lambda: tf.max_pool2d(TXX, 2, dilation=2, return_indices=True)),
    ("adaptive_avg_pool1d", lambda: F.adaptive_avg_pool1d(BX[0], 4),
     lambda: tf.adaptive_avg_pool1d(TXX[0], 4)),
    ("adaptive_avg_pool2d", lambda: F.adaptive_avg_pool2d(BX, (4, None)),
     lambda: tf.adaptive_avg_pool2d(TXX, (4, None))),
    *[(f"interpolate {m}", lambda m=m: F.interpolate(BX, (9, 4), m, m != "nearest"),
       lambda m=m: tf.interpolate(TXX, (9, 4), mode=m,
                                  align_corners=None if m == "nearest" else True))
      for m in ("nearest", "bilinear", "bicubic")],
    ("embedding", lambda: F.embedding(BX[0, 0], burn.tensor([[1, 2], [5, 0]])),
     lambda: tf.embedding(torch.tensor([[1, 2], [5, 0]]), TXX[0, 0])),
    ("unfold4d", lambda: F.unfold4d(BX, 3, 2, 1, 1), lambda: tf.unfold(TXX, 3, 1, 1, 2)),
    ("grid_sample_2d", lambda: F.grid_sample_2d(BX, BX[:, :3, :, :2].tanh(), "bilinear",
                                                "border", True),
     lambda: tf.grid_sample(TXX, TXX[:, :3, :, :2].tanh(), "bilinear", "border", True)),
    ("attention", lambda: F.attention(BX, BX, BX, BX[0, 0] > 0, 0.3, False),
     lambda: tf.scaled_dot_product_attention(TXX, TXX, TXX, ~(TXX[0, 0] > 0), scale=0.3)),
    ("attention causal", lambda: F.attention(BX, BX, BX, is_causal=True),
     lambda: tf.scaled_dot_product_attention(TXX, TXX, TXX, is_causal=True)),
    ("relu", lambda: F.relu(BX), lambda: tf.relu(TXX)),
    ("leaky_relu", lambda: F.leaky_relu(BX, 0.2), lambda: tf.leaky_relu(TXX, 0.2)),
    ("prelu", lambda: F.prelu(BX, burn.tensor([0.1, 0.2, 0.3, 0.4])),
     lambda: tf.prelu(TXX, torch.tensor([0.1, 0.2, 0.3, 0.4]))),
    ("gelu", lambda: F.gelu(BX), lambda: tf.gelu(TXX)),
    ("gelu tanh", lambda: F.gelu(BX, "tanh"), lambda: tf.gelu(TXX, approximate="tanh")),
    ("sigmoid", lambda: F.sigmoid(BX), lambda: torch.sigmoid(TXX)),
    ("hard_sigmoid", lambda: F.hard_sigmoid(BX), lambda: (TXX * 0.2 + 0.5).clamp(0, 1)),
    ("log_sigmoid", lambda: F.log_sigmoid(BX), lambda: tf.logsigmoid(TXX)),
    ("softmax", lambda: F.softmax(BX, 1), lambda: tf.softmax(TXX, 1)),
    ("log_softmax", lambda: F.log_softmax(BX, -1), lambda: tf.log_softmax(TXX, -1)),
    ("softmin", lambda: F.softmin(BX, 0), lambda: tf.softmin(TXX, 0)),
    ("silu", lambda: F.silu(BX), lambda: tf.silu(TXX)),
    ("softplus", lambda: F.softplus(BX, 2, 1), lambda: tf.softplus(TXX, 2, 1)),
    ("mish", lambda: F.mish(BX), lambda: tf.mish(TXX)),
    ("elu", lambda: F.elu(BX, 0.5), lambda: tf.elu(TXX, 0.5)),
    ("selu", lambda: F.selu(BX), lambda: tf.selu(TXX)),
    ("tanh", lambda: F.tanh(BX), lambda: torch.tanh(TXX)),
]


@pytest.mark.parametrize(("name", "fn", "ref"), FUNCTIONAL, ids=[p[0] for p in FUNCTIONAL])
def test_functional_matches_torch(name: str, fn: Callable[[], Any],
                                  ref: Callable[[], Any]) -> None:
    _check(fn(), ref())


def test_deform_conv2d_with_zero_offsets_is_conv2d() -> None:
    offset = burn.zeros(2, 2 * 9, 6, 6)
    weight = rng.standard_normal((6, 4, 3, 3)).astype(np.float32)
    out = F.deform_conv2d(BX, offset, burn.tensor(weight), None, BB, 1, 1)
    _check(out, tf.conv2d(TXX, torch.tensor(weight), TB, 1, 1))


def test_autodiff_api() -> None:
    device = burn.Device("numpy").autodiff()
    x = burn.tensor([1.0, 2.0, 3.0], device=device).require_grad()
    assert x.is_require_grad() and x.requires_grad
    w = burn.ones(3, device=device).requires_grad_()
    grads = (x * x * w).sum().backward()
    g = x.grad(grads)
    assert g is not None and g.device == burn.Device("numpy") and g.tolist() == [2.0, 4.0, 6.0]
    assert x.grad_remove(grads) is not None and x.grad(grads) is None
    assert not x.detach().is_require_grad()
    with burn.no_grad():
        y = x * 2
    assert isinstance(burn.Gradients(), burn.Gradients)
    with pytest.raises(burn.errors.AutodiffError):
        y.sum().backward()


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "bool"])
@pytest.mark.parametrize("op", ["add", "mul", "and", "or", "xor"])
@pytest.mark.parametrize("scalar", [3, 0.5, -0.0, 70000.0, True])
def test_commutative_ops_with_the_scalar_on_the_left_match_torch(dtype: str, op: str,
                                                                   scalar: object) -> None:
    """`s + x`, `s * x`, `s & x`, ... (the reflected form of a commutative op is the op
    itself): torch's dtype, shape and values, or an error where torch raises one; one
    backend op, as for `x op s`."""
    import operator

    fn = {"add": operator.add, "mul": operator.mul, "and": operator.and_,
          "or": operator.or_, "xor": operator.xor}[op]
    data = np.array([[-2.5, 0.0, 1.0], [3.0, -0.0, 7.0]]).astype(
        {"float32": np.float32, "float16": np.float16, "int32": np.int32, "bool": np.bool_}[dtype])
    t = torch.from_numpy(data)
    device = burn.Device("numpy").profile()
    x = burn.tensor(data, device=device)
    try:
        want = fn(scalar, t)
    except (TypeError, RuntimeError):
        with pytest.raises(burn.errors.BurnError):
            fn(scalar, x)
        return
    with burn.profile() as prof:
        got = fn(scalar, x)
    assert got.shape == tuple(want.shape) and got.dtype.value == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(got.to_numpy(), want.numpy())
    assert np.array_equal(np.signbit(got.to_numpy().astype(np.float64)),
                          np.signbit(want.numpy().astype(np.float64)))
    with burn.profile() as forward:
        fn(x, scalar)
    assert [r.record.name for r in prof.records] == [r.record.name for r in forward.records]
