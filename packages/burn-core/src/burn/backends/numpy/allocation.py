"""Out-of-memory errors of the NumPy backend as `burn.errors.AllocationError`.

numpy raises its own MemoryError, naming the shape and dtype it could not allocate, from any op
whose result or scratch array does not fit (a huge matmul, broadcast or expand result); the
backend re-raises it as AllocationError naming the op, that shape and dtype, as the cube
backends do. The table-made elementwise closures catch it themselves (a try block costs nothing
until it raises: the hot path keeps its speed); `guard_allocations` wraps every other op method
of the backend class. Nothing was allocated, so the process goes on as before.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from burn.backend.calling_op import calling_op
from burn.backend.protocol import Backend, ModuleOps
from burn.errors import AllocationError

from ._common import FROM_NUMPY

#: Marks a method that raises AllocationError itself (`guard_allocations` leaves it).
GUARDED = "_raises_allocation_error"
_KIND_PREFIXES = ("float_", "int_", "bool_")


def op_name(method: str) -> str:
    """The op a backend method serves, as errors name it ("float_matmul" -> "matmul")."""
    return method.split("_", 1)[1] if method.startswith(_KIND_PREFIXES) else method


def allocation_error(op: str, exc: MemoryError) -> AllocationError:
    """AllocationError naming `op` and the shape, dtype and bytes of numpy's failed array.

    Args:
        op: the op that allocated.
        exc: numpy's MemoryError (its `shape` / `dtype`, where numpy gives them).
    Returns:
        The typed error, to raise from `exc`.
    """
    details: dict[str, Any] = {}
    shape, dtype = getattr(exc, "shape", None), getattr(exc, "dtype", None)
    if shape is not None:
        details["shape"] = tuple(int(s) for s in shape)
    if dtype is not None:
        found = FROM_NUMPY.get(dtype)
        details["dtype"] = found.value if found is not None else str(dtype)
        if shape is not None:
            total = dtype.itemsize
            for size in details["shape"]:
                total *= size
            details["bytes"] = total
    details["device"] = "numpy"
    return AllocationError(op, "cannot allocate the result in host memory", **details)


def _guarded(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    op = op_name(name)

    @functools.wraps(method)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except AllocationError:
            raise  # an inner op's, naming that op
        except MemoryError as exc:  # (naming the op the user called: `sort`, not the method)
            raise allocation_error(calling_op(op), exc) from exc

    setattr(guarded, GUARDED, True)
    return guarded


def guard_allocations(cls: type) -> type:
    """Wrap each op method of the backend class `cls` (the protocol's op groups) that does not
    raise AllocationError itself, so that numpy's MemoryError leaves it as AllocationError.
    Protocol defaults the class keeps stay as they are (their ops are wrapped; decorators
    such as Fusion tell a kept default by identity).

    Args:
        cls: the backend class, changed in place.
    Returns:
        `cls`.
    """
    for name in dir(ModuleOps):
        if name.startswith("_"):
            continue
        method = getattr(cls, name)
        if (not callable(method) or getattr(method, GUARDED, False)
                or method is getattr(Backend, name, None)):
            continue
        guarded = _guarded(name, method)
        static = isinstance(inspect.getattr_static(cls, name), staticmethod)
        setattr(cls, name, staticmethod(guarded) if static else guarded)
    return cls
