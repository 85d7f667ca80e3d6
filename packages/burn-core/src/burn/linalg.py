"""`burn.linalg`: Burn's linear-algebra functions, as composites of tensor ops (so every backend
runs them and Autodiff differentiates them): outer, vector norms, diag, trace, matvec,
cosine_similarity, det, qr."""

from __future__ import annotations

import math
from collections.abc import Callable

from burn.dtype import DType
from burn.errors import ShapeError, ValueRangeError
from burn.frontend.creation import arange, full
from burn.frontend.layout import cat
from burn.frontend.tensor import Tensor
from burn.frontend.validation import broadcast_shapes, check_device, norm_dim
from burn.functional._common import float_input

#: smallest positive normal value of each float dtype (cosine_similarity's default eps).
_TINY = {DType.float64: 2.2250738585072014e-308, DType.float32: 1.1754943508222875e-38,
         DType.float16: 6.103515625e-05, DType.bfloat16: 1.1754943508222875e-38}
__all__ = ["cosine_similarity", "det", "diag", "matvec", "outer", "qr", "trace", "vector_norm",
           "vector_normalize"]


def outer(lhs: Tensor, rhs: Tensor, dim: int = -1) -> Tensor:
    """Outer product along `dim`, broadcast over the other dims:
    `out[..., i, j, ...] = lhs[..., i, ...] * rhs[..., j, ...]` (one more dim than the inputs).

    Raises:
        ShapeError: when the ranks differ or the other dims do not broadcast.
    """
    if lhs.ndim != rhs.ndim:
        raise ShapeError("outer", "lhs and rhs need the same rank", lhs=lhs.shape,
                         rhs=rhs.shape)
    d = norm_dim("outer", dim, lhs.ndim)
    return lhs.unsqueeze(d + 1) * rhs.unsqueeze(d)


def vector_norm(x: Tensor, p: float = 2.0, dim: int = -1) -> Tensor:
    """The p-norm along `dim`, kept with size 1 (Burn; torch.linalg.vector_norm drops it unless
    keepdim): p = 0 counts non-zeros, inf / -inf take the largest / smallest |x|, else
    (sum |x|^p)^(1/p).

    Raises:
        DTypeError: for a non-float x.
        ValueRangeError: for a nan p.
    """
    x = float_input("vector_norm", "x", x)
    d = norm_dim("vector_norm", dim, x.ndim, scalar=True)
    if math.isnan(p):
        raise ValueRangeError("vector_norm", "p must not be nan", p=p)
    if x.dtype in (DType.float16, DType.bfloat16):  # the powers overflow float16: as torch,
        return vector_norm(x.cast(DType.float32), p, d).cast(x.dtype)  # in float32
    if not x.ndim:
        x = x.reshape((1,))
    a = x.abs()
    if p == 0:
        return (x != 0).sum_dim(d).cast(x.dtype)
    if p == math.inf:
        return a.max_dim(d)
    if p == -math.inf:
        return a.min_dim(d)
    if p == 1:
        return a.sum_dim(d)
    if p == 2:
        return _at_zero(x.square().sum_dim(d), Tensor.sqrt, 0.0)
    at_zero = 0.0 if p > 0 else math.inf
    powers = _at_zero(a, lambda t: t.powf(float(p)), at_zero)
    return _at_zero(powers.sum_dim(d), lambda t: t.powf(1.0 / p), at_zero)


def _at_zero(t: Tensor, power: Callable[[Tensor], Tensor], value: float) -> Tensor:
    """`power(t)` of a tensor t >= 0, `value` (0 ** the power) with a zero gradient where t is
    0, as torch's norms: the power's derivative is infinite there, and the chain rule gave
    NaN."""
    zero = t == 0
    return power(t.mask_fill(zero, 1.0)).mask_fill(zero, value)


def vector_normalize(x: Tensor, p: float = 2.0, dim: int = -1, eps: float = 1e-12) -> Tensor:
    """`x / max(vector_norm(x, p, dim), eps)` (torch.nn.functional.normalize)."""
    return x / vector_norm(x, p, dim).clamp_min(eps)


def diag(x: Tensor) -> Tensor:
    """The diagonal of the last two dims: [..., min(rows, cols)] (torch.diagonal(x, 0, -2, -1);
    any dtype).

    Raises:
        ShapeError: for fewer than 2 dims.
    """
    return _diag("diag", x)


def _diag(op: str, x: Tensor) -> Tensor:
    """`diag`, with errors naming `op`."""
    shape = x.shape
    if len(shape) < 2:
        raise ShapeError(op, "need at least 2 dims", shape=shape)
    rows, cols = shape[-2:]
    flat = x.reshape(shape[:-2] + (rows * cols,))
    return flat.take(-1, [i * (cols + 1) for i in range(min(rows, cols))])


def trace(x: Tensor) -> Tensor:
    """Sum of the diagonal of the last two dims, kept as a last dim of size 1: [..., 1] (Burn;
    torch.trace takes one matrix and gives a 0-d tensor).

    Raises:
        ShapeError: for fewer than 2 dims.
    """
    return _diag("trace", x).sum_dim(-1)


def matvec(matrix: Tensor, vector: Tensor) -> Tensor:
    """Matrix [..., m, n] times vector [..., n] -> [..., m], the batch dims broadcast as in
    torch.matmul (a vector [n] with a matrix [b, m, n] gives [b, m], as `matrix @ vector`).

    Raises:
        ShapeError: for a matrix of fewer than 2 dims, a 0-d vector, mismatched inner sizes
            or batch dims that do not broadcast.
    """
    if matrix.ndim < 2 or vector.ndim < 1 or matrix.shape[-1] != vector.shape[-1]:
        raise ShapeError("matvec", "need matrix [..., m, n] and vector [..., n]",
                         matrix=matrix.shape, vector=vector.shape)
    broadcast_shapes("matvec", matrix.shape[:-2], vector.shape[:-1])
    return (matrix @ vector.unsqueeze(-1)).squeeze(-1)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = -1, eps: float | None = None) -> Tensor:
    """`sum(x1 * x2) / (max(|x1|, eps) * max(|x2|, eps))` along `dim`, kept with size 1 (Burn;
    torch's F.cosine_similarity drops it and uses eps=1e-8). `eps` defaults to the dtype's
    smallest positive normal value; float16 / bfloat16 are computed in float32 (the product of
    two clamped norms would underflow).

    Raises:
        DTypeError: for non-float tensors.
    """
    x1 = float_input("cosine_similarity", "x1", x1)
    x2 = float_input("cosine_similarity", "x2", x2)
    check_device("cosine_similarity", x1, x2)
    d = norm_dim("cosine_similarity", dim, max(x1.ndim, x2.ndim), scalar=True)
    dtype = x1.dtype
    if eps is None:
        eps = _TINY[dtype]
    x1, x2 = _wide(x1), _wide(x2)
    dot = (x1 * x2).sum_dim(d)
    norms = vector_norm(x1, 2, d).clamp_min(eps) * vector_norm(x2, 2, d).clamp_min(eps)
    return (dot / norms).cast(dtype)


def _wide(x: Tensor) -> Tensor:
    """float16 / bfloat16 as float32, other dtypes as they are."""
    return x.cast(DType.float32) if x.dtype in (DType.float16, DType.bfloat16) else x


def det(x: Tensor) -> Tensor:
    """Determinant of the last two dims: [..., n, n] -> [...], by LU elimination with partial
    pivoting (float16 / bfloat16 computed in float32, as Burn). A singular matrix gives 0.

    Raises:
        DTypeError: for a non-float x.
        ShapeError: for fewer than 2 dims or non-square matrices.
    """
    x = float_input("det", "x", x)
    shape = x.shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ShapeError("det", "need square matrices [..., n, n]", shape=shape)
    dtype = x.dtype
    a = _wide(x)
    n, batch = shape[-1], shape[:-2]
    out = full(batch, 1.0, a.dtype, a.device)
    rows = arange(n, device=a.device).reshape(n, 1)
    for k in range(n):
        col = a.narrow(-1, k, 1).abs().mask_fill(rows < k, -1.0)  # rows above k never pivot
        p = col.argmax(-2, keepdim=True)  # [..., 1, 1]
        pivot_row = a.gather(-2, p.expand(batch + (1, n)))
        row_k = a.narrow(-2, k, 1)
        a = (a.mask_where(rows == k, pivot_row.expand(a.shape))
             .mask_where((rows == p) & (p != k), row_k.expand(a.shape)))
        pivot = a.narrow(-2, k, 1).narrow(-1, k, 1)  # [..., 1, 1]
        flip = (p != k).cast(a.dtype) * -2.0 + 1.0
        out = out * (pivot * flip).reshape(batch)
        safe = pivot.mask_fill(pivot == 0, 1.0)
        factors = (a.narrow(-1, k, 1) / safe).mask_fill(rows <= k, 0.0)
        a = a - factors * a.narrow(-2, k, 1)
    return out.cast(dtype)


def qr(x: Tensor, reduced: bool = True) -> tuple[Tensor, Tensor]:
    """QR decomposition of the last two dims [..., m, n] by Householder reflections, with
    Burn's signs: step k reflects column k onto -sign(pivot) * norm (a zero pivot counts as
    positive), also for the last 1-element column of a square matrix (LAPACK / torch leave that
    one, so the last row of R and column of Q can differ in sign from torch's).

    Args:
        x: [..., m, n] float tensor.
        reduced: Q [..., m, min(m, n)] and R [..., min(m, n), n] (torch's "reduced"); else Q
            [..., m, m] and R [..., m, n].
    Returns:
        (Q, R) with Q orthonormal columns, R upper triangular and Q @ R == x.
    Raises:
        DTypeError: for a non-float x.
        ShapeError: for fewer than 2 dims.
    """
    x = float_input("qr", "x", x)
    shape = x.shape
    if len(shape) < 2:
        raise ShapeError("qr", "need at least 2 dims", shape=shape)
    m, n = shape[-2:]
    batch = shape[:-2]
    r = x
    q = full(batch + (m, m), 0.0, x.dtype, x.device) + _eye(x, m)
    for k in range(min(m, n)):
        col = r.narrow(-2, k, m - k).narrow(-1, k, 1)  # [..., m - k, 1]
        pivot = col.narrow(-2, 0, 1)
        norm = col.square().sum_dim(-2).sqrt()
        sign = -pivot.sign().mask_fill(pivot == 0, 1.0)
        u = col - norm * sign * _eye(x, m - k).narrow(-1, 0, 1)  # col - target * e0
        uu = u.square().sum_dim(-2)
        scale = (2.0 / uu.mask_fill(uu == 0, 1.0)).mask_fill(uu == 0, 0.0)  # no reflection
        low = r.narrow(-2, k, m - k)
        low = low - u @ (u.transpose(-1, -2) @ low) * scale
        r = cat([r.narrow(-2, 0, k), low], -2) if k else low
        right = q.narrow(-1, k, m - k)
        right = right - (right @ u) @ u.transpose(-1, -2) * scale
        q = cat([q.narrow(-1, 0, k), right], -1) if k else right
    if reduced and m > n:
        return q.narrow(-1, 0, n), r.narrow(-2, 0, n)
    return q, r


def _eye(x: Tensor, n: int) -> Tensor:
    """The [n, n] identity of x's dtype and device."""
    rows = arange(n, device=x.device)
    return (rows.reshape(n, 1) == rows.reshape(1, n)).cast(x.dtype)
