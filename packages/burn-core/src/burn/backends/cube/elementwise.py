"""Elementwise ops of the cube backends: one burn-cube kernel per op-table row with a lowering.

Every row with a `cube` expression (arithmetic, math, comparison, bitwise, casts, mask ops and
the activations written as expressions) becomes a backend method that broadcasts its inputs as
stride-0 views, reads strided inputs in place and writes a new contiguous tensor. Inputs that
are all dense and of the output's shape are seen as rank-1 views, so one kernel per dtype
serves every shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from burn.dtype import DType
from burn.ir import OPS, OpDef
from burn.ir.cube import elementwise_kernel

from .tensor import CubeTensor, Shape


def broadcast_view(t: CubeTensor, shape: Shape) -> CubeTensor:
    """`t` seen with `shape` (NumPy broadcasting): stride 0 on the broadcast dimensions."""
    lead = len(shape) - len(t.shape)
    strides = [0] * lead
    for dim, (size, stride) in enumerate(zip(t.shape, t.strides, strict=True)):
        strides.append(0 if size == 1 and shape[lead + dim] != 1 else stride)
    return t.view(shape, tuple(strides))


def flat_view(t: CubeTensor) -> CubeTensor:
    """A dense tensor as rank 1."""
    return t.view((t.size,), (1,))


def run_elementwise(backend: Any, op: OpDef, args: tuple[Any, ...]) -> CubeTensor:
    """Launch `op`'s kernel over `args` (tensors in parameter order, host values) on `backend`.

    Returns:
        A new contiguous tensor of the broadcast shape and the row's result dtype.
    """
    tensors: list[CubeTensor] = []
    dtypes: dict[str, Any] = {}
    fixed: list[tuple[str, Any]] = []
    scalars: list[tuple[Any, bool]] = []  # (value, takes the input's dtype)
    for param, arg in zip(op.params, args, strict=True):
        if param.is_tensor:
            tensors.append(arg)
            dtypes[param.name] = arg.dtype
        elif param.type == "dtype":
            fixed.append((param.name, arg))
        elif arg is None:
            fixed.append((param.name, None))
        elif param.type in ("scalar", "scalar?", "float", "float?"):
            scalars.append((arg, param.type.startswith("scalar")))
        else:
            fixed.append((param.name, arg))
    out_dtype = op.result_dtypes(dtypes, dict(fixed))[0]
    shape = tuple(int(d) for d in _broadcast(t.shape for t in tensors))
    out = backend.empty(shape, out_dtype)
    if out.size == 0:
        return out
    if all(t.shape == shape and t.is_contiguous for t in tensors):
        views, out_view = [flat_view(t) for t in tensors], flat_view(out)
    else:
        views, out_view = [broadcast_view(t, shape) for t in tensors], out
    kernel = elementwise_kernel(op, (*(t.dtype for t in tensors), out_dtype), len(out_view.shape),
                                tuple(fixed))
    numbers = [_scalar(value, tensors[0].dtype if own else DType.float32)
               for value, own in scalars]
    backend.launch(kernel, out.size, *(v.array for v in views), *numbers, out_view.array)
    return out


def _scalar(value: Any, dtype: DType) -> Any:
    """A host number as the kernel's scalar (ints of an int tensor, floats otherwise)."""
    if dtype.is_float:
        return float(value)
    if dtype is DType.bool:
        return bool(value)
    return int(value)


def _broadcast(shapes: Any) -> Shape:
    import numpy as np

    return tuple(np.broadcast_shapes(*shapes))


def _method(op: OpDef) -> Callable[..., Any]:
    def method(self: Any, *args: Any) -> Any:
        return run_elementwise(self, op, args)

    method.__name__ = method.__qualname__ = op.name
    method.__doc__ = f"`{op.signature}` as one burn-cube kernel."
    return method


#: Backend methods of every row with a burn-cube lowering.
ELEMENTWISE_METHODS: dict[str, Callable[..., Any]] = {
    name: _method(op) for name, op in OPS.items() if op.cube is not None}

__all__ = ["ELEMENTWISE_METHODS", "broadcast_view", "flat_view", "run_elementwise"]
