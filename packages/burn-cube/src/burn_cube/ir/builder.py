"""``KernelBuilder``: build kernels in code, with typed ``Value``s and Python operators.

The builder is a ``Scope`` (the one place that owns the language's promotion and cast rules,
shared with the Python-source frontend) plus a friendlier surface::

    b = KernelBuilder("axpy", cube_dim=256)
    x, y = b.tensor("x", f32), b.tensor("y", f32, write=True)
    a = b.scalar("a", f32)
    i = b.ABSOLUTE_POS
    with b.if_(i < x.len):
        y[i] = a * x[i] + y[i]
    kern = b.kernel()   # Kernel.from_ir(b.build()): kern.launch(rt, cubes, 256, x, y, 2.0)

Python numbers mixed with values adopt the value's type (``v * 2`` keeps ``v``'s dtype), as
literals do in kernel source. ``==``/``!=`` on values build comparisons (values are not
hashable), and ``&``/``|``/``~`` on bool values are logical. Math functions are methods
(``b.exp(v)``, any name of ``scope.CALLS``); positions are attributes (``b.UNIT_POS``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from burn_cube.ir import nodes as ir
from burn_cube.ir.scope import ATOMICS, CALLS, EXPRS, POSITIONS, BufRef, Literal, Scope
from burn_cube.types import DType, bool_, line

if TYPE_CHECKING:
    from burn_cube.kernel import IRKernel

#: Builtins available as builder methods (``b.exp(v)``, ``b.max(a, b)``, ``b.plane_sum(v)``).
MATH = tuple(n for n in CALLS if n not in ("len", *ATOMICS, "index_of", "select"))


class Value:
    """A typed value of a kernel under construction (an IR expression).

    Args:
        builder: The owning builder.
        expr: The IR expression.
    """

    __slots__ = ("builder", "expr")
    __hash__ = None  # type: ignore[assignment]  # == builds a comparison

    def __init__(self, builder: KernelBuilder, expr: ir.Expr) -> None:
        self.builder = builder
        self.expr = expr

    @property
    def dtype(self) -> DType:
        """The value's dtype."""
        return self.expr.dtype

    def __repr__(self) -> str:
        return f"Value({self.expr!r})"

    def __bool__(self) -> bool:
        raise self.builder.error("a kernel value has no Python truth value; use b.if_(cond), "
                                 "b.select(cond, a, b) or b.and_/or_/not_")

    def _binary(self, op: str, other: Any, reverse: bool = False) -> Value:
        a, b = (other, self) if reverse else (self, other)
        return self.builder.binary_value(op, a, b)

    def _logical_or_bits(self, op: str, other: Any, reverse: bool = False) -> Value:
        other_bool = isinstance(other, bool) or (
            isinstance(other, Value) and other.dtype is bool_)
        if self.dtype is bool_ and other_bool:
            return self.builder.wrap(self.builder.logical(
                "and" if op == "bitand" else "or", self.expr, _raw(other)))
        return self._binary(op, other, reverse)

    def __add__(self, o: Any) -> Value: return self._binary("add", o)
    def __radd__(self, o: Any) -> Value: return self._binary("add", o, True)
    def __sub__(self, o: Any) -> Value: return self._binary("sub", o)
    def __rsub__(self, o: Any) -> Value: return self._binary("sub", o, True)
    def __mul__(self, o: Any) -> Value: return self._binary("mul", o)
    def __rmul__(self, o: Any) -> Value: return self._binary("mul", o, True)
    def __truediv__(self, o: Any) -> Value: return self._binary("div", o)
    def __rtruediv__(self, o: Any) -> Value: return self._binary("div", o, True)
    def __floordiv__(self, o: Any) -> Value: return self._binary("floordiv", o)
    def __rfloordiv__(self, o: Any) -> Value: return self._binary("floordiv", o, True)
    def __mod__(self, o: Any) -> Value: return self._binary("mod", o)
    def __rmod__(self, o: Any) -> Value: return self._binary("mod", o, True)
    def __pow__(self, o: Any) -> Value: return self._binary("pow", o)
    def __rpow__(self, o: Any) -> Value: return self._binary("pow", o, True)
    def __lshift__(self, o: Any) -> Value: return self._binary("shl", o)
    def __rshift__(self, o: Any) -> Value: return self._binary("shr", o)
    def __xor__(self, o: Any) -> Value: return self._binary("bitxor", o)
    def __and__(self, o: Any) -> Value: return self._logical_or_bits("bitand", o)
    def __rand__(self, o: Any) -> Value: return self._logical_or_bits("bitand", o, True)
    def __or__(self, o: Any) -> Value: return self._logical_or_bits("bitor", o)
    def __ror__(self, o: Any) -> Value: return self._logical_or_bits("bitor", o, True)
    def __lt__(self, o: Any) -> Value: return self._binary("lt", o)
    def __le__(self, o: Any) -> Value: return self._binary("le", o)
    def __gt__(self, o: Any) -> Value: return self._binary("gt", o)
    def __ge__(self, o: Any) -> Value: return self._binary("ge", o)
    def __eq__(self, o: Any) -> Value: return self._binary("eq", o)  # type: ignore[override]
    def __ne__(self, o: Any) -> Value: return self._binary("ne", o)  # type: ignore[override]
    def __neg__(self) -> Value: return self.builder.wrap(self.builder.unary("neg", self.expr))
    def __pos__(self) -> Value: return self
    def __abs__(self) -> Value: return self.builder.call_value("abs", self)

    def __invert__(self) -> Value:
        op = "not" if self.dtype is bool_ else "invert"
        return self.builder.wrap(self.builder.unary(op, self.expr))

    def cast(self, dtype: DType) -> Value:
        """Explicit conversion to ``dtype`` (to bool: truthiness)."""
        return self.builder.cast(self, dtype)


class _MetaField:
    """``t.shape`` / ``t.stride``: index with a compile-time dimension."""

    def __init__(self, tensor: TensorHandle, field: str) -> None:
        self.tensor, self.field = tensor, field

    def __getitem__(self, dim: int) -> Value:
        b = self.tensor.builder
        return b.wrap(b.meta(self.tensor.name, self.field, dim))


class TensorHandle(BufRef):
    """A tensor parameter or shared array of a builder: ``t[i]`` loads, ``t[i] = v`` stores
    (one linear storage index, or one index per dimension combined with the strides);
    ``t.len``, ``t.shape[d]``, ``t.stride[d]``, ``t.offset`` read its metadata."""

    builder: KernelBuilder

    def __init__(self, builder: KernelBuilder, name: str) -> None:
        super().__init__(name)
        object.__setattr__(self, "builder", builder)

    @property
    def dtype(self) -> DType:
        """Element dtype (a line dtype for Line tensors)."""
        return self.builder.buffers[self.name].dtype

    @property
    def rank(self) -> int:
        """Tensor rank (0 for shared arrays)."""
        return self.builder.buffers[self.name].rank

    @property
    def len(self) -> Value | int:
        """Logical element (line) count; a shared array's compile-time size."""
        return self.builder.call_value("len", self)

    @property
    def shape(self) -> _MetaField:
        """``shape[d]`` (u32)."""
        return _MetaField(self, "shape")

    @property
    def stride(self) -> _MetaField:
        """``stride[d]`` in elements (lines) (u32)."""
        return _MetaField(self, "stride")

    @property
    def offset(self) -> Value:
        """Storage index of the first element (u32; views)."""
        return self.builder.wrap(self.builder.meta(self.name, "offset"))

    def _index(self, index: Any) -> ir.Expr:
        parts = list(index) if isinstance(index, tuple) else [index]
        return self.builder.index(self.name, [_raw(p) for p in parts])

    def __getitem__(self, index: Any) -> Value:
        return self.builder.wrap(self.builder.load(self.name, self._index(index)))

    def __setitem__(self, index: Any, value: Any) -> None:
        self.builder.store(self.name, self._index(index), _raw(value))


def _raw(value: Any) -> Any:
    """What the scope takes: an IR expression, a Python literal or a buffer reference."""
    if isinstance(value, Value):
        return value.expr
    if isinstance(value, TensorHandle):
        return BufRef(value.name)
    return value


class KernelBuilder(Scope):
    """Builds a kernel in code; ``build()`` gives the ``KernelIR``, ``kernel()`` a launchable
    kernel.

    Args:
        name: Kernel name.
        cube_dim: Units per cube (an int or 1-3 ints); ``CUBE_DIM*`` fold to it.
        unit_work: Name of an integer scalar parameter whose value estimates each unit's work
            (``KernelIR.unit_work``); None: one element per unit.

    Raises:
        CompileError: On every ill-typed construction (naming the kernel).
    """

    def __init__(self, name: str, cube_dim: int | tuple[int, ...] = 256,
                 unit_work: str | None = None) -> None:
        dims = (cube_dim,) if isinstance(cube_dim, int) else tuple(cube_dim)
        if not 1 <= len(dims) <= 3 or any(not isinstance(d, int) or d < 1 for d in dims):
            raise Scope(name).error(f"cube_dim must be 1-3 positive ints, got {cube_dim!r}")
        super().__init__(name, (*dims, 1, 1)[:3])  # type: ignore[arg-type]
        self.unit_work = unit_work

    # ---------------------------------------------------------------------- wrapping
    def wrap(self, value: Any) -> Any:
        """An IR expression as a ``Value`` (Python literals stay literals)."""
        return Value(self, value) if isinstance(value, EXPRS) else value

    def binary_value(self, op: str, a: Any, b: Any) -> Value:
        """A binary operator (``add``, ``lt``, ``shl``...) on values or numbers."""
        return self.wrap(self.binary(op, _raw(a), _raw(b)))

    def call_value(self, op: str, *args: Any) -> Any:
        """A builtin of ``scope.CALLS`` (math, select, min/max, plane ops...) on values."""
        return self.wrap(self.call(op, [_raw(a) for a in args]))

    def __getattr__(self, name: str) -> Any:
        if name in POSITIONS:
            return self.wrap(self.position(name))
        if name in MATH:
            return lambda *args: self.call_value(name, *args)
        raise AttributeError(f"KernelBuilder has no attribute {name!r}")

    # ---------------------------------------------------------------------- declarations
    def tensor(self, name: str, dtype: DType, rank: int = 1, line_size: int = 1,
               write: bool | None = None) -> TensorHandle:
        """Declare a tensor parameter (parameters follow declaration order).

        Args:
            name: Parameter name.
            dtype: Element dtype.
            rank: Rank of the tensors it accepts.
            line_size: 2 or 4 views the tensor as lines of that many elements (1: scalars).
            write: True marks it written, False makes stores an error; None (default):
                written when the kernel stores into it.

        Returns:
            The tensor handle.
        """
        try:
            element = line(dtype, line_size)
        except TypeError as exc:
            raise self.error(str(exc)) from exc
        buf = self.add_tensor(name, element, rank)
        if write:
            buf.written = True
        elif write is False:
            self.readonly.add(name)
        return TensorHandle(self, name)

    def scalar(self, name: str, dtype: DType) -> Value:
        """Declare a scalar parameter: a runtime value (changing it compiles nothing)."""
        return Value(self, self.add_scalar(name, dtype))

    def shared(self, dtype: DType, size: int, name: str | None = None) -> TensorHandle:
        """Declare a shared-memory array of ``size`` elements (one per cube)."""
        if name is None:
            self.temps += 1
            name = f"_shared{self.temps}"
        self.add_shared(name, dtype, size)
        return TensorHandle(self, name)

    def local(self, dtype: DType, init: Any = None, name: str | None = None) -> Value:
        """A mutable local variable (zero unless ``init`` is given); assign with ``assign``."""
        var = self.temp(dtype, "_v") if name is None else self.declare(name, dtype)
        if init is not None:
            self.set(var, init)
        return Value(self, var)

    def set(self, target: Any, value: Any) -> None:
        """Assign ``value`` to a local (converted to its type)."""
        var = _raw(target)
        if not isinstance(var, ir.Var) or var.name not in self.locals:
            raise self.error("set() needs a local from local() or a loop variable")
        self.assign(var.name, _raw(value))

    # ---------------------------------------------------------------------- values
    def const(self, value: Literal, dtype: DType | None = None) -> Value:
        """A typed constant (default dtype: bool, i32 or f32 from the Python type)."""
        return Value(self, self.typed(value, dtype))

    def cast(self, value: Any, dtype: DType) -> Value:
        """Explicit conversion (to bool: truthiness)."""
        return Value(self, self.typed(self.explicit_cast(_raw(value), dtype)))

    def select(self, cond: Any, a: Any, b: Any) -> Value:
        """``a`` where ``cond`` is true, else ``b`` (both evaluated, promoted together)."""
        return Value(self, self.typed(self.call("select", [_raw(cond), _raw(a), _raw(b)])))

    def and_(self, a: Any, b: Any) -> Value:
        """Logical and of two truth values."""
        return Value(self, self.typed(self.logical("and", _raw(a), _raw(b))))

    def or_(self, a: Any, b: Any) -> Value:
        """Logical or of two truth values."""
        return Value(self, self.typed(self.logical("or", _raw(a), _raw(b))))

    def not_(self, a: Any) -> Value:
        """Logical not of a truth value."""
        return Value(self, self.typed(self.unary("not", _raw(a))))

    def index_of(self, tensor: TensorHandle, pos: Any) -> Value:
        """Storage index of logical (row-major) position ``pos`` of ``tensor``: unravelled
        against its shape, dotted with its strides, plus its offset (reads views in place)."""
        return Value(self, self.strided_index(_raw(tensor), _raw(pos)))

    def atomic_add(self, tensor: TensorHandle, index: Any, value: Any) -> Value:
        """Atomically add ``value`` to ``tensor[index]`` (now); returns the old value."""
        return self._atomic("atomic_add", tensor, index, value)

    def atomic_min(self, tensor: TensorHandle, index: Any, value: Any) -> Value:
        """Atomically lower integer ``tensor[index]`` to ``value`` (now); returns the old
        value."""
        return self._atomic("atomic_min", tensor, index, value)

    def atomic_max(self, tensor: TensorHandle, index: Any, value: Any) -> Value:
        """Atomically raise integer ``tensor[index]`` to ``value`` (now); returns the old
        value."""
        return self._atomic("atomic_max", tensor, index, value)

    def _atomic(self, op: str, tensor: TensorHandle, index: Any, value: Any) -> Value:
        expr = self.call(op, [_raw(tensor), _raw(index), _raw(value)])
        old = self.temp(expr.dtype, "_old")
        self.emit(ir.Assign(old, expr, self.lineno))
        return Value(self, old)

    def sync_units(self) -> None:
        """Barrier: every unit of the cube waits here."""
        self.barrier()

    # ---------------------------------------------------------------------- control flow
    @contextmanager
    def for_range(self, start: Any, stop: Any = None, step: int = 1,
                  name: str | None = None) -> Iterator[Any]:
        """``for i in range(start, stop, step)`` (``for_range(n)``: 0 to n); yields ``i``."""
        if stop is None:
            start, stop = 0, start
        with super().for_range(_raw(start), _raw(stop), step, name) as var:
            yield Value(self, var)

    @contextmanager
    def if_(self, cond: Any) -> Iterator[None]:
        """Statements in the block run where ``cond`` is true; ``else_()`` may follow."""
        with super().if_(_raw(cond)):
            yield

    @contextmanager
    def while_(self, cond: Any) -> Iterator[None]:
        """Repeat while ``cond`` is true (re-evaluated each iteration; build it from locals)."""
        with super().while_(_raw(cond)):
            yield

    def break_(self) -> None:
        """Leave the innermost loop."""
        self.jump("break")

    def continue_(self) -> None:
        """Next iteration of the innermost loop."""
        self.jump("continue")

    def return_(self) -> None:
        """End this unit early."""
        self.jump("return")

    # ---------------------------------------------------------------------- results
    def build(self) -> ir.KernelIR:
        """The kernel IR (features worked out from the body)."""
        kernel = self.finish()
        if self.unit_work is not None:
            param = next((p for p in kernel.params if p.name == self.unit_work), None)
            if param is None or param.tensor or not param.dtype.is_integer:
                raise self.error(f"unit_work must name an integer scalar parameter, got "
                                 f"{self.unit_work!r}")
            kernel.unit_work = self.unit_work
        return kernel

    def kernel(self) -> IRKernel:
        """A launchable kernel: ``Kernel.from_ir(self.build())``."""
        from burn_cube.kernel import Kernel

        return Kernel.from_ir(self.build())

