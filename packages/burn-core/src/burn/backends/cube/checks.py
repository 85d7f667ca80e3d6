"""Device-side argument checks of the cube backends: index ranges and integer divisors.

`check_indices` and `check_nonzero` run a kernel that marks a slot of a per-device flag buffer
instead of reading the values back; the error (`BurnIndexError`, `DivisionByZeroError`, naming
the op) is raised at the next sync point: host reads (`*_into_data`), `sync()` and
`memory_stats()`, which read every pending flag at once (in place where the flag buffer is
host memory the kernels write, else in one download). Only on the error path are the
offending values read back, to name one in the message.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from burn.dtype import DType
from burn.errors import BurnError, BurnIndexError, DivisionByZeroError
from burn.ir.cube import cube_dtype

from .creation import full, into_data
from .kernel_cache import cached_kernel
from .kernels import fill_kernel
from .tensor import CubeTensor, host_array

#: Flag slots per device; a check beyond them reads the pending flags first.
CAPACITY = 256


@cached_kernel
def _check_kernel(dtype: DType, rank: int, nonzero: bool) -> Any:
    """Flags `slot` where an element of `indices` is outside [low, size) (nonzero: where it is
    zero); with `nonzero` False it also writes the indices to dense `out`, negatives wrapped
    and bad ones replaced by 0, so later kernels never index out of bounds."""
    from burn_cube import KernelBuilder, i32, u32

    cube = cube_dtype("check_indices", dtype)
    b = KernelBuilder("check_nonzero" if nonzero else "check_indices")
    idx = b.tensor("indices", cube, rank=rank, write=False)
    flags = b.tensor("flags", i32, rank=1, write=True)
    slot = b.scalar("slot", u32)
    if not nonzero:
        out = b.tensor("out", cube, rank=1, write=True)
        low, size = b.scalar("low", cube), b.scalar("size", cube)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < idx.len):
        value = b.local(cube, idx[b.index_of(idx, pos)])
        with b.if_(value == 0 if nonzero else b.or_(value < low, value >= size)):
            flags[slot] = 1
            if not nonzero:
                b.set(value, 0)
        if not nonzero:
            out[pos] = b.select(value < 0, value + size, value)
    return b.kernel()


class PendingChecks:
    """The flag buffer of one backend and the errors its set slots stand for.

    Slots are handed out in order from a cursor that a sync point moves past the slots it
    read, so a read needs no clearing launch: a sync point that finds the cursor past half
    the buffer clears it (once every `CAPACITY` / 2 checks or more), and a check that finds
    the buffer used up reads and clears it first.

    Args:
        backend: the cube backend.
    """

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.flags: CubeTensor | None = None
        #: the flag buffer's bytes where they are host memory kernels write (the cpu
        #: runtime's, cuda's pinned memory: `Runtime.host_mapped`), read and cleared in place
        #: after a sync, without numpy.
        self.host_bytes: memoryview | None = None
        #: the first slot not read yet.
        self.base = 0
        #: one error maker per slot from `base` on, in slot order.
        self.errors: list[Callable[[], BurnError]] = []

    def slot(self, error: Callable[[], BurnError]) -> tuple[CubeTensor, int]:
        """A free slot for a check whose failure `error` builds.

        Returns:
            The flag buffer and the slot index.
        """
        if self.base + len(self.errors) == CAPACITY:
            self.raise_pending()  # (which clears the buffer)
        if self.flags is None:
            mapped = self.backend.runtime.host_mapped((CAPACITY,), cube_dtype("checks",
                                                                            DType.int32))
            if mapped is None:
                self.flags = full(self.backend, (CAPACITY,), 0, DType.int32)
            else:
                self.flags = CubeTensor(mapped[0], DType.int32)
                self.host_bytes = memoryview(mapped[1]).cast("B")
        self.errors.append(error)
        return self.flags, self.base + len(self.errors) - 1

    def raise_pending(self, synced: bool = False) -> None:
        """Read the used flags (in place in host memory after a sync, else one download) and
        raise the first failure; their slots are not handed out again before the buffer is
        cleared.

        Args:
            synced: the runtime's queued kernels are known to be done (a download just waited
                for them): host-memory flags are read without another sync.
        Raises:
            BurnError: the error of the first failed check since the last sync point.
        """
        if not self.errors or self.flags is None:
            return
        errors, self.errors = self.errors, []
        start, self.base = self.base, self.base + len(errors)
        if self.host_bytes is not None:  # host memory: read in place once kernels are done
            if not synced:
                self.backend.runtime.sync()
            raw = self.host_bytes[4 * start:4 * self.base]
            # (a copy: clearing may follow; no numpy call on the path without errors)
            set_ = np.frombuffer(raw, np.int32).copy() if int.from_bytes(raw, "little") else ()
        else:
            set_ = host_array(self.flags.view((len(errors),), (1,), start))
        if self.base >= CAPACITY // 2:
            self._clear()
        for flag, error in zip(set_, errors, strict=False):  # (() where none is set)
            if flag:
                raise error()

    def _clear(self) -> None:
        """Zero the whole (read) flag buffer and hand out slots from 0 again."""
        self.base = 0
        if self.host_bytes is not None:
            self.host_bytes[:] = bytes(len(self.host_bytes))
        elif self.flags is not None:
            self.backend.launch_planned(fill_kernel(DType.int32), CAPACITY, 0, self.flags.array)


def pending(backend: Any) -> PendingChecks:
    """The pending checks of `backend` (created on first use)."""
    checks = backend.__dict__.get("_pending_checks")
    if checks is None:
        checks = backend.__dict__["_pending_checks"] = PendingChecks(backend)
    return checks


@cache
def _int_max(dtype: DType) -> int:
    """The largest value of an integer dtype (np.iinfo is slow to build on every check)."""
    return int(np.iinfo(dtype.numpy).max)


def _flat(t: CubeTensor) -> CubeTensor:
    """A 0-d tensor as a 1-element rank-1 view (kernels index rank >= 1)."""
    return t if t.shape else t.view((1,), (1,))


def _first_bad(indices: CubeTensor, low: int, size: int) -> int:
    data = host_array(indices)
    return int(data[(data < low) | (data >= size)].flat[0])


class CubeCheckOps:
    """`check_indices` / `check_nonzero` on the device, reported at the next sync point."""

    def check_indices(self: Any, op: str, indices: CubeTensor, size: int,
                      wrap_negative: bool = True) -> CubeTensor:
        """`indices` with negatives wrapped, checked on the device against [-size, size)
        ([0, size) without `wrap_negative`); a failure raises `BurnIndexError` naming `op` at
        the next sync point (out-of-range entries read as 0 until then)."""
        if indices.size == 0:
            return indices
        low = -size if wrap_negative else 0
        top = _int_max(indices.dtype)
        shape = indices.shape

        def error() -> BurnError:
            return BurnIndexError(op, f"index {_first_bad(indices, low, size)} out of range "
                                  f"[{low}, {size})", size=size, indices_shape=shape)

        flags, slot = pending(self).slot(error)
        out = self.empty(shape, indices.dtype)
        view = _flat(indices)
        self.launch_planned(_check_kernel(indices.dtype, len(view.shape), False), indices.size,
                            view.array, flags.array, slot, out.flat().array, max(low, -top),
                            min(size, top))
        return out

    def check_nonzero(self: Any, op: str, divisor: CubeTensor) -> None:
        """Flag a zero in the int tensor `divisor` on the device; `DivisionByZeroError` naming
        `op` is raised at the next sync point."""
        if divisor.size == 0:
            return
        dtype, shape = divisor.dtype.value, divisor.shape

        def error() -> BurnError:
            return DivisionByZeroError(op, "integer division by zero", dtype=dtype, shape=shape)

        flags, slot = pending(self).slot(error)
        view = _flat(divisor)
        self.launch_planned(_check_kernel(divisor.dtype, len(view.shape), True), divisor.size,
                            view.array, flags.array, slot)

    def sync(self: Any) -> None:
        """Wait for the device, then raise the first failed check since the last sync."""
        self.runtime.sync()
        pending(self).raise_pending()

    def flush(self: Any) -> None:
        """Start the launches the runtime queued, without waiting (checks raise at `sync`)."""
        self.runtime.flush()

    def memory_stats(self: Any) -> dict[str, int]:
        """The runtime's memory figures (a sync point for pending checks)."""
        pending(self).raise_pending()
        return dict(self.runtime.memory_stats())

    def float_into_data(self: Any, x: CubeTensor) -> np.ndarray:
        """A host copy of `x`, unless a pending check failed (raised instead). The copy comes
        first: a download waits for every kernel queued before it, so the checks' flags are
        read without a sync of their own (one wait for the device, not two, per `item()`)."""
        data = into_data(self, x)
        pending(self).raise_pending(synced=True)
        return data

    int_into_data = bool_into_data = float_into_data
