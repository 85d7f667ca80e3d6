"""Window functions (Burn's `signal` module): hann, hamming, blackman."""

from __future__ import annotations

import math

from burn.dtype import DEFAULT_FLOAT, Kind
from burn.errors import DTypeError, ValueRangeError
from burn.frontend.creation import DeviceLike, DTypeLike, _dtype, arange, ones, wide_float
from burn.frontend.tensor import Tensor
from burn.frontend.validation import require_kind


def _phase(op: str, size: int, periodic: bool, dtype: DTypeLike,
           device: DeviceLike) -> Tensor | None:
    """2 pi n / N for n < size (N = size when periodic, else size - 1) in float64 where the
    device has it, or None when the window is all ones (size 0 or 1: empty / [1.0])."""
    if not isinstance(size, int) or isinstance(size, bool):
        raise DTypeError(op, "size must be an int", size=type(size).__name__)
    if size < 0:
        raise ValueRangeError(op, "size must be non-negative", size=size)
    require_kind(op, _dtype(dtype, op, DEFAULT_FLOAT), Kind.FLOAT)
    if size <= 1:
        return None
    n = size if periodic else size - 1
    return arange(size, dtype=wide_float(device), device=device) * (2 * math.pi / n)


def _window(op: str, size: int, periodic: bool, coeffs: tuple[float, ...], dtype: DTypeLike,
            device: DeviceLike) -> Tensor:
    """sum_k (-1)^k coeffs[k] cos(k 2 pi n / N), computed wide (see _phase), cast to `dtype`."""
    dt = _dtype(dtype, op, DEFAULT_FLOAT)
    phase = _phase(op, size, periodic, dtype, device)
    if phase is None:
        return ones(size, dtype=dt, device=device)
    w = phase * 0.0 + coeffs[0]
    for k, c in enumerate(coeffs[1:], 1):
        w = w + (phase * k).cos() * (c if k % 2 == 0 else -c)
    return w.cast(dt)


def hann_window(size: int, periodic: bool = True, dtype: DTypeLike = None,
                device: DeviceLike = None) -> Tensor:
    """0.5 - 0.5 cos(2 pi n / N); N = size when `periodic` (the default, as torch), else
    size - 1. Size 0 gives an empty tensor, size 1 gives [1.0].

    Raises:
        DTypeError: for a non-int size or a non-float dtype.
        ValueRangeError: for a negative size.
    """
    return _window("hann_window", size, periodic, (0.5, 0.5), dtype, device)


def hamming_window(size: int, periodic: bool = True, alpha: float = 25 / 46,
                   beta: float = 21 / 46, dtype: DTypeLike = None,
                   device: DeviceLike = None) -> Tensor:
    """alpha - beta cos(2 pi n / N), with Burn's alpha = 25/46 and beta = 21/46 by default
    (PyTorch: 0.54 and 0.46). See `hann_window` for N and the small sizes.

    Raises:
        DTypeError: for a non-int size or a non-float dtype.
        ValueRangeError: for a negative size.
    """
    return _window("hamming_window", size, periodic, (float(alpha), float(beta)), dtype, device)


def blackman_window(size: int, periodic: bool = True, dtype: DTypeLike = None,
                    device: DeviceLike = None) -> Tensor:
    """0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N). See `hann_window` for N and the
    small sizes.

    Raises:
        DTypeError: for a non-int size or a non-float dtype.
        ValueRangeError: for a negative size.
    """
    return _window("blackman_window", size, periodic, (0.42, 0.5, 0.08), dtype, device)
