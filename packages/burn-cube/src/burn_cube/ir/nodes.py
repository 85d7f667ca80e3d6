"""The typed kernel IR: expressions, statements and the kernel itself.

Every expression carries its dtype; all implicit conversions are explicit ``cast`` ops, so
emitters never need type inference.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from burn_cube.types import DType


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


@dataclass
class KernelIR:
    """One specialization of a kernel: fixed dtypes, ranks, comptime values and cube dim."""

    name: str
    params: list[Param]
    buffers: dict[str, Buffer]
    locals: dict[str, DType]
    body: list[Stmt]
    cube_dim: tuple[int, int, int]
    features: set[str] = field(default_factory=set)

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
