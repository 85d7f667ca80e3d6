"""``Scope``: typed construction of kernel IR, the single home of the language's typing rules.

Both ways of writing a kernel go through it: the Python-source frontend (``language/frontend``)
and the public builder (``ir/builder``). A scope holds the kernel's parameters, buffers and
locals and a stack of open statement blocks; its expression methods take *raw* values, a Python
literal (folded while both operands are literals, like compile-time constants) or an IR
expression, and apply implicit promotion and casts; its statement methods append to the
innermost open block. ``finish`` works the target features out of the body.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from burn_cube.errors import CompileError
from burn_cube.ir import nodes as ir
from burn_cube.types import DType, bool_, f32, i32, line, promote, u32

Literal = int | float | bool

#: Float math functions of one argument (ints are promoted to f32).
UNARY_MATH = (
    "exp", "exp2", "log", "log2", "log1p", "sin", "cos", "tan", "tanh", "asin", "acos", "atan",
    "sinh", "cosh", "sqrt", "rsqrt", "floor", "ceil", "round", "trunc", "erf",
)
#: Every op ``Scope.call`` accepts (besides the binary operators of ``Scope.binary``).
#: ``opaque(x, zero)`` is the float ``x`` itself where the u32 ``zero`` is 0 at run time, hidden
#: from the target compiler's algebra (WGSL drivers may assume finite math; the C and CUDA
#: targets keep IEEE semantics and give ``x``): two uses with different ``zero`` expressions
#: cannot be proved equal, nor ``x`` looked into.
CALLS = (*UNARY_MATH, "isnan", "isinf", "iszero", "abs", "min", "max", "pow", "fmod", "select",
         "float", "int", "bool", "len", "index_of", "atomic_add", "atomic_min", "atomic_max",
         "plane_sum", "plane_max", "opaque")
#: Float tests (bool results): NaN, an infinity, a zero of either sign (read from the bits on
#: WGSL, where a driver may assume there is no NaN and fold float comparisons).
_TESTS = ("isnan", "isinf", "iszero")
#: Atomic read-modify-write builtins (``atomic_<op>``); min and max take integers only.
ATOMICS = ("atomic_add", "atomic_min", "atomic_max")
#: Position builtins (u32 values; ``CUBE_DIM*`` are compile-time ints).
POSITIONS = tuple(f"{base}{axis}" for base in ("ABSOLUTE_POS", "UNIT_POS", "CUBE_POS", "CUBE_DIM",
                                               "CUBE_COUNT") for axis in ("", "_X", "_Y", "_Z")
                  ) + ("PLANE_DIM", "UNIT_POS_PLANE")
COMPARE = ("lt", "le", "gt", "ge", "eq", "ne")
BITWISE = ("shl", "shr", "bitand", "bitor", "bitxor")
_LINE_OPS = ("add", "sub", "mul", "div", "floordiv", "mod")  # element-wise on Line values
_FOLD: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
    "bitand": operator.and_, "bitor": operator.or_, "bitxor": operator.xor,
    "shl": operator.lshift, "shr": operator.rshift, "lt": operator.lt, "le": operator.le,
    "gt": operator.gt, "ge": operator.ge, "eq": operator.eq, "ne": operator.ne,
    "min": min, "max": max,
}
_FOLD_UNARY: dict[str, Callable[[Any], Any]] = {
    "neg": operator.neg, "pos": operator.pos, "not": operator.not_, "invert": operator.invert}
EXPRS = (ir.Const, ir.Var, ir.Meta, ir.Op, ir.Load, ir.Atomic)


@dataclass(frozen=True)
class BufRef:
    """A reference to a tensor parameter or shared array (an argument of ``len``/atomics)."""

    name: str


def literal_dtype(value: Literal) -> DType:
    """Default dtype of a Python literal: bool, i32 or f32."""
    if isinstance(value, bool):
        return bool_
    return i32 if isinstance(value, int) else f32


def const(value: Literal, dtype: DType) -> ir.Const:
    """A constant converted to ``dtype`` with Python semantics (truncation toward zero); a
    float converted to a signed int follows ``cast``'s rule."""
    if dtype.is_float:
        return ir.Const(float(value), dtype)
    if dtype is bool_:
        return ir.Const(bool(value), dtype)
    if isinstance(value, float) and dtype.kind == "int":
        bits = max(dtype.bits, 32)
        limit = 2 ** (bits - 1)
        whole = int(value) if math.isfinite(value) and -limit <= value < limit else -limit
        if dtype.bits < bits:  # 8-bit: through i32, wrapping
            whole = (whole + 2 ** (dtype.bits - 1)) % 2 ** dtype.bits - 2 ** (dtype.bits - 1)
        return ir.Const(whole, dtype)
    return ir.Const(0 if isinstance(value, float) and not math.isfinite(value) else int(value),
                    dtype)


def cast(value: ir.Expr, dtype: DType) -> ir.Expr:
    """Convert an expression to ``dtype`` (folded for constants, a no-op when equal).

    A float becomes a signed integer as numpy and PyTorch do on x86 CPUs, on every target:
    truncation toward zero; NaN, +-inf and values outside i32 / i64 give the type's minimum;
    8-bit types convert through i32 and wrap (300.0 -> 44 as u8). C leaves those cases
    undefined and WGSL / CUDA saturate, so the range is tested explicitly. A scalar becomes a
    line of another element type by converting it first, then splatting it (WGSL's vector
    constructors take only their own element type).
    """
    if value.dtype == dtype:
        return value
    if isinstance(value, ir.Const) and dtype.lanes == 1:
        return const(value.value, dtype)
    if dtype.lanes > 1 and value.dtype.lanes == 1 and value.dtype != dtype.scalar:
        return ir.Op("cast", (cast(value, dtype.scalar),), dtype)  # convert, then splat
    if value.dtype.is_float and dtype.lanes == 1 and (
            dtype.kind == "int" or (dtype.kind == "uint" and dtype.bits < 32)):
        return _float_to_int(value, dtype)
    return ir.Op("cast", (value,), dtype)


def _float_to_int(value: ir.Expr, dtype: DType) -> ir.Expr:
    """``cast``'s float -> signed int rule as a select on the range test (8-bit types, u8
    included, through i32, wrapping)."""
    if dtype.bits < 32:
        return ir.Op("cast", (_float_to_int(value, i32),), dtype)
    if value.dtype.bits < 32:  # exact in f32, whose bounds are finite
        value = ir.Op("cast", (value,), f32)
    limit = float(2 ** (dtype.bits - 1))
    inside = ir.Op("and", (ir.Op("ge", (value, ir.Const(-limit, value.dtype)), bool_),
                           ir.Op("lt", (value, ir.Const(limit, value.dtype)), bool_)), bool_)
    return ir.Op("select", (inside, ir.Op("cast", (value,), dtype), ir.Const(-int(limit), dtype)),
                 dtype)


def features(kernel: ir.KernelIR) -> set[str]:
    """The target features a kernel needs, from its declarations and body: ``dtype:<d>`` per
    element dtype, ``line:<d>`` per line dtype, ``atomic:<d>``, ``plane``, ``barrier``,
    ``shared``."""
    dtypes = {b.dtype for b in kernel.buffers.values()} | set(kernel.locals.values())
    dtypes |= {p.dtype for p in kernel.params}
    out: set[str] = set()
    for e in ir.expressions(kernel.body):
        dtypes.add(e.dtype)
        if isinstance(e, ir.Atomic):
            out.add(f"atomic:{e.dtype.name}")
        elif isinstance(e, ir.Op) and e.op in ("plane_sum", "plane_max", "plane_dim",
                                               "unit_pos_plane"):
            out.add("plane")
    if any(isinstance(s, ir.Barrier) for s in ir.statements(kernel.body)):
        out.add("barrier")
    if kernel.shared:
        out.add("shared")
    out |= {f"dtype:{d.scalar.name}" for d in dtypes}
    return out | {f"line:{d.name}" for d in dtypes if d.lanes > 1}


class Scope:
    """Builds the IR of one kernel specialization.

    Args:
        name: Kernel name (in errors and the IR).
        cube_dim: Units per cube along x, y, z (compile-time constants).
    """

    def __init__(self, name: str, cube_dim: tuple[int, int, int] = (1, 1, 1)) -> None:
        self.name = name
        self.cube_dim = cube_dim
        self.params: list[ir.Param] = []
        self.buffers: dict[str, ir.Buffer] = {}
        self.locals: dict[str, DType] = {}
        self.scalars: dict[str, DType] = {}
        self.blocks: list[list[ir.Stmt]] = [[]]
        self.loops: list[bool] = []  # per enclosing loop: True when unrolled at compile time
        self.lineno = 0  # source line given to new statements
        self.temps = 0
        self.readonly: set[str] = set()

    def error(self, message: str) -> CompileError:
        """A CompileError naming the kernel."""
        return CompileError(message, self.name)

    # --------------------------------------------------------------------------- declarations
    def _check_new(self, name: str) -> None:
        if not name.isidentifier():
            raise self.error(f"`{name}` is not a valid name")
        if name in self.buffers or name in self.scalars or name in self.locals:
            raise self.error(f"`{name}` is already declared")

    def add_tensor(self, name: str, dtype: DType, rank: int) -> ir.Buffer:
        """Declare a tensor parameter (in parameter order)."""
        self._check_new(name)
        if rank < 1:
            raise self.error(f"tensor `{name}` needs a rank >= 1, got {rank}")
        buf = self.buffers[name] = ir.Buffer(name, dtype, rank=rank)
        self.params.append(ir.Param(name, dtype, True))
        return buf

    def add_scalar(self, name: str, dtype: DType) -> ir.Var:
        """Declare a scalar parameter: a runtime value, not part of the compiled code."""
        self._check_new(name)
        if dtype.lanes > 1:
            raise self.error(f"scalar `{name}` cannot be a Line ({dtype})")
        self.scalars[name] = dtype
        self.params.append(ir.Param(name, dtype, False))
        return ir.Var(name, dtype)

    def add_shared(self, name: str, dtype: DType, size: Any) -> ir.Buffer:
        """Declare a shared-memory array of a positive compile-time size."""
        if not isinstance(dtype, DType) or not isinstance(size, int) or isinstance(size, bool) \
                or size <= 0:
            raise self.error("shared_memory needs a dtype and a positive compile-time size")
        if name in self.buffers:
            raise self.error(f"`{name}` is already a tensor or shared array")
        buf = self.buffers[name] = ir.Buffer(name, dtype, shared=True, size=size)
        return buf

    def declare(self, name: str, dtype: DType) -> ir.Var:
        """Declare a local variable (its type is fixed by the first declaration)."""
        if name in self.locals and self.locals[name] != dtype:
            raise self.error(f"`{name}` is already a {self.locals[name]} local")
        self.locals[name] = dtype
        return ir.Var(name, dtype)

    def temp(self, dtype: DType, prefix: str = "_t") -> ir.Var:
        """A fresh local."""
        self.temps += 1
        return self.declare(f"{prefix}{self.temps}", dtype)

    def buffer(self, ref: Any, what: str) -> ir.Buffer:
        """The buffer a ``BufRef`` (or name) refers to."""
        name = ref.name if isinstance(ref, BufRef) else ref
        if not isinstance(name, str) or name not in self.buffers:
            raise self.error(f"{what} needs a tensor or shared array")
        return self.buffers[name]

    # ---------------------------------------------------------------------------- values
    def typed(self, value: Any, dtype: DType | None = None) -> ir.Expr:
        """Turn a raw value into a typed expression (literals get ``dtype`` or a default)."""
        if isinstance(value, Literal):
            if dtype is not None and dtype.lanes > 1:  # broadcast: a scalar cast to the line
                return cast(const(value, dtype.scalar), dtype)
            return const(value, dtype or literal_dtype(value))
        if isinstance(value, EXPRS):
            return value
        raise self.error(f"`{value}` is not a value")

    def to_bool(self, value: ir.Expr) -> ir.Expr:
        """Truthiness of a value as a bool expression."""
        if value.dtype is bool_:
            return value
        return ir.Op("ne", (value, const(0, value.dtype)), bool_)

    def convert(self, value: Any, dtype: DType) -> ir.Expr:
        """Implicit conversion on assignment; refuses float -> int and number <-> bool."""
        typed = self.typed(value, dtype if isinstance(value, Literal) else None)
        src = typed.dtype
        if src != dtype and ((src.is_float and not dtype.is_float)
                             or (src is bool_) != (dtype is bool_)):
            raise self.error(f"cannot implicitly convert {src} to {dtype}; "
                             f"use an explicit cast such as `{dtype}(x)` or a float literal")
        return cast(typed, dtype)

    def explicit_cast(self, value: Any, dtype: DType) -> Any:
        """An explicit conversion ``dtype(value)`` (to bool: truthiness); a line converts lane
        by lane (``f64(x)`` of a ``Line[f32, 2]`` is a ``Line[f64, 2]``), except float lines
        to integers and lines to bool (a typed error: convert their elements)."""
        typed = self.typed(value)
        lanes = typed.dtype.lanes
        if lanes > 1 and dtype.lanes == 1:
            if dtype is bool_ or (typed.dtype.is_float and not dtype.is_float):
                raise self.error(f"cannot convert a {typed.dtype} line to {dtype}: convert "
                                 "its elements (float -> int and -> bool take scalars)")
            dtype = line(dtype, lanes)
        return self.to_bool(typed) if dtype is bool_ else cast(typed, dtype)

    def position(self, name: str) -> ir.Expr | int:
        """A position builtin (``ABSOLUTE_POS``...); ``CUBE_DIM*`` fold to ints."""
        if name not in POSITIONS:
            raise self.error(f"unknown position builtin `{name}`")
        axes = {"": 0, "_X": 0, "_Y": 1, "_Z": 2}
        if name.startswith("CUBE_DIM"):
            suffix = name[len("CUBE_DIM"):]
            return math.prod(self.cube_dim) if not suffix else self.cube_dim[axes[suffix]]
        return ir.Op(name.lower(), (), u32)

    def meta(self, ref: Any, field: str, dim: int = 0) -> ir.Meta:
        """A tensor's ``len``, ``shape[dim]``, ``stride[dim]`` or ``offset`` (u32)."""
        buf = self.buffer(ref, f"`.{field}`")
        if buf.shared:
            raise self.error(f"shared array `{buf.name}` has no {field}")
        if field in ("shape", "stride"):
            if not isinstance(dim, int) or not -buf.rank <= dim < buf.rank:
                raise self.error(f"`.{field}[...]` needs a compile-time dimension in range for "
                                 f"rank {buf.rank}, got {dim!r}")
            return ir.Meta(buf.name, field, dim % buf.rank, u32)
        if field not in ("len", "offset"):
            raise self.error(f"tensors have no `{field}`")
        return ir.Meta(buf.name, field, 0, u32)

    def index(self, ref: Any, parts: list[Any]) -> ir.Expr:
        """Storage index of ``buf[parts]``: one linear index as it is, or one index per
        dimension combined with the strides (plus the tensor's offset)."""
        buf = self.buffer(ref, "indexing")
        if len(parts) > 1 and (buf.shared or len(parts) != buf.rank):
            raise self.error(f"`{buf.name}` has rank {buf.rank}: index it with one linear "
                             f"index or {buf.rank} indices")
        if len(parts) == 1:
            index = parts[0]
        else:
            index = self.meta(buf.name, "offset")
            for dim, part in enumerate(parts):
                stride = self.meta(buf.name, "stride", dim)
                index = self.binary("add", index, self.binary("mul", part, stride))
        typed = self.typed(index, u32)
        if not (typed.dtype.is_integer or typed.dtype is bool_) or typed.dtype.lanes > 1:
            raise self.error(f"index of `{buf.name}` must be an integer, not {typed.dtype}")
        return typed

    def strided_index(self, ref: Any, pos: Any) -> ir.Expr:
        """Storage index of logical (row-major) position ``pos`` of a tensor: ``pos`` unravelled
        against the shape, dotted with the strides, plus the offset. Reads strided views
        (permuted, broadcast with stride 0, sliced) in place."""
        buf = self.buffer(ref, "index_of")
        if buf.shared:
            raise self.error("index_of needs a tensor parameter, not a shared array")
        rest = self.typed(pos, u32)
        index: Any = self.meta(buf.name, "offset")
        for dim in reversed(range(buf.rank)):
            shape = self.meta(buf.name, "shape", dim)
            coord = rest if dim == 0 else self.binary("mod", rest, shape)
            index = self.binary("add", index, self.binary(
                "mul", coord, self.meta(buf.name, "stride", dim)))
            if dim:
                rest = self.binary("floordiv", rest, shape)
        return self.typed(index, u32)

    def load(self, ref: Any, index: ir.Expr) -> ir.Load:
        """Read element ``index`` of a buffer."""
        buf = self.buffer(ref, "a load")
        return ir.Load(buf.name, index, buf.dtype)

    # ---------------------------------------------------------------------------- operators
    def binary(self, op: str, a: Any, b: Any) -> Any:
        """A binary arithmetic, bitwise or comparison operator with implicit promotion."""
        if op not in _FOLD:
            raise self.error(f"unknown binary operator `{op}`")
        if isinstance(a, Literal) and isinstance(b, Literal):
            try:
                return _FOLD[op](a, b)
            except (ZeroDivisionError, OverflowError, ValueError) as exc:
                raise self.error(f"constant folding failed: {exc}") from exc
        if op == "pow":
            return self.call("pow", [a, b])
        if op in ("min", "max"):
            return self.call(op, [a, b])
        ta, tb = self.unify(a, b)
        dtype = ta.dtype
        if dtype.lanes > 1 and op not in _LINE_OPS:
            raise self.error(f"`{op}` is not supported on Line values (only arithmetic and "
                             "math functions are element-wise)")
        if op in BITWISE:
            if not dtype.is_integer:
                raise self.error(f"bitwise operator `{op}` needs integers")
            return ir.Op(op, (ta, tb), dtype)
        if op == "div" and not dtype.is_float:  # true division of integers gives f32
            dtype = line(f32, dtype.lanes)
        ta, tb = cast(ta, dtype), cast(tb, dtype)
        if op in COMPARE:
            return ir.Op(op, (ta, tb), bool_)
        if op == "floordiv":
            if dtype.is_float:  # floor through call: f16 math is computed in f32
                return self.call("floor", [ir.Op("div", (ta, tb), dtype)])
            op = "div"  # integers: truncating division, like C, WGSL and CUDA
        elif op == "mod" and dtype.is_float:  # Python's floored modulo
            floor = self.call("floor", [ir.Op("div", (ta, tb), dtype)])
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

    def unary(self, op: str, value: Any) -> Any:
        """``neg``, ``pos``, ``not`` or ``invert`` of a value."""
        if isinstance(value, Literal):
            return _FOLD_UNARY[op](value)
        value = self.typed(value)
        if op == "pos":
            return value
        if op == "not":
            return ir.Op("not", (self.to_bool(value),), bool_)
        if op == "invert":
            if not value.dtype.is_integer:
                raise self.error("`~` needs an integer")
            return ir.Op("invert", (value,), value.dtype)
        if value.dtype is bool_:
            value = cast(value, i32)
        return ir.Op("neg", (value,), value.dtype)

    def call(self, op: str, args: list[Any]) -> Any:
        """A language builtin: math, select, casts, len, atomics, plane ops."""
        def need(n: int) -> None:
            if len(args) != n:
                raise self.error(f"{op}() takes {n} argument(s), got {len(args)}")

        if op in UNARY_MATH or op in _TESTS:
            need(1)
            if isinstance(args[0], Literal) and hasattr(math, op):
                return getattr(math, op)(args[0])
            x = self.typed(args[0])
            dtype = x.dtype if x.dtype.is_float else line(f32, x.dtype.lanes)
            if op in _TESTS:
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
        if op == "fmod":  # C's fmod: the remainder of truncated division, exact
            need(2)
            a, b = self.unify(*args)
            if a.dtype.lanes > 1:  # (a long division on the bits in WGSL and CUDA: per lane)
                raise self.error(f"{op}() is not supported on Line values")
            dtype = a.dtype if a.dtype.is_float else line(f32, a.dtype.lanes)
            return ir.Op("fmod", (cast(a, dtype), cast(b, dtype)), dtype)
        if op in ("select", *ATOMICS, "plane_sum", "plane_max") and any(
                isinstance(a, EXPRS) and a.dtype.lanes > 1 for a in args):
            raise self.error(f"{op}() is not supported on Line values")
        if op == "opaque":
            need(2)
            x = self.typed(args[0])
            if not x.dtype.is_float:
                raise self.error(f"opaque() takes a float value, got {x.dtype}")
            return ir.Op("opaque", (x, self.convert(args[1], u32)), x.dtype)
        if op == "select":
            need(3)
            cond = self.to_bool(self.typed(args[0]))
            a, b = self.unify(args[1], args[2])
            return ir.Op("select", (cond, a, b), a.dtype)
        if op in ("float", "int", "bool"):
            need(1)
            if isinstance(args[0], Literal):
                return {"float": float, "int": int, "bool": bool}[op](args[0])
            return self.explicit_cast(args[0], {"float": f32, "int": i32, "bool": bool_}[op])
        if op == "len":
            need(1)
            buf = self.buffer(args[0], "len()")
            return buf.size if buf.shared else self.meta(buf.name, "len")
        if op == "index_of":
            need(2)
            return self.strided_index(args[0], args[1])
        if op in ATOMICS:
            need(3)
            buf = self.buffer(args[0], f"{op}(buffer, index, value)")
            if buf.name in self.readonly:
                raise self.error(f"tensor `{buf.name}` was declared read-only")
            if op != "atomic_add" and not buf.dtype.is_integer:
                raise self.error(f"{op} on {buf.dtype} (`{buf.name}`) is not supported: "
                                 "integer tensors only")
            buf.atomic = buf.written = True
            return ir.Atomic(op[7:], buf.name, self.typed(args[1], u32),
                             self.convert(args[2], buf.dtype), buf.dtype)
        if op in ("plane_sum", "plane_max"):
            need(1)
            x = self.typed(args[0])
            return ir.Op(op, (x,), x.dtype)
        raise self.error(f"{op}() cannot be used here")

    # ---------------------------------------------------------------------------- statements
    def emit(self, stmt: ir.Stmt) -> None:
        """Append a statement to the innermost open block."""
        self.blocks[-1].append(stmt)

    def assign(self, name: str, value: Any) -> ir.Var:
        """``name = value``; a new local takes the value's type."""
        if name in self.scalars or name in self.buffers:
            raise self.error(f"cannot assign to parameter `{name}`")
        typed = self.typed(value)
        var = ir.Var(name, self.locals[name]) if name in self.locals else \
            self.declare(name, typed.dtype)
        self.emit(ir.Assign(var, self.convert(typed, var.dtype), self.lineno))
        return var

    def store(self, ref: Any, index: ir.Expr, value: Any) -> None:
        """``buf[index] = value`` (converted to the element type)."""
        buf = self.buffer(ref, "a store")
        if buf.name in self.readonly:
            raise self.error(f"tensor `{buf.name}` was declared read-only")
        buf.written = True
        self.emit(ir.Store(buf.name, index, self.convert(value, buf.dtype), self.lineno))

    def evaluate(self, expr: ir.Expr) -> None:
        """Evaluate an expression for its side effect (an atomic)."""
        self.emit(ir.Eval(expr, self.lineno))

    def barrier(self) -> None:
        """``sync_units()``."""
        self.emit(ir.Barrier(self.lineno))

    def jump(self, kind: str) -> None:
        """``break``, ``continue`` or ``return`` (an early exit of the unit)."""
        if kind == "return":
            self.emit(ir.Return(self.lineno))
            return
        if not self.loops or self.loops[-1]:
            raise self.error("break/continue only inside a (non-unrolled) loop")
        self.emit(ir.Break(self.lineno) if kind == "break" else ir.Continue(self.lineno))

    @contextmanager
    def _open(self, block: list[ir.Stmt], loop: bool = False) -> Iterator[None]:
        self.blocks.append(block)
        if loop:
            self.loops.append(False)
        try:
            yield
        finally:
            self.blocks.pop()
            if loop:
                self.loops.pop()

    @contextmanager
    def if_(self, cond: Any) -> Iterator[None]:
        """Statements in the block run when ``cond`` is true."""
        stmt = ir.If(self.to_bool(self.typed(cond)), [], [], self.lineno)
        self.emit(stmt)
        with self._open(stmt.then):
            yield

    @contextmanager
    def else_(self) -> Iterator[None]:
        """The ``else`` block of the ``if_`` just closed."""
        last = self.blocks[-1][-1] if self.blocks[-1] else None
        if not isinstance(last, ir.If) or last.orelse:
            raise self.error("else_() must directly follow an if_() block")
        with self._open(last.orelse):
            yield

    @contextmanager
    def while_(self, cond: Any) -> Iterator[None]:
        """Repeat the block while ``cond`` (re-evaluated before each iteration) is true."""
        stmt = ir.While(self.to_bool(self.typed(cond)), [], self.lineno)
        self.emit(stmt)
        with self._open(stmt.body, loop=True):
            yield

    @contextmanager
    def for_range(self, start: Any, stop: Any, step: int = 1, name: str | None = None
                  ) -> Iterator[ir.Var]:
        """``for name in range(start, stop, step)``: ``stop`` is evaluated once, ``step`` is a
        non-zero compile-time int; yields the loop variable."""
        if not isinstance(step, int) or isinstance(step, bool) or step == 0:
            raise self.error("the range step must be a non-zero compile-time integer")
        start_e, stop_e = self.typed(start), self.typed(stop)
        if isinstance(start, Literal) and not isinstance(stop, Literal):
            start_e = self.typed(start, stop_e.dtype)
        dtype = promote(start_e.dtype, stop_e.dtype)
        if not dtype.is_integer or dtype.lanes > 1:
            raise self.error("range bounds must be integers")
        if name is None:
            var = self.temp(dtype, "_i")
        elif name in self.locals:
            var = ir.Var(name, self.locals[name])
        else:
            var = self.declare(name, dtype)
        stop_e = cast(stop_e, var.dtype)
        if not isinstance(stop_e, ir.Const | ir.Var):
            tmp = self.temp(var.dtype, "_stop")
            self.emit(ir.Assign(tmp, stop_e, self.lineno))
            stop_e = tmp
        stmt = ir.For(var, cast(start_e, var.dtype), stop_e, step, [], self.lineno)
        self.emit(stmt)
        with self._open(stmt.body, loop=True):
            yield var

    def finish(self) -> ir.KernelIR:
        """The kernel IR, with its features worked out from the body."""
        if len(self.blocks) != 1:
            raise self.error("a block is still open")
        kernel = ir.KernelIR(self.name, self.params, self.buffers, self.locals, self.blocks[0],
                             self.cube_dim)
        kernel.features = features(kernel)
        return kernel
