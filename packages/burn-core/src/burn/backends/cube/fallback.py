"""The host fallback: an op the cube backends have no kernel for runs on the NumPy backend.

Arguments go to the host (a zero-copy read-only view on the cpu runtime, a download elsewhere),
the NumPy backend computes, and results come back to the device. Every fallback call is
counted per op (`CubeBackend.fallbacks`), so tests and docs/ops.md can say which ops run on
kernels; the goal is an empty list.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from burn.ir import OPS, OpDef

from .tensor import host_array


def fallback_method(op: OpDef) -> Callable[..., Any]:
    """A backend method running `op` on the host NumPy backend."""
    tensors, lists, device_at = set(op.tensor_at), set(op.list_at), op.device_at

    def method(self: Any, *args: Any) -> Any:
        self.fallbacks[op.name] += 1
        host = []
        for i, arg in enumerate(args):
            if i in tensors and arg is not None:
                arg = host_array(arg)
            elif i in lists:
                arg = [host_array(a) for a in arg]
            elif i == device_at:
                arg = self.host_device
            host.append(arg)
        return _to_device(self, getattr(self.host, op.name)(*host))

    method.__name__ = method.__qualname__ = op.name
    method.__doc__ = f"`{op.signature}` on the host NumPy backend (no kernel yet)."
    method.host_fallback = True  # type: ignore[attr-defined]
    return method


def host_ops(cls: type) -> list[str]:
    """The ops of backend class `cls` that run on the host fallback (no kernel), sorted."""
    return sorted(name for name in OPS if getattr(getattr(cls, name), "host_fallback", False))


def _to_device(backend: Any, value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return backend.from_host(value)
    if isinstance(value, tuple):
        return tuple(_to_device(backend, v) for v in value)
    return value

