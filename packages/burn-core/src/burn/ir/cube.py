"""Elementwise ops of the op table as burn-cube kernels, built with `burn_cube.KernelBuilder`.

`elementwise_kernel(op, dtypes)` turns a row's cube lowering into a kernel with one tensor
parameter per tensor input (read in place as strided views: broadcast inputs are views with
stride 0), one runtime scalar per number argument, and an output tensor. The cube backends and
the fusion decorator build on it; burn-cube is imported only when a kernel is built.

The lowering names burn-cube's IR ops (C semantics): ``div`` of integers truncates, as the
expression tables' ``div.int`` does.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from burn.dtype import DType, Kind
from burn.errors import DTypeError
from burn.ir.opdef import CubeExpr, OpDef

#: burn dtypes burn-cube has (no 8-bit ints).
CUBE_DTYPES = {DType.float64: "f64", DType.float32: "f32", DType.float16: "f16",
               DType.bfloat16: "bf16", DType.int64: "i64", DType.int32: "i32",
               DType.int8: "i8", DType.uint8: "u8", DType.bool: "bool_"}
_BINARY = {"add", "sub", "mul", "div", "pow", "lt", "le", "gt", "ge", "eq", "ne", "bitand",
           "bitor", "bitxor", "shl", "shr"}


def cube_dtype(op: str, dtype: DType) -> Any:
    """The burn-cube dtype of `dtype`.

    Raises:
        DTypeError: for a dtype burn-cube does not have.
    """
    found = _CUBE.get(dtype)
    if found is None:
        import burn_cube

        name = CUBE_DTYPES.get(dtype)
        if name is None:
            raise DTypeError(op, "no burn-cube kernel for this dtype", dtype=dtype.value)
        found = _CUBE[dtype] = getattr(burn_cube, name)
    return found


#: `cube_dtype`'s answers so far (every backend allocation asks).
_CUBE: dict[DType, Any] = {}


def elementwise_kernel(op: OpDef, dtypes: tuple[DType, ...], rank: int,
                       args: tuple[tuple[str, Any], ...] = (), lanes: int = 1,
                       rows: bool = False) -> Any:
    """A burn-cube kernel computing `op` elementwise (cached per op, dtypes, rank, the
    compile-time arguments and lanes).

    Args:
        op: a row with a cube lowering.
        dtypes: the dtype of each tensor parameter, in order, then of the result.
        rank: the rank of every tensor argument (inputs are views expanded to the output).
        args: compile-time host arguments: the `dtype` of casts, and which optional bounds of
            clamp are None (``(("min", None),)``: comparisons with None are None, and a select
            on None keeps its last operand).
        lanes: 2 or 4 reads and writes the tensors as `Line`s of that many elements (dense
            rank-1 views whose sizes and offsets are multiples of it; arithmetic and math only).
        rows: launched on a 2-d grid, ``CUBE_POS_Y`` the row (the leading dimensions
            flattened) and ``ABSOLUTE_POS_X`` the column (the last dimension): each cube
            unravels its row once, and the column part of every index is affine, so rows of
            dense or broadcast rows (a bias) take the C target's vectorized fast path.
    Returns:
        A `burn_cube` kernel taking the tensor inputs, then the number arguments (runtime
        scalars, in parameter order), then the output.
    Raises:
        DTypeError: when `op` has no lowering or a dtype has no burn-cube form.
        burn_cube.errors.CompileError: when the lowering uses an op lines do not have.
    """
    if op.cube is None:
        raise DTypeError(op.name, "no burn-cube lowering for this op")
    return _build(op, dtypes, rank, args, lanes, rows)


@cache
def _build(op: OpDef, dtypes: tuple[DType, ...], rank: int,
           args: tuple[tuple[str, Any], ...], lanes: int, rows: bool) -> Any:
    from burn_cube import KernelBuilder
    from burn_cube.types import line

    assert op.cube is not None  # elementwise_kernel checked it
    fixed = dict(args)
    b = KernelBuilder(op.name)
    tensors = iter(dtypes)
    env: dict[str, Any] = {}
    handles = []
    for p in op.params:
        if p.is_tensor:
            handle = b.tensor(p.name, cube_dtype(op.name, next(tensors)), rank=rank,
                              line_size=lanes, write=False)
            handles.append((p.name, handle))
        elif p.type == "dtype":
            env[p.name] = cube_dtype(op.name, fixed[p.name])
        elif p.name in fixed:
            env[p.name] = fixed[p.name]
        elif p.type in ("scalar", "scalar?", "float", "float?"):
            scalar_dtype = dtypes[0] if p.type.startswith("scalar") else _float_of(dtypes)
            env[p.name] = b.scalar(p.name, cube_dtype(op.name, scalar_dtype))
    out_dtype = cube_dtype(op.name, next(tensors))
    out = b.tensor("out", out_dtype, rank=rank, line_size=lanes, write=True)
    pos = b.ABSOLUTE_POS_X if rows else b.ABSOLUTE_POS
    index = (lambda t: row_index(b, t, rank, pos)) if rows else (lambda t: b.index_of(t, pos))
    with b.if_(pos < (out.shape[rank - 1] if rows else out.len)):
        for name, handle in handles:
            env[name] = handle[index(handle)]
        value = emit_row(b, op, env)
        out_dtype = line(out_dtype, lanes)
        if getattr(value, "dtype", out_dtype) != out_dtype:  # e.g. a select of bools is i32
            value = b.cast(value, out_dtype)
        out[index(out)] = value
    return b.kernel()


def unit_work(elements: int) -> int:
    """A unit's elements as the u32 scalar a kernel names in ``KernelBuilder(unit_work=...)``
    (the cpu runtime spreads a launch over its threads by its units times that), clamped to
    the u32 range."""
    return min(elements, 2**32 - 1)


def row_index(b: Any, t: Any, rank: int, col: Any, row: Any = None) -> Any:
    """Storage index of column `col` of row `row` (default ``CUBE_POS_Y``) of `t` (rows: the
    leading dimensions, row-major).

    Args:
        b: the `burn_cube.KernelBuilder`.
        t: a tensor handle of rank `rank`.
        rank: its rank.
        col: the column (a u32 value).
        row: the row (a u32 value), the same for every unit of a cube.
    Returns:
        The index, affine in `col` (its row part is the same for every unit of a cube).
    """
    index, rest = t.offset + col * t.stride[rank - 1], b.CUBE_POS_Y if row is None else row
    for dim in reversed(range(rank - 1)):
        coord = rest if dim == 0 else rest % t.shape[dim]
        index = index + coord * t.stride[dim]
        if dim:
            rest = rest // t.shape[dim]
    return index


def _float_of(dtypes: tuple[DType, ...]) -> DType:
    return next((d for d in dtypes if d.kind is Kind.FLOAT), DType.float32)


#: Ops outside the ``math`` and ``activation`` families whose float16 / bfloat16 values compute
#: in float32 (`emit_row`): library calls and compound lowerings.
WIDENED = frozenset(("float_powf", "float_powf_scalar", "float_remainder",
                     "float_remainder_scalar", "float_fmod", "float_fmod_scalar"))


def emit_row(b: Any, op: OpDef, env: dict[str, Any]) -> Any:
    """The value of `op`'s lowering over `env` (its parameters' builder values or constants).

    Math ops and activations (the ``math`` and ``activation`` families) and `WIDENED` ops of
    float16 and bfloat16 values compute in float32, an exact widening, and are rounded once
    where the caller stores them, as the NumPy backend and torch compute them: half-precision
    intermediates of a compound lowering (atanh's; sigmoid's exp(-x), inf below -11.09, made
    sigmoid and silu 0 there) lost digits, NVIDIA's Vulkan driver's float16 asin, acos, atan
    and erf missed by more than a few ulps, and WGSL's float16 pow by up to 10 (3 ** 10 gave
    59136, not 59040).

    Args:
        b: the `burn_cube.KernelBuilder`.
        op: a row with a cube lowering.
        env: the builder value (or Python constant) of each parameter by name.
    Returns:
        The builder value (its dtype may differ from the result's: callers cast on store).
    """
    assert op.cube is not None  # callers check
    if op.family in ("math", "activation") or op.name in WIDENED:
        env = {name: widened(b, value) for name, value in env.items()}
    return _emit(b, op.cube, env)


def work_dtype(dtype: DType) -> DType:
    """The dtype kernels compute `dtype` values in: float32 for float16 / bfloat16, else
    `dtype` (`widened` is the same for builder values)."""
    return DType.float32 if dtype in (DType.float16, DType.bfloat16) else dtype


def widened(b: Any, value: Any) -> Any:
    """`value` as float32 (lines kept) if it is a float16 or bfloat16 builder value."""
    from burn_cube.types import f32, line

    dtype = getattr(value, "dtype", None)
    if dtype is None or dtype.scalar.name not in ("f16", "bf16"):
        return value
    return b.cast(value, line(f32, dtype.lanes))


def _emit(b: Any, expr: CubeExpr | str | float | int | bool, env: dict[str, Any]) -> Any:
    """A lowering as builder values (parameter names from `env`, constants as literals)."""
    if isinstance(expr, str):
        return env[expr]
    if not isinstance(expr, tuple):
        return expr
    name, *operands = expr
    if name == "cast":
        return b.cast(_emit(b, operands[0], env), env[operands[1]])
    values = [_emit(b, o, env) for o in operands]
    if any(v is None for v in values):  # an open bound of clamp: its test and select vanish
        return values[2] if name == "select" else None
    if name == "div" and not any(_is_float(v) for v in values):
        return b.binary_value("floordiv", *values)  # integers: C's truncating division
    if name in _BINARY:
        return b.binary_value(name, *values)
    if name in ("and", "or", "not"):
        return getattr(b, f"{name}_")(*values)
    if name == "invert":
        return ~values[0]
    if name == "neg":
        return -values[0]
    if name == "select":
        return b.select(*values)
    return b.call_value(name, *values)


def _is_float(value: Any) -> bool:
    dtype = getattr(value, "dtype", None)
    return isinstance(value, float) or (dtype is not None and dtype.is_float)
