"""Runtimes behind one interface; ``runtime(name, index)`` returns a shared instance per
device."""

from __future__ import annotations

import sys
import threading
from typing import Any

from burn_cube.errors import DeviceIndexError, RuntimeUnavailableError
from burn_cube.runtime.base import DeviceArray, Properties, Runtime

_INSTANCES: dict[tuple[str, int], Runtime] = {}
_CREATING = threading.Lock()
NAMES = ("cpu", "wgpu", "cuda")


def _runtime_class(name: str) -> type[Runtime]:
    cls: type[Runtime]
    if name == "cpu":
        from burn_cube.runtime.cpu import CpuRuntime as cls
    elif name == "wgpu":
        from burn_cube.runtime.wgpu import WgpuRuntime as cls
    elif name == "cuda":
        from burn_cube.runtime.cuda import CudaRuntime as cls
    else:
        raise RuntimeUnavailableError(f"unknown runtime {name!r}; expected one of {NAMES}")
    return cls


def _parse(name: str, index: int | None) -> tuple[str, int]:
    base, sep, suffix = name.partition(":")
    if sep:
        if not suffix.isdigit():
            raise DeviceIndexError(f"bad device index in {name!r}; use e.g. 'cuda:1'")
        if index is not None and index != int(suffix):
            raise DeviceIndexError(f"runtime {name!r} given a different index={index}")
        index = int(suffix)
    return base, 0 if index is None else index


def devices(name: str) -> list[str]:
    """Descriptions of the devices a runtime can use, in index order.

    Args:
        name: ``cpu``, ``wgpu`` or ``cuda``.

    Returns:
        One description per device index.

    Raises:
        RuntimeUnavailableError: The runtime's library is missing.
    """
    return _runtime_class(name).devices()


class RuntimeFactory:
    """``burn_cube.runtime``: called, the runtime of one device; its other attributes are this
    package's, so ``import burn_cube.runtime.cpu as m`` and ``burn_cube.runtime.DeviceArray``
    work as they do for any package (a plain function here hid the package's modules)."""

    __slots__ = ()

    def __call__(self, name: str = "cpu", index: int | None = None) -> Runtime:
        """The runtime of one device (created once per process and device).

        Args:
            name: ``cpu``, ``wgpu`` or ``cuda``, optionally with a device index: ``cuda:1``.
            index: Device index (default 0): a CUDA device; a wgpu adapter of
                ``devices("wgpu")`` (0 is the default high-performance adapter); the cpu has
                only 0.

        Returns:
            The runtime.

        Raises:
            RuntimeUnavailableError: Its library or device is missing.
            DeviceIndexError: The index is out of range (the message gives the device count).
        """
        base, index = _parse(name, index)
        key = (base, index)
        found = _INSTANCES.get(key)
        if found is not None:
            return found
        with _CREATING:  # threads asking at once share one instance
            if key not in _INSTANCES:
                cls = _runtime_class(base)
                if index != 0:
                    count = len(cls.devices())
                    if not 0 <= index < count:
                        raise DeviceIndexError(
                            f"runtime {base!r} has {count} device(s) (indices "
                            f"0..{count - 1}); index {index} is out of range")
                _INSTANCES[key] = cls(index)
            return _INSTANCES[key]

    def __getattr__(self, name: str) -> Any:
        """This package's attribute `name` (its imported modules among them)."""
        return getattr(sys.modules[__name__], name)


#: The runtime of one device: ``runtime("cuda:1")`` (`RuntimeFactory.__call__`).
runtime = RuntimeFactory()


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


__all__ = ["DeviceArray", "Properties", "Runtime", "RuntimeFactory", "available", "devices",
           "runtime"]
