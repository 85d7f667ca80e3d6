"""Backends and decorators by name: burn-core's own, plus any a package registers.

A package adds a backend or a decorator without editing burn-core, through a Python entry point
in the group ``burn.backends`` or ``burn.decorators`` (``name = "module:Class"``), or in code
with `register_backend` / `register_decorator`. A backend class is built with no argument (or
with a device index where its constructor takes ``index``); a decorator class is built around
its inner backend. A class that lacks an op of the op table is refused when it is loaded,
naming the missing ops, never at the op's first use. burn-core's own classes are checked by its
op-table tests instead, so that the first tensor does not build the op table.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from burn.errors import DeviceError

if TYPE_CHECKING:
    from burn.backend.protocol import Backend

BACKEND_GROUP = "burn.backends"
DECORATOR_GROUP = "burn.decorators"

# burn-core's own, registered in code so that a source tree works without install metadata.
_BUILTIN: dict[str, dict[str, str]] = {
    BACKEND_GROUP: {"numpy": "burn.backends.numpy:NumpyBackend",
                    "cpu": "burn.backends.cube:CpuBackend",
                    "wgpu": "burn.backends.cube:WgpuBackend",
                    "cuda": "burn.backends.cube:CudaBackend"},
    DECORATOR_GROUP: {"autodiff": "burn.autodiff:Autodiff", "profile": "burn.profiler:Profile",
                      "fusion": "burn.fusion:Fusion"},
}
# name -> "module:Class" or a class, per group; filled on first use.
_targets: dict[str, dict[str, Any]] = {}
_loaded: dict[tuple[str, str], Any] = {}


@dataclass(frozen=True)
class BackendInfo:
    """A registered backend and whether this machine can run it.

    Attributes:
        name: the device name ("numpy", "cuda").
        available: whether a device of it can be made here.
        reason: why not, when it is not available ("" otherwise).
    """

    name: str
    available: bool
    reason: str = ""

    def __str__(self) -> str:
        return self.name if self.available else f"{self.name} (unavailable: {self.reason})"


def _group(group: str) -> dict[str, Any]:
    """Every registered name of `group`: built-ins, then installed entry points (read once;
    importlib.metadata is imported only here, as it costs start-up time)."""
    if group not in _targets:
        from importlib.metadata import entry_points

        found: dict[str, Any] = dict(_BUILTIN[group])
        for ep in entry_points(group=group):
            found.setdefault(ep.name, ep.value)
        _targets[group] = found
    return _targets[group]


def is_registered(group: str, name: str) -> bool:
    """Whether `name` is a backend (or decorator) of `group`; burn-core's own names answer
    without reading entry points."""
    return name in _BUILTIN[group] or name in _targets.get(group, {}) or name in _group(group)


def _register(group: str, name: str, target: str | type) -> None:
    if not name.isidentifier():
        raise DeviceError("register", "a backend or decorator name must be an identifier",
                          name=name)
    if isinstance(target, type):
        check_complete(name, target)
    _group(group)[name] = target
    _loaded.pop((group, name), None)


def register_backend(name: str, target: str | type) -> None:
    """Register a backend class under a device name.

    Args:
        name: the device name (an identifier, e.g. "cpu").
        target: the class, or "module:Class" imported on first use.
    Raises:
        DeviceError: for a bad name, or (for a class) one that lacks ops of the op table.
    """
    _register(BACKEND_GROUP, name, target)


def register_decorator(name: str, target: str | type) -> None:
    """Register a decorator class (built as ``cls(inner_backend)``) under a name.

    Args:
        name: the decorator name used after ``+`` in device specs (e.g. "profile").
        target: the class, or "module:Class" imported on first use.
    Raises:
        DeviceError: for a bad name, or (for a class) one that lacks ops of the op table.
    """
    _register(DECORATOR_GROUP, name, target)


def check_complete(name: str, cls: type) -> None:
    """Refuse a backend class that lacks ops of the op table.

    Raises:
        DeviceError: naming the missing ops.
    """
    from burn.ir import missing_ops

    missing = missing_ops(cls)
    if missing:
        raise DeviceError("register", f"{cls.__qualname__} lacks ops of the op table",
                          backend=name, missing=missing)


def _load(group: str, name: str) -> Any:
    key = (group, name)
    if key not in _loaded:
        target = _targets.get(group, _BUILTIN[group]).get(name) or _group(group).get(name)
        if target is None:
            kind = "backend" if group == BACKEND_GROUP else "decorator"
            raise DeviceError("Device", f"unknown {kind}", name=name,
                              available=sorted(_group(group)))
        builtin = target == _BUILTIN[group].get(name)
        if isinstance(target, str):
            module, _, attr = target.partition(":")
            target = getattr(importlib.import_module(module), attr)
        if not builtin:
            check_complete(name, target)
        _loaded[key] = target
    return _loaded[key]


def backend_names() -> list[str]:
    """Every registered backend name."""
    return sorted(_group(BACKEND_GROUP))


def decorator_names() -> list[str]:
    """Every registered decorator name."""
    return sorted(_group(DECORATOR_GROUP))


def build_backend(name: str, index: int) -> Backend:
    """A new backend instance for device `name:index`.

    Raises:
        DeviceError: for an unknown or unavailable backend.
    """
    cls = _load(BACKEND_GROUP, name)
    reason = cls.unavailable_reason()
    if reason:
        raise DeviceError("Device", "backend not available on this machine", name=name,
                          reason=reason)
    takes_index = "index" in inspect.signature(cls).parameters
    if index and not takes_index:
        raise DeviceError("Device", "this backend has a single device (index 0)", name=name,
                          index=index)
    backend: Backend = cls(index=index) if takes_index else cls()
    return backend


def decorator_factory(name: str) -> Callable[[Backend], Backend]:
    """The class of decorator `name`, called with the inner backend."""
    cls: Callable[[Backend], Backend] = _load(DECORATOR_GROUP, name)
    return cls


def available_backends() -> list[BackendInfo]:
    """Every registered backend, whether this machine can run it and why not.

    Returns:
        One `BackendInfo` per backend, sorted by name; `[b.name for b in ... if b.available]`
        lists what runs here.
    """
    infos = []
    for name in backend_names():
        try:
            reason = _load(BACKEND_GROUP, name).unavailable_reason() or ""
        except ImportError as exc:
            reason = f"cannot import: {exc}"
        except DeviceError as exc:
            reason = str(exc)
        infos.append(BackendInfo(name, not reason, reason))
    return infos
