"""Per-cube hoisting of bounds checks and position comparisons for the C target.

An integer expression is *affine* in the unit when it equals ``scale * bc_unit + off`` for a
compile-time ``scale`` and a cube-invariant ``off`` (cube positions, tensor metadata, scalar
parameters, constants, and locals assigned once at top level before any use). Integer ``+ - *``
wrap modulo ``2**bits``, so the C value is congruent to the exact ``int64`` value; where the
exact range over the cube's units fits the dtype (and, for an index, the buffer), they are equal.
A product by a cube-invariant runtime value (a stride) counts as affine under the condition that
the value is 1: dense views get the fast path, others the checked loop.

The C emitter checks those ranges once per cube and then runs a unit loop without per-access
bounds checks, where comparisons between affine values are cube constants (``bc_f<k>``) and
indexes are plain ``int64_t`` arithmetic the vectorizer understands. Cubes that fail the check
(typically the last, partial one) run the fully checked loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from burn_cube.ir import nodes as ir
from burn_cube.types import DType

#: Exact int64 range of each integer dtype whose C arithmetic can wrap.
_RANGE = {"u32": ("INT64_C(0)", "INT64_C(4294967295)"),
          "i32": ("INT64_C(-2147483648)", "INT64_C(2147483647)")}
#: Comparison -> (all units true, all units false), in terms of the range of ``a - b``.
_COMPARE = {"lt": ("{hi} < 0", "{lo} >= 0"), "le": ("{hi} <= 0", "{lo} > 0"),
            "gt": ("{lo} > 0", "{hi} <= 0"), "ge": ("{lo} >= 0", "{hi} < 0")}
_UNIT_OPS = ("unit_pos", "absolute_pos", "plane_sum", "plane_max")


@dataclass(frozen=True)
class Affine:
    """``scale * bc_unit + off`` (exact, int64), valid when ``conds`` hold for the cube."""

    scale: int
    off: str
    dtype: DType
    conds: tuple[str, ...] = ()

    def bounds(self) -> tuple[str, str]:
        """C expressions of the smallest and largest value over the cube's units."""
        if self.scale == 0:
            return self.off, self.off
        shifted = f"({self.off} + {self.scale} * (int64_t)(BC_CD - 1))"
        return (self.off, shifted) if self.scale >= 0 else (shifted, self.off)

    def exact(self) -> tuple[str, ...]:
        """Conditions under which the wrapped C value equals the exact one."""
        if self.dtype.name not in _RANGE:
            return self.conds
        lo, hi = self.bounds()
        low, high = _RANGE[self.dtype.name]
        return (*self.conds, f"{lo} >= {low}", f"{hi} <= {high}")


def _walk(e: ir.Expr) -> Iterator[ir.Expr]:
    yield e
    for child in (*getattr(e, "args", ()), getattr(e, "index", None), getattr(e, "value", None)):
        if isinstance(child, ir.Const | ir.Var | ir.Meta | ir.Op | ir.Load | ir.AtomicAdd):
            yield from _walk(child)


def _exprs(stmts: list[ir.Stmt]) -> Iterator[ir.Expr]:
    """Every expression of the statements, nested ones included (stores as a Load of the
    element they write)."""
    for s in stmts:
        match s:
            case ir.Assign(value=v) | ir.Eval(expr=v):
                yield from _walk(v)
            case ir.Store(buf=buf, index=index, value=v):
                yield from _walk(v)
                yield from _walk(ir.Load(buf, index, v.dtype))
            case ir.If(cond=cond, then=then, orelse=orelse):
                yield from _walk(cond)
                yield from _exprs(then + orelse)
            case ir.While(cond=cond, body=body):
                yield from _walk(cond)
                yield from _exprs(body)
            case ir.For(start=start, stop=stop, body=body):
                yield from _walk(start)
                yield from _walk(stop)
                yield from _exprs(body)


def _assigned(stmts: list[ir.Stmt]) -> Iterator[str]:
    for s in stmts:
        if isinstance(s, ir.Assign | ir.For):
            yield s.var.name
        for child in ("then", "orelse", "body"):
            yield from _assigned(getattr(s, child, []))


class Hoist:
    """The per-cube fast path of one (barrier-free) kernel.

    Args:
        kernel: The IR.
        render: Renders a cube-invariant expression as C (locals already substituted).
    """

    def __init__(self, kernel: ir.KernelIR, render: Callable[[ir.Expr], str]) -> None:
        self.kernel = kernel
        self.render = render
        self.one_d = kernel.cube_dim[1:] == (1, 1)
        self.scalars = {p.name for p in kernel.scalars}
        self.defs = self._definitions()
        self.conds: dict[str, None] = {}
        self.flags: dict[ir.Op, str] = {}
        self.flag_defs: list[str] = []
        self.indexes: dict[tuple[str, ir.Expr], str] = {}
        #: The cube-invariant part ``off`` of each registered index (``off + scale * unit``).
        self.offsets: dict[tuple[str, ir.Expr], str] = {}
        forms: set[tuple[int, str]] = set()
        atomics = False
        for e in _exprs(kernel.body):
            if isinstance(e, ir.Load | ir.AtomicAdd):
                a = self._index(e.buf, e.index)
                forms.add((a.scale, a.off) if a else (0, ""))
                atomics |= isinstance(e, ir.AtomicAdd)
            elif isinstance(e, ir.Op) and e.op in _COMPARE:
                self._compare(e)
        #: ``#pragma omp simd`` is safe: every access of every unit touches only its own element
        #: (one shared unit-dependent index), so units are independent even if buffers alias.
        self.simd = not atomics and len(forms) == 1 and next(iter(forms))[0] != 0
        #: Every access is ``off + bc_unit`` (an ``off`` per access): each unit touches its own
        #: element of each buffer, consecutive units consecutive elements.
        self.unit_stride = not atomics and {scale for scale, _ in forms} == {1}

    @property
    def active(self) -> bool:
        """Whether there is anything to hoist."""
        return bool(self.indexes or self.flags)

    def _definitions(self) -> dict[str, ir.Expr]:
        """Locals assigned exactly once, at top level, and not read before that."""
        counts: dict[str, int] = {}
        for name in _assigned(self.kernel.body):
            counts[name] = counts.get(name, 0) + 1
        seen: set[str] = set()
        defs: dict[str, ir.Expr] = {}
        for s in self.kernel.body:
            names = {e.name for e in _exprs([s]) if isinstance(e, ir.Var)}
            if isinstance(s, ir.Assign) and counts[s.var.name] == 1 and \
                    s.var.name not in seen | names:
                defs[s.var.name] = s.value
            seen |= names
        return defs

    def invariant(self, e: ir.Expr) -> bool:
        """Whether ``e`` has the same value for every unit of a cube."""
        match e:
            case ir.Const() | ir.Meta():
                return True
            case ir.Var(name=name):
                return name in self.scalars or (name in self.defs and
                                                self.invariant(self.defs[name]))
            case ir.Op(op=op, args=args):
                return not op.startswith(_UNIT_OPS) and all(self.invariant(a) for a in args)
        return False

    def inline(self, e: ir.Expr) -> ir.Expr:
        """``e`` with its invariant locals replaced by their definitions."""
        if isinstance(e, ir.Var) and e.name in self.defs:
            return self.inline(self.defs[e.name])
        if isinstance(e, ir.Op):
            return ir.Op(e.op, tuple(self.inline(a) for a in e.args), e.dtype)
        return e

    def affine(self, e: ir.Expr) -> Affine | None:
        """The affine form of an integer expression, or None."""
        if not e.dtype.is_integer:
            return None
        if self.invariant(e):
            return Affine(0, f"(int64_t){self.render(self.inline(e))}", e.dtype)
        match e:
            case ir.Var(name=name) if name in self.defs:
                return self.affine(self.defs[name])
            case ir.Op(op="unit_pos" | "absolute_pos", args=()):
                return Affine(1, "0" if e.op == "unit_pos" else "bc_base", e.dtype)
            case ir.Op(op="unit_pos_x" | "absolute_pos_x", args=()) if self.one_d:
                cube = self.render(ir.Op("cube_pos_x", (), e.dtype))
                return Affine(1, "0" if e.op == "unit_pos_x" else f"(int64_t){cube} * BC_CDX",
                              e.dtype)
            case ir.Op(op="add" | "sub" as op, args=(x, y)):
                a, b = self.affine(x), self.affine(y)
                if a is None or b is None:
                    return None
                sign = 1 if op == "add" else -1
                return Affine(a.scale + sign * b.scale, f"({a.off} {'+-'[op == 'sub']} {b.off})",
                              e.dtype, a.conds + b.conds)
            case ir.Op(op="mul", args=(x, y)):
                a, k = (self.affine(x), y) if self.invariant(y) else (self.affine(y), x)
                if a is None or not self.invariant(k):
                    return None
                if isinstance(k, ir.Const):
                    return Affine(a.scale * int(k.value), f"({a.off} * {int(k.value)})",
                                  e.dtype, a.conds)
                # A runtime factor (a stride): affine for the cubes where it is 1.
                one = f"(int64_t){self.render(self.inline(k))} == 1"
                return Affine(a.scale, a.off, e.dtype, (*a.conds, one))
            case ir.Op(op="neg", args=(x,)):
                a = self.affine(x)
                return None if a is None else Affine(-a.scale, f"(-{a.off})", e.dtype, a.conds)
            case ir.Op(op="cast", args=(x,)) if x.dtype.is_integer:
                a = self.affine(x)
                if a is None:
                    return None
                widening = e.dtype.bits > x.dtype.bits  # not modular: needs the exact value
                return Affine(a.scale, a.off, e.dtype, a.exact() if widening else a.conds)
        return None

    def _require(self, conds: tuple[str, ...]) -> None:
        self.conds.update(dict.fromkeys(conds))

    def _index(self, buf_name: str, index: ir.Expr) -> Affine | None:
        """Register an access whose bounds can be checked once per cube."""
        a = self.affine(index)
        if a is None:
            return None
        buf = self.kernel.buffers[buf_name]
        size = str(buf.size) if buf.shared else f"(int64_t)t_{buf.name}_extent"
        lo, hi = a.bounds()
        self._require((*a.exact(), f"{lo} >= 0", f"{hi} < {size}"))
        unit = "bc_unit" if a.scale == 1 else f"{a.scale} * bc_unit"
        self.indexes[(buf_name, index)] = f"({a.off} + {unit})"
        self.offsets[(buf_name, index)] = a.off
        return a

    def _compare(self, e: ir.Op) -> None:
        """Register a comparison that is the same for every unit of the cube, or not."""
        x, y = e.args
        a, b = self.affine(x), self.affine(y)
        if a is None or b is None or a.scale == b.scale or e in self.flags:
            return
        d = Affine(a.scale - b.scale, f"({a.off} - {b.off})", a.dtype)
        lo, hi = d.bounds()
        true, false = (c.format(lo=lo, hi=hi) for c in _COMPARE[e.op])
        flag = f"bc_f{len(self.flags)}"
        self.flags[e] = flag
        self.flag_defs.append(f"const int {flag} = {true};")
        self._require((*a.exact(), *b.exact(), f"({flag} || {false})"))

    def index(self, buf_name: str, index: ir.Expr) -> str | None:
        """The unchecked int64 index of a registered access."""
        return self.indexes.get((buf_name, index))
