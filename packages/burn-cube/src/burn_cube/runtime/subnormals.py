"""Whether a runtime's device flushes float32 subnormals to zero in arithmetic, found once per
runtime by a probe kernel (NVIDIA's Vulkan driver does, Mesa's llvmpipe, the cpu and cuda
runtimes do not: cuda's kernels are compiled without ``-ftz``)."""

from __future__ import annotations

import functools
from typing import Any
from weakref import WeakKeyDictionary

import numpy as np

#: A float32 subnormal (about 1e-40) and the factor the probe multiplies it by.
PROBE = np.array([1e-40, 1.0], np.float32)

_FOUND: WeakKeyDictionary[Any, bool] = WeakKeyDictionary()


def flushes_subnormals(runtime: Any) -> bool:
    """Whether `runtime` computes the product of a float32 subnormal and 1.0 as zero.

    Args:
        runtime: a burn-cube runtime.
    Returns:
        True where the device flushes subnormal results (or operands) to zero.
    """
    found = _FOUND.get(runtime)
    if found is None:
        out = np.full(1, -1.0, np.float32)
        _product().launch(runtime, 1, 1, PROBE, out)
        found = _FOUND[runtime] = bool(out[0] == 0.0)
    return found


@functools.cache
def _product() -> Any:
    """The probe kernel, out[0] = x[0] * x[1] (built on first use)."""
    from burn_cube import KernelBuilder, f32

    b = KernelBuilder("subnormal_product", 1)
    x = b.tensor("x", f32, rank=1)
    out = b.tensor("out", f32, rank=1, write=True)
    out[0] = x[0] * x[1]
    return b.kernel()
