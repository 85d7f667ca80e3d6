"""Functional linear (Burn's [d_input, d_output] weight), batch_norm (given statistics),
layer_norm and fold4d against torch.nn.functional."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import burn
import burn.functional as F
from burn.errors import DTypeError, ShapeError, ValueRangeError

from .reference import GRAD_DTYPES, Domain, T, check_backward, check_forward, op_param, rand

FORWARD = [("float32", "contiguous"), ("float64", "transposed"), ("bfloat16", "strided"),
           ("float16", "contiguous")]


def _linear_ref(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    return tF.linear(x, w.T, b)


LINEAR_SHAPES = [((4, 3), (3, 5)), ((2, 4, 3), (3, 2)), ((3,), (3, 4)), ((0, 3), (3, 2))]


@pytest.mark.parametrize("name,dtype,layout", [op_param("linear", d, lay) for d, lay in FORWARD])
def test_linear(name: str, dtype: str, layout: str, device: burn.Device,
                rng: np.random.Generator) -> None:
    for xs, ws in LINEAR_SHAPES:
        x, w = T(rand(rng, xs, dtype), dtype, layout), T(rand(rng, ws, dtype), dtype, layout)
        b = T(rand(rng, ws[1:], dtype), dtype)
        check_forward(F.linear, _linear_ref, [x, w], device, upcast=True)
        check_forward(F.linear, _linear_ref, [x, w, b], device, upcast=True)
    with pytest.raises(ShapeError, match="linear"):
        F.linear(burn.ones(2, 3, device=device), burn.ones(2, 3, device=device))
    with pytest.raises(ShapeError, match="bias"):
        F.linear(burn.ones(2, 3, device=device), burn.ones(3, 4, device=device),
                 burn.ones(3, device=device))
    with pytest.raises(DTypeError, match="linear"):
        F.linear(burn.ones(2, 3, dtype=burn.int64, device=device), burn.ones(3, 4, device=device))


@pytest.mark.parametrize("name,dtype", [op_param("linear", d) for d in GRAD_DTYPES])
def test_linear_backward(name: str, dtype: str, grad_device: burn.Device,
                         rng: np.random.Generator) -> None:
    for xs, ws in LINEAR_SHAPES[:3]:
        x, w = T(rand(rng, xs, dtype), dtype, "transposed"), T(rand(rng, ws, dtype), dtype)
        b = T(rand(rng, ws[1:], dtype), dtype)
        check_backward(F.linear, _linear_ref, [x, w, b], grad_device, rng)


def _bn_ref(x: torch.Tensor, m: torch.Tensor, v: torch.Tensor, w: torch.Tensor | None = None,
            b: torch.Tensor | None = None, eps: float = 1e-5) -> torch.Tensor:
    return tF.batch_norm(x, m, v, w, b, training=False, eps=eps)


BN_SHAPES = [(2, 3), (2, 3, 4), (1, 3, 2, 2), (0, 3, 2)]
POSITIVE = Domain(0.5, 2.0)


@pytest.mark.parametrize("name,dtype,layout", [op_param("batch_norm", d, lay)
                                               for d, lay in FORWARD])
def test_batch_norm(name: str, dtype: str, layout: str, device: burn.Device,
                    rng: np.random.Generator) -> None:
    for xs in BN_SHAPES:
        x = T(rand(rng, xs, dtype), dtype, layout)
        m, w, b = (T(rand(rng, (3,), dtype), dtype) for _ in range(3))
        v = T(rand(rng, (3,), dtype, POSITIVE), dtype)
        check_forward(F.batch_norm, _bn_ref, [x, m, v, w, b], device, upcast=True)
        check_forward(lambda *a: F.batch_norm(*a, eps=0.1), lambda *a: _bn_ref(*a, eps=0.1),
                      [x, m, v], device, upcast=True)
    with pytest.raises(ShapeError, match="mean"):
        F.batch_norm(burn.ones(2, 3, device=device), burn.ones(2, device=device),
                     burn.ones(3, device=device))
    with pytest.raises(ShapeError, match="batch_norm"):
        F.batch_norm(burn.ones(3, device=device), burn.ones(3, device=device),
                     burn.ones(3, device=device))


@pytest.mark.parametrize("name,dtype", [op_param("batch_norm", d) for d in GRAD_DTYPES])
def test_batch_norm_backward(name: str, dtype: str, grad_device: burn.Device,
                             rng: np.random.Generator) -> None:
    x = T(rand(rng, (2, 3, 4), dtype), dtype, "transposed")
    m, w, b = (T(rand(rng, (3,), dtype), dtype) for _ in range(3))
    v = T(rand(rng, (3,), dtype, POSITIVE), dtype)

    def formula(xt: torch.Tensor, *stats: torch.Tensor) -> torch.Tensor:
        """torch's batch_norm written out, so the statistics get gradients too."""
        mt, vt, wt, bt = (s.view(1, 3, 1) for s in stats)
        return (xt - mt) / (vt + 1e-5).sqrt() * wt + bt

    check_backward(F.batch_norm, formula, [x, m, v, w, b], grad_device, rng)


# (x shape, normalized_shape): one and several trailing dims, all dims, 1-d, empty batch
LN_SHAPES = [((4, 6), (6,)), ((2, 3, 4, 5), (4, 5)), ((3, 4), (3, 4)), ((7,), (7,)),
             ((0, 5), (5,)), ((2, 0, 3), (3,))]


@pytest.mark.parametrize("name,dtype,layout", [op_param("layer_norm", d, lay)
                                               for d, lay in FORWARD])
def test_layer_norm(name: str, dtype: str, layout: str, device: burn.Device,
                    rng: np.random.Generator) -> None:
    for xs, ns in LN_SHAPES:
        x = T(rand(rng, xs, dtype) * 3 + 1, dtype, layout)
        w, b = T(rand(rng, ns, dtype), dtype), T(rand(rng, ns, dtype), dtype)
        check_forward(lambda a, *wb, n=ns: F.layer_norm(a, n, *wb),
                      lambda a, *wb, n=ns: tF.layer_norm(a, n, *wb), [x, w, b], device,
                      upcast=True)
        check_forward(lambda a, n=ns: F.layer_norm(a, n, eps=0.5),
                      lambda a, n=ns: tF.layer_norm(a, n, eps=0.5), [x], device, upcast=True)
        check_forward(lambda a, ww, n=ns: F.layer_norm(a, n, weight=ww),
                      lambda a, ww, n=ns: tF.layer_norm(a, n, weight=ww), [x, w], device,
                      upcast=True)
    # a row holding nan or inf is nan throughout (as torch); the other rows are untouched
    special = rand(rng, (3, 4), dtype)
    special[0, 1], special[1, 2] = np.nan, np.inf
    check_forward(lambda a: F.layer_norm(a, 4), lambda a: tF.layer_norm(a, (4,)),
                  [T(special, dtype)], device, upcast=True)
    # a constant row has zero variance: out = bias
    check_forward(lambda a, bb: F.layer_norm(a, 4, bias=bb),
                  lambda a, bb: tF.layer_norm(a, (4,), bias=bb),
                  [T(np.full((2, 4), 3.0), dtype), T(rand(rng, (4,), dtype), dtype)], device,
                  upcast=True)


@pytest.mark.op("layer_norm")
def test_layer_norm_errors(device: burn.Device) -> None:
    x = burn.ones(2, 3, device=device)
    with pytest.raises(ShapeError, match="layer_norm"):
        F.layer_norm(x, (2,))
    with pytest.raises(ShapeError, match="layer_norm"):
        F.layer_norm(x, (4, 2, 3))
    with pytest.raises(ShapeError, match="layer_norm"):
        F.layer_norm(x, ())
    with pytest.raises(ShapeError, match="layer_norm"):  # a 0-d input has no dim to normalise
        F.layer_norm(burn.tensor(2.0, device=device), 1)
    with pytest.raises(ShapeError, match="weight"):
        F.layer_norm(x, 3, burn.ones(2, device=device))
    with pytest.raises(ShapeError, match="bias"):
        F.layer_norm(x, 3, None, burn.ones(3, 1, device=device))
    with pytest.raises(DTypeError, match="layer_norm"):
        F.layer_norm(burn.ones(2, 3, dtype=burn.int64, device=device), 3)
    with pytest.raises(DTypeError, match="weight"):
        F.layer_norm(x, 3, burn.ones(3, dtype=burn.int32, device=device))
    with pytest.raises(ValueRangeError, match="eps"):
        F.layer_norm(x, 3, eps=-1.0)


@pytest.mark.parametrize("name,dtype", [op_param("layer_norm", d) for d in GRAD_DTYPES])
def test_layer_norm_backward(name: str, dtype: str, grad_device: burn.Device,
                             rng: np.random.Generator) -> None:
    for xs, ns in LN_SHAPES[:4]:
        x = T(rand(rng, xs, dtype) * 3 + 1, dtype, "transposed")
        w, b = T(rand(rng, ns, dtype), dtype), T(rand(rng, ns, dtype), dtype)
        check_backward(lambda a, *wb, n=ns: F.layer_norm(a, n, *wb),
                       lambda a, *wb, n=ns: tF.layer_norm(a, n, *wb), [x, w, b], grad_device,
                       rng)
        check_backward(lambda a, n=ns: F.layer_norm(a, n), lambda a, n=ns: tF.layer_norm(a, n),
                       [x], grad_device, rng)
        # weight alone tracked (x is data): only its gradient is asked for
        check_backward(lambda a, ww, n=ns: F.layer_norm(a, n, ww),
                       lambda a, ww, n=ns: tF.layer_norm(a, n, ww),
                       [T(x.data, dtype, grad=False), w], grad_device, rng)


FOLDS = [((5, 6), (2, 3), {}), ((7, 5), (3, 2), dict(stride=(2, 1), padding=(1, 2),
                                                     dilation=(1, 2))),
         ((4, 4), (1, 1), {}), ((6, 6), (3, 3), dict(stride=3))]


def _blocks(size: tuple[int, int], k: tuple[int, int], cfg: dict) -> int:
    return tF.unfold(torch.zeros(1, 1, *size), k, **cfg).shape[-1]


@pytest.mark.parametrize("name,dtype,layout", [op_param("fold4d", d, lay) for d, lay in FORWARD])
def test_fold4d(name: str, dtype: str, layout: str, device: burn.Device,
                rng: np.random.Generator) -> None:
    for size, k, cfg in FOLDS:
        x = T(rand(rng, (2, 3 * k[0] * k[1], _blocks(size, k, cfg)), dtype), dtype, layout)
        check_forward(lambda a, s=size, kk=k, c=cfg: F.fold4d(a, s, kk, **c),
                      lambda a, s=size, kk=k, c=cfg: tF.fold(a, s, kk, **c), [x], device,
                      upcast=True)
        check_forward(lambda a, s=size, kk=k, c=cfg: F.fold4d(F.unfold4d(a, kk, **c), s, kk, **c),
                      lambda a, s=size, kk=k, c=cfg: tF.fold(tF.unfold(a, kk, **c), s, kk, **c),
                      [T(rand(rng, (1, 2, *size), dtype), dtype)], device, upcast=True)
    with pytest.raises(ShapeError, match="fold4d"):
        F.fold4d(burn.ones(1, 6, 5, device=device), (4, 4), (2, 2))


@pytest.mark.parametrize("name,dtype", [op_param("fold4d", d) for d in GRAD_DTYPES])
def test_fold4d_backward(name: str, dtype: str, grad_device: burn.Device,
                         rng: np.random.Generator) -> None:
    for size, k, cfg in FOLDS[:2]:
        x = T(rand(rng, (2, 2 * k[0] * k[1], _blocks(size, k, cfg)), dtype), dtype, "transposed")
        check_backward(lambda a, s=size, kk=k, c=cfg: F.fold4d(a, s, kk, **c),
                       lambda a, s=size, kk=k, c=cfg: tF.fold(a, s, kk, **c), [x], grad_device,
                       rng)
