"""`Stream`: the ops a fusion device has recorded and not run yet.

Recorded ops (`Pending`) name their tensors by id: an input already computed is kept by value
(`values`), a pending result only by a weak reference to its handle. `flush` cuts the pending
ops into blocks (consecutive ops whose results share one shape), works out which results must
be written (a live handle holds them, or a later block reads them) and runs each block through
the elementwise fuser; results nobody holds and nothing reads are never computed.
"""

from __future__ import annotations

import weakref
from typing import Any

from burn.fusion.elementwise import run_block
from burn.fusion.handle import FusionTensor, Pending
from burn.fusion.stats import STATS
from burn.ir import OpDef, TensorIR, new_id

#: Most ops a stream holds before it runs them (a bound on kernel size and on the memory the
#: inputs of pending ops keep).
MAX_PENDING = 128


class Stream:
    """The pending ops of one fusion device.

    Args:
        inner: the cube backend that runs them.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.pending: list[Pending] = []
        #: pending results' handles, weakly, by id.
        self.weak: dict[int, weakref.ref[FusionTensor]] = {}
        #: computed inputs of pending ops (inner primitives) by id.
        self.values: dict[int, Any] = {}
        #: pending results' positions in `pending`, and computed inputs' order of first use.
        self.position: dict[int, int] = {}
        self.external: dict[int, int] = {}
        #: block programs by structure (`elementwise.run_block`).
        self.plans: dict[Any, Any] = {}
        STATS.streams += 1

    def record(self, op: OpDef, args: tuple[Any, ...], tensor_at: tuple[int, ...],
               inputs: list[FusionTensor], structure: tuple[Any, ...],
               result: tuple[Any, ...]) -> FusionTensor:
        """Defer `op` on `args`; its result's handle (on the device of its first tensor).

        Args:
            op: the op (one the fuser takes).
            args: its arguments in protocol order.
            tensor_at: the positions of its tensor arguments.
            inputs: the handles there.
            structure: the op, input shapes and dtypes and compile-time arguments.
            result: the (shape, dtype) of its result.
        """
        pending, position = self.pending, self.position
        n = len(pending)
        ir = list(args)
        wiring = []  # a pending input as its distance back, a computed one as -1 - its order
        for i, h in zip(tensor_at, inputs, strict=True):
            value = h.value
            if value is None:
                wiring.append(n - position[h.id])
            else:
                self.values[h.id] = value
                wiring.append(-1 - self.external.setdefault(h.id, len(self.external)))
            ir[i] = TensorIR(h.id, h.shape, h.dtype)
        out = TensorIR(new_id(), *result)
        handle = FusionTensor(out.id, out.shape, out.dtype, inputs[0].device)  # type: ignore[arg-type]
        position[out.id] = n
        pending.append(Pending(op, tuple(ir), out, (structure, tuple(wiring))))
        self.weak[out.id] = weakref.ref(handle)
        STATS.ops_recorded += 1
        if n + 1 >= MAX_PENDING:
            self.flush()
        return handle

    def flush(self) -> None:
        """Run every pending op whose result is needed; handles still held get their values."""
        if not self.pending:
            return
        pending, weak, values = self.pending, self.weak, self.values
        self.pending, self.weak, self.values = [], {}, {}
        self.position.clear()
        self.external.clear()
        STATS.flushes += 1
        blocks = _blocks(pending)
        producer = {r.out.id: i for i, block in enumerate(blocks) for r in block}
        needed = {i for i, ref in weak.items() if ref() is not None}
        for i, block in enumerate(blocks):
            for record in block:
                for a in record.args:
                    if type(a) is TensorIR and producer.get(a.id, i) != i:
                        needed.add(a.id)
        for b, block in enumerate(blocks):
            try:
                results = run_block(self.inner, block, values, needed, self.plans)
            except Exception as exc:  # the handles left pending say why when they are read
                for record in (r for later in blocks[b:] for r in later):
                    handle = weak[record.out.id]()
                    if handle is not None:
                        handle.failure = exc
                raise
            for tid, value in results.items():
                values[tid] = value
                handle = weak[tid]()
                if handle is not None:
                    handle.value = value


def _blocks(pending: list[Pending]) -> list[list[Pending]]:
    """Consecutive ops whose results have one shape."""
    blocks: list[list[Pending]] = []
    shape: Any = None
    for record in pending:
        if not blocks or record.out.shape != shape:
            blocks.append([])
            shape = record.out.shape
        blocks[-1].append(record)
    return blocks
