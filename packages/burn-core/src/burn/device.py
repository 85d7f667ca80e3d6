"""Devices: where tensors live and which backend runs their ops."""

from __future__ import annotations

import importlib
import os
import threading
from functools import cache
from typing import TYPE_CHECKING

from burn.errors import DeviceError

if TYPE_CHECKING:
    from burn.backend.protocol import Backend

# backend name -> "module:Class" of a Backend whose constructor takes no argument.
_BACKENDS: dict[str, str] = {
    "numpy": "burn.backends.numpy:NumpyBackend",
}
# Preference order for the default device when BURN_DEVICE is not set.
_DEFAULT_ORDER = ("numpy",)
_AUTODIFF_SUFFIX = "+autodiff"


class Device:
    """A device: a backend name, an index, and whether the Autodiff decorator wraps it.

    Args:
        spec: "numpy", "cuda:1", "numpy+autodiff", ... (see `burn.device.available_backends`).
    """

    __slots__ = ("name", "index", "is_autodiff")

    def __init__(self, spec: str = "numpy") -> None:
        spec = spec.strip()
        self.is_autodiff = spec.endswith(_AUTODIFF_SUFFIX)
        spec = spec.removesuffix(_AUTODIFF_SUFFIX)
        name, _, index = spec.partition(":")
        if name not in _BACKENDS:
            raise DeviceError("Device", "unknown backend", spec=spec,
                              available=sorted(_BACKENDS))
        if index and not index.isdigit():
            raise DeviceError("Device", "device index must be a non-negative int", spec=spec)
        self.name = name
        self.index = int(index or 0)

    def autodiff(self) -> Device:
        """The same device with gradients tracked (the Autodiff decorator around its backend)."""
        return Device(self._base_spec() + _AUTODIFF_SUFFIX)

    def inner(self) -> Device:
        """The same device without the Autodiff decorator."""
        return Device(self._base_spec())

    @property
    def backend(self) -> Backend:
        """The backend instance running this device's ops (shared by equal devices)."""
        return _backend_for(self.name, self.is_autodiff)

    def _base_spec(self) -> str:
        return f"{self.name}:{self.index}" if self.index else self.name

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Device) and (self.name, self.index, self.is_autodiff)
                == (other.name, other.index, other.is_autodiff))

    def __hash__(self) -> int:
        return hash((self.name, self.index, self.is_autodiff))

    def __str__(self) -> str:
        return self._base_spec() + (_AUTODIFF_SUFFIX if self.is_autodiff else "")

    def __repr__(self) -> str:
        return f"Device({str(self)!r})"


@cache
def _backend_for(name: str, autodiff: bool) -> Backend:
    if autodiff:
        from burn.autodiff import Autodiff

        return Autodiff(_backend_for(name, False))
    module, _, cls = _BACKENDS[name].partition(":")
    return getattr(importlib.import_module(module), cls)()


def available_backends() -> list[str]:
    """Names of the backends this installation knows."""
    return list(_BACKENDS)


_default_lock = threading.Lock()
_default: Device | None = None


def default_device() -> Device:
    """The default device: $BURN_DEVICE if set, else the best available CPU backend."""
    global _default
    with _default_lock:
        if _default is None:
            env = os.environ.get("BURN_DEVICE")
            _default = Device(env) if env else Device(_DEFAULT_ORDER[0])
        return _default


def set_default_device(device: Device | str | None) -> None:
    """Set (or, with None, reset to $BURN_DEVICE / the best CPU backend) the default device."""
    global _default
    with _default_lock:
        _default = Device(device) if isinstance(device, str) else device


def as_device(device: Device | str | None) -> Device:
    """Normalise a device argument; None means the default device."""
    if device is None:
        return default_device()
    return Device(device) if isinstance(device, str) else device
