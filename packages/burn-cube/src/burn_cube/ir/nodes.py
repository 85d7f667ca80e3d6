"""The typed kernel IR: expressions, statements and the kernel itself.

Every expression carries its dtype; all implicit conversions are explicit ``cast`` ops, so
emitters never need type inference.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from burn_cube.types import DType, dtype_named


@dataclass(frozen=True)
class Const:
    """A literal of a given dtype."""

    value: int | float | bool
    dtype: DType


@dataclass(frozen=True)
class Var:
    """A local variable or scalar parameter."""

    name: str
    dtype: DType


@dataclass(frozen=True)
class Meta:
    """Tensor metadata (u32): ``len``, or ``shape``/``stride`` of dimension ``dim``."""

    buf: str
    field: str
    dim: int
    dtype: DType


@dataclass(frozen=True)
class Op:
    """An operation looked up in the target's expression table (``add``, ``exp``, ``cast``...)."""

    op: str
    args: tuple[Expr, ...]
    dtype: DType


@dataclass(frozen=True)
class Load:
    """Read element ``index`` of a tensor or shared array."""

    buf: str
    index: Expr
    dtype: DType


@dataclass(frozen=True)
class AtomicAdd:
    """Atomically add ``value`` to element ``index`` of ``buf``; evaluates to the old value."""

    buf: str
    index: Expr
    value: Expr
    dtype: DType


Expr = Const | Var | Meta | Op | Load | AtomicAdd


@dataclass
class Assign:
    """``var = value``."""

    var: Var
    value: Expr
    line: int = 0


@dataclass
class Store:
    """``buf[index] = value``."""

    buf: str
    index: Expr
    value: Expr
    line: int = 0


@dataclass
class Eval:
    """Evaluate an expression for its side effect (an atomic)."""

    expr: Expr
    line: int = 0


@dataclass
class If:
    """``if cond: then else: orelse``."""

    cond: Expr
    then: list[Stmt]
    orelse: list[Stmt]
    line: int = 0


@dataclass
class For:
    """``for var in range(start, stop, step)``; ``stop`` is evaluated once, ``step`` is constant."""

    var: Var
    start: Expr
    stop: Expr
    step: int
    body: list[Stmt]
    line: int = 0


@dataclass
class While:
    """``while cond: body``."""

    cond: Expr
    body: list[Stmt]
    line: int = 0


@dataclass
class Break:
    """``break``."""

    line: int = 0


@dataclass
class Continue:
    """``continue``."""

    line: int = 0


@dataclass
class Return:
    """Early exit of the current unit."""

    line: int = 0


@dataclass
class Barrier:
    """``sync_units()``: every unit of the cube waits here."""

    line: int = 0


Stmt = Assign | Store | Eval | If | For | While | Break | Continue | Return | Barrier


@dataclass
class Buffer:
    """A tensor parameter or a shared-memory array.

    Args:
        name: Name in the kernel source.
        dtype: Element type.
        shared: True for ``shared_memory`` arrays.
        rank: Tensor rank (tensors only).
        size: Element count (shared arrays only).
        written: Whether the kernel stores into it.
        atomic: Whether the kernel updates it with atomics.
    """

    name: str
    dtype: DType
    shared: bool = False
    rank: int = 0
    size: int = 0
    written: bool = False
    atomic: bool = False


@dataclass
class Param:
    """A runtime parameter of the kernel: a tensor (see ``KernelIR.buffers``) or a scalar."""

    name: str
    dtype: DType
    tensor: bool


def meta_names(buf: Buffer) -> list[tuple[str, str, int]]:
    """The metadata values of a tensor, in ABI order: ``(target name, field, dim)``."""
    names = [(f"t_{buf.name}_len", "len", 0)]
    names += [(f"t_{buf.name}_shape{d}", "shape", d) for d in range(buf.rank)]
    names += [(f"t_{buf.name}_stride{d}", "stride", d) for d in range(buf.rank)]
    return names


@dataclass
class KernelIR:
    """One specialization of a kernel: fixed dtypes, ranks, comptime values and cube dim.

    ``externals`` maps each global name (dotted) that lowering resolved to a fingerprint of its
    value (None: some value has none). A kernel rebuilt by ``from_interface`` (a launch-index
    hit) has only its interface: params, tensor buffers and cube_dim, no body.
    """

    name: str
    params: list[Param]
    buffers: dict[str, Buffer]
    locals: dict[str, DType]
    body: list[Stmt]
    cube_dim: tuple[int, int, int]
    features: set[str] = field(default_factory=set)
    externals: dict[str, str] | None = None

    def interface(self) -> dict[str, Any]:
        """What launching needs (JSON-serializable): name, params, tensor ranks and writes."""
        return {"name": self.name, "cube_dim": list(self.cube_dim),
                "params": [[p.name, p.dtype.name, p.tensor] for p in self.params],
                "tensors": {b.name: [b.rank, b.written] for b in self.tensors}}

    @classmethod
    def from_interface(cls, data: dict[str, Any]) -> KernelIR:
        """A body-less kernel from ``interface()``'s output."""
        params = [Param(name, dtype_named(dtype), tensor) for name, dtype, tensor in data["params"]]
        buffers = {p.name: Buffer(p.name, p.dtype, rank=data["tensors"][p.name][0],
                                  written=data["tensors"][p.name][1])
                   for p in params if p.tensor}
        return cls(data["name"], params, buffers, {}, [], tuple(data["cube_dim"]))

    @property
    def tensors(self) -> list[Buffer]:
        """Tensor parameters, in parameter order."""
        return [self.buffers[p.name] for p in self.params if p.tensor]

    @property
    def scalars(self) -> list[Param]:
        """Scalar parameters, in parameter order."""
        return [p for p in self.params if not p.tensor]

    @property
    def shared(self) -> list[Buffer]:
        """Shared-memory arrays."""
        return [b for b in self.buffers.values() if b.shared]
