"""Runtimes behind one interface; ``runtime(name)`` returns a shared instance."""

from __future__ import annotations

from burn_cube.errors import RuntimeUnavailableError
from burn_cube.runtime.base import DeviceArray, Properties, Runtime

_INSTANCES: dict[str, Runtime] = {}
NAMES = ("cpu", "wgpu", "cuda")


def runtime(name: str = "cpu") -> Runtime:
    """The runtime called ``name`` (created once per process).

    Args:
        name: ``cpu``, ``wgpu`` or ``cuda``.

    Returns:
        The runtime.

    Raises:
        RuntimeUnavailableError: Its library or device is missing.
    """
    if name not in _INSTANCES:
        cls: type[Runtime]
        if name == "cpu":
            from burn_cube.runtime.cpu import CpuRuntime as cls
        elif name == "wgpu":
            from burn_cube.runtime.wgpu import WgpuRuntime as cls
        elif name == "cuda":
            from burn_cube.runtime.cuda import CudaRuntime as cls
        else:
            raise RuntimeUnavailableError(f"unknown runtime {name!r}; expected one of {NAMES}")
        _INSTANCES[name] = cls()
    return _INSTANCES[name]


def available() -> list[str]:
    """Names of the runtimes usable in this process (library and device present)."""
    out = []
    for name in NAMES:
        try:
            runtime(name)
        except RuntimeUnavailableError:
            continue
        out.append(name)
    return out


__all__ = ["DeviceArray", "Properties", "Runtime", "available", "runtime"]
