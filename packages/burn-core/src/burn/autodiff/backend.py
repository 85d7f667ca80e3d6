"""`Autodiff`: a backend decorator adding reverse-mode autodiff to any backend."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from burn.autodiff.checkpoint import CheckpointStrategy, NoCheckpointing
from burn.autodiff.graph import _MODE, Gradients, Node, run_backward
from burn.autodiff.ops.arithmetic import ArithmeticOps
from burn.autodiff.ops.common import record
from burn.autodiff.ops.indexing import IndexingOps
from burn.autodiff.ops.layout import LayoutOps
from burn.autodiff.ops.math import MathOps
from burn.autodiff.ops.module import ModuleOpsMixin
from burn.autodiff.ops.reduction import ReductionOps
from burn.autodiff.tensor import AutodiffTensor
from burn.backend.decorator import InnerHooks
from burn.backend.protocol import AutodiffBackend, Backend, Distribution
from burn.device import Device
from burn.dtype import DType, Kind
from burn.errors import AutodiffError
from burn.ir import OPS, OpDef

P = Any
T = AutodiffTensor
Shape = tuple[int, ...]


def _wrap(out: Any) -> Any:
    """Float results (a primitive, or a tuple of them and None) as untracked tensors."""
    if type(out) is tuple:
        return tuple(None if o is None else AutodiffTensor(o) for o in out)
    return AutodiffTensor(out)


def _delegate(op: OpDef) -> Callable[..., Any]:
    """A method running the inner backend's op: float tensor inputs unwrapped, a device
    argument replaced by its inner device, float results wrapped as untracked tensors; which
    argument is which comes from the op's row in the op table."""
    name, dev = op.name, op.device_at
    float_at = tuple(i for i, p in enumerate(op.params) if p.kind is Kind.FLOAT)
    floats_out = any(r.kind is Kind.FLOAT for r in op.results)

    def method(self: Autodiff, *args: Any) -> Any:
        if dev is not None:
            args = (*args[:dev], args[dev].inner(), *args[dev + 1:])
        if float_at:
            # (a list: a generator into tuple() cost ~0.4 us more a call)
            args = [a.primitive if type(a) is AutodiffTensor else a for a in args]  # type: ignore[assignment]
        out = getattr(self.inner, name)(*args)
        return _wrap(out) if floats_out else out

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"The inner backend's `{name}` (no gradient)."
    return method


def _untracked(op: OpDef) -> bool:
    """Ops that never carry a gradient: int and bool ops, float ops without a float result
    (comparisons, argmax, into_data ...), and the module backwards (first order)."""
    has_float_result = any(r.kind is Kind.FLOAT for r in op.results)
    if op.kind is Kind.FLOAT:
        return not has_float_result
    if op.kind is not None:
        return True
    return op.name.endswith("_backward")


_DELEGATED = sorted(name for name, op in OPS.items() if _untracked(op))
# Any: its methods are made here, so the checker takes them as present (they implement the
# abstract int / bool / module-backward ops of Backend).
_Delegated: Any = type("_Delegated", (), {name: _delegate(OPS[name]) for name in _DELEGATED})


class Autodiff(_Delegated, ArithmeticOps, MathOps, LayoutOps, IndexingOps,
               ReductionOps, ModuleOpsMixin, InnerHooks, AutodiffBackend):
    """Reverse-mode autodiff around an inner backend (Burn's `Autodiff<B>` decorator).

    Float primitives are `AutodiffTensor`s; int and bool primitives are the inner backend's.
    Every float op runs forward on the inner backend and, when grad mode is on and an input is
    tracked, records a node whose backward uses only inner-backend ops.

    Args:
        inner: the backend that computes.
        checkpoint: what memory-bound ops keep for backward (default `NoCheckpointing()`).
    """

    is_autodiff = True
    decorator_name = "autodiff"

    def __init__(self, inner: Backend, checkpoint: CheckpointStrategy | None = None) -> None:
        self.inner = inner
        self.checkpoint = NoCheckpointing() if checkpoint is None else checkpoint
        self.name = f"autodiff({inner.name})"
        self._devices: dict[Device, Device] = {}

    def __repr__(self) -> str:
        return f"Autodiff({self.inner!r}, checkpoint={self.checkpoint!r})"

    # --- introspection and hooks ---
    def shape(self, x: P) -> Shape:
        return self.inner.shape(x.primitive if type(x) is AutodiffTensor else x)

    def dtype(self, x: P) -> DType:
        return self.inner.dtype(x.primitive if type(x) is AutodiffTensor else x)

    def device_of(self, x: P) -> Device:
        return self.outer_device(
            self.inner.device_of(x.primitive if type(x) is AutodiffTensor else x))

    def detach_values(self, x: T) -> T:
        return AutodiffTensor(x.primitive)

    # --- creation, I/O, casts ---
    def float_from_data(self, data: np.ndarray, device: Device) -> T:
        return AutodiffTensor(self.inner.float_from_data(data, device.inner()))

    def float_empty(self, shape: Shape, dtype: DType, device: Device) -> T:
        return AutodiffTensor(self.inner.float_empty(shape, dtype, device.inner()))

    def float_full(self, shape: Shape, value: float, dtype: DType, device: Device) -> T:
        return AutodiffTensor(self.inner.float_full(shape, value, dtype, device.inner()))

    def float_random(self, shape: Shape, dist: Distribution, dtype: DType, device: Device) -> T:
        return AutodiffTensor(self.inner.float_random(shape, dist, dtype, device.inner()))

    def float_to_device(self, x: T, device: Device) -> T:
        inner = self.inner
        out = inner.float_to_device(x.primitive, device.inner())
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        source = inner.device_of(x.primitive)
        return record(out, (x,), lambda g, _: (inner.float_to_device(g, source),))

    def float_cast(self, x: T, dtype: DType) -> T:
        inner = self.inner
        out = inner.float_cast(x.primitive, dtype)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        original = inner.dtype(x.primitive)
        return record(out, (x,), lambda g, _: (inner.float_cast(g, original),))

    # --- the autodiff API used by the frontend ---
    def float_inner(self, x: T) -> P:
        """The inner backend's primitive of `x` (shared, untracked)."""
        return x.primitive

    def float_from_inner(self, x: P) -> T:
        """An untracked tensor of this backend around an inner float primitive."""
        return AutodiffTensor(x)

    def float_require_grad(self, x: T) -> T:
        """`x` as a leaf that requires grad (itself if it already is one).

        Raises:
            AutodiffError: if `x` is the tracked result of an op (detach it first).
        """
        node = x.node
        if node is None:
            return AutodiffTensor(x.primitive, Node((), None))
        if not node.leaf:
            raise AutodiffError("require_grad", "only a leaf tensor can require grad; detach "
                                "the result of an op first", shape=self.shape(x))
        return x

    def float_is_require_grad(self, x: T) -> bool:
        """Whether `x` is a leaf that requires grad (as Burn; op results answer False)."""
        return x.node is not None and x.node.leaf

    def backward(self, x: T) -> Gradients:
        """Gradients of `x` (seeded with ones) for every leaf that requires grad; frees the
        graph.

        Raises:
            AutodiffError: if `x` is not tracked or its graph was already freed.
        """
        return run_backward(self.inner, x)

    def grad(self, x: T, grads: Gradients) -> P | None:
        """The inner primitive holding the gradient of leaf `x`, or None."""
        return grads.get(x)

    def grad_remove(self, x: T, grads: Gradients) -> P | None:
        """Like `grad`, and remove it from `grads`."""
        return grads.remove(x)
