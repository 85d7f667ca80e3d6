"""Elementwise ops of the cube backends: one burn-cube kernel per op-table row with a lowering.

Every row with a `cube` expression (arithmetic, math, comparison, bitwise, casts, mask ops and
the activations written as expressions) becomes a backend method that broadcasts its inputs as
stride-0 views, reads strided inputs in place and writes a new contiguous tensor. Inputs that
are all dense and of the output's shape are seen as rank-1 views, so one kernel per dtype
serves every shape; where their dtype is in `LINE_DTYPES` and sizes and offsets allow, as
`Line`s of `LANES` elements. Other layouts run by rows where the last dimension is long enough.
What an op needs per dtypes (result dtype, scalar dtypes, kernels) is worked out on its first
launch and kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from burn.dtype import DType
from burn.ir import OPS, OpDef
from burn.ir.cube import elementwise_kernel

from .kernel_cache import cached_kernel
from .tensor import CubeTensor, Shape, layout_key, whole_lines


def broadcast_view(t: CubeTensor, shape: Shape) -> CubeTensor:
    """`t` seen with `shape` (NumPy broadcasting): stride 0 on the broadcast dimensions (a view
    made directly: it reads nothing outside `t`, so it needs no bounds check)."""
    array = t.array
    own = array.shape
    lead = len(shape) - len(own)
    strides = [0] * lead
    for dim, (size, stride) in enumerate(zip(own, array.strides, strict=True)):
        strides.append(0 if size == 1 and shape[lead + dim] != 1 else stride)
    if own == shape and tuple(strides) == array.strides:
        return t
    view = array.view_unchecked(tuple(shape), tuple(strides), array.offset)
    view.address = array.address  # the storage's, where known
    return CubeTensor(view, t.dtype)


def run_positions(b: Any, bound: Any, run: int) -> list[Any]:
    """The positions a unit of a 1-d launch computes, `run` of them a span of
    ``ceil(bound / run)`` apart (adjacent units at adjacent positions; `GPU_RUN` on GPUs).

    Args:
        b: the `burn_cube.KernelBuilder`.
        bound: the number of positions (a u32 value).
        run: positions a unit.
    Returns:
        Builder values, ``ABSOLUTE_POS`` first (each to be checked against `bound`).
    """
    if run == 1:
        return [b.ABSOLUTE_POS]
    span = b.local(b.ABSOLUTE_POS.dtype, (bound + (run - 1)) // run)
    return [b.ABSOLUTE_POS, *(b.ABSOLUTE_POS + span * k for k in range(1, run))]


def flat_view(t: CubeTensor) -> CubeTensor:
    """A dense tensor as rank 1."""
    return t.view((t.size,), (1,))


#: Dtypes whose dense kernels read and write `Line`s of `LANES` (where every tensor has one),
#: per runtime (CUDA has no 4-wide f64 vector type).
LINE_DTYPES = {"cpu": frozenset((DType.float32, DType.float64)),
               "wgpu": frozenset((DType.float32,)), "cuda": frozenset((DType.float32,))}
_ANY_LINE_DTYPE = frozenset().union(*LINE_DTYPES.values())
LANES = 4
#: Strided or broadcast inputs run by rows (`elementwise_kernel(rows=True)`: one cube row of
#: `ROW_CUBE` units per `ROW_CUBE` columns) where the last dimension has at least `ROW_MIN`
#: elements and there are at most `MAX_ROWS` rows (the y cube count of every runtime).
ROW_CUBE, ROW_MIN, MAX_ROWS = 256, 32, 65535
_SCALAR_TYPES = ("scalar", "scalar?", "float", "float?")
#: Units per cube of the 1-d launches.
CUBE_DIM = 256
#: Positions a unit of a GPU runtime's element-wise kernels computes where they are not read
#: as lines (the fused blocks' and the math kernels', a span apart; strided copies',
#: consecutive along the last dimension): one a unit
#: left the H200 at about half its bandwidth (the exact GELU over 16M floats 62 us against
#: torch's 36, heads copied back into [b, s, h * d] 28 us against 10).
GPU_RUN = 4


@dataclass
class _Spec:
    """What one op needs per tensor dtypes and compile-time arguments, worked out once."""

    op: OpDef
    dtypes: tuple[DType, ...]  # the tensor inputs', then the result's
    fixed: tuple[tuple[str, Any], ...]
    scalar_dtypes: tuple[DType, ...]  # the dtype each runtime scalar converts by
    lines: bool  # whether dense launches may use `LANES`-wide lines
    kernels: dict[tuple[int, int, bool], Any] = field(default_factory=dict)

    def kernel(self, rank: int, lanes: int, rows: bool = False, runtime: Any = None) -> Any:
        """The kernel for a rank, a line width (None: the lowering has no line form) and
        whether it is launched by rows (`elementwise_kernel`; a row of the op table is
        built only where `runtime`'s launch index misses it, `_lowered`)."""
        key = (rank, lanes, rows)
        if key not in self.kernels:
            from burn_cube.errors import CompileError

            try:
                if OPS.get(self.op.name) is self.op:
                    kernel = _lowered(self.op.name, self.dtypes, rank, self.fixed, lanes, rows)
                    if runtime is not None:
                        kernel.resolve(runtime)  # a lowering without a line form raises here
                else:
                    kernel = elementwise_kernel(self.op, self.dtypes, rank, self.fixed, lanes,
                                                rows)
                self.kernels[key] = kernel
            except CompileError:
                if lanes == 1:
                    raise
                self.kernels[key] = None
        return self.kernels[key]

    def by_rows(self, rank: int, views: list[Any]) -> tuple[Any, int]:
        """The row kernel (`elementwise_kernel(rows=True)`) and line width for broadcast or
        strided `views` (the result's last): lines of `LANES` where every view reads as whole
        lines along the last dim (a bias added to rows; not a broadcast along that dim) and a
        row holds at least `ROW_MIN` lines (shorter rows leave most units of a cube idle: on
        the cpu a [4, 32, 64] + [64] sum took up to twice as long in lines). On the cpu
        [8192, 512] + [512] took 1.2 ms against 2.4-3.0 at 1 thread; on an H200 the
        transformer step's 36 such sums 15 us each against 34."""
        runtime = views[0].runtime
        if self.lines and self.dtypes[-1] in LINE_DTYPES[runtime.name] and \
                views[-1].shape[-1] >= LANES * ROW_MIN and \
                all(whole_lines(v, LANES) for v in views):
            kernel = self.kernel(rank, LANES, rows=True, runtime=runtime)
            if kernel is not None:
                return kernel, LANES
        return self.kernel(rank, 1, rows=True), 1

    def dense(self, size: int, arrays: list[Any]) -> tuple[Any, int]:
        """The kernel and line width for dense inputs of `size` elements."""
        if self.lines and not size % LANES and \
                self.dtypes[-1] in LINE_DTYPES[arrays[0].runtime.name]:
            for a in arrays:
                if a.offset % LANES:
                    return self.kernel(1, 1), 1
            kernel = self.kernel(1, LANES, runtime=arrays[0].runtime)
            if kernel is not None:
                return kernel, LANES
        return self.kernel(1, 1), 1


_SPECS: dict[tuple[Any, ...], _Spec] = {}


@cached_kernel
def _lowered(op: str, dtypes: tuple[DType, ...], rank: int, fixed: tuple[tuple[str, Any], ...],
             lanes: int, rows: bool) -> Any:
    """`elementwise_kernel` of op-table row `op`, named for the launch index by its arguments
    (the row itself is burn-core's code)."""
    return elementwise_kernel(OPS[op], dtypes, rank, fixed, lanes, rows)


def _spec(op: OpDef, tensors: list[CubeTensor], fixed: tuple[tuple[str, Any], ...]) -> _Spec:
    key = (op.name, *(t.dtype for t in tensors), fixed)
    spec = _SPECS.get(key)
    if spec is None:
        names = [p.name for p in op.params if p.is_tensor]
        dtypes = {name: t.dtype for name, t in zip(names, tensors, strict=True)}
        out_dtype = op.result_dtypes(dtypes, dict(fixed))[0]
        given = dict(fixed)
        scalar_dtypes = tuple(tensors[0].dtype if p.type.startswith("scalar") else DType.float32
                              for p in op.params if not p.is_tensor and p.type in _SCALAR_TYPES
                              and not (p.name in given and given[p.name] is None))
        all_dtypes = (*(t.dtype for t in tensors), out_dtype)
        lines = len(set(all_dtypes)) == 1 and out_dtype in _ANY_LINE_DTYPE and \
            "cast" not in str(op.cube)
        spec = _SPECS[key] = _Spec(op, all_dtypes, fixed, scalar_dtypes, lines)
    return spec


def _roles(op: OpDef) -> tuple[int, ...]:
    """Per parameter of `op`: `_TENSOR`, `_NUMBER` (a runtime scalar unless None) or `_FIXED`
    (compile-time)."""
    roles = _ROLES.get(op.name)
    if roles is None:
        roles = _ROLES[op.name] = tuple(
            _TENSOR if p.is_tensor else _NUMBER if p.type in _SCALAR_TYPES else _FIXED
            for p in op.params)
    return roles


_TENSOR, _NUMBER, _FIXED = range(3)
_ROLES: dict[str, tuple[int, ...]] = {}


@dataclass(slots=True)
class _Launch:
    """One op's launch over one argument layout (see `run_elementwise`)."""

    shape: Shape  # the result's
    dtype: DType
    cube: Any  # the result's burn-cube dtype
    numbers: tuple[Callable[[Any], Any], ...]  # per runtime scalar: float, int or bool
    launch: Callable[[Any], None] | None  # None: the result is empty


#: Most launches a backend keeps (`CubeBackend.plans`; all are dropped when full).
MAX_PLANS = 4096


def run_elementwise(backend: Any, op: OpDef, args: tuple[Any, ...]) -> CubeTensor:
    """Launch `op`'s kernel over `args` (tensors in parameter order, host values) on `backend`.

    The launch is planned once per op, tensor dtypes and layouts (shape; for views also
    strides, offset and the storage's shape), compile-time arguments and which numbers are
    None, and kept in `backend.plans`; a planned launch only allocates the result and passes
    the storages and numbers (`burn_cube.IRKernel.plan`).

    Returns:
        A new contiguous tensor of the broadcast shape and the row's result dtype.
    """
    key: list[Any] = [op.name]
    arrays: list[Any] = []
    numbers: list[Any] = []
    for role, arg in zip(_roles(op), args, strict=True):
        if role == _TENSOR:
            array = arg.array
            arrays.append(array)
            key.append(id(arg.dtype))
            key.append(layout_key(array))
        elif role == _NUMBER:
            if arg is None:
                key.append(None)
            else:
                key.append(True)
                numbers.append(arg)
        else:
            key.append(arg)
    plans = backend.plans
    plan = plans.get(tuple(key))
    if plan is None:
        if len(plans) >= MAX_PLANS:
            plans.clear()
        plan = plans[tuple(key)] = _plan(backend, op, args)
    out = backend.alloc(plan.shape, plan.dtype, plan.cube, op.user_name)
    if plan.launch is not None:
        if numbers:
            arrays += [convert(value) for convert, value in zip(plan.numbers, numbers,
                                                                strict=True)]
        arrays.append(out.array)
        plan.launch(arrays)
    return out


def _plan(backend: Any, op: OpDef, args: tuple[Any, ...]) -> _Launch:
    """Work out the launch of `op` over arguments laid out as `args`: the kernel (dense
    inputs as rank-1 views, in lines where they allow; others by rows or by element), and
    its launcher taking the tensors' arrays, the numbers and the result's array."""
    tensors: list[CubeTensor] = []
    fixed: list[tuple[str, Any]] = []
    numbers: list[Any] = []
    for role, param, arg in zip(_roles(op), op.params, args, strict=True):
        if role == _TENSOR:
            tensors.append(arg)
        elif role == _FIXED or arg is None:
            fixed.append((param.name, arg))
        else:
            numbers.append(arg)
    spec = _spec(op, tensors, tuple(fixed))
    converts = tuple(_converter(dtype) for dtype in spec.scalar_dtypes)
    numbers = [convert(value) for convert, value in zip(converts, numbers, strict=True)]
    arrays = [t.array for t in tensors]
    shape = arrays[0].shape
    same = all(a.shape == shape for a in arrays)
    if not same:
        shape = tuple(int(d) for d in _broadcast(a.shape for a in arrays))
    out = backend.empty(shape, spec.dtypes[-1], op.user_name)
    plan = _Launch(out.shape, spec.dtypes[-1], out.array.dtype, converts, None)
    size = math.prod(shape)
    if size == 0:
        return plan
    rt = backend.runtime
    if same and all(a.base is None or t.is_contiguous for a, t in zip(arrays, tensors,
                                                                      strict=True)):
        views = [_flat(a, size) for a in (*arrays, out.array)]
        kernel, lanes = spec.dense(size, arrays)
        counts, dim = (max(1, -(-size // lanes // CUBE_DIM)), 1, 1), CUBE_DIM
    else:
        views = [broadcast_view(t, shape).array for t in tensors] + [out.array]
        rows = size // shape[-1]
        if len(shape) > 1 and shape[-1] >= ROW_MIN and rows <= MAX_ROWS:
            kernel, lanes = spec.by_rows(len(shape), views)
            counts, dim = (-(-shape[-1] // lanes // ROW_CUBE), rows, 1), ROW_CUBE
        else:
            kernel = spec.kernel(len(shape), 1)
            counts, dim = (max(1, -(-size // CUBE_DIM)), 1, 1), CUBE_DIM
    plan.launch = kernel.plan(rt, counts, dim, *views[:-1], *numbers, views[-1])
    return plan


def _flat(array: Any, size: int) -> Any:
    """A dense array as a rank-1 view of `size` elements (itself when it is one)."""
    if array.base is None and len(array.shape) == 1:
        return array
    view = array.view_unchecked((size,), (1,), array.offset)
    view.address = array.address  # the storage's, where known
    return view


def _converter(dtype: DType) -> Callable[[Any], Any]:
    """How a host number becomes the kernel's scalar of `dtype`: floats of a float tensor;
    ints of an int tensor, wrapped into its range as torch does (uint8 `mask_fill(m, -1)`
    fills 255)."""
    if dtype.is_float or dtype is DType.bool:
        return float if dtype.is_float else bool
    span = 1 << (8 * dtype.itemsize)
    low = 0 if dtype is DType.uint8 else -(span >> 1)
    return lambda value: (int(value) - low) % span + low


def _broadcast(shapes: Any) -> Shape:
    import numpy as np

    return tuple(np.broadcast_shapes(*shapes))


def _method(op: OpDef) -> Callable[..., Any]:
    """The backend method of `op`: `run_elementwise`, with the planned launch of one or two
    tensors, a tensor and a number, or a tensor and a compile-time argument (a cast's dtype)
    looked up directly (the most frequent ops)."""
    name, roles, user = op.name, _roles(op), op.user_name

    def method(self: Any, *args: Any) -> Any:
        return run_elementwise(self, op, args)

    def unary(self: Any, x: CubeTensor) -> Any:
        array = x.array
        plan = self.plans.get((name, id(x.dtype), array.shape if array.base is None
                               else layout_key(array)))
        if plan is None or plan.launch is None:
            return run_elementwise(self, op, (x,))
        out = self.alloc(plan.shape, plan.dtype, plan.cube, user)
        plan.launch((array, out.array))
        return out

    def binary(self: Any, x: CubeTensor, y: CubeTensor) -> Any:
        a, b = x.array, y.array
        plan = self.plans.get((name, id(x.dtype), a.shape if a.base is None else layout_key(a),
                               id(y.dtype), b.shape if b.base is None else layout_key(b)))
        if plan is None or plan.launch is None:
            return run_elementwise(self, op, (x, y))
        out = self.alloc(plan.shape, plan.dtype, plan.cube, user)
        plan.launch((a, b, out.array))
        return out

    def with_number(self: Any, x: CubeTensor, value: Any) -> Any:
        array = x.array
        plan = self.plans.get((name, id(x.dtype), array.shape if array.base is None
                               else layout_key(array), None if value is None else True))
        if plan is None or plan.launch is None or value is None:
            return run_elementwise(self, op, (x, value))
        out = self.alloc(plan.shape, plan.dtype, plan.cube, user)
        plan.launch((array, plan.numbers[0](value), out.array))
        return out

    def with_fixed(self: Any, x: CubeTensor, fixed: Any) -> Any:
        array = x.array
        plan = self.plans.get((name, id(x.dtype), array.shape if array.base is None
                               else layout_key(array), fixed))
        if plan is None or plan.launch is None:
            return run_elementwise(self, op, (x, fixed))
        out = self.alloc(plan.shape, plan.dtype, plan.cube, user)
        plan.launch((array, out.array))
        return out

    direct: dict[tuple[int, ...], Callable[..., Any]] = {(_TENSOR,): unary,
                                                         (_TENSOR, _TENSOR): binary,
                                                         (_TENSOR, _NUMBER): with_number,
                                                         (_TENSOR, _FIXED): with_fixed}
    chosen = direct.get(roles, method)
    chosen.__name__ = chosen.__qualname__ = op.name
    chosen.__doc__ = f"`{op.signature}` as one burn-cube kernel."
    return chosen


#: Backend methods of every row with a burn-cube lowering.
ELEMENTWISE_METHODS: dict[str, Callable[..., Any]] = {
    name: _method(op) for name, op in OPS.items() if op.cube is not None}

__all__ = ["ELEMENTWISE_METHODS", "broadcast_view", "flat_view", "run_elementwise"]
