"""`Decorator`: the base of backends that wrap another backend and see every op as data.

A subclass overrides `handle(op, args)`: it receives the op's row of the op table and its
arguments (tensor arguments are the inner backend's primitives; a device argument is already
the inner device) and may forward it (`self.forward`), defer it, or serialise it; `record`
turns the call into an `OpIR`. Every op method of the protocol is generated from the op table,
so a decorator is a few lines (see `burn.profiler.Profile`). Autodiff, which changes the
primitives it hands out, is a backend of its own rather than a `Decorator`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from burn.backend.protocol import Backend
from burn.ir import OPS, OpDef, OpIR, TensorIR, split_args

if TYPE_CHECKING:
    from burn.device import Device
    from burn.dtype import DType


def _op_method(op: OpDef) -> Callable[..., Any]:
    """The protocol method of `op`: device argument mapped inward, then `handle`."""
    dev, names = op.device_at, [p.name for p in op.params]

    def method(self: Decorator, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            args = (*args, *(kwargs[n] for n in names[len(args):]))
        if dev is not None:
            args = (*args[:dev], args[dev].inner(), *args[dev + 1:])
        return self.handle(op, args)

    method.__name__ = method.__qualname__ = op.name
    method.__doc__ = f"`{op.signature}`, through `handle`."
    return method


# Any: its methods are made here from the op table (the checker takes them as present).
_Ops: Any = type("_Ops", (), {name: _op_method(op) for name, op in OPS.items()})


class InnerHooks(Backend):
    """The hooks of a backend that wraps `inner` (decorators and Autodiff): dtype support,
    index and divisor checks, seed, sync and memory are the inner backend's; devices are the
    inner backend's with `decorator_name` added."""

    inner: Backend
    #: the name in device specs (``numpy+<name>``).
    decorator_name: ClassVar[str] = "decorator"
    _devices: dict[Device, Device]

    def outer_device(self, inner_device: Device) -> Device:
        """`inner_device` as seen from this backend (``<inner spec>+<decorator_name>``)."""
        device = self._devices.get(inner_device)
        if device is None:
            device = self._devices[inner_device] = inner_device.decorate(self.decorator_name)
        return device

    def supports(self, dtype: DType) -> bool:
        return self.inner.supports(dtype)

    def check_indices(self, op: str, indices: Any, size: int, wrap_negative: bool = True) -> Any:
        return self.inner.check_indices(op, indices, size, wrap_negative)

    def check_nonzero(self, op: str, divisor: Any) -> None:
        self.inner.check_nonzero(op, divisor)

    def seed(self, seed: int) -> None:
        self.inner.seed(seed)

    def exported(self, x: Any) -> Any:
        """The inner backend's export (the frontend passes inner primitives)."""
        return self.inner.exported(x)

    def sync(self) -> None:
        self.inner.sync()

    def flush(self) -> None:
        self.inner.flush()

    def memory_stats(self) -> dict[str, int]:
        return self.inner.memory_stats()


class Decorator(_Ops, InnerHooks):
    """A backend around `inner` that receives every op as (op, args).

    Args:
        inner: the backend that computes.
    """

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name = f"{self.decorator_name}({inner.name})"
        self.is_autodiff = False
        self._devices: dict[Device, Device] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"

    def handle(self, op: OpDef, args: tuple[Any, ...]) -> Any:
        """Run one op; this default forwards it to the inner backend.

        Args:
            op: the op's row.
            args: its arguments in protocol order (inner primitives, inner device).
        Returns:
            What the protocol method returns.
        """
        return self.forward(op, args)

    def forward(self, op: OpDef, args: tuple[Any, ...]) -> Any:
        """Run `op` on the inner backend."""
        return getattr(self.inner, op.name)(*args)

    def record(self, op: OpDef, args: tuple[Any, ...], out: Any = None) -> OpIR:
        """The op record of a call; outputs inferred, or described from `out` (the call's
        result), which checks them against the op table's rules.

        Raises:
            BurnError: when the arguments or `out` do not fit the op.
        """
        inputs, scalars = split_args(op, args, self.describe)
        outputs = None
        if out is not None and op.results:
            items = out if type(out) is tuple else (out,)
            outputs = tuple(None if o is None else self.describe(o) for o in items)
        return OpIR(op, inputs, scalars, outputs)

    def describe(self, x: Any) -> TensorIR:
        """An inner primitive as a `TensorIR` (its id is the primitive's identity)."""
        inner = self.inner
        return TensorIR(id(x), inner.shape(x), inner.dtype(x))

    # --- introspection: the inner backend's, with devices seen from outside ---
    def shape(self, x: Any) -> tuple[int, ...]:
        return self.inner.shape(x)

    def dtype(self, x: Any) -> DType:
        return self.inner.dtype(x)

    def device_of(self, x: Any) -> Device:
        return self.outer_device(self.inner.device_of(x))

    def detach_values(self, x: Any) -> Any:
        return self.inner.detach_values(x)
