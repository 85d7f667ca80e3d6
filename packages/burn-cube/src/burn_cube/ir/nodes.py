"""The typed kernel IR: expressions, statements and the kernel itself.

Every expression carries its dtype; all implicit conversions are explicit ``cast`` ops, so
emitters never need type inference.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field, fields, is_dataclass
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
    """Tensor metadata (u32): ``len`` (logical elements), ``shape``/``stride`` of dimension
    ``dim``, or ``offset`` (storage index of the first element; views); all counted in lines
    for Line tensors."""

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
class Atomic:
    """Atomically combine element ``index`` of ``buf`` with ``value`` by ``op`` (``add``,
    ``min``, ``max``); evaluates to the old value."""

    op: str
    buf: str
    index: Expr
    value: Expr
    dtype: DType


Expr = Const | Var | Meta | Op | Load | Atomic


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


def meta_names(buf: Buffer, extent: bool = False) -> list[tuple[str, str, int]]:
    """The metadata values of a tensor, in ABI order: ``(target name, field, dim)``.

    Args:
        buf: A tensor parameter.
        extent: Also pass ``extent``, the elements (lines) of the underlying storage, which the
            C target's bounds checks compare storage indexes with.

    Returns:
        len, shapes, strides, offset (and extent).
    """
    names = [(f"t_{buf.name}_len", "len", 0)]
    names += [(f"t_{buf.name}_shape{d}", "shape", d) for d in range(buf.rank)]
    names += [(f"t_{buf.name}_stride{d}", "stride", d) for d in range(buf.rank)]
    names.append((f"t_{buf.name}_offset", "offset", 0))
    return names + ([(f"t_{buf.name}_extent", "extent", 0)] if extent else [])


def statements(stmts: list[Stmt]) -> Iterator[Stmt]:
    """Every statement, nested blocks included (pre-order)."""
    for s in stmts:
        yield s
        for child in ("then", "orelse", "body"):
            yield from statements(getattr(s, child, []))


def _subexpressions(e: Expr) -> Iterator[Expr]:
    yield e
    match e:
        case Op(args=args):
            for a in args:
                yield from _subexpressions(a)
        case Load(index=index):
            yield from _subexpressions(index)
        case Atomic(index=index, value=value):
            yield from _subexpressions(index)
            yield from _subexpressions(value)


def expressions(stmts: list[Stmt]) -> Iterator[Expr]:
    """Every expression of the statements, subexpressions and nested blocks included."""
    for s in statements(stmts):
        for name in ("var", "value", "index", "expr", "cond", "start", "stop"):
            e = getattr(s, name, None)
            if e is not None:
                yield from _subexpressions(e)


#: The fields ``_structure`` reads, per class (None: not a dataclass), worked out once: the
#: hash of a matmul kernel visits ~10^4 nodes, so per-node ``fields()`` calls were most of it.
_STRUCTURE_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _structure_fields(cls: type) -> tuple[str, ...] | None:
    if cls not in _STRUCTURE_FIELDS:
        _STRUCTURE_FIELDS[cls] = tuple(
            f.name for f in fields(cls) if f.name not in ("line", "externals")
        ) if is_dataclass(cls) else None
    return _STRUCTURE_FIELDS[cls]


def _structure(obj: Any) -> Any:
    """A nested-tuple form of IR nodes without source lines."""
    names = _structure_fields(type(obj))
    if names is not None:
        return (type(obj).__name__, *(_structure(getattr(obj, n)) for n in names))
    if isinstance(obj, list | tuple):
        return tuple(_structure(o) for o in obj)
    if isinstance(obj, dict):
        return tuple((k, _structure(v)) for k, v in obj.items())
    if isinstance(obj, set | frozenset):
        return tuple(sorted(map(str, obj)))
    return (type(obj).__name__, obj) if isinstance(obj, bool | int | float) else obj


@dataclass
class KernelIR:
    """One specialization of a kernel: fixed dtypes, ranks, comptime values and cube dim.

    ``externals`` maps each global name (dotted) that lowering resolved to a fingerprint of its
    value (None: some value has none). A kernel rebuilt by ``from_interface`` (a launch-index
    hit) has only its interface: params, tensor buffers and cube_dim, no body.

    ``unit_work`` names an integer scalar parameter whose value estimates each unit's work (the
    elements it touches, e.g. a row's length); None: one element. Targets that spread a launch
    over threads (C) weigh the unit count by it.
    """

    name: str
    params: list[Param]
    buffers: dict[str, Buffer]
    locals: dict[str, DType]
    body: list[Stmt]
    cube_dim: tuple[int, int, int]
    features: set[str] = field(default_factory=set)
    externals: dict[str, str] | None = None
    unit_work: str | None = None

    def interface(self) -> dict[str, Any]:
        """What launching needs (JSON-serializable): name, params, tensor ranks and writes,
        and ``unit_work`` where the kernel names one."""
        data = {"name": self.name, "cube_dim": list(self.cube_dim),
                "params": [[p.name, p.dtype.name, p.tensor] for p in self.params],
                "tensors": {b.name: [b.rank, b.written] for b in self.tensors}}
        if self.unit_work is not None:
            data["unit_work"] = self.unit_work
        return data

    @classmethod
    def from_interface(cls, data: dict[str, Any]) -> KernelIR:
        """A body-less kernel from ``interface()``'s output."""
        params = [Param(name, dtype_named(dtype), tensor) for name, dtype, tensor in data["params"]]
        buffers = {p.name: Buffer(p.name, p.dtype, rank=data["tensors"][p.name][0],
                                  written=data["tensors"][p.name][1])
                   for p in params if p.tensor}
        return cls(data["name"], params, buffers, {}, [], tuple(data["cube_dim"]),
                   unit_work=data.get("unit_work"))

    def structural_hash(self) -> str:
        """A hash of everything that defines the kernel (not source lines or externals): equal
        IR built twice gives one hash; any other constant, op or type gives another."""
        text = repr(_structure(self))
        return hashlib.sha256(text.encode()).hexdigest()

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
