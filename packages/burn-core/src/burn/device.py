"""Devices: where tensors live and which backend runs their ops."""

from __future__ import annotations

import os
import threading
from functools import cache

from burn.errors import DeviceError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from burn.backend.protocol import Backend
    from burn.backend.registry import BackendInfo

# Preference order for the default device when BURN_DEVICE is not set: the fastest backend
# that passes the conformance suite in burn-bench's training steps (README, "Default device").
_DEFAULT_ORDER = ("numpy",)
AUTODIFF = "autodiff"


class Device:
    """A device: a backend name, an index, and the decorators around its backend.

    The spec grammar is ``name[:index][+decorator...]``, decorators listed from the innermost:
    ``"numpy"``, ``"cuda:1"``, ``"numpy+autodiff"``, ``"numpy+profile+autodiff"``. Autodiff, when
    present, is the outermost decorator (gradients are taken of what the others compute).

    Args:
        spec: the device spec (see `burn.available_backends` for the backends of this machine).
    Raises:
        DeviceError: for a malformed spec or an unknown backend or decorator.
    """

    __slots__ = ("name", "index", "decorators", "is_autodiff")

    def __init__(self, spec: str = "numpy") -> None:
        name, index, decorators = _parse(spec)
        self.name, self.index, self.decorators = name, index, decorators
        self.is_autodiff = bool(decorators) and decorators[-1] == AUTODIFF

    def decorate(self, decorator: str) -> Device:
        """This device with one more decorator outermost (`"profile"`, `"autodiff"`, ...).

        Raises:
            DeviceError: for an unknown decorator, or one added over autodiff.
        """
        return Device(f"{self}+{decorator}")

    def autodiff(self) -> Device:
        """The same device with gradients tracked (the Autodiff decorator around its backend);
        itself when it already tracks them."""
        return self if self.is_autodiff else self.decorate(AUTODIFF)

    def profile(self) -> Device:
        """The same device with every op recorded by the Profile decorator (under autodiff,
        when the device has it), for `burn.profile()`."""
        if self.is_autodiff:
            return self.inner().decorate("profile").autodiff()
        return self.decorate("profile")

    def fusion(self) -> Device:
        """The same device with its elementwise ops recorded and fused into generated kernels
        (the Fusion decorator, under autodiff when the device has it); itself when fused."""
        if "fusion" in self.decorators:
            return self
        if self.is_autodiff:
            return self.inner().decorate("fusion").autodiff()
        return self.decorate("fusion")

    def inner(self) -> Device:
        """The device without its outermost decorator (itself when it has none)."""
        if not self.decorators:
            return self
        return _inner_of(self)

    @property
    def base(self) -> Device:
        """The device without any decorator."""
        return Device(self._spec(()))

    @property
    def backend(self) -> Backend:
        """The backend instance running this device's ops (shared by equal devices)."""
        return _backend_for(self.name, self.index, self.decorators)

    def _spec(self, decorators: tuple[str, ...]) -> str:
        base = f"{self.name}:{self.index}" if self.index else self.name
        return "+".join((base, *decorators))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Device) and (self.name, self.index, self.decorators)
                == (other.name, other.index, other.decorators))

    def __hash__(self) -> int:
        return hash((self.name, self.index, self.decorators))

    def __str__(self) -> str:
        return self._spec(self.decorators)

    def __repr__(self) -> str:
        return f"Device({str(self)!r})"


def _parse(spec: object) -> tuple[str, int, tuple[str, ...]]:
    if not isinstance(spec, str):
        raise DeviceError("Device", "a device spec is a string such as 'numpy' or "
                          "'cuda:1+autodiff'", spec=repr(spec), type=type(spec).__name__)
    return _parse_spec(spec)


@cache
def _parse_spec(spec: str) -> tuple[str, int, tuple[str, ...]]:
    base, *decorators = (part.strip() for part in spec.strip().split("+"))
    name, colon, index = base.partition(":")
    if colon and not index.isdigit():
        raise DeviceError("Device", "device index must be a non-negative int", spec=spec)
    if AUTODIFF in decorators[:-1]:
        raise DeviceError("Device", "autodiff must be the outermost (last) decorator",
                          spec=spec)
    if len(set(decorators)) != len(decorators):
        raise DeviceError("Device", "a decorator appears twice", spec=spec)
    from burn.backend.registry import (
        BACKEND_GROUP,
        DECORATOR_GROUP,
        backend_names,
        decorator_names,
        is_registered,
    )

    if not is_registered(BACKEND_GROUP, name):
        raise DeviceError("Device", "unknown backend", spec=spec, available=backend_names())
    for decorator in decorators:
        if not is_registered(DECORATOR_GROUP, decorator):
            raise DeviceError("Device", "unknown decorator", spec=spec, decorator=decorator,
                              available=decorator_names())
    return name, int(index or 0), tuple(decorators)


@cache
def _inner_of(device: Device) -> Device:
    """`device.inner()`, made once per device (optimizers and gradients ask for it per param)."""
    return Device(device._spec(device.decorators[:-1]))


#: The backend of each (name, index, decorators), built once; the lock makes threads using a
#: device for the first time at once share one backend (one fusion stream a device).
_backends: dict[tuple[str, int, tuple[str, ...]], Backend] = {}
_backends_lock = threading.RLock()


def _backend_for(name: str, index: int, decorators: tuple[str, ...]) -> Backend:
    key = (name, index, decorators)
    backend = _backends.get(key)
    if backend is not None:
        return backend
    from burn.backend.registry import build_backend, decorator_factory

    with _backends_lock:  # (re-entered for the inner backend of a decorator)
        backend = _backends.get(key)
        if backend is None:
            backend = (decorator_factory(decorators[-1])(
                _backend_for(name, index, decorators[:-1])) if decorators
                else build_backend(name, index))
            _backends[key] = backend
        return backend


def available_backends() -> list[BackendInfo]:
    """Every registered backend, whether this machine can run it, and why not.

    Returns:
        One `BackendInfo(name, available, reason)` per backend, sorted by name.
    """
    from burn.backend.registry import available_backends as registered

    return registered()


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
        _default = None if device is None else as_device(device)


def as_device(device: Device | str | None) -> Device:
    """Normalise a device argument; None means the default device.

    Raises:
        DeviceError: for anything but a Device, a spec string or None.
    """
    if device is None:
        return default_device()
    if isinstance(device, Device):
        return device
    return _device_of_spec(device) if isinstance(device, str) else Device(device)


@cache
def _device_of_spec(spec: str) -> Device:
    """One `Device` per spec string, so that tensors made from the same spec share their device
    object (the frontend's hot paths compare devices by identity first)."""
    return Device(spec)


def sync(device: Device | str | None = None) -> None:
    """Wait for the queued work of `device` (the default device when None) to finish; errors a
    device backend deferred (such as an index out of range found on the device) raise here.

    Raises:
        DeviceError: for a bad device argument; any error the backend deferred.
    """
    as_device(device).backend.sync()


def flush(device: Device | str | None = None) -> None:
    """Start the queued work of `device` (the default device when None) without waiting for
    it: a fusion device runs its recorded ops (their kernels launched, as at a sync point), a
    wgpu device submits the launches it encoded. The host goes on while the device computes,
    so a loop can queue its next step meanwhile; `sync` waits. Errors the device defers (an
    index out of range found on the device) raise at the next `sync` or read, not here.

    Raises:
        DeviceError: for a bad device argument; an error of a fused kernel that failed to
            build or launch.
    """
    as_device(device).backend.flush()


def device_arg(spec: str) -> Device:
    """An argparse ``type=`` for a ``--device`` option: the `Device` of a spec such as
    ``numpy`` or ``numpy+autodiff``.

    Raises:
        argparse.ArgumentTypeError: for a bad spec (burn's message lists the valid names).
    """
    import argparse

    try:
        return Device(spec)
    except DeviceError as e:
        raise argparse.ArgumentTypeError(str(e)) from e
