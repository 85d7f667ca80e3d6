"""Python AST -> typed IR.

The kernel body is read with ``inspect.getsource`` and parsed with ``ast`` (never executed), so
the language is exactly the subset handled here; anything else raises a ``CompileError`` that
names the kernel and the source line. Compile-time parameters, module constants and literals are
folded while lowering, which gives specialization (``if`` on a comptime value keeps one branch)
and unrolling (``for i in unroll(range(K))``) for free.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import math
import operator
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from burn_cube.errors import CompileError
from burn_cube.ir import nodes as ir
from burn_cube.language.builtins import BUILTINS, UNARY_MATH, Position, fingerprint
from burn_cube.types import DType, ParamSpec, bool_, f32, i32, line, promote, u32

Literal = int | float | bool


@dataclass(frozen=True)
class BufRef:
    """A reference to a tensor parameter or shared array while lowering."""

    name: str


@dataclass(frozen=True)
class MetaRef:
    """``tensor.shape`` or ``tensor.stride`` awaiting its ``[dim]``."""

    buf: str
    field: str


@dataclass
class ParsedKernel:
    """The parsed source of a kernel function, kept across specializations."""

    name: str
    func: ast.FunctionDef
    lines: list[str]
    filename: str
    first_line: int
    namespace: dict[str, Any]


def parse_kernel(fn: Callable[..., Any]) -> ParsedKernel:
    """Read and parse the source of a kernel function.

    Args:
        fn: The decorated Python function.

    Returns:
        Its parsed AST and what is needed to resolve global names and report lines.
    """
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as exc:
        raise CompileError(f"cannot read the source: {exc}", fn.__name__) from exc
    tree = ast.parse(source)
    func = tree.body[0]
    if not isinstance(func, ast.FunctionDef):
        raise CompileError("a kernel must be a plain `def` function", fn.__name__)
    namespace = dict(vars(builtins))
    namespace.update(fn.__globals__)
    namespace.update(inspect.getclosurevars(fn).nonlocals)
    return ParsedKernel(fn.__name__, func, source.splitlines(), inspect.getsourcefile(fn) or "?",
                        fn.__code__.co_firstlineno, namespace)


_ARITH = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv",
          ast.Mod: "mod", ast.Pow: "pow", ast.BitAnd: "bitand", ast.BitOr: "bitor",
          ast.BitXor: "bitxor", ast.LShift: "shl", ast.RShift: "shr"}
_LINE_OPS = ("add", "sub", "mul", "div", "floordiv", "mod")  # element-wise on Line values
_FOLD_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
    ast.Invert: operator.invert}
_CMP = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_FOLD: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
    "bitand": operator.and_, "bitor": operator.or_, "bitxor": operator.xor,
    "shl": operator.lshift, "shr": operator.rshift, "lt": operator.lt, "le": operator.le,
    "gt": operator.gt, "ge": operator.ge, "eq": operator.eq, "ne": operator.ne,
    "min": min, "max": max,
}


def _literal_dtype(value: Literal) -> DType:
    if isinstance(value, bool):
        return bool_
    return i32 if isinstance(value, int) else f32


def const(value: Literal, dtype: DType) -> ir.Const:
    """A constant converted to ``dtype`` with Python semantics (truncation toward zero)."""
    if dtype.is_float:
        return ir.Const(float(value), dtype)
    if dtype is bool_:
        return ir.Const(bool(value), dtype)
    return ir.Const(int(value), dtype)


def cast(value: ir.Expr, dtype: DType) -> ir.Expr:
    """Convert an expression to ``dtype`` (folded for constants, a no-op when equal)."""
    if value.dtype == dtype:
        return value
    if isinstance(value, ir.Const) and dtype.lanes == 1:
        return const(value.value, dtype)
    return ir.Op("cast", (value,), dtype)


class Lowering:
    """Lowers one parsed kernel for one specialization.

    Args:
        parsed: The parsed kernel.
        specs: Specialization of every parameter, by name.
        cube_dim: Units per cube along x, y, z (compile-time constants).
    """

    def __init__(self, parsed: ParsedKernel, specs: dict[str, ParamSpec],
                 cube_dim: tuple[int, int, int]) -> None:
        self.parsed = parsed
        self.cube_dim = cube_dim
        self.params: list[ir.Param] = []
        self.buffers: dict[str, ir.Buffer] = {}
        self.locals: dict[str, DType] = {}
        self.scalars: dict[str, DType] = {}
        self.consts: dict[str, Any] = {}
        self.features: set[str] = set()
        self.externals: dict[str, str] | None = {}  # None once a value has no fingerprint
        self.node: ast.AST | None = None
        self.loops: list[bool] = []  # per enclosing loop: True when unrolled
        self.temps = 0
        for name, spec in specs.items():
            if spec.kind == "tensor":
                assert spec.dtype is not None
                self.buffers[name] = ir.Buffer(name, spec.dtype, rank=spec.rank)
                self.params.append(ir.Param(name, spec.dtype, True))
            elif spec.kind == "scalar":
                assert spec.dtype is not None
                self.scalars[name] = spec.dtype
                self.params.append(ir.Param(name, spec.dtype, False))
            else:
                self.consts[name] = spec.value

    # ----------------------------------------------------------------- errors and entry point
    def error(self, message: str, node: ast.AST | None = None) -> CompileError:
        """A CompileError pointing at ``node`` (or the statement being lowered)."""
        node = node if node is not None and hasattr(node, "lineno") else self.node
        line = getattr(node, "lineno", None)
        if line is None:
            return CompileError(message, self.parsed.name)
        return CompileError(message, self.parsed.name,
                            f"{self.parsed.filename}:{line + self.parsed.first_line - 1}",
                            self.parsed.lines[line - 1])

    def lower(self) -> ir.KernelIR:
        """Lower the whole kernel body.

        Returns:
            The typed kernel IR.
        """
        body = self.block(self.parsed.func.body)
        dtypes = {b.dtype for b in self.buffers.values()} | set(self.locals.values())
        self.features |= {f"dtype:{d.scalar.name}" for d in dtypes | set(self.scalars.values())}
        self.features |= {f"line:{d.name}" for d in dtypes if d.lanes > 1}
        return ir.KernelIR(self.parsed.name, self.params, self.buffers, self.locals, body,
                           self.cube_dim, self.features, self.externals)

    # ---------------------------------------------------------------------------- statements
    def block(self, stmts: list[ast.stmt]) -> list[ir.Stmt]:
        """Lower a list of statements."""
        out: list[ir.Stmt] = []
        for stmt in stmts:
            self.node = stmt
            out.extend(self.statement(stmt))
        return out

    def statement(self, s: ast.stmt) -> list[ir.Stmt]:
        """Lower one statement into zero or more IR statements."""
        line = s.lineno
        match s:
            case ast.Assign(targets=[target], value=value):
                return self.assign(target, value, line)
            case ast.AnnAssign(target=ast.Name(id=name), annotation=ann, value=value):
                dtype = self.resolve(ann)
                if not isinstance(dtype, DType) or value is None:
                    raise self.error("annotated locals need a dtype and a value: `x: f32 = 0`")
                self.declare(name, dtype)
                return self.assign(s.target, value, line)
            case ast.AugAssign(target=target, op=op, value=value):
                if type(op) not in _ARITH:
                    raise self.error(f"unsupported operator {type(op).__name__}")
                if not isinstance(target, ast.Subscript | ast.Name):
                    raise self.error("augmented assignment needs a local or an element: `x += 1`")
                load = ast.copy_location(
                    ast.Subscript(target.value, target.slice, ast.Load())
                    if isinstance(target, ast.Subscript) else ast.Name(target.id, ast.Load()), s)
                rhs = self.binary(_ARITH[type(op)], self.expr(load), self.expr(value))
                return self.store_to(target, rhs, line)
            case ast.If(test=test, body=body, orelse=orelse):
                cond = self.expr(test)
                if isinstance(cond, Literal):
                    return self.block(body if cond else orelse)
                return [ir.If(self.to_bool(cond), self.block(body), self.block(orelse), line)]
            case ast.For():
                return self.for_loop(s)
            case ast.While(test=test, body=body, orelse=[]):
                cond = self.to_bool(self.typed(self.expr(test)))
                self.loops.append(False)
                out: list[ir.Stmt] = [ir.While(cond, self.block(body), line)]
                self.loops.pop()
                return out
            case ast.Break() | ast.Continue():
                if not self.loops or self.loops[-1]:
                    raise self.error("break/continue only inside a (non-unrolled) loop")
                return [ir.Break(line) if isinstance(s, ast.Break) else ir.Continue(line)]
            case ast.Return(value=None):
                return [ir.Return(line)]
            case ast.Return():
                raise self.error("kernels cannot return a value; write into an output tensor")
            case ast.Pass():
                return []
            case ast.Expr(value=ast.Constant(value=str())):
                return []  # docstring
            case ast.Expr(value=ast.Call() as call):
                if self.callee(call) == "sync_units":
                    self.features.add("barrier")
                    return [ir.Barrier(line)]
                value = self.expr(call)
                if isinstance(value, ir.AtomicAdd):
                    return [ir.Eval(value, line)]
                raise self.error("this call has no effect")
        raise self.error(f"unsupported statement `{type(s).__name__}`")

    def assign(self, target: ast.expr, value: ast.expr, line: int) -> list[ir.Stmt]:
        """Lower ``target = value``; binds shared-memory arrays to their name."""
        if isinstance(value, ast.Call) and self.callee(value) == "shared_memory":
            if not isinstance(target, ast.Name) or len(value.args) != 2:
                raise self.error("use `name = shared_memory(dtype, size)`")
            dtype, size = self.resolve(value.args[0]), self.expr(value.args[1])
            if not isinstance(dtype, DType) or not isinstance(size, int) or size <= 0:
                raise self.error("shared_memory needs a dtype and a positive compile-time size")
            if target.id in self.buffers:
                raise self.error(f"`{target.id}` is already a tensor or shared array")
            self.buffers[target.id] = ir.Buffer(target.id, dtype, shared=True, size=size)
            self.features.add("shared")
            return []
        return self.store_to(target, self.expr(value), line)

    def store_to(self, target: ast.expr, value: Any, line: int) -> list[ir.Stmt]:
        """Store an already-lowered value into a local name or a buffer element."""
        if isinstance(target, ast.Subscript):
            ref = self.expr(target.value)
            if not isinstance(ref, BufRef):
                raise self.error("only tensors and shared arrays can be indexed for writing")
            buf = self.buffers[ref.name]
            buf.written = True
            index = self.index(buf, target.slice)
            return [ir.Store(buf.name, index, self.convert(value, buf.dtype), line)]
        if not isinstance(target, ast.Name):
            raise self.error("assign to a single name or a tensor element (no tuple unpacking)")
        name = target.id
        if name in self.scalars or name in self.buffers or name in self.consts:
            raise self.error(f"cannot assign to parameter `{name}`")
        typed = self.typed(value)
        if name not in self.locals:
            self.declare(name, typed.dtype)
        var = ir.Var(name, self.locals[name])
        return [ir.Assign(var, self.convert(typed, var.dtype), line)]

    def declare(self, name: str, dtype: DType) -> None:
        """Declare a local variable (its type is fixed by the first assignment)."""
        if name in self.locals and self.locals[name] != dtype:
            raise self.error(f"`{name}` is already a {self.locals[name]} local")
        self.locals[name] = dtype

    def convert(self, value: Any, dtype: DType) -> ir.Expr:
        """Implicit conversion on assignment; refuses float -> int and number <-> bool."""
        typed = self.typed(value, dtype if isinstance(value, Literal) else None)
        src = typed.dtype
        if src != dtype and ((src.is_float and not dtype.is_float)
                             or (src is bool_) != (dtype is bool_)):
            raise self.error(f"cannot implicitly convert {src} to {dtype}; "
                             f"use an explicit cast such as `{dtype}(x)` or a float literal")
        return cast(typed, dtype)

    def for_loop(self, s: ast.For) -> list[ir.Stmt]:
        """Lower ``for i in range(...)`` and ``for i in unroll(range(...))``."""
        if s.orelse or not isinstance(s.target, ast.Name):
            raise self.error("only `for name in range(...)` loops are supported")
        it, unrolled = s.iter, False
        if isinstance(it, ast.Call) and self.callee(it) == "unroll" and len(it.args) == 1:
            it, unrolled = it.args[0], True
        if not (isinstance(it, ast.Call) and self.callee(it) == "range" and 1 <= len(it.args) <= 3):
            raise self.error("for loops iterate over range(...) or unroll(range(...))")
        args = [self.expr(a) for a in it.args]
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args[:2], 1)
        if len(args) == 3:
            step = args[2]
        if not isinstance(step, int) or isinstance(step, bool) or step == 0:
            raise self.error("the range step must be a non-zero compile-time integer")
        name = s.target.id
        if unrolled:
            if not (isinstance(start, int) and isinstance(stop, int)):
                raise self.error("unroll(range(...)) needs compile-time bounds")
            out: list[ir.Stmt] = []
            saved = self.consts.get(name)
            self.loops.append(True)
            for value in range(start, stop, step):
                self.consts[name] = value
                out.extend(self.block(s.body))
            self.loops.pop()
            self.consts.pop(name)
            if saved is not None:
                self.consts[name] = saved
            return out
        start_e, stop_e = self.typed(start), self.typed(stop)
        if isinstance(start, Literal) and not isinstance(stop, Literal):
            start_e = self.typed(start, stop_e.dtype)
        dtype = promote(start_e.dtype, stop_e.dtype)
        if not dtype.is_integer:
            raise self.error("range bounds must be integers")
        if name not in self.locals:
            self.declare(name, dtype)
        var = ir.Var(name, self.locals[name])
        pre: list[ir.Stmt] = []
        stop_e = cast(stop_e, var.dtype)
        if not isinstance(stop_e, ir.Const | ir.Var):
            self.temps += 1
            tmp = ir.Var(f"_stop{self.temps}", var.dtype)
            self.locals[tmp.name] = var.dtype
            pre, stop_e = [ir.Assign(tmp, stop_e, s.lineno)], tmp
        self.loops.append(False)
        body = self.block(s.body)
        self.loops.pop()
        return [*pre, ir.For(var, cast(start_e, var.dtype), stop_e, step, body, s.lineno)]

    # ---------------------------------------------------------------------------- expressions
    def resolve(self, node: ast.expr) -> Any:
        """Resolve a global name or attribute chain (``bc.f32``, ``math.exp``) to its object,
        recording it (with its fingerprint) in ``externals``."""
        if isinstance(node, ast.Name):
            if node.id not in self.parsed.namespace:
                raise self.error(f"unknown name `{node.id}`", node)
            obj = self.parsed.namespace[node.id]
        elif isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if not hasattr(base, node.attr):
                raise self.error(f"`{ast.unparse(node)}` does not exist", node)
            obj = getattr(base, node.attr)
        else:
            raise self.error(f"cannot resolve `{ast.unparse(node)}`", node)
        value = fingerprint(obj)
        if value is None or self.externals is None:
            self.externals = None
        else:
            self.externals[ast.unparse(node)] = value
        return obj

    def callee(self, call: ast.Call) -> str | None:
        """The builtin op a call refers to, if any (without lowering the arguments)."""
        if isinstance(call.func, ast.Name) and call.func.id in self.locals:
            return None
        try:
            obj = self.resolve(call.func)
        except CompileError:
            return None
        try:
            return BUILTINS.get(obj)
        except TypeError:  # unhashable object
            return None

    def typed(self, value: Any, dtype: DType | None = None) -> ir.Expr:
        """Turn a lowered value into a typed expression (literals get ``dtype`` or a default)."""
        if isinstance(value, Literal):
            if dtype is not None and dtype.lanes > 1:  # broadcast: a scalar cast to the line
                return cast(const(value, dtype.scalar), dtype)
            return const(value, dtype or _literal_dtype(value))
        if isinstance(value, ir.Const | ir.Var | ir.Meta | ir.Op | ir.Load | ir.AtomicAdd):
            return value
        raise self.error(f"`{value}` is not a value")

    def to_bool(self, value: ir.Expr) -> ir.Expr:
        """Truthiness of a value as a bool expression."""
        if value.dtype is bool_:
            return value
        return ir.Op("ne", (value, const(0, value.dtype)), bool_)

    def expr(self, node: ast.expr) -> Any:
        """Lower an expression to an IR expression, a literal, or a reference."""
        match node:
            case ast.Constant(value=value) if isinstance(value, Literal):
                return value
            case ast.Name(id=name):
                return self.name(name, node)
            case ast.Attribute(value=base, attr=attr):
                ref = self.expr(base) if not isinstance(base, ast.Attribute) else None
                if isinstance(ref, BufRef) and attr in ("shape", "stride") and \
                        not self.buffers[ref.name].shared:
                    return MetaRef(ref.name, attr)
                return self.wrap(self.resolve(node), node)
            case ast.Subscript(value=base, slice=index):
                ref = self.expr(base)
                if isinstance(ref, MetaRef):
                    dim = self.expr(index)
                    rank = self.buffers[ref.buf].rank
                    if not isinstance(dim, int) or not -rank <= dim < rank:
                        raise self.error(f"`.{ref.field}[...]` needs a compile-time dimension "
                                         f"in range for rank {rank}", node)
                    return ir.Meta(ref.buf, ref.field, dim % rank, u32)
                if not isinstance(ref, BufRef):
                    raise self.error("only tensors, shared arrays, .shape and .stride can be "
                                     "indexed", node)
                buf = self.buffers[ref.name]
                return ir.Load(buf.name, self.index(buf, index), buf.dtype)
            case ast.BinOp(left=left, op=op, right=right) if type(op) in _ARITH:
                return self.binary(_ARITH[type(op)], self.expr(left), self.expr(right))
            case ast.UnaryOp(op=op, operand=operand):
                return self.unary(op, self.expr(operand), node)
            case ast.BoolOp(op=op, values=values):
                name = "and" if isinstance(op, ast.And) else "or"
                result = self.expr(values[0])
                for v in values[1:]:
                    result = self.logical(name, result, self.expr(v))
                return result
            case ast.Compare(left=left, ops=ops, comparators=comps):
                lhs, result = self.expr(left), None
                for cmp_op, comp in zip(ops, comps, strict=True):
                    if type(cmp_op) not in _CMP:
                        raise self.error(f"unsupported comparison {type(cmp_op).__name__}", node)
                    rhs = self.expr(comp)
                    part = self.binary(_CMP[type(cmp_op)], lhs, rhs)
                    result = part if result is None else self.logical("and", result, part)
                    lhs = rhs
                return result
            case ast.IfExp(test=test, body=body, orelse=orelse):
                cond = self.expr(test)
                if isinstance(cond, Literal):
                    return self.expr(body if cond else orelse)
                return self.call_builtin("select", [cond, self.expr(body), self.expr(orelse)])
            case ast.Call(func=func, args=args, keywords=[]):
                target = self.resolve(func) if not (
                    isinstance(func, ast.Name) and func.id in self.locals) else None
                if isinstance(target, DType):
                    if len(args) != 1:
                        raise self.error(f"{target}(x) takes one argument", node)
                    arg = self.typed(self.expr(args[0]))
                    return self.to_bool(arg) if target is bool_ else cast(arg, target)
                builtin = BUILTINS.get(target) if _hashable(target) else None
                if builtin is None:
                    raise self.error(f"cannot call `{ast.unparse(func)}` inside a kernel", node)
                return self.call_builtin(builtin, [self.expr(a) for a in args])
        raise self.error(f"unsupported expression `{ast.unparse(node)}`", node)

    def name(self, name: str, node: ast.expr) -> Any:
        """Look a name up: locals, parameters, comptime values, then globals."""
        if name in self.locals:
            return ir.Var(name, self.locals[name])
        if name in self.scalars:
            return ir.Var(name, self.scalars[name])
        if name in self.buffers:
            return BufRef(name)
        if name in self.consts:
            return self.wrap(self.consts[name], node)
        return self.wrap(self.resolve(node), node)

    def wrap(self, obj: Any, node: ast.expr) -> Any:
        """Turn a Python object found by name into a lowered value."""
        if isinstance(obj, Literal):
            return obj
        if isinstance(obj, Position):
            axes = {"": 0, "_X": 0, "_Y": 1, "_Z": 2}
            if obj.name.startswith("CUBE_DIM"):
                suffix = obj.name[len("CUBE_DIM"):]
                return math.prod(self.cube_dim) if not suffix else self.cube_dim[axes[suffix]]
            if obj.name.startswith("PLANE") or obj.name.endswith("PLANE"):
                self.features.add("plane")
            return ir.Op(obj.name.lower(), (), u32)
        return obj  # dtypes, modules and builtin stubs are resolved by their users

    def index(self, buf: ir.Buffer, node: ast.expr) -> ir.Expr:
        """Linear index of ``buf[node]``; a tuple index is combined with the strides."""
        parts = node.elts if isinstance(node, ast.Tuple) else [node]
        if len(parts) > 1 and len(parts) != buf.rank:
            raise self.error(f"`{buf.name}` has rank {buf.rank}: index it with one linear "
                             f"index or {buf.rank} indices", node)
        if len(parts) == 1:
            index = self.expr(parts[0])
        else:
            index = 0
            for dim, part in enumerate(parts):
                stride = ir.Meta(buf.name, "stride", dim, u32)
                index = self.binary("add", index, self.binary("mul", self.expr(part), stride))
        typed = self.typed(index, u32)
        if not (typed.dtype.is_integer or typed.dtype is bool_):
            raise self.error(f"index of `{buf.name}` must be an integer, not {typed.dtype}", node)
        return typed

    # ------------------------------------------------------------------------------ operators
    def binary(self, op: str, a: Any, b: Any) -> Any:
        """Lower a binary arithmetic, bitwise or comparison operator with implicit promotion."""
        if isinstance(a, Literal) and isinstance(b, Literal):
            try:
                return _FOLD[op](a, b)
            except (ZeroDivisionError, OverflowError, ValueError) as exc:
                raise self.error(f"constant folding failed: {exc}") from exc
        if op == "pow":
            return self.call_builtin("pow", [a, b])
        ta, tb = self.unify(a, b)
        dtype = ta.dtype
        if dtype.lanes > 1 and op not in _LINE_OPS:
            raise self.error(f"`{op}` is not supported on Line values (only arithmetic and "
                             "math functions are element-wise)")
        if op in ("shl", "shr", "bitand", "bitor", "bitxor"):
            if not dtype.is_integer:
                raise self.error(f"bitwise operator `{op}` needs integers")
            return ir.Op(op, (cast(ta, dtype), cast(tb, dtype)), dtype)
        if op == "div" and not dtype.is_float:  # true division of integers gives f32
            dtype = line(f32, dtype.lanes)
        ta, tb = cast(ta, dtype), cast(tb, dtype)
        if op in _CMP.values():
            return ir.Op(op, (ta, tb), bool_)
        if op == "floordiv":
            if dtype.is_float:  # floor through call_builtin: f16 math is computed in f32
                return self.call_builtin("floor", [ir.Op("div", (ta, tb), dtype)])
            op = "div"  # integers: truncating division, like C, WGSL and CUDA
        elif op == "mod" and dtype.is_float:  # Python's floored modulo
            floor = self.call_builtin("floor", [ir.Op("div", (ta, tb), dtype)])
            return ir.Op("sub", (ta, ir.Op("mul", (tb, floor), dtype)), dtype)
        return ir.Op(op, (ta, tb), dtype)

    def unify(self, a: Any, b: Any) -> tuple[ir.Expr, ir.Expr]:
        """Type two operands with implicit promotion; a literal adopts the other side's type."""
        ta, tb = self.typed(a), self.typed(b)
        if isinstance(a, Literal) and not (isinstance(a, float) and not tb.dtype.is_float):
            ta = self.typed(a, tb.dtype)
        if isinstance(b, Literal) and not (isinstance(b, float) and not ta.dtype.is_float):
            tb = self.typed(b, ta.dtype)
        try:
            dtype = promote(ta.dtype, tb.dtype)
        except TypeError as exc:
            raise self.error(str(exc)) from exc
        return cast(ta, dtype), cast(tb, dtype)

    def logical(self, op: str, a: Any, b: Any) -> Any:
        """``and`` / ``or`` on truth values (both sides are evaluated)."""
        if isinstance(a, Literal) and isinstance(b, Literal):
            return (a and b) if op == "and" else (a or b)
        return ir.Op(op, (self.to_bool(self.typed(a)), self.to_bool(self.typed(b))), bool_)

    def unary(self, op: ast.unaryop, value: Any, node: ast.expr) -> Any:
        """Lower ``-x``, ``+x``, ``not x`` and ``~x``."""
        if isinstance(value, Literal):
            return _FOLD_UNARY[type(op)](value)
        value = self.typed(value)
        if isinstance(op, ast.UAdd):
            return value
        if isinstance(op, ast.Not):
            return ir.Op("not", (self.to_bool(value),), bool_)
        if isinstance(op, ast.Invert):
            if not value.dtype.is_integer:
                raise self.error("`~` needs an integer", node)
            return ir.Op("invert", (value,), value.dtype)
        if value.dtype is bool_:
            value = cast(value, i32)
        return ir.Op("neg", (value,), value.dtype)

    def call_builtin(self, op: str, args: list[Any]) -> Any:
        """Lower a call to a language builtin (math, select, atomics, plane ops, casts)."""
        def need(n: int) -> None:
            if len(args) != n:
                raise self.error(f"{op}() takes {n} argument(s), got {len(args)}")

        if op in UNARY_MATH or op in ("isnan", "isinf"):
            need(1)
            if isinstance(args[0], Literal) and hasattr(math, op):
                return getattr(math, op)(args[0])
            x = self.typed(args[0])
            dtype = x.dtype if x.dtype.is_float else line(f32, x.dtype.lanes)
            if op in ("isnan", "isinf"):
                if dtype.lanes > 1:
                    raise self.error(f"{op}() is not supported on Line values")
                return ir.Op(op, (cast(x, dtype),), bool_)
            # f16 math is computed in f32
            compute = line(f32, dtype.lanes) if dtype.bits == 16 else dtype
            return cast(ir.Op(op, (cast(x, compute),), compute), dtype)
        if op == "abs":
            need(1)
            if isinstance(args[0], Literal):
                return abs(args[0])
            x = self.typed(args[0])
            return x if x.dtype.kind in ("uint", "bool") else ir.Op("abs", (x,), x.dtype)
        if op in ("min", "max"):
            if len(args) < 2:
                raise self.error(f"{op}() takes at least two arguments")
            result = args[0]
            for other in args[1:]:
                if isinstance(result, Literal) and isinstance(other, Literal):
                    result = _FOLD[op](result, other)
                else:
                    a, b = self.unify(result, other)
                    result = ir.Op(op, (a, b), a.dtype)
            return result
        if op == "pow":
            need(2)
            base, exponent = args
            if isinstance(exponent, int) and not isinstance(exponent, bool) \
                    and 1 <= exponent <= 4 and not isinstance(base, Literal):
                result = base
                for _ in range(exponent - 1):
                    result = self.binary("mul", result, base)
                return result
            b = self.typed(base)
            dtype = b.dtype if b.dtype.is_float else line(f32, b.dtype.lanes)
            return ir.Op("pow", (cast(b, dtype), cast(self.typed(exponent, dtype), dtype)), dtype)
        if op in ("select", "atomic_add", "plane_sum", "plane_max") and any(
                isinstance(a, ir.Const | ir.Var | ir.Meta | ir.Op | ir.Load | ir.AtomicAdd)
                and a.dtype.lanes > 1 for a in args):
            raise self.error(f"{op}() is not supported on Line values")
        if op == "select":
            need(3)
            cond = self.to_bool(self.typed(args[0]))
            a, b = self.unify(args[1], args[2])
            return ir.Op("select", (cond, a, b), a.dtype)
        if op in ("float", "int", "bool"):
            need(1)
            dtype = {"float": f32, "int": i32, "bool": bool_}[op]
            if isinstance(args[0], Literal):
                return {"float": float, "int": int, "bool": bool}[op](args[0])
            return cast(self.typed(args[0]), dtype) if op != "bool" else \
                self.to_bool(self.typed(args[0]))
        if op == "len":
            need(1)
            if not isinstance(args[0], BufRef):
                raise self.error("len() takes a tensor or shared array")
            buf = self.buffers[args[0].name]
            return buf.size if buf.shared else ir.Meta(buf.name, "len", 0, u32)
        if op == "atomic_add":
            need(3)
            if not isinstance(args[0], BufRef):
                raise self.error("atomic_add(buffer, index, value) needs a tensor or shared array")
            buf = self.buffers[args[0].name]
            buf.atomic = buf.written = True
            self.features.add(f"atomic:{buf.dtype.name}")
            return ir.AtomicAdd(buf.name, self.typed(args[1], u32),
                                self.convert(args[2], buf.dtype), buf.dtype)
        if op in ("plane_sum", "plane_max"):
            need(1)
            x = self.typed(args[0])
            self.features.add("plane")
            return ir.Op(op, (x,), x.dtype)
        raise self.error(f"{op}() cannot be used here")

def _hashable(obj: Any) -> bool:
    try:
        hash(obj)
    except TypeError:
        return False
    return True


def lower(parsed: ParsedKernel, specs: dict[str, ParamSpec],
          cube_dim: tuple[int, int, int]) -> ir.KernelIR:
    """Lower a parsed kernel for one specialization.

    Args:
        parsed: Result of ``parse_kernel``.
        specs: Specialization of each parameter.
        cube_dim: Units per cube (x, y, z).

    Returns:
        The typed IR.
    """
    return Lowering(parsed, specs, cube_dim).lower()
