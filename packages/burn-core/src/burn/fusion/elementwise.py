"""The elementwise fuser: a block of elementwise op records becomes one burn-cube kernel.

A block is a run of recorded ops whose results share one shape (inputs may broadcast to it).
Only the ops whose results are needed (held by a handle, or read by a later block) and the ops
feeding them are computed; each needed result is one output of the kernel. The kernel is built
with burn-cube's `KernelBuilder` from the rows' lowerings (`burn.ir.cube`'s emitter, the one the
cube backends' one-op kernels use), each op's value rounded to its result dtype
as the unfused op would store it, and kept in a local, so values equal the unfused ops'.

Kernels are cached by the block's signature (ops, how their arguments connect, dtypes, which
numbers are None, the compile-time arguments, rank and line width); the numbers themselves are
runtime scalars, so a training loop whose learning rate or step count changes reuses its
kernels. Launches are planned once per signature and argument layout.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from typing import Any, cast

from burn.backends.cube.elementwise import CUBE_DIM, LANES, LINE_DTYPES, broadcast_view
from burn.dtype import DType
from burn.fusion.handle import Pending
from burn.fusion.stats import STATS
from burn.ir import OPS, TensorIR
from burn.ir.cube import CUBE_DTYPES, cube_dtype
from burn.ir.cube import _emit as emit_lowering  # the lowerings' one emitter, shared

#: Most launch plans a stream keeps (all are dropped when full).
MAX_PLANS = 4096
#: A block's signature: (rank, lanes, input dtypes, ops, written op indices), where an op is
#: (name, arguments, result dtype) and an argument is ("in", k), ("op", j), ("num", dtype)
#: or ("fixed", value); dtypes by `id`.
Signature = tuple[Any, ...]
_KERNELS: dict[Signature, Any] = {}


def fusable(dtypes: Iterable[DType]) -> bool:
    """Whether the fuser can compute an op over tensors (and a cast to dtypes) of `dtypes`:
    all of a dtype burn-cube has."""
    return all(d in CUBE_DTYPES for d in dtypes)


def run_block(inner: Any, block: list[Pending], values: dict[int, Any], needed: set[int],
              plans: dict[Any, Any]) -> dict[int, Any]:
    """Compute the needed results of `block` on `inner` (a cube backend).

    Args:
        inner: the backend computing.
        block: recorded ops whose results share one shape, in stream order.
        values: inner primitives by tensor id (the block's inputs from outside it).
        needed: ids of results that must be written.
        plans: the stream's launch plans (filled here).
    Returns:
        The written results by tensor id.
    """
    live = _live(block, needed)
    STATS.ops_dead += len(block) - len(live)
    if not live:
        return {}
    if len(live) == 1:
        op, args, out = live[0]
        result = getattr(inner, op.name)(*(values[a.id] if type(a) is TensorIR else a
                                          for a in args))
        STATS.kernels_launched += 1
        return {out.id: result}
    return _launch(inner, live, values, needed, plans)


def _live(block: list[Pending], needed: set[int]) -> list[Pending]:
    """The ops of `block` whose results are needed or feed a needed one, in order."""
    want = set(needed)
    live = []
    for record in reversed(block):
        if record.out.id in want:
            live.append(record)
            want.update(a.id for a in record.args if type(a) is TensorIR)
    live.reverse()
    return live


def _launch(inner: Any, live: list[Pending], values: dict[int, Any], needed: set[int],
            plans: dict[Any, Any]) -> dict[int, Any]:
    """One kernel for `live` (two ops or more)."""
    inputs: list[Any] = []  # inner primitives read by the kernel
    slot: dict[int, tuple[str, int]] = {}
    ops: list[tuple[Any, ...]] = []
    numbers: list[Any] = []
    for j, (op, values_in, out) in enumerate(live):
        args: list[tuple[str, Any]] = []
        first: Any = None  # the dtype of the op's first tensor
        for role, value in zip(_roles(op), values_in, strict=True):
            if role is _TENSOR:
                where = slot.get(value.id)
                if where is None:
                    where = slot[value.id] = ("in", len(inputs))
                    inputs.append(values[value.id])
                args.append(where)
                first = first or value.dtype
            elif role is _FIXED or value is None:
                args.append(("fixed", value))
            else:  # a number: of the tensors' dtype, or a float parameter
                dtype = (first if role is _SCALAR or first.is_float else
                         out.dtype if out.dtype.is_float else DType.float32)
                args.append(("num", id(dtype)))
                numbers.append(_CONVERT[id(dtype)](value))
        slot[out.id] = ("op", j)
        ops.append((op.name, tuple(args), id(out.dtype)))
    written = tuple(j for j, record in enumerate(live) if record.out.id in needed)
    shape = cast(tuple[int, ...], live[-1].out.shape)
    size = math.prod(shape)
    arrays = [t.array for t in inputs]
    dense = all(a.shape == shape and (a.base is None or t.is_contiguous)
                for a, t in zip(arrays, inputs, strict=True))
    rank = 1 if dense else len(shape)
    one = inputs[0].dtype
    lanes = LANES if (dense and not size % LANES and one in LINE_DTYPES[inner.runtime.name]
                      and all(t.dtype is one for t in inputs)
                      and all(op[2] == id(one) for op in ops)
                      and all(a.offset % LANES == 0 for a in arrays)) else 1
    signature = (rank, lanes, tuple(id(t.dtype) for t in inputs), tuple(ops), written)
    outs = [inner.empty(shape, live[j].out.dtype) for j in written]
    if size:
        key = (signature, tuple(_layout(a) for a in arrays))
        launcher = plans.get(key)
        if launcher is not None:
            STATS.cache_hits += 1
        else:
            launcher = _plan(inner, signature, size, shape, dense, inputs, numbers, outs)
            if len(plans) >= MAX_PLANS:
                plans.clear()
            plans[key] = launcher
        launcher([*arrays, *numbers, *(o.array for o in outs)])
        STATS.kernels_launched += 1
    STATS.ops_fused += len(live)
    return {live[j].out.id: o for j, o in zip(written, outs, strict=True)}


_TENSOR, _SCALAR, _FLOAT, _FIXED = "tensor", "scalar", "float", "fixed"
_ROLES: dict[str, tuple[str, ...]] = {}
#: Dtypes by id (signatures hold ids: enum members hash in Python code, ints do not).
_DTYPES = {id(d): d for d in DType}
#: How a host number becomes a kernel scalar, by the id of its dtype.
_CONVERT: dict[int, Callable[[Any], Any]] = {
    id(d): float if d.is_float else bool if d is DType.bool else int for d in DType}


def _roles(op: Any) -> tuple[str, ...]:
    """Per parameter of `op`: a tensor, a number of the tensors' dtype (``scalar``), a float
    number, or a compile-time argument (the dtype of casts)."""
    roles = _ROLES.get(op.name)
    if roles is None:
        roles = _ROLES[op.name] = tuple(
            _TENSOR if p.is_tensor else _SCALAR if p.type in ("scalar", "scalar?")
            else _FLOAT if p.type in ("float", "float?") else _FIXED for p in op.params)
    return roles


def _plan(inner: Any, signature: Signature, size: int, shape: tuple[int, ...], dense: bool,
          inputs: list[Any], numbers: list[Any], outs: list[Any]) -> Callable[[Any], None]:
    """The launcher of `signature`'s kernel over arguments laid out as these (in lines where
    the signature asks for them and the lowerings have a line form, else by element)."""
    start = time.perf_counter()
    kernel = _kernel(signature)
    if kernel is None:  # an op without a line form: by element
        signature = (signature[0], 1, *signature[2:])
        kernel = _kernel(signature)
    lanes = signature[1]
    if dense:
        views = [_flat(t.array, size) for t in (*inputs, *outs)]
    else:
        views = [broadcast_view(t, shape).array for t in inputs] + [o.array for o in outs]
    counts = (max(1, -(-size // lanes // CUBE_DIM)), 1, 1)
    n_in = len(inputs)
    launcher: Callable[[Any], None] = kernel.plan(inner.runtime, counts, CUBE_DIM,
                                                  *views[:n_in], *numbers, *views[n_in:])
    STATS.compile_s += time.perf_counter() - start
    return launcher


def _kernel(signature: Signature) -> Any:
    """The cached kernel of a block signature; None where it asks for lines and an op has
    no line form."""
    if signature in _KERNELS:
        STATS.cache_hits += 1
        return _KERNELS[signature]
    from burn_cube.errors import CompileError

    try:
        kernel = _build(signature)
    except CompileError:
        if signature[1] == 1:
            raise
        kernel = None
    _KERNELS[signature] = kernel
    STATS.plans += kernel is not None
    return kernel


def _build(signature: Signature) -> Any:
    """The kernel of a block signature."""
    from burn_cube import KernelBuilder
    from burn_cube.types import line

    rank, lanes, in_ids, ops, written = signature
    in_dtypes = [_DTYPES[i] for i in in_ids]
    b = KernelBuilder(f"fused_{len(ops)}_ops")
    ins = [b.tensor(f"in{k}", cube_dtype("fusion", d), rank=rank, line_size=lanes, write=False)
           for k, d in enumerate(in_dtypes)]
    scalars = iter([b.scalar(f"s{n}", cube_dtype("fusion", _DTYPES[arg[1]]))
                    for n, arg in enumerate(a for op in ops for a in op[1] if a[0] == "num")])
    outs = [b.tensor(f"out{i}", cube_dtype("fusion", _DTYPES[ops[j][2]]), rank=rank,
                     line_size=lanes, write=True) for i, j in enumerate(written)]
    pos = b.ABSOLUTE_POS
    loaded: dict[int, Any] = {}
    results: list[Any] = []
    with b.if_(pos < outs[0].len):
        for name, args, out_dtype in ops:
            op = OPS[name]
            env: dict[str, Any] = {}
            for p, (role, value) in zip(op.params, args, strict=True):
                if role == "in":
                    if value not in loaded:
                        t = ins[value]
                        loaded[value] = b.local(line(cube_dtype(name, in_dtypes[value]), lanes),
                                                init=t[b.index_of(t, pos)])
                    env[p.name] = loaded[value]
                elif role == "op":
                    env[p.name] = results[value]
                elif role == "num":
                    env[p.name] = next(scalars)
                elif p.type == "dtype":
                    env[p.name] = cube_dtype(name, value)
                else:
                    env[p.name] = value
            target = line(cube_dtype(name, _DTYPES[out_dtype]), lanes)
            assert op.cube is not None  # recorded ops have a lowering
            value = emit_lowering(b, op.cube, env)
            if getattr(value, "dtype", target) != target:
                value = b.cast(value, target)
            results.append(b.local(target, init=value))
        for out, j in zip(outs, written, strict=True):
            out[b.index_of(out, pos)] = results[j]
    return b.kernel()


def _flat(array: Any, size: int) -> Any:
    """A dense array as a rank-1 view of `size` elements."""
    if array.base is None and len(array.shape) == 1:
        return array
    return array.view_unchecked((size,), (1,), array.offset)


def _layout(array: Any) -> Any:
    """An array's part of a launch key (shape; for views also strides, offset, storage)."""
    base = array.base
    return array.shape if base is None else (array.shape, array.strides, array.offset,
                                             base.shape)
