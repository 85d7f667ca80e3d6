"""`x ** s` for the exponents PyTorch's pow(tensor, scalar) computes by other ops (its CPU and
CUDA kernels alike: sqrt(-0.0) is -0.0 and sqrt(-inf) NaN, where C's pow gives +0.0 and +inf),
on any backend. The frontend runs these composites; the Autodiff backend runs them as its
`float_powf_scalar` forward, so that the gradient is pow's, s * x ** (s - 1), as PyTorch's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: exponent -> its composite of backend ops.
SPECIAL_POW: dict[float, Callable[[Any, Any], Any]] = {
    0.5: lambda b, x: b.float_sqrt(x),
    -0.5: lambda b, x: b.float_recip(b.float_sqrt(x)),
    2.0: lambda b, x: b.float_mul(x, x),
    3.0: lambda b, x: b.float_mul(b.float_mul(x, x), x),
    -1.0: lambda b, x: b.float_recip(x),
    -2.0: lambda b, x: b.float_recip(b.float_mul(x, x)),
}


def powf_scalar(backend: Any, x: Any, s: float) -> Any:
    """`x ** s` on `backend` (a float primitive), the exponents of `SPECIAL_POW` by their ops.

    Args:
        backend: any backend.
        x: its float primitive.
        s: the exponent.
    Returns:
        The primitive of x ** s.
    """
    special = SPECIAL_POW.get(s)
    return backend.float_powf_scalar(x, s) if special is None else special(backend, x)
