"""Functional linear (Burn's [d_input, d_output] weight), batch_norm (given statistics) and
fold4d against torch.nn.functional."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import burn
import burn.functional as F
from burn.errors import DTypeError, ShapeError

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
