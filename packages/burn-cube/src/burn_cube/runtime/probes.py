"""What a runtime's device does to float arithmetic where drivers differ, found once per
runtime by a one-element probe kernel:

- `flushes_subnormals`: float32 subnormal results computed as zero (NVIDIA's Vulkan driver
  does; Mesa's llvmpipe, the cpu and cuda runtimes do not: cuda's kernels are compiled without
  ``-ftz``);
- `folds_half_rounding`: a float16 round trip inside a kernel, ``f32(f16(x))``, left out (NVIDIA's
  Vulkan driver folds it: 65519 stays 65519 where float16 rounds it to 65504).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any
from weakref import WeakKeyDictionary

import numpy as np

#: A float32 subnormal (about 1e-40) and the factor the subnormal probe multiplies it by.
PROBE = np.array([1e-40, 1.0], np.float32)
#: A float32 value that float16 rounds (to 65504, its largest finite value).
HALF_ROUNDED = np.array([65519.0], np.float32)

_FOUND: dict[str, WeakKeyDictionary[Any, bool]] = {}


def _probe(name: str, runtime: Any, kernel: Callable[[], Any], inputs: np.ndarray,
           verdict: Callable[[float], bool]) -> bool:
    """`verdict` of the probe `kernel`'s one float32 output on `runtime`, kept per runtime.

    Args:
        name: the probe's name (its cache).
        runtime: a burn-cube runtime.
        kernel: builds the probe kernel, ``out[0] = f(x)``.
        inputs: its input array `x`.
        verdict: whether the output shows the behaviour probed.
    Returns:
        The verdict.
    """
    found = _FOUND.setdefault(name, WeakKeyDictionary())
    seen = found.get(runtime)
    if seen is None:
        out = np.full(1, -1.0, np.float32)
        kernel().launch(runtime, 1, 1, inputs, out)
        seen = found[runtime] = verdict(float(out[0]))
    return seen


def flushes_subnormals(runtime: Any) -> bool:
    """Whether `runtime` computes the product of a float32 subnormal and 1.0 as zero.

    Args:
        runtime: a burn-cube runtime.
    Returns:
        True where the device flushes subnormal results (or operands) to zero.
    """
    return _probe("subnormals", runtime, _product, PROBE, lambda out: out == 0.0)


def folds_half_rounding(runtime: Any) -> bool:
    """Whether `runtime` leaves out a float16 round trip inside a kernel (``f32(f16(x))`` of
    65519 is 65519, not 65504). False where the runtime has no float16.

    Args:
        runtime: a burn-cube runtime.
    Returns:
        True where the device's compiler folds the conversions away.
    """
    if "f16" not in runtime.properties.dtypes:
        return False
    return _probe("half rounding", runtime, _half_round_trip, HALF_ROUNDED,
                  lambda out: out == HALF_ROUNDED[0])


@functools.cache
def _product() -> Any:
    """The subnormal probe kernel, out[0] = x[0] * x[1] (built on first use)."""
    from burn_cube import KernelBuilder, f32

    b = KernelBuilder("subnormal_product", 1)
    x = b.tensor("x", f32, rank=1)
    out = b.tensor("out", f32, rank=1, write=True)
    out[0] = x[0] * x[1]
    return b.kernel()


@functools.cache
def _half_round_trip() -> Any:
    """The float16 probe kernel, out[0] = f32(f16(x[0])) (built on first use)."""
    from burn_cube import KernelBuilder, f16, f32

    b = KernelBuilder("half_round_trip", 1)
    x = b.tensor("x", f32, rank=1)
    out = b.tensor("out", f32, rank=1, write=True)
    out[0] = b.cast(b.cast(x[0], f16), f32)
    return b.kernel()
