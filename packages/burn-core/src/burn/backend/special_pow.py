"""`x ** s` for the exponents PyTorch's pow(tensor, scalar) computes by other ops (its CPU and
CUDA kernels alike: sqrt(-0.0) is -0.0 and sqrt(-inf) NaN, where C's pow gives +0.0 and +inf),
on any backend. The frontend runs these composites; the Autodiff backend runs them as its
`float_powf_scalar` forward, so that the gradient is pow's, s * x ** (s - 1), as PyTorch's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from burn.dtype import DType

#: exponent -> its composite of backend ops.
SPECIAL_POW: dict[float, Callable[[Any, Any], Any]] = {
    0.5: lambda b, x: b.float_sqrt(x),
    -0.5: lambda b, x: b.float_recip(b.float_sqrt(x)),
    2.0: lambda b, x: b.float_mul(x, x),
    3.0: lambda b, x: b.float_mul(b.float_mul(x, x), x),
    -1.0: lambda b, x: b.float_recip(x),
    -2.0: lambda b, x: b.float_recip(b.float_mul(x, x)),
}


#: The exponents of `SPECIAL_POW` computed by more than one op, and the dtypes in which those
#: run in float32, rounded once at the end as PyTorch's half kernels compute (in float16,
#: 256 ** -2 would be 1 / inf = 0, where it is 1.5e-5).
COMPOSITE_POW = frozenset((-0.5, 3.0, -2.0))
WIDENED = (DType.float16, DType.bfloat16)


def powf_scalar(backend: Any, x: Any, s: float) -> Any:
    """`x ** s` on `backend` (a float primitive), the exponents of `SPECIAL_POW` by their ops
    (those of `COMPOSITE_POW` in float32 for the `WIDENED` dtypes).

    Args:
        backend: any backend.
        x: its float primitive.
        s: the exponent.
    Returns:
        The primitive of x ** s.
    """
    special = SPECIAL_POW.get(s)
    if special is None:
        return backend.float_powf_scalar(x, s)
    if s in COMPOSITE_POW and (dtype := backend.dtype(x)) in WIDENED:
        wide = special(backend, backend.float_cast(x, DType.float32))
        return backend.float_cast(wide, dtype)
    return special(backend, x)
