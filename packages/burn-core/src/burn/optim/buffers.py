"""Update arithmetic of the optimizers, in place where the backend allows it.

Optimizers write their update once against `BufferOps`. `TensorOps` computes with tensor ops
(any backend; every result is a new tensor). `NumpyOps` runs on the plain NumPy backend's arrays
and reuses buffers: methods ending in `_` overwrite their first argument, `*_into` their second,
so an Adam step allocates three arrays instead of thirteen. Both run the same float operations
in the same order, so their trajectories are identical bit for bit.

Only buffers the optimizer owns (its state, and temporaries it made) are overwritten; params and
gradients are read only.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from burn.frontend import where
from burn.frontend.tensor import Tensor

Buf = Any  # a Tensor (TensorOps) or an ndarray (NumpyOps)


class TensorOps:
    """Functional update arithmetic through tensor ops (any backend)."""

    @staticmethod
    def mul(a: Buf, s: float) -> Buf:
        """a * s, new."""
        return a * s

    mul_ = mul  # a * s, in place where possible

    @staticmethod
    def add_(a: Buf, b: Buf) -> Buf:
        """a + b (into a)."""
        return a + b

    @staticmethod
    def add_into(a: Buf, b: Buf) -> Buf:
        """a + b (into b)."""
        return a + b

    @staticmethod
    def sub_into(a: Buf, b: Buf) -> Buf:
        """a - b (into b)."""
        return a - b

    @staticmethod
    def div_into(a: Buf, b: Buf) -> Buf:
        """a / b (into b)."""
        return a / b

    @staticmethod
    def add_scalar_(a: Buf, s: float) -> Buf:
        """a + s (into a)."""
        return a + s

    @staticmethod
    def div_scalar_(a: Buf, s: float) -> Buf:
        """a / s (into a)."""
        return a / s

    @staticmethod
    def square(a: Buf) -> Buf:
        """a * a, new."""
        return a.square()

    @staticmethod
    def sqrt(a: Buf) -> Buf:
        """sqrt(a), new."""
        return a.sqrt()

    @staticmethod
    def owned(a: Buf) -> Buf:
        """a buffer the optimizer may overwrite later, holding a's values."""
        return a

    @staticmethod
    def max_(peak: Buf, a: Buf) -> Buf:
        """where(a > peak, a, peak) (into peak; NaN in `a` keeps peak)."""
        return where(a > peak, a, peak)


class NumpyOps(TensorOps):
    """The same arithmetic on numpy arrays, overwriting buffers the optimizer owns. Results
    are arrays, 0-d ones too (numpy makes a scalar of a 0-d array's `a * s`, which no later
    step could write into)."""

    @staticmethod
    def mul(a: Buf, s: float) -> Buf:
        return np.multiply(a, s, out=np.empty_like(a))

    @staticmethod
    def mul_(a: Buf, s: float) -> Buf:
        return np.multiply(a, s, out=a)

    @staticmethod
    def add_(a: Buf, b: Buf) -> Buf:
        return np.add(a, b, out=a)

    @staticmethod
    def add_into(a: Buf, b: Buf) -> Buf:
        return np.add(a, b, out=b)

    @staticmethod
    def sub_into(a: Buf, b: Buf) -> Buf:
        return np.subtract(a, b, out=b)

    @staticmethod
    def div_into(a: Buf, b: Buf) -> Buf:
        return np.divide(a, b, out=b)

    @staticmethod
    def add_scalar_(a: Buf, s: float) -> Buf:
        return np.add(a, s, out=a)

    @staticmethod
    def div_scalar_(a: Buf, s: float) -> Buf:
        return np.divide(a, s, out=a)

    @staticmethod
    def square(a: Buf) -> Buf:
        return np.square(a, out=np.empty_like(a))

    @staticmethod
    def sqrt(a: Buf) -> Buf:
        return np.sqrt(a, out=np.empty_like(a))

    @staticmethod
    def owned(a: Buf) -> Buf:
        return np.array(a)

    @staticmethod
    def max_(peak: Buf, a: Buf) -> Buf:
        np.copyto(peak, a, where=a > peak)
        return peak


@cache
def _numpy_backend() -> type:
    """The NumPy backend's class (imported on first use)."""
    from burn.backends.numpy import NumpyBackend

    return NumpyBackend


def numpy_arrays(param: Tensor, grad: Tensor) -> bool:
    """Whether `param` and `grad` live on the plain NumPy backend (no decorator) as same-dtype
    float32 / float64 arrays, so that `NumpyOps` may run on their arrays."""
    p, g = param._prim, grad._prim
    numpy = _numpy_backend()
    return (type(param._bk) is numpy and type(grad._bk) is numpy
            and isinstance(p, np.ndarray) and isinstance(g, np.ndarray)
            and p.dtype == g.dtype and p.dtype in (np.float32, np.float64))
