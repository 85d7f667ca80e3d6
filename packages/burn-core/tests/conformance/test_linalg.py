"""burn.linalg (outer, norms, diag, trace, matvec, cosine_similarity, det) and the statistics
median / cov against torch, forward and backward."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as tF

import burn
import burn.linalg as L
from burn.errors import DTypeError, ShapeError, ValueRangeError

from .reference import (
    FLOATS,
    GRAD_DTYPES,
    Domain,
    T,
    check_backward,
    check_forward,
    distinct,
    op_param,
    rand,
)

AWAY = Domain(-3, 3, avoid="zero", margin=0.2)  # no |x| kinks, no zero norms
FWD = [("float32", "contiguous"), ("float64", "transposed"), ("bfloat16", "strided"),
       ("float16", "transposed")]
NORMS = (0.0, 1.0, 2.0, 3.0, 0.5, math.inf, -math.inf)


@pytest.mark.parametrize("name,dtype,layout", [op_param("outer", d, lay)
                                               for d, lay in (*FWD, ("int64", "strided"))])
def test_outer(name: str, dtype: str, layout: str, device: burn.Device,
               rng: np.random.Generator) -> None:
    for s1, s2, dim in (((4,), (3,), -1), ((2, 4), (2, 3), 1), ((4, 2), (3, 2), 0)):
        a, b = T(rand(rng, s1, dtype), dtype, layout), T(rand(rng, s2, dtype), dtype)
        check_forward(lambda x, y, d=dim: L.outer(x, y, d),
                      lambda x, y, d=dim: x.unsqueeze(d % x.ndim + 1) * y.unsqueeze(d % x.ndim),
                      [a, b], device)
    with pytest.raises(ShapeError, match="outer"):
        L.outer(burn.ones(2, device=device), burn.ones(2, 2, device=device))


def _norm_ref(x: torch.Tensor, p: float, dim: int) -> torch.Tensor:
    return torch.linalg.vector_norm(x, p, dim, keepdim=True)


@pytest.mark.parametrize("name,dtype,layout", [op_param("vector_norm", d, lay) for d, lay in FWD])
def test_vector_norm(name: str, dtype: str, layout: str, device: burn.Device,
                     rng: np.random.Generator) -> None:
    x = T(rand(rng, (3, 4), dtype, AWAY) * (rng.random((3, 4)) < 0.8), dtype, layout)
    for p in NORMS:
        for dim in (-1, 0):
            check_forward(lambda a, q=p, d=dim: L.vector_norm(a, q, d),
                          lambda a, q=p, d=dim: _norm_ref(a, q, d), [x], device, upcast=True)
    check_forward(lambda a: L.vector_normalize(a, 2, 1), lambda a: tF.normalize(a, 2.0, 1), [x],
                  device, upcast=True)
    with pytest.raises(DTypeError, match="vector_norm"):
        L.vector_norm(burn.ones(2, dtype=burn.int64, device=device))
    with pytest.raises(ValueRangeError, match="vector_norm"):
        L.vector_norm(burn.ones(2, device=device), math.nan)


@pytest.mark.parametrize("name,dtype", [op_param("vector_norm", d) for d in GRAD_DTYPES])
def test_vector_norm_backward(name: str, dtype: str, grad_device: burn.Device,
                              rng: np.random.Generator) -> None:
    x = T(distinct(rng, (3, 4), dtype) + 0.125, dtype, "transposed")  # no ties, no zeros
    for p in NORMS[1:]:
        check_backward(lambda a, q=p: L.vector_norm(a, q, 1), lambda a, q=p: _norm_ref(a, q, 1),
                       [x], grad_device, rng)
    check_backward(lambda a: L.vector_normalize(a, 2, 0), lambda a: tF.normalize(a, 2.0, 0),
                   [x], grad_device, rng)


@pytest.mark.parametrize("name,dtype,layout", [op_param(n, d, lay) for n in ("diag", "trace")
                                               for d, lay in (*FWD, ("int8", "strided"),
                                                              ("bool", "transposed"))
                                               if n == "diag" or d not in ("bool",)])
def test_diag_trace(name: str, dtype: str, layout: str, device: burn.Device,
                    rng: np.random.Generator) -> None:
    for shape in ((3, 3), (2, 3, 4), (4, 2), (0, 3)):
        x = T(rand(rng, shape, dtype), dtype, layout)
        if name == "diag":
            check_forward(L.diag, lambda a: a.diagonal(0, -2, -1), [x], device)
        else:
            check_forward(L.trace, lambda a: a.diagonal(0, -2, -1).sum(-1, keepdim=True), [x],
                          device, upcast=True)
    with pytest.raises(ShapeError, match=name):
        getattr(L, name)(burn.ones(3, device=device))


@pytest.mark.parametrize("name,dtype", [op_param(n, d) for n in ("diag", "trace")
                                        for d in GRAD_DTYPES])
def test_diag_trace_backward(name: str, dtype: str, grad_device: burn.Device,
                             rng: np.random.Generator) -> None:
    x = T(rand(rng, (2, 3, 4), dtype), dtype, "transposed")
    ref = ((lambda a: a.diagonal(0, -2, -1)) if name == "diag"
           else lambda a: a.diagonal(0, -2, -1).sum(-1, keepdim=True))
    check_backward(getattr(L, name), ref, [x], grad_device, rng)


def _matvec_ref(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a @ b.unsqueeze(-1)).squeeze(-1)


@pytest.mark.parametrize("name,dtype", [op_param("matvec", d) for d in (*GRAD_DTYPES, "int64")])
def test_matvec(name: str, dtype: str, device: burn.Device, grad_device: burn.Device,
                rng: np.random.Generator) -> None:
    for ms, vs in (((3, 4), (4,)), ((2, 3, 4), (2, 4)), ((2, 3, 4), (1, 4))):
        m, v = T(rand(rng, ms, dtype), dtype, "transposed"), T(rand(rng, vs, dtype), dtype)
        check_forward(L.matvec, _matvec_ref, [m, v], device)
        if dtype in GRAD_DTYPES:
            check_backward(L.matvec, _matvec_ref, [m, v], grad_device, rng)
    with pytest.raises(ShapeError, match="matvec"):
        L.matvec(burn.ones(3, 4, device=device), burn.ones(3, device=device))


def _cos_ref(a: torch.Tensor, b: torch.Tensor, dim: int, eps: float) -> torch.Tensor:
    """Burn's formula: eps clamps each norm."""
    na = torch.linalg.vector_norm(a, 2, dim, keepdim=True).clamp_min(eps)
    nb = torch.linalg.vector_norm(b, 2, dim, keepdim=True).clamp_min(eps)
    return (a * b).sum(dim, keepdim=True) / (na * nb)


@pytest.mark.parametrize("name,dtype", [op_param("cosine_similarity", d) for d in FLOATS])
def test_cosine_similarity(name: str, dtype: str, device: burn.Device, grad_device: burn.Device,
                           rng: np.random.Generator) -> None:
    a, b = T(rand(rng, (3, 5), dtype, AWAY), dtype, "transposed"), T(rand(rng, (3, 5), dtype),
                                                                   dtype)
    tiny = float(torch.finfo(torch.float32 if dtype == "bfloat16" else getattr(torch, dtype)).tiny)
    check_forward(L.cosine_similarity, lambda x, y: _cos_ref(x, y, -1, tiny), [a, b], device,
                  upcast=True)
    check_forward(lambda x, y: L.cosine_similarity(x, y, 0, eps=0.5),
                  lambda x, y: _cos_ref(x, y, 0, 0.5), [a, b], device, upcast=True)
    zeros = T(np.zeros((2, 3)), dtype)
    check_forward(L.cosine_similarity, lambda x, y: _cos_ref(x, y, -1, tiny), [zeros, zeros],
                  device, upcast=True)
    if dtype in GRAD_DTYPES:
        check_backward(lambda x, y: L.cosine_similarity(x, y, 1, 1e-8),
                       lambda x, y: _cos_ref(x, y, 1, 1e-8), [a, b], grad_device, rng)


@pytest.mark.parametrize("name,dtype", [op_param("det", d) for d in FLOATS])
def test_det(name: str, dtype: str, device: burn.Device, rng: np.random.Generator) -> None:
    low = dtype in ("float16", "bfloat16")
    for shape in ((1, 1), (2, 2), (3, 3), (2, 4, 4), (5, 5), (0, 2, 2)):
        x = T(rand(rng, shape, dtype, Domain(-1, 1)) + 2 * np.eye(shape[-1]), dtype)
        check_forward(L.det, torch.linalg.det, [x], device, upcast=True, scale=8.0 if low else 1)
    pivoting = T(np.array([[0.0, 2.0, 1.0], [1.0, 0.0, 0.0], [3.0, 1.0, 2.0]]), dtype)
    singular = T(np.array([[1.0, 2.0], [2.0, 4.0]]), dtype)
    for x in (pivoting, singular):
        check_forward(L.det, torch.linalg.det, [x], device, upcast=True)
    with pytest.raises(ShapeError, match="det"):
        L.det(burn.ones(2, 3, device=device))


@pytest.mark.parametrize("name,dtype", [op_param("det", d) for d in GRAD_DTYPES])
def test_det_backward(name: str, dtype: str, grad_device: burn.Device,
                      rng: np.random.Generator) -> None:
    for shape in ((3, 3), (2, 4, 4)):
        x = T(rand(rng, shape, dtype, Domain(-1, 1)) + 2 * np.eye(shape[-1]), dtype, "transposed")
        check_backward(L.det, torch.linalg.det, [x], grad_device, rng)


@pytest.mark.parametrize("name,dtype,layout", [op_param(n, d, lay)
                                               for n in ("median", "median_with_indices")
                                               for d, lay in (*FWD, ("int64", "strided"),
                                                              ("int8", "contiguous"))])
def test_median(name: str, dtype: str, layout: str, device: burn.Device,
                rng: np.random.Generator) -> None:
    for shape, dim in (((3, 5), 1), ((4, 3), 0), ((2, 4, 3), -2), ((), 0)):
        x = T(distinct(rng, shape, dtype) if shape else np.array(2), dtype, layout)
        if name == "median":
            check_forward(lambda a, d=dim: a.median(d),
                          lambda a, d=dim: a.median(d, keepdim=True).values, [x], device)
        else:
            check_forward(lambda a, d=dim: a.median_with_indices(d),
                          lambda a, d=dim: tuple(a.median(d, keepdim=True)), [x], device)
    with pytest.raises(ValueRangeError, match="median"):
        burn.zeros(2, 0, device=device).median(1)
    with pytest.raises(DTypeError, match="median"):
        burn.zeros(2, dtype=burn.bool_, device=device).median(0)


@pytest.mark.parametrize("name,dtype", [op_param("median", d) for d in GRAD_DTYPES])
def test_median_backward(name: str, dtype: str, grad_device: burn.Device,
                         rng: np.random.Generator) -> None:
    x = T(distinct(rng, (3, 4), dtype), dtype, "transposed")
    check_backward(lambda a: a.median(1), lambda a: a.median(1, keepdim=True).values, [x],
                   grad_device, rng)


@pytest.mark.parametrize("name,dtype,layout", [op_param("cov", d, lay) for d, lay in FWD])
def test_cov(name: str, dtype: str, layout: str, device: burn.Device,
             rng: np.random.Generator) -> None:
    x = T(rand(rng, (3, 6), dtype), dtype, layout)
    for correction in (1, 0):
        check_forward(lambda a, c=correction: a.cov(1, c),
                      lambda a, c=correction: torch.cov(a, correction=c), [x], device,
                      upcast=True)
        check_forward(lambda a, c=correction: a.cov(0, c),
                      lambda a, c=correction: torch.cov(a.T, correction=c), [x], device,
                      upcast=True)
    with pytest.raises(ShapeError, match="cov"):
        burn.ones(2, 3, 4, device=device).cov()
    with pytest.raises(DTypeError, match="cov"):
        burn.ones(2, 3, dtype=burn.int64, device=device).cov()


@pytest.mark.parametrize("name,dtype", [op_param("cov", d) for d in GRAD_DTYPES])
def test_cov_backward(name: str, dtype: str, grad_device: burn.Device,
                      rng: np.random.Generator) -> None:
    x = T(rand(rng, (3, 6), dtype), dtype, "transposed")
    check_backward(lambda a: a.cov(), torch.cov, [x], grad_device, rng)




def _positive(q: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """Q and R (flattened, concatenated) with signs making R's diagonal positive: the unique
    QR of a full-rank matrix, whatever the sign convention (R's sign, a constant, is not
    differentiated)."""
    d = r.diagonal(0, -2, -1).sign().detach()
    k = d.shape[-1]
    q = q[..., :k] * d.unsqueeze(-2)
    r = r[..., :k, :] * d.unsqueeze(-1)
    return torch.cat([q.flatten(), r.flatten()])


def _positive_burn(q: burn.Tensor, r: burn.Tensor) -> burn.Tensor:
    d = L.diag(r).sign().detach()
    k = d.shape[-1]
    q = q.narrow(-1, 0, k) * d.unsqueeze(-2)
    r = r.narrow(-2, 0, k) * d.unsqueeze(-1)
    return burn.cat([q.flatten(), r.flatten()])


QR_SHAPES = [(4, 3), (3, 5), (2, 4, 4), (5, 2), (1, 1)]


@pytest.mark.parametrize("name,dtype", [op_param("qr", d) for d in GRAD_DTYPES])
def test_qr(name: str, dtype: str, device: burn.Device, rng: np.random.Generator) -> None:
    # Burn's documented example (its sign convention reflects the last column too)
    check_forward(lambda a: L.qr(a),
                  lambda a: (torch.tensor([[-0.6, 0.8], [-0.8, -0.6]], dtype=a.dtype),
                             torch.tensor([[-5.0, -6.0], [0.0, -2.0]], dtype=a.dtype)),
                  [T(np.array([[3.0, 2.0], [4.0, 6.0]]), dtype)], device)
    for shape in QR_SHAPES:
        for reduced in (True, False):
            x = T(rand(rng, shape, dtype), dtype, "transposed")
            mode = "reduced" if reduced else "complete"
            check_forward(lambda a, red=reduced: _positive_burn(*L.qr(a, red)),
                          lambda a, m=mode: _positive(*torch.linalg.qr(a, m)), [x], device)
            _check_qr(x, reduced, mode, device)
    with pytest.raises(ShapeError, match="qr"):
        L.qr(burn.ones(3, device=device))


def _check_qr(x: T, reduced: bool, mode: str, device: burn.Device) -> None:
    """Q and R have torch's shapes, Q has orthonormal columns, R is upper triangular and
    Q @ R reproduces x."""
    check_forward(lambda a: tuple(t.tril(-1) if i else t.transpose(-1, -2) @ t
                                  for i, t in enumerate(L.qr(a, reduced))),
                  lambda a: tuple(t.tril(-1) if i else t.transpose(-1, -2) @ t
                                  for i, t in enumerate(torch.linalg.qr(a, mode))),
                  [x], device)
    check_forward(lambda a: (lambda q, r: q @ r)(*L.qr(a, reduced)), lambda a: a, [x], device)


@pytest.mark.parametrize("name,dtype", [op_param("qr", d) for d in GRAD_DTYPES])
def test_qr_backward(name: str, dtype: str, grad_device: burn.Device,
                     rng: np.random.Generator) -> None:
    for shape in ((4, 3), (3, 3), (2, 4, 2)):
        x = T(rand(rng, shape, dtype), dtype, "transposed")
        check_backward(lambda a: _positive_burn(*L.qr(a)),
                       lambda a: _positive(*torch.linalg.qr(a)), [x], grad_device, rng)
