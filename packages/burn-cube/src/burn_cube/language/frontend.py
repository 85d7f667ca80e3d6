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
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from burn_cube.errors import CompileError
from burn_cube.ir import nodes as ir
from burn_cube.ir.scope import BufRef, Literal, Scope
from burn_cube.language.builtins import BUILTINS, Position, fingerprint
from burn_cube.types import DType, ParamSpec


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
_UNARY = {ast.USub: "neg", ast.UAdd: "pos", ast.Not: "not", ast.Invert: "invert"}
_CMP = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}


class Lowering(Scope):
    """Lowers one parsed kernel for one specialization through the ``Scope`` builder API
    (which owns typing, promotion and casts); this class maps Python syntax onto it and folds
    compile-time values.

    Args:
        parsed: The parsed kernel.
        specs: Specialization of every parameter, by name.
        cube_dim: Units per cube along x, y, z (compile-time constants).
    """

    def __init__(self, parsed: ParsedKernel, specs: dict[str, ParamSpec],
                 cube_dim: tuple[int, int, int]) -> None:
        super().__init__(parsed.name, cube_dim)
        self.parsed = parsed
        self.consts: dict[str, Any] = {}
        self.externals: dict[str, str] | None = {}  # None once a value has no fingerprint
        self.node: ast.AST | None = None
        for name, spec in specs.items():
            if spec.kind == "tensor":
                assert spec.dtype is not None
                self.add_tensor(name, spec.dtype, spec.rank)
            elif spec.kind == "scalar":
                assert spec.dtype is not None
                self.add_scalar(name, spec.dtype)
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
        self.block(self.parsed.func.body)
        kernel = self.finish()
        kernel.externals = self.externals
        return kernel

    # ---------------------------------------------------------------------------- statements
    def block(self, stmts: list[ast.stmt]) -> None:
        """Lower a list of statements into the open block."""
        for stmt in stmts:
            self.node = stmt
            self.lineno = stmt.lineno
            self.statement(stmt)

    def statement(self, s: ast.stmt) -> None:
        """Lower one statement into zero or more IR statements."""
        match s:
            case ast.Assign(targets=[target], value=value):
                self.assign_node(target, value)
            case ast.AnnAssign(target=ast.Name(id=name), annotation=ann, value=value):
                dtype = self.resolve(ann)
                if not isinstance(dtype, DType) or value is None:
                    raise self.error("annotated locals need a dtype and a value: `x: f32 = 0`")
                self.declare(name, dtype)
                self.assign_node(s.target, value)
            case ast.AugAssign(target=target, op=op, value=value):
                if type(op) not in _ARITH:
                    raise self.error(f"unsupported operator {type(op).__name__}")
                if not isinstance(target, ast.Subscript | ast.Name):
                    raise self.error("augmented assignment needs a local or an element: `x += 1`")
                load = ast.copy_location(
                    ast.Subscript(target.value, target.slice, ast.Load())
                    if isinstance(target, ast.Subscript) else ast.Name(target.id, ast.Load()), s)
                self.store_to(target, self.binary(_ARITH[type(op)], self.expr(load),
                                                  self.expr(value)))
            case ast.If(test=test, body=body, orelse=orelse):
                cond = self.expr(test)
                if isinstance(cond, Literal):
                    self.block(body if cond else orelse)
                    return
                with self.if_(cond):
                    self.block(body)
                if orelse:
                    with self.else_():
                        self.block(orelse)
            case ast.For():
                self.for_loop(s)
            case ast.While(test=test, body=body, orelse=[]):
                with self.while_(self.typed(self.expr(test))):
                    self.block(body)
            case ast.Break() | ast.Continue():
                self.jump("break" if isinstance(s, ast.Break) else "continue")
            case ast.Return(value=None):
                self.jump("return")
            case ast.Return():
                raise self.error("kernels cannot return a value; write into an output tensor")
            case ast.Pass():
                pass
            case ast.Expr(value=ast.Constant(value=str())):
                pass  # docstring
            case ast.Expr(value=ast.Call() as call):
                if self.callee(call) == "sync_units":
                    self.barrier()
                    return
                value = self.expr(call)
                if not isinstance(value, ir.Atomic):
                    raise self.error("this call has no effect")
                self.evaluate(value)
            case _:
                raise self.error(f"unsupported statement `{type(s).__name__}`")

    def assign_node(self, target: ast.expr, value: ast.expr) -> None:
        """Lower ``target = value``; binds shared-memory arrays to their name."""
        if isinstance(value, ast.Call) and self.callee(value) == "shared_memory":
            if not isinstance(target, ast.Name) or len(value.args) != 2:
                raise self.error("use `name = shared_memory(dtype, size)`")
            self.add_shared(target.id, self.resolve(value.args[0]), self.expr(value.args[1]))
            return
        self.store_to(target, self.expr(value))

    def store_to(self, target: ast.expr, value: Any) -> None:
        """Store an already-lowered value into a local name or a buffer element."""
        if isinstance(target, ast.Subscript):
            ref = self.expr(target.value)
            if not isinstance(ref, BufRef):
                raise self.error("only tensors and shared arrays can be indexed for writing")
            self.store(ref, self.subscript(ref, target.slice), value)
            return
        if not isinstance(target, ast.Name):
            raise self.error("assign to a single name or a tensor element (no tuple unpacking)")
        if target.id in self.consts:
            raise self.error(f"cannot assign to parameter `{target.id}`")
        self.assign(target.id, value)

    def for_loop(self, s: ast.For) -> None:
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
        name = s.target.id
        if not unrolled:
            with self.for_range(start, stop, step, name):
                self.block(s.body)
            return
        if not (isinstance(start, int) and isinstance(stop, int) and isinstance(step, int)
                and step):
            raise self.error("unroll(range(...)) needs compile-time bounds and a non-zero step")
        saved = self.consts.get(name)
        self.loops.append(True)
        for value in range(start, stop, step):
            self.consts[name] = value
            self.block(s.body)
        self.loops.pop()
        self.consts.pop(name)
        if saved is not None:
            self.consts[name] = saved

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

    def expr(self, node: ast.expr) -> Any:
        """Lower an expression to an IR expression, a literal, or a reference."""
        match node:
            case ast.Constant(value=value) if isinstance(value, Literal):
                return value
            case ast.Name(id=name):
                return self.lookup(name, node)
            case ast.Attribute(value=base, attr=attr):
                ref = self.expr(base) if not isinstance(base, ast.Attribute) else None
                if isinstance(ref, BufRef) and not self.buffers[ref.name].shared:
                    if attr in ("shape", "stride"):
                        return MetaRef(ref.name, attr)
                    if attr == "offset":
                        return self.meta(ref, "offset")
                return self.wrap(self.resolve(node))
            case ast.Subscript(value=base, slice=index):
                ref = self.expr(base)
                if isinstance(ref, MetaRef):
                    return self.meta(ref.buf, ref.field, self.expr(index))
                if not isinstance(ref, BufRef):
                    raise self.error("only tensors, shared arrays, .shape and .stride can be "
                                     "indexed", node)
                return self.load(ref, self.subscript(ref, index))
            case ast.BinOp(left=left, op=op, right=right) if type(op) in _ARITH:
                return self.binary(_ARITH[type(op)], self.expr(left), self.expr(right))
            case ast.UnaryOp(op=op, operand=operand):
                return self.unary(_UNARY[type(op)], self.expr(operand))
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
                return self.call("select", [cond, self.expr(body), self.expr(orelse)])
            case ast.Call(func=func, args=args, keywords=[]):
                target = self.resolve(func) if not (
                    isinstance(func, ast.Name) and func.id in self.locals) else None
                if isinstance(target, DType):
                    if len(args) != 1:
                        raise self.error(f"{target}(x) takes one argument", node)
                    return self.explicit_cast(self.expr(args[0]), target)
                builtin = BUILTINS.get(target) if _hashable(target) else None
                if builtin is None:
                    raise self.error(f"cannot call `{ast.unparse(func)}` inside a kernel", node)
                return self.call(builtin, [self.expr(a) for a in args])
        raise self.error(f"unsupported expression `{ast.unparse(node)}`", node)

    def lookup(self, name: str, node: ast.expr) -> Any:
        """Look a name up: locals, parameters, comptime values, then globals."""
        if name in self.locals:
            return ir.Var(name, self.locals[name])
        if name in self.scalars:
            return ir.Var(name, self.scalars[name])
        if name in self.buffers:
            return BufRef(name)
        if name in self.consts:
            return self.wrap(self.consts[name])
        return self.wrap(self.resolve(node))

    def wrap(self, obj: Any) -> Any:
        """Turn a Python object found by name into a lowered value."""
        if isinstance(obj, Position):
            return self.position(obj.name)
        return obj  # literals, dtypes, modules and builtin stubs are resolved by their users

    def subscript(self, ref: BufRef, node: ast.expr) -> ir.Expr:
        """Storage index of ``buf[node]`` (a tuple index is combined with the strides)."""
        parts = node.elts if isinstance(node, ast.Tuple) else [node]
        return self.index(ref, [self.expr(p) for p in parts])


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
