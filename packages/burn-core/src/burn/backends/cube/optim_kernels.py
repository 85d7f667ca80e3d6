"""Optimizer updates of the cube backends as one burn-cube kernel per parameter.

`adam_step` runs Adam / AdamW (L2 or decoupled weight decay, AMSGrad) and `sgd_step` SGD with
momentum over dense float tensors: each reads the param and gradient, updates the moment
buffers in place and writes the new param into a new buffer. They compute the float operations
of `burn.optim.buffers.TensorOps` in the same order, in the param's dtype, so trajectories match
the tensor-op path to rounding (the C compiler may contract a multiply and an add into one
fused multiply-add, about an ulp away). Either returns None (and changes nothing) for anything
else: another backend, dtypes or layouts that are not dense float, or state unlike the param.

Moment buffers are overwritten only when a step of these kernels made them (`_OWNED`); others
(fresh zeros, loaded state, tensor-op results) are copied once into a buffer of its own first.
"""

from __future__ import annotations

import math
import weakref
from functools import cache
from typing import Any

from burn.dtype import DType
from burn.frontend.tensor import Tensor
from burn.ir.cube import cube_dtype

from .backend import CubeBackend
from .layout import contiguous_copy
from .tensor import CubeTensor

#: Dtypes the kernels update (the others fall back to tensor ops). Not float16: the C target
#: keeps a fused kernel's float16 intermediates unrounded (excess precision), a few ulp away from
#: the tensor-op path, which rounds each op's result to float16.
FLOATS = (DType.float32, DType.float64)
#: Moment buffers these kernels allocated, which later steps overwrite in place.
_OWNED: weakref.WeakSet[CubeTensor] = weakref.WeakSet()


@cache
def adam_kernel(dtype: DType, decay: str, amsgrad: bool) -> Any:
    """One Adam update per element: `decay` is "" (none), "l2" (added to the gradient) or
    "decoupled" (AdamW's shrink of the param); `amsgrad` keeps the running maximum of the
    second moment. Scalars: lr-like factors as `TensorOps` computes them on the host."""
    from burn_cube import KernelBuilder

    cube = cube_dtype("adam_step", dtype)
    b = KernelBuilder("adam_step")
    weight, beta_1, rest_1, beta_2, rest_2, root_2, epsilon, step_size = (
        b.scalar(name, cube) for name in ("weight", "beta_1", "rest_1", "beta_2", "rest_2",
                                          "root_2", "epsilon", "step_size"))
    param = b.tensor("param", cube, write=False)
    grad = b.tensor("grad", cube, write=False)
    m1 = b.tensor("moment_1", cube, write=True)
    m2 = b.tensor("moment_2", cube, write=True)
    peak = b.tensor("max_moment_2", cube, write=True) if amsgrad else None
    out = b.tensor("out", cube, write=True)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < out.len):
        p = b.local(cube, param[param.offset + pos])
        g = b.local(cube, grad[grad.offset + pos])
        if decay == "l2":
            b.set(g, g + p * weight)
        elif decay == "decoupled":
            b.set(p, p * weight)
        first = b.local(cube, m1[pos] * beta_1 + g * rest_1)
        second = b.local(cube, m2[pos] * beta_2 + g * g * rest_2)
        m1[pos] = first
        m2[pos] = second
        if peak is not None:
            b.set(second, b.select(second > peak[pos], second, peak[pos]))
            peak[pos] = second
        out[pos] = p - first / (b.sqrt(second) / root_2 + epsilon) * step_size
    return b.kernel()


@cache
def sgd_kernel(dtype: DType, l2: bool, nesterov: bool) -> Any:
    """One SGD-with-momentum update per element (the momentum buffer already exists)."""
    from burn_cube import KernelBuilder

    cube = cube_dtype("sgd_step", dtype)
    b = KernelBuilder("sgd_step")
    weight, momentum, rest, lr = (b.scalar(name, cube)
                                  for name in ("weight", "momentum", "rest", "lr"))
    param = b.tensor("param", cube, write=False)
    grad = b.tensor("grad", cube, write=False)
    buf = b.tensor("momentum_buffer", cube, write=True)
    out = b.tensor("out", cube, write=True)
    pos = b.ABSOLUTE_POS
    with b.if_(pos < out.len):
        p = b.local(cube, param[param.offset + pos])
        g = b.local(cube, grad[grad.offset + pos])
        if l2:
            b.set(g, g + p * weight)
        new = b.local(cube, buf[pos] * momentum + g * rest)
        buf[pos] = new
        if nesterov:
            b.set(new, g + new * momentum)
        out[pos] = p - new * lr
    return b.kernel()


def _fusable(param: Tensor, grad: Tensor) -> CubeBackend | None:
    """The cube backend of `param` and `grad` when both are contiguous tensors of one shape and
    a float dtype of `FLOATS` on it (no decorator), else None."""
    bk = param._bk
    p, g = param._prim, grad._prim
    if (not isinstance(bk, CubeBackend) or grad._bk is not bk
            or not isinstance(p, CubeTensor) or not isinstance(g, CubeTensor)
            or p.dtype is not g.dtype or p.dtype not in FLOATS or p.shape != g.shape
            or not p.is_contiguous or not g.is_contiguous or not bk.supports(p.dtype)):
        return None
    return bk


def _owned(bk: CubeBackend, param: Tensor, state: dict[str, Any], key: str) -> Any | None:
    """The flat array of state buffer `key`, made one these kernels own (a copy, once, when it
    is not); None when it is not a tensor like `param`."""
    t = state.get(key)
    if not isinstance(t, Tensor) or t._bk is not bk or not isinstance(t._prim, CubeTensor):
        return None
    prim = t._prim
    if prim.dtype is not param._prim.dtype or prim.shape != param._prim.shape:
        return None
    if prim not in _OWNED:
        prim = contiguous_copy(bk, prim)
        _OWNED.add(prim)
        state[key] = param._wrap(prim)
    return prim.view((prim.size,), (1,)).array


def _flat(t: CubeTensor) -> Any:
    """`t` as a rank-1 array (contiguous: its offset kept)."""
    return t.view((t.size,), (1,)).array


def adam_step(param: Tensor, grad: Tensor, state: dict[str, Any], lr: float, beta_1: float,
              beta_2: float, epsilon: float, weight_decay: float, decoupled: bool,
              amsgrad: bool) -> Tensor | None:
    """Adam's update of `param` as one kernel, with `state`'s moments updated in place.

    Args:
        param: the param's inner tensor (read only).
        grad: its gradient (read only).
        state: Adam's state ("step", "moment_1", "moment_2", "max_moment_2" with amsgrad).
        lr, beta_1, beta_2, epsilon: Adam's hyperparameters.
        weight_decay: the L2 penalty, or AdamW's decoupled decay when `decoupled`.
        amsgrad: use the running maximum of the second moment.

    Returns:
        The new param values, or None when the kernel does not apply (nothing changed).
    """
    bk = _fusable(param, grad)
    if bk is None:
        return None
    keys = ("moment_1", "moment_2", "max_moment_2") if amsgrad else ("moment_1", "moment_2")
    if any(not isinstance(state.get(k), Tensor) or state[k]._prim.shape != param.shape
           or state[k]._bk is not bk or state[k]._prim.dtype is not param._prim.dtype
           for k in keys):
        return None
    moments = [_owned(bk, param, state, k) for k in keys]
    step = state["step"] = state["step"] + 1
    p = param._prim
    out = bk.empty(p.shape, p.dtype)
    if decoupled:
        decay, weight = ("decoupled", 1 - lr * weight_decay) if weight_decay else ("", 0.0)
    else:
        decay, weight = ("l2", weight_decay) if weight_decay else ("", 0.0)
    if p.size:
        bk.launch(adam_kernel(p.dtype, decay, amsgrad), p.size, weight, beta_1, 1 - beta_1,
                  beta_2, 1 - beta_2, math.sqrt(1 - beta_2**step), epsilon,
                  lr / (1 - beta_1**step), _flat(p), _flat(grad._prim), *moments, _flat(out))
    return param._wrap(out)


def sgd_step(param: Tensor, grad: Tensor, state: dict[str, Any], lr: float, momentum: float,
             dampening: float, weight_decay: float, nesterov: bool) -> Tensor | None:
    """SGD-with-momentum's update of `param` as one kernel, its momentum buffer updated in
    place (from the second step: the first one copies the gradient, through tensor ops).

    Args:
        param: the param's inner tensor (read only).
        grad: its gradient (read only).
        state: SGD's state ("momentum": the buffer).
        lr, momentum, dampening, weight_decay, nesterov: SGD's hyperparameters.

    Returns:
        The new param values, or None when the kernel does not apply (nothing changed).
    """
    bk = _fusable(param, grad)
    if bk is None or not momentum or "momentum" not in state:
        return None
    buf = _owned(bk, param, state, "momentum")
    if buf is None:
        return None
    p = param._prim
    out = bk.empty(p.shape, p.dtype)
    if p.size:
        bk.launch(sgd_kernel(p.dtype, bool(weight_decay), nesterov), p.size, weight_decay,
                  momentum, 1 - dampening, lr, _flat(p), _flat(grad._prim), buf, _flat(out))
    return param._wrap(out)
