"""Per-cube hoisting of bounds checks and position comparisons for the C target.

An integer expression is *affine* in the unit when it equals ``scale * bc_unit + off`` for a
compile-time ``scale`` and a cube-invariant ``off`` (cube positions, tensor metadata, scalar
parameters, constants, and locals assigned once at top level before any use). Integer ``+ - *``
wrap modulo ``2**bits``, so the C value is congruent to the exact ``int64`` value; where the
exact range over the cube's units fits the dtype (and, for an index, the buffer), they are equal.
A product by a cube-invariant runtime value (a stride) counts as affine under the condition that
the value is 1 (dense views), or under an assumed value (``assume``: a variant of the fast path
where a read-only tensor's stride is 0, a broadcast input).

The C emitter checks those ranges once per cube and then runs a unit loop without per-access
bounds checks, where comparisons between affine values are cube constants (``bc_f<k>``) and
indexes are plain ``int64_t`` arithmetic the vectorizer understands. A kernel whose body is a
guard ``if (pos < n) {...}`` (after assignments without loads) runs the fast loop over the units
the guard admits (``bc_n``, the loop's unit count), so a cube that straddles ``n`` (the last one,
or every one when rows are shorter than a cube) needs no checks either. Cubes that fail the
check run the fully checked loop.
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
#: The unit count of the fast loop (a C ``int64_t`` the emitter defines per cube).
UNITS = "bc_n"
#: The range of an induction variable (its first and last value, C ``int64_t`` expressions):
#: the units of the fast loop.
Span = tuple[str, str]
UNIT_SPAN: Span = ("0", f"({UNITS} - 1)")
#: Bound of a loop's trip count and runtime strides for its fast path (int64 bounds exact).
_LOOP_MAX = "(INT64_C(1) << 28)"
#: Runtime factors that get a fast-path variant of their own where assumed 0, at most.
MAX_VARIANTS = 3


def _scaled(scale: int | str, factor: int | str) -> int | str:
    """The product of two scales (ints, or C expressions of runtime values)."""
    if isinstance(scale, int) and isinstance(factor, int):
        return scale * factor
    return f"({scale} * {factor})"


def _summed(a: int | str, b: int | str, sign: int) -> int | str:
    """``a + sign * b`` of two scales."""
    if isinstance(a, int) and isinstance(b, int):
        return a + sign * b
    return f"({a} {'+' if sign > 0 else '-'} {b})"


@dataclass(frozen=True)
class Affine:
    """``scale * t + off`` (exact, int64) in an induction variable ``t`` (the unit, or a loop
    counter), valid when ``conds`` hold; ``scale`` is a C expression where it is a runtime
    value (loops only)."""

    scale: int | str
    off: str
    dtype: DType
    conds: tuple[str, ...] = ()
    #: A compile-time part of the offset, kept apart so that accesses ``off + c`` of one buffer
    #: are checked together (the smallest and largest ``c``).
    const: int = 0

    @property
    def full(self) -> str:
        """The whole offset, in C."""
        return f"({self.off} + {self.const})" if self.const else self.off

    def bounds(self, span: Span = UNIT_SPAN) -> tuple[str, str]:
        """C expressions of the smallest and largest value over ``t`` in `span`."""
        off = self.full
        if self.scale == 0:
            return off, off
        first, last = (off if span[0] == "0" else f"({off} + {self.scale} * {span[0]})",
                       f"({off} + {self.scale} * {span[1]})")
        if isinstance(self.scale, str):
            negative = f"{self.scale} < 0"
            return f"({negative} ? {last} : {first})", f"({negative} ? {first} : {last})"
        return (first, last) if self.scale >= 0 else (last, first)

    def exact(self, span: Span = UNIT_SPAN) -> tuple[str, ...]:
        """Conditions under which the wrapped C value equals the exact one (``t`` in
        `span`)."""
        if self.dtype.name not in _RANGE:
            return self.conds
        lo, hi = self.bounds(span)
        low, high = _RANGE[self.dtype.name]
        return (*self.conds, f"{lo} >= {low}", f"{hi} <= {high}")


def walk(e: ir.Expr) -> Iterator[ir.Expr]:
    """`e` and every expression nested in it, depth first."""
    yield e
    for child in (*getattr(e, "args", ()), getattr(e, "index", None), getattr(e, "value", None)):
        if isinstance(child, ir.Const | ir.Var | ir.Meta | ir.Op | ir.Load | ir.Atomic):
            yield from walk(child)


def _exprs(stmts: list[ir.Stmt], stores: bool = True) -> Iterator[ir.Expr]:
    """Every expression of the statements, nested ones included (with `stores`, stores as a
    Load of the element they write)."""
    for s in stmts:
        match s:
            case ir.Assign(value=v) | ir.Eval(expr=v):
                yield from walk(v)
            case ir.Store(buf=buf, index=index, value=v):
                yield from walk(v)
                if stores:
                    yield from walk(ir.Load(buf, index, v.dtype))
            case ir.If(cond=cond, then=then, orelse=orelse):
                yield from walk(cond)
                yield from _exprs(then + orelse, stores)
            case ir.While(cond=cond, body=body):
                yield from walk(cond)
                yield from _exprs(body, stores)
            case ir.For(start=start, stop=stop, body=body):
                yield from walk(start)
                yield from walk(stop)
                yield from _exprs(body, stores)


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
        assume: Runtime factors (as rendered) taken to have a value (checked per cube).
    """

    def __init__(self, kernel: ir.KernelIR, render: Callable[[ir.Expr], str],
                 assume: dict[str, int] | None = None) -> None:
        self.kernel = kernel
        self.render = render
        self.assume = assume or {}
        self.one_d = kernel.cube_dim[1:] == (1, 1)
        self.scalars = {p.name for p in kernel.scalars}
        self.defs = self._definitions()
        self.conds: dict[str, None] = {f"{k} == {v}": None for k, v in self.assume.items()}
        #: Runtime factors met (as rendered): whether each is a read-only tensor's stride.
        self.factors: dict[str, bool] = {}
        self.flags: dict[ir.Op, str] = {}
        self.flag_defs: list[str] = []
        self.indexes: dict[tuple[str, ir.Expr], str] = {}
        #: Registered accesses by (buffer, scale, off, dtype, conds): their least and greatest
        #: constant offsets.
        self.groups: dict[tuple[str, int | str, str, DType, tuple[str, ...]], tuple[int, int]] = {}
        #: The cube-invariant part ``off`` of each registered index (``off + scale * unit``).
        self.offsets: dict[tuple[str, ir.Expr], str] = {}
        #: The C unit count of the fast loop: the units a leading guard admits, else all.
        self.limit = self._guard() or "(int64_t)BC_CD"
        forms: set[tuple[int | str, str]] = set()
        atomics = False
        for e in _exprs(self.body):
            if isinstance(e, ir.Load | ir.Atomic):
                a = self._index(e.buf, e.index)
                forms.add((a.scale, a.full) if a else (0, ""))
                atomics |= isinstance(e, ir.Atomic)
            elif isinstance(e, ir.Op) and e.op in _COMPARE:
                self._compare(e)
        self._check_groups()
        #: ``#pragma omp simd`` is safe: every access of every unit touches only its own element
        #: (one shared unit-dependent index), so units are independent even if buffers alias.
        self.simd = not atomics and len(forms) == 1 and next(iter(forms))[0] != 0
        #: Every access is ``off + bc_unit`` (an ``off`` per access): each unit touches its own
        #: element of each buffer, consecutive units consecutive elements.
        self.unit_stride = not atomics and {scale for scale, _ in forms} == {1}

    #: The range of the induction variable.
    span: Span = UNIT_SPAN

    @property
    def body(self) -> list[ir.Stmt]:
        """The statements analysed."""
        return self.kernel.body

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
        if isinstance(e, ir.Const):
            return Affine(0, "0", e.dtype, const=int(e.value))
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
                off = a.off if b.off == "0" else f"({a.off} {'+-'[op == 'sub']} {b.off})"
                return Affine(_summed(a.scale, b.scale, sign), off, e.dtype, a.conds + b.conds,
                              a.const + sign * b.const)
            case ir.Op(op="mul", args=(x, y)):
                a, k = (self.affine(x), y) if self.invariant(y) else (self.affine(y), x)
                if a is None or not self.invariant(k):
                    return None
                if isinstance(k, ir.Const):
                    c = int(k.value)
                    return Affine(_scaled(a.scale, c), f"({a.off} * {c})", e.dtype, a.conds,
                                  a.const * c)
                # A runtime factor (a stride): affine for the cubes where it is 1, or where it
                # has its assumed value.
                factor = f"(int64_t){self.render(self.inline(k))}"
                self.factors.setdefault(factor, isinstance(k, ir.Meta) and k.field == "stride"
                                        and not self.kernel.buffers[k.buf].written)
                if factor in self.assume:
                    value = self.assume[factor]
                    return Affine(_scaled(a.scale, value), f"({a.full} * {value})", e.dtype,
                                  a.conds)
                return self._runtime_factor(a, factor, e.dtype)
            case ir.Op(op="neg", args=(x,)):
                a = self.affine(x)
                return None if a is None else Affine(_scaled(a.scale, -1), f"(-{a.off})",
                                                     e.dtype, a.conds, -a.const)
            case ir.Op(op="cast", args=(x,)) if x.dtype.is_integer:
                a = self.affine(x)
                if a is None:
                    return None
                widening = e.dtype.bits > x.dtype.bits  # not modular: needs the exact value
                return Affine(a.scale, a.off, e.dtype,
                              a.exact(self.span) if widening else a.conds, a.const)
        return None

    def _runtime_factor(self, a: Affine, factor: str, dtype: DType) -> Affine | None:
        """``a`` times a runtime value: affine for the cubes where it is 1."""
        return Affine(a.scale, a.off, dtype, (*a.conds, f"{factor} == 1"), a.const)

    def variants(self) -> list[Hoist]:
        """This fast path, then one per read-only stride met (at most `MAX_VARIANTS`) where
        that stride is 0 and the others 1 (inputs broadcast along the unit's dimension)."""
        zeros = [f for f, read_only in self.factors.items() if read_only]
        if len(zeros) > MAX_VARIANTS:
            return [self]
        return [self, *(Hoist(self.kernel, self.render, {f: 0}) for f in zeros)]

    def _guard(self) -> str | None:
        """The units admitted by a leading guard (a body of load-free assignments, then
        ``if (pos < n)`` with ``pos`` the unit plus a cube constant): a C expression of
        ``n - pos(unit 0)`` clamped to ``[0, BC_CD]``, or None."""
        body = self.kernel.body
        if not body or not isinstance(body[-1], ir.If) or body[-1].orelse:
            return None
        for s in body[:-1]:
            if not isinstance(s, ir.Assign) or any(
                    isinstance(e, ir.Load | ir.Atomic) for e in walk(s.value)):
                return None
        cond = body[-1].cond
        if not isinstance(cond, ir.Op) or cond.op not in _COMPARE:
            return None
        x, y = cond.args
        if cond.op in ("gt", "ge"):
            x, y = y, x
        a, b = self.affine(x), self.affine(y)
        if a is None or b is None or a.scale != 1 or b.scale != 0:
            return None
        cube = ("0", "((int64_t)BC_CD - 1)")
        self._require((*a.exact(cube), *b.exact(cube)))
        n = f"({b.full} - {a.full}{' + 1' if cond.op in ('le', 'ge') else ''})"
        return f"({n} < 0 ? 0 : {n} > (int64_t)BC_CD ? (int64_t)BC_CD : {n})"

    def reads(self) -> dict[str, str]:
        """The cube-invariant offset (``off``) of the first registered read of each buffer the
        body loads from (stores left out), by buffer name."""
        out: dict[str, str] = {}
        for e in _exprs(self.body, stores=False):
            if isinstance(e, ir.Load) and (e.buf, e.index) in self.offsets:
                out.setdefault(e.buf, self.offsets[(e.buf, e.index)])
        return out

    def _require(self, conds: tuple[str, ...]) -> None:
        self.conds.update(dict.fromkeys(conds))

    def _index(self, buf_name: str, index: ir.Expr) -> Affine | None:
        """Register an access whose bounds can be checked once per cube."""
        a = self.affine(index)
        if a is None:
            return None
        key = (buf_name, a.scale, a.off, a.dtype, a.conds)
        low, high = self.groups.get(key, (a.const, a.const))
        self.groups[key] = (min(low, a.const), max(high, a.const))
        self.indexes[(buf_name, index)] = f"({a.full} + {self._term(a.scale)})"
        self.offsets[(buf_name, index)] = a.full
        return a

    def _check_groups(self) -> None:
        """Require the accesses of each group (one buffer, one ``scale * t + off``, constants
        from ``low`` to ``high``) in bounds and exact: the extremes bound the rest."""
        for (buf_name, scale, off, dtype, conds), (low, high) in self.groups.items():
            buf = self.kernel.buffers[buf_name]
            size = str(buf.size) if buf.shared else f"(int64_t)t_{buf.name}_extent"
            first, last = (Affine(scale, off, dtype, conds, c) for c in (low, high))
            self._require((*first.exact(self.span), *last.exact(self.span),
                           f"{first.bounds(self.span)[0]} >= 0",
                           f"{last.bounds(self.span)[1]} < {size}"))

    def _term(self, scale: int | str) -> str:
        """``scale`` times the induction variable, in C."""
        return "bc_unit" if scale == 1 else f"{scale} * bc_unit"

    def _compare(self, e: ir.Op) -> None:
        """Register a comparison that is the same for every unit of the cube, or not."""
        x, y = e.args
        a, b = self.affine(x), self.affine(y)
        if a is None or b is None or a.scale == b.scale or e in self.flags or \
                isinstance(a.scale, str) or isinstance(b.scale, str):
            return
        d = Affine(a.scale - b.scale, f"({a.full} - {b.full})", a.dtype)
        lo, hi = d.bounds()
        true, false = (c.format(lo=lo, hi=hi) for c in _COMPARE[e.op])
        flag = f"bc_f{len(self.flags)}"
        self.flags[e] = flag
        self.flag_defs.append(f"const int {flag} = {true};")
        self._require((*a.exact(), *b.exact(), f"({flag} || {false})"))

    def index(self, buf_name: str, index: ir.Expr) -> str | None:
        """The unchecked int64 index of a registered access."""
        return self.indexes.get((buf_name, index))


class LoopHoist(Hoist):
    """The bounds of the accesses of one counted loop's body, checked once before the loop:
    indexes affine in the loop counter (``scale * v + off``, ``off`` loop-invariant, ``scale``
    possibly a runtime stride), over the counter's range ``[first, first + step * (trips -
    1)]`` (C ``int64_t`` locals the emitter defines before the loop).

    Args:
        kernel: The IR.
        render: Renders a loop-invariant expression as C.
        loop: The loop (its body has no nested loop).
        key: Names the loop's ``bc_s<key>`` (first value) and ``bc_t<key>`` (trip count).
    """

    def __init__(self, kernel: ir.KernelIR, render: Callable[[ir.Expr], str], loop: ir.For,
                 key: int) -> None:
        self.loop = loop
        self.first, self.trips = f"bc_s{key}", f"bc_t{key}"
        self.span = (self.first, f"({self.first} + {loop.step} * ({self.trips} - 1))")
        #: Locals the loop assigns (not invariant), its counter included.
        self.assigned = {*_assigned(loop.body), loop.var.name}
        super().__init__(kernel, render)
        # Runtime scales and trip counts are bounded so that the int64 bounds cannot overflow.
        self._require((f"{self.trips} < {_LOOP_MAX}",))

    @property
    def body(self) -> list[ir.Stmt]:
        return self.loop.body

    def _definitions(self) -> dict[str, ir.Expr]:
        return {}

    def _guard(self) -> str | None:
        return None

    def invariant(self, e: ir.Expr) -> bool:
        match e:
            case ir.Const() | ir.Meta():
                return True
            case ir.Var(name=name):
                return name not in self.assigned
            case ir.Op(args=args):
                return all(self.invariant(a) for a in args)
        return False

    def affine(self, e: ir.Expr) -> Affine | None:
        if isinstance(e, ir.Var) and e.name == self.loop.var.name:
            return Affine(1, "0", e.dtype)
        return super().affine(e)

    def _runtime_factor(self, a: Affine, factor: str, dtype: DType) -> Affine | None:
        return Affine(_scaled(a.scale, factor), f"({a.full} * {factor})", dtype,
                      (*a.conds, f"{factor} < {_LOOP_MAX}", f"{factor} > -{_LOOP_MAX}"))

    def _term(self, scale: int | str) -> str:
        return f"{scale} * (int64_t){self.render(self.loop.var)}"

    def _compare(self, e: ir.Op) -> None:
        """Comparisons stay in the loop."""
