"""`burn.profile()`: what ops a block ran, with shapes, dtypes and wall time.

Ops are recorded by the Profile decorator, a device such as ``"numpy+profile"`` (or
``device.profile()``, or ``BURN_DEVICE=numpy+profile``); `profile()` collects what every
Profile device runs inside the block::

    device = burn.Device("numpy").profile().autodiff()
    with burn.profile() as prof:
        loss = model(x.to(device)).sum()
        loss.backward()
    print(prof.table())

The table groups the ops by name, like torch.profiler's ``key_averages()``. Outside a
`profile()` block a Profile device only forwards; devices without the decorator pay nothing.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from burn.backend.decorator import Decorator
from burn.ir import OpDef, OpIR, TensorArg, TensorIR, split_args

_active: list[ProfileReport] = []
_clock = time.perf_counter_ns


@dataclass(frozen=True, slots=True)
class HostData:
    """What a record keeps of a host array argument: its shape and dtype, not its values."""

    shape: tuple[int, ...]
    dtype: np.dtype


@dataclass(frozen=True, slots=True)
class ProfiledOp:
    """One op run inside a `profile()` block: its record and its wall time in seconds."""

    record: OpIR
    seconds: float


@dataclass
class OpStats:
    """The ops of one name in a report.

    Attributes:
        name: the backend op ("float_add").
        calls: how many ran.
        total: their summed wall time, seconds.
        min / max: the fastest and slowest call, seconds.
        shapes: how often each input-shape signature occurred.
    """

    name: str
    calls: int = 0
    total: float = 0.0
    min: float = float("inf")
    max: float = 0.0
    shapes: Counter[str] = field(default_factory=Counter)

    @property
    def mean(self) -> float:
        """Mean wall time per call, seconds."""
        return self.total / self.calls if self.calls else 0.0


class ProfileReport:
    """The ops a `profile()` block ran, in order.

    Args:
        verify: build each record as the op runs, with the outputs it really produced, so an
            op-table rule that disagrees with a backend raises at once (slower; for tests).
    """

    def __init__(self, verify: bool = False) -> None:
        self.verify = verify
        # (op, its arguments with tensors described, nanoseconds): records are built on demand.
        self._calls: list[tuple[OpDef, list[Any], int]] = []

    def __len__(self) -> int:
        return len(self._calls)

    @property
    def records(self) -> list[ProfiledOp]:
        """Every op as a record (outputs inferred by the op table) with its wall time."""
        return [ProfiledOp(OpIR(op, *_split(op, args)), ns / 1e9) for op, args, ns in self._calls]

    @property
    def op_names(self) -> set[str]:
        """The names of the ops that ran."""
        return {call[0].name for call in self._calls}

    def key_averages(self) -> list[OpStats]:
        """Statistics per op name, the most total time first."""
        stats: dict[str, OpStats] = defaultdict(lambda: OpStats(""))
        for op, args, ns in self._calls:
            s = stats[op.name]
            s.name = op.name
            seconds = ns / 1e9
            s.calls += 1
            s.total += seconds
            s.min, s.max = min(s.min, seconds), max(s.max, seconds)
            s.shapes[_shape_text(_split(op, args)[0])] += 1
        return sorted(stats.values(), key=lambda s: -s.total)

    def table(self, row_limit: int | None = None) -> str:
        """A text table of `key_averages()`: calls, total/mean/min/max time, share of the
        block's op time, and the most frequent input shapes.

        Args:
            row_limit: show only this many ops (the slowest in total).
        """
        stats = self.key_averages()
        total = sum(s.total for s in stats) or 1.0
        head = (f"{'op':<28} {'calls':>6} {'total ms':>9} {'mean us':>9} {'min us':>8} "
                f"{'max us':>8} {'%':>6}  input shapes (most frequent)")
        lines = [head, "-" * len(head)]
        for s in stats[:row_limit]:
            shapes, _ = s.shapes.most_common(1)[0]
            lines.append(f"{s.name:<28} {s.calls:>6} {s.total * 1e3:>9.3f} "
                         f"{s.mean * 1e6:>9.1f} {s.min * 1e6:>8.1f} {s.max * 1e6:>8.1f} "
                         f"{100 * s.total / total:>5.1f}%  {shapes}")
        lines.append(f"{len(self)} ops, {total * 1e3:.3f} ms in ops")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _split(op: OpDef, args: list[Any]) -> tuple[dict[str, TensorArg], dict[str, Any]]:
    """Captured arguments (tensors as (id, shape, dtype) triples) as inputs and scalars."""
    return split_args(op, args, _tensor_ir)


def _tensor_ir(triple: tuple[int, Any, Any]) -> TensorIR:
    return TensorIR(*triple)


def _shape_text(inputs: dict[str, TensorArg]) -> str:
    parts = []
    for value in inputs.values():
        if value is None:
            continue
        for t in (value,) if isinstance(value, TensorIR) else value:
            parts.append(f"{list(t.shape)}:{t.dtype.value}")
    return " ".join(parts)


class Profile(Decorator):
    """The profiling decorator: records each op into the active `profile()` report.

    Args:
        inner: the backend that computes.
    """

    decorator_name: ClassVar[str] = "profile"

    def handle(self, op: OpDef, args: tuple[Any, ...]) -> Any:
        if not _active:
            return self.forward(op, args)
        report = _active[-1]
        inner = self.inner
        start = _clock()
        out = getattr(inner, op.name)(*args)
        elapsed = _clock() - start
        if report.verify:
            self.record(op, _host_data(op, args), out)
        # Tensors as (id, shape, dtype) triples, made into TensorIRs when records are asked for.
        captured = list(args)
        shape, dtype = inner.shape, inner.dtype
        for i in op.tensor_at:
            x = captured[i]
            if x is not None:
                captured[i] = (id(x), shape(x), dtype(x))
        for i in op.list_at:
            captured[i] = tuple((id(x), shape(x), dtype(x)) for x in captured[i])
        if op.device_at is not None and op.params[0].type == "data":
            captured[0] = HostData(args[0].shape, args[0].dtype)
        report._calls.append((op, captured, elapsed))
        return out


def _host_data(op: OpDef, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """`args` with a host array argument replaced by its shape and dtype."""
    if op.params and op.params[0].type == "data":
        return (HostData(args[0].shape, args[0].dtype), *args[1:])
    return args


@contextmanager
def profile(verify: bool = False) -> Iterator[ProfileReport]:
    """Record every op that Profile devices run inside the block.

    Args:
        verify: check each op's outputs against the op table's rules as it runs (for tests).
    Returns:
        A context manager yielding the `ProfileReport` (filled when the block ends).
    """
    report = ProfileReport(verify)
    _active.append(report)
    try:
        yield report
    finally:
        _active.remove(report)
