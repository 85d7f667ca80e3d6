"""Creation, I/O, devices, random numbers and casts of the NumPy backend."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from burn.backend.protocol import Distribution, Shape
from burn.dtype import DType

from ._common import F32, quiet

if TYPE_CHECKING:
    from burn.device import Device


def _copy(data: np.ndarray) -> np.ndarray:
    return np.array(data, copy=True, order="C")


def _same(x: np.ndarray, device: Device) -> np.ndarray:
    return x


def _empty(shape: Shape, dtype: DType, device: Device) -> np.ndarray:
    return np.empty(shape, dtype=dtype.numpy)


class CreationOps:
    """from_data / into_data / to_device / empty / full / random / arange / casts."""

    _generator: np.random.Generator | None = None
    _initial_seed: int | None = None

    @property
    def _rng(self) -> np.random.Generator:
        """The backend's single random generator, made on first use (so that numpy.random is
        imported by the first random op, not by `import burn` and the first tensor)."""
        if self._generator is None:
            self._generator = np.random.default_rng(self._initial_seed)
        return self._generator

    def seed(self, seed: int) -> None:
        """Reset the backend's single random generator."""
        self._generator = np.random.default_rng(seed)

    # --- I/O and devices: the same for every kind -------------------------------------------
    def float_from_data(self, data: np.ndarray, device: Device) -> np.ndarray:
        return _copy(data)

    def int_from_data(self, data: np.ndarray, device: Device) -> np.ndarray:
        return _copy(data)

    def bool_from_data(self, data: np.ndarray, device: Device) -> np.ndarray:
        return _copy(data)

    def float_into_data(self, x: np.ndarray) -> np.ndarray:
        return _copy(x)

    def int_into_data(self, x: np.ndarray) -> np.ndarray:
        return _copy(x)

    def bool_into_data(self, x: np.ndarray) -> np.ndarray:
        return _copy(x)

    float_to_device = int_to_device = bool_to_device = staticmethod(_same)
    float_empty = int_empty = staticmethod(_empty)

    def float_full(self, shape: Shape, value: float, dtype: DType, device: Device) -> np.ndarray:
        return np.full(shape, value, dtype=dtype.numpy)

    def int_full(self, shape: Shape, value: int, dtype: DType, device: Device) -> np.ndarray:
        """`value` wraps into `dtype` (as a numpy cast)."""
        return np.full(shape, np.array(value).astype(dtype.numpy), dtype=dtype.numpy)

    def bool_full(self, shape: Shape, value: bool, device: Device) -> np.ndarray:
        return np.full(shape, bool(value), dtype=np.bool_)

    # --- random -----------------------------------------------------------------------------
    def float_random(self, shape: Shape, dist: Distribution, dtype: DType,
                     device: Device) -> np.ndarray:
        """uniform in [a, b), normal(mean=a, std=b), bernoulli(prob=a) as 0.0 / 1.0."""
        rng = self._rng
        work = np.float64 if dtype is DType.float64 else np.float32
        out: np.ndarray
        if dist.kind == "uniform":
            out = rng.random(shape, dtype=work) * (dist.b - dist.a) + dist.a
            if dist.b > dist.a:  # rounding can reach `b`: keep the interval half-open
                out = np.minimum(out, np.nextafter(np.asarray(dist.b, work), -np.inf))
        elif dist.kind == "normal":
            out = rng.standard_normal(shape, dtype=work) * dist.b + dist.a
        elif dist.kind == "bernoulli":
            out = rng.random(shape) < dist.a
        else:  # pragma: no cover - the frontend builds Distributions
            raise ValueError(f"unknown distribution {dist.kind!r}")
        return np.asarray(out.astype(dtype.numpy, copy=False))

    def int_random(self, shape: Shape, low: int, high: int, dtype: DType,
                   device: Device) -> np.ndarray:
        """Uniform integers in [low, high)."""
        return np.asarray(self._rng.integers(low, high, shape, dtype=dtype.numpy))

    def int_arange(self, start: int, end: int, step: int, dtype: DType,
                   device: Device) -> np.ndarray:
        return np.arange(start, end, step, dtype=dtype.numpy)

    # --- casts ------------------------------------------------------------------------------
    @quiet
    def float_cast(self, x: np.ndarray, dtype: DType) -> np.ndarray:
        """Overflow to a narrower dtype gives inf quietly (as torch)."""
        return np.asarray(x.astype(dtype.numpy))

    @quiet
    def float_into_int(self, x: np.ndarray, dtype: DType) -> np.ndarray:
        """Truncation toward zero (C casts); float16 / bfloat16 go through float32."""
        if x.dtype.itemsize == 2:
            x = x.astype(F32)
        return np.asarray(x.astype(dtype.numpy))

    def int_cast(self, x: np.ndarray, dtype: DType) -> np.ndarray:
        """Wrapping conversion (as numpy / torch)."""
        return np.asarray(x.astype(dtype.numpy))

    @quiet
    def int_into_float(self, x: np.ndarray, dtype: DType) -> np.ndarray:
        """Ints past float16's range give inf quietly (as torch)."""
        return np.asarray(x.astype(dtype.numpy))

    def bool_into_int(self, x: np.ndarray, dtype: DType) -> np.ndarray:
        return np.asarray(x.astype(dtype.numpy))

    def bool_into_float(self, x: np.ndarray, dtype: DType) -> np.ndarray:
        return np.asarray(x.astype(dtype.numpy))
