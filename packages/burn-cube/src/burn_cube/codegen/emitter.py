"""The target-independent part of code generation.

Expressions are rendered purely from a target's table (op -> template); statements go through a
small set of hooks that each target's emitter overrides. Template fields: ``{a} {b} {c}`` the
rendered arguments, ``{t}`` the result type, ``{s}`` the dtype name the entry was looked up
with, plus whatever ``fields`` adds. Lookup order: ``op.<dtype>``, ``op.<element dtype>`` (for
lines), ``op.<kind>``, ``op``; an entry of None refuses the op on that type.

A dtype may be stored in buffers as another type (``storage_types``: bf16 as 16 bits in C, bool
as u32 in WGSL); the ``load`` and ``store`` entries convert between the two (``{a}`` where equal).
A cast to a float dtype stored as another type goes through both: its value is rounded there,
as a store rounds it.

``Line`` values: on targets whose vector types have element-wise operators and functions
(WGSL) the table entries apply as they are. Elsewhere (C, CUDA) an op on lines becomes a call
to a lane-wise helper whose body is the op's scalar entry once per lane (``line_helpers``).
"""

from __future__ import annotations

import math

from burn_cube.errors import CompileError
from burn_cube.ir import nodes as ir
from burn_cube.types import DType

#: Position builtins, identical on every target given the prologue's ``bc_*`` names.
POSITIONS: dict[str, str] = {
    "unit_pos": "bc_unit",
    "unit_pos_x": "(bc_unit % BC_CDX)",
    "unit_pos_y": "(bc_unit / BC_CDX % BC_CDY)",
    "unit_pos_z": "(bc_unit / (BC_CDX * BC_CDY))",
    "cube_pos": "bc_cube",
    "cube_pos_x": "(bc_cube % bc_ccx)",
    "cube_pos_y": "(bc_cube / bc_ccx % bc_ccy)",
    "cube_pos_z": "(bc_cube / (bc_ccx * bc_ccy))",
    "cube_count": "(bc_ccx * bc_ccy * bc_ccz)",
    "cube_count_x": "bc_ccx",
    "cube_count_y": "bc_ccy",
    "cube_count_z": "bc_ccz",
    "absolute_pos": "(bc_cube * (BC_CDX * BC_CDY * BC_CDZ) + bc_unit)",
    "absolute_pos_x": "(bc_cube % bc_ccx * BC_CDX + bc_unit % BC_CDX)",
    "absolute_pos_y": "(bc_cube / bc_ccx % bc_ccy * BC_CDY + bc_unit / BC_CDX % BC_CDY)",
    "absolute_pos_z": "(bc_cube / (bc_ccx * bc_ccy) * BC_CDZ + bc_unit / (BC_CDX * BC_CDY))",
}


class Emitter:
    """Renders a kernel IR as target source.

    Args:
        kernel: The IR to render.
    """

    target = ""
    ops: dict[str, str | None] = {}
    types: dict[str, str] = {}
    #: Buffer element type by dtype name, where it differs from the value type in ``types``.
    storage_types: dict[str, str] = {}
    indent_unit = "    "
    #: Whether ops on lines are rendered lane by lane through helpers.
    lane_wise = False
    #: Declaration prefix of those helpers.
    helper_prefix = "static inline"

    def __init__(self, kernel: ir.KernelIR) -> None:
        self.kernel = kernel
        self.out: list[str] = []
        self.depth = 0
        self.line_helpers: dict[str, str] = {}

    # --------------------------------------------------------------------------- expressions
    def literal(self, value: int | float | bool, dtype: DType) -> str:
        """Render a constant (target-specific)."""
        raise NotImplementedError

    def fields(self, dtype: DType) -> dict[str, str]:
        """Extra template fields for entries looked up with ``dtype``."""
        return {}

    def type(self, dtype: DType) -> str:
        """Target spelling of a dtype; CompileError when the target lacks it."""
        if dtype.name not in self.types:
            raise CompileError(f"the {self.target} target has no {dtype} type", self.kernel.name)
        return self.types[dtype.name]

    def storage_type(self, dtype: DType) -> str:
        """Target spelling of a buffer element (or scalar argument) of ``dtype``."""
        return self.storage_types.get(dtype.name) or self.type(dtype)

    def template(self, op: str, dtype: DType) -> str:
        """Look an op up in the table (most specific entry first)."""
        for key in (f"{op}.{dtype.name}", f"{op}.{dtype.scalar.name}", f"{op}.{dtype.kind}", op):
            if key in self.ops:
                found = self.ops[key]
                if found is None:
                    break
                return found
        raise CompileError(f"`{op}` on {dtype} is not supported by the {self.target} target",
                           self.kernel.name)

    def render(self, op: str, dtype: DType, result: DType, args: list[str]) -> str:
        """Fill an op's template (an integer -> float cast then goes through ``from_int``)."""
        names = dict(zip("abc", args, strict=False))
        text = self.template(op, dtype).format(
            t=self.type(result), s=dtype.name, **names, **self.fields(dtype))
        if op == "cast" and result.is_float and dtype.is_integer:
            text = self.template("from_int", result).format(a=text, t=self.type(result))
        return text

    def lane(self, value: str, k: int) -> str:
        """Lane ``k`` of a line value (targets with ``lane_wise``)."""
        raise NotImplementedError

    def zero(self, dtype: DType) -> str:
        """Initializer of a zeroed local."""
        return "{0}" if dtype.lanes > 1 else "0"

    def render_lanes(self, op: str, dtype: DType, result: DType, args: list[ir.Expr],
                     rendered: list[str]) -> str:
        """An op on lines as a call to its lane-wise helper (emitted once per signature)."""
        name = "_".join(["bc", op, result.name, *(a.dtype.name for a in args)])
        if name not in self.line_helpers:
            t = self.type(result)
            params = ", ".join(f"{self.type(a.dtype)} a{j}" for j, a in enumerate(args))
            lanes = [self.render(op, dtype.scalar, result.scalar,
                                 [self.lane(f"a{j}", k) if a.dtype.lanes > 1 else f"a{j}"
                                  for j, a in enumerate(args)])
                     for k in range(result.lanes)]
            body = " ".join(f"{self.lane('r', k)} = {v};" for k, v in enumerate(lanes))
            self.line_helpers[name] = (f"{self.helper_prefix} {t} {name}({params}) "
                                       f"{{ {t} r; {body} return r; }}")
        return f"{name}({', '.join(rendered)})"

    def var(self, name: str) -> str:
        """Target name of a local variable or scalar parameter."""
        return f"v_{name}"

    def buf(self, name: str) -> str:
        """Target name of a tensor or shared array."""
        return f"{'s' if self.kernel.buffers[name].shared else 't'}_{name}"

    def element(self, name: str, index: ir.Expr) -> str:
        """An element of a buffer as an lvalue."""
        return f"{self.buf(name)}[{self.expr(index)}]"

    def load(self, e: ir.Load) -> str:
        """Render a buffer read (converted from the storage type)."""
        return self.render("load", e.dtype, e.dtype, [self.element(e.buf, e.index)])

    def expr(self, e: ir.Expr) -> str:
        """Render an expression."""
        match e:
            case ir.Const(value=value, dtype=dtype):
                if isinstance(value, float) and not math.isfinite(value):
                    return self.render("nan" if math.isnan(value) else
                                       ("inf" if value > 0 else "ninf"), dtype, dtype, [])
                return self.literal(value, dtype)
            case ir.Var(name=name):
                return self.var(name)
            case ir.Meta(buf=buf, field=field, dim=dim):
                return f"t_{buf}_{field}{dim if field in ('shape', 'stride') else ''}"
            case ir.Load():
                return self.load(e)
            case ir.Atomic(op=op, buf=buf, index=index, value=value, dtype=dtype):
                if dtype.name in self.storage_types:
                    raise CompileError(f"atomic_{op} on {dtype} is not supported by the "
                                       f"{self.target} target", self.kernel.name)
                return self.render(f"atomic_{op}", dtype, dtype,
                                   [self.element(buf, index), self.expr(value)])
            case ir.Op(op=op, args=args, dtype=dtype):
                key = args[0].dtype if args and op != "select" else dtype
                rendered = [self.expr(a) for a in args]
                if dtype.lanes > 1 and self.lane_wise:
                    return self.render_lanes(op, key, dtype, list(args), rendered)
                text = self.render(op, key, dtype, rendered)
                if op == "cast" and dtype.is_float and dtype.name in self.storage_types:
                    # computed in a wider type (bf16 in float): rounded as a store would
                    text = self.render("load", dtype, dtype,
                                       [self.render("store", dtype, dtype, [text])])
                return text
        raise CompileError(f"cannot render {e!r}", self.kernel.name)

    # ---------------------------------------------------------------------------- statements
    def line(self, text: str) -> None:
        """Append one line at the current indentation."""
        self.out.append(self.indent_unit * self.depth + text)

    def block(self, stmts: list[ir.Stmt]) -> None:
        """Render statements one level deeper."""
        self.depth += 1
        for s in stmts:
            self.stmt(s)
        self.depth -= 1

    def store(self, s: ir.Store) -> str:
        """Render a buffer write (converted to the storage type)."""
        value = self.render("store", s.value.dtype, s.value.dtype, [self.expr(s.value)])
        return f"{self.element(s.buf, s.index)} = {value};"

    def for_header(self, s: ir.For) -> str:
        """Render the header of a counted loop."""
        v = self.var(s.var.name)
        cmp = "<" if s.step > 0 else ">"
        update = f"{v} += {self.literal(s.step, s.var.dtype)}" if s.step > 0 else \
            f"{v} -= {self.literal(-s.step, s.var.dtype)}"
        return (f"for ({v} = {self.expr(s.start)}; {v} {cmp} {self.expr(s.stop)}; {update}) {{")

    def ret(self) -> str:
        """Render an early return of the current unit."""
        return "return;"

    def barrier(self) -> str:
        """Render a barrier across the units of a cube."""
        raise NotImplementedError

    def stmt(self, s: ir.Stmt) -> None:
        """Render one statement."""
        match s:
            case ir.Assign(var=var, value=value):
                self.line(f"{self.var(var.name)} = {self.expr(value)};")
            case ir.Store():
                self.line(self.store(s))
            case ir.Eval(expr=expr):
                self.line(f"{self.expr(expr)};")
            case ir.If(cond=cond, then=then, orelse=orelse):
                self.line(f"if ({self.expr(cond)}) {{")
                self.block(then)
                if orelse:
                    self.line("} else {")
                    self.block(orelse)
                self.line("}")
            case ir.While(cond=cond, body=body):
                self.line(f"while ({self.expr(cond)}) {{")
                self.block(body)
                self.line("}")
            case ir.For(body=body):
                self.line(self.for_header(s))
                self.block(body)
                self.line("}")
            case ir.Break():
                self.line("break;")
            case ir.Continue():
                self.line("continue;")
            case ir.Return():
                self.line(self.ret())
            case ir.Barrier():
                self.line(self.barrier())

    def source(self) -> str:
        """Render the whole translation unit (target-specific)."""
        raise NotImplementedError
