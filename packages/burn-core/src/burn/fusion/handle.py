"""What a fusion stream holds: `FusionTensor`, the primitive of the fusion decorator (a lazy
handle on an inner primitive), and `Pending`, one recorded op.

Its shape, dtype and device are known when the op that makes it is recorded (the op table's
rules); `value` is the inner backend's primitive once the stream has computed it, None while
the op is pending. The stream keeps only a weak reference to a pending handle, so a result
nobody holds when the stream runs is never written to memory.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from burn.device import Device
from burn.dtype import DType
from burn.errors import DeviceError
from burn.ir import OpDef, OpIR, TensorIR, split_args

#: `NamedTupleClass(...)` without its Python-level constructor: `new_tuple(cls, values)` (a
#: `TensorIR` and a `Pending` are made per op recorded).
new_tuple = tuple.__new__


class FusionTensor:
    """A tensor of a fusion device.

    Args:
        id: its id in op records (`burn.ir.TensorIR.id`).
        shape: its shape.
        dtype: its dtype.
        device: the inner device it lives on.
        value: the inner primitive, or None while its op is pending.

    `ir` is its `TensorIR` (made once: every op that reads it records it), `failure` the error
    of the fused kernel that was to compute it, if that kernel failed.
    """

    __slots__ = ("id", "shape", "dtype", "device", "value", "failure", "ir", "__weakref__")

    def __init__(self, id: int, shape: tuple[int, ...], dtype: DType, device: Device,
                 value: Any = None) -> None:
        self.id = id
        self.shape = shape
        self.dtype = dtype
        self.device = device
        self.value = value
        self.failure: Exception | None = None
        self.ir = new_tuple(TensorIR, (id, shape, dtype))

    def failed(self) -> DeviceError:
        """The error a read of this tensor raises where the kernel that was to compute it
        failed (`failure`)."""
        return DeviceError("fusion", f"the fused kernel that computes this tensor failed: "
                           f"{self.failure}", shape=self.shape, dtype=self.dtype.value)

    def __repr__(self) -> str:
        state = "pending" if self.value is None else "ready"
        return f"FusionTensor(#{self.id}, shape={self.shape}, dtype={self.dtype.value}, {state})"


class Pending(NamedTuple):
    """A recorded op: its row, its arguments in protocol order (tensors as `TensorIR`s), its
    result, and its structure: the op, input shapes and dtypes, compile-time arguments and
    where each tensor comes from (`Stream.wiring`), so that equal structures of a block run by
    one cached program. (A named tuple: one is made per op; `to_ir` gives the op record.)"""

    op: OpDef
    args: tuple[Any, ...]
    out: TensorIR
    key: tuple[Any, ...]

    def to_ir(self) -> OpIR:
        """The op's `OpIR` (its output checked against the op table's rules again)."""
        inputs, scalars = split_args(self.op, self.args, lambda t: t)
        return OpIR(self.op, inputs, scalars, (self.out,))


class Cell:
    """What a fuser worked out for one block structure (its program, launch plans), kept
    across flushes: `plan` is None until the block's first run."""

    __slots__ = ("plan",)

    def __init__(self) -> None:
        self.plan: Any = None


def block_key(kind: str | None, block: list[Pending], needed: set[int]) -> tuple[Any, ...]:
    """The structure of a block as the stream keys its cells: the block's kind
    (None: elementwise), its records' structures and which of their results are written.

    Args:
        kind: the fuser running the block.
        block: its records in stream order.
        needed: ids of results that must be written.

    Returns:
        The key.
    """
    return kind, tuple(r.key for r in block), tuple(r.out.id in needed for r in block)
