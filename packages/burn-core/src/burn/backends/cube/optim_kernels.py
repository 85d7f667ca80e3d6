"""Optimizer updates of the cube backends as one burn-cube kernel per parameter.

`adam_step` runs Adam / AdamW (L2 or decoupled weight decay, AMSGrad), `sgd_step` SGD with
momentum, `rmsprop_step` RMSProp (centered, momentum) and `adagrad_step` AdaGrad over dense
float tensors: each reads the param and gradient, updates the state buffers in place and writes
the new param into a new buffer. They compute the float operations
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
from collections.abc import Callable
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


class _Update:
    """An update kernel being built, its arguments in order: the scalars, param and grad, then
    the state buffers and `out` (`state`)."""

    def __init__(self, name: str, dtype: DType, scalars: tuple[str, ...]) -> None:
        from burn_cube import KernelBuilder

        self.cube = cube_dtype(name, dtype)
        self.b = KernelBuilder(name)
        self.scalars = [self.b.scalar(scalar, self.cube) for scalar in scalars]
        self.param = self.b.tensor("param", self.cube, write=False)
        self.grad = self.b.tensor("grad", self.cube, write=False)

    def state(self, name: str) -> Any:
        """A written dense tensor argument (a state buffer, or `out` last)."""
        return self.b.tensor(name, self.cube, write=True)

    def read(self, pos: Any, l2: Any | None) -> tuple[Any, Any]:
        """The param and gradient at `pos` as locals, `l2` (a weight scalar) times the param
        added to the gradient when given."""
        b, cube, param, grad = self.b, self.cube, self.param, self.grad
        p = b.local(cube, param[param.offset + pos])
        g = b.local(cube, grad[grad.offset + pos])
        if l2 is not None:
            b.set(g, g + p * l2)
        return p, g


@cache
def adam_kernel(dtype: DType, decay: str, amsgrad: bool) -> Any:
    """One Adam update per element: `decay` is "" (none), "l2" (added to the gradient) or
    "decoupled" (AdamW's shrink of the param); `amsgrad` keeps the running maximum of the
    second moment. Scalars: lr-like factors as `TensorOps` computes them on the host."""
    u = _Update("adam_step", dtype, ("weight", "beta_1", "rest_1", "beta_2", "rest_2",
                                     "root_2", "epsilon", "step_size"))
    b, cube = u.b, u.cube
    weight, beta_1, rest_1, beta_2, rest_2, root_2, epsilon, step_size = u.scalars
    m1, m2 = u.state("moment_1"), u.state("moment_2")
    peak = u.state("max_moment_2") if amsgrad else None
    out = u.state("out")
    pos = b.ABSOLUTE_POS
    with b.if_(pos < out.len):
        p, g = u.read(pos, weight if decay == "l2" else None)
        if decay == "decoupled":
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
    u = _Update("sgd_step", dtype, ("weight", "momentum", "rest", "lr"))
    b, cube = u.b, u.cube
    weight, momentum, rest, lr = u.scalars
    buf, out = u.state("momentum_buffer"), u.state("out")
    pos = b.ABSOLUTE_POS
    with b.if_(pos < out.len):
        p, g = u.read(pos, weight if l2 else None)
        new = b.local(cube, buf[pos] * momentum + g * rest)
        buf[pos] = new
        if nesterov:
            b.set(new, g + new * momentum)
        out[pos] = p - new * lr
    return b.kernel()


@cache
def rmsprop_kernel(dtype: DType, l2: bool, centered: bool, momentum: bool) -> Any:
    """One RMSProp update per element: the squared-gradient average (and with `centered` the
    gradient average) and with `momentum` the momentum buffer, updated in place."""
    u = _Update("rmsprop_step", dtype, ("weight", "alpha", "rest", "epsilon", "momentum", "lr"))
    b, cube = u.b, u.cube
    weight, alpha, rest, epsilon, factor, lr = u.scalars
    square_avg = u.state("square_avg")
    grad_avg = u.state("grad_avg") if centered else None
    buf = u.state("momentum_buffer") if momentum else None
    out = u.state("out")
    pos = b.ABSOLUTE_POS
    with b.if_(pos < out.len):
        p, g = u.read(pos, weight if l2 else None)
        avg = b.local(cube, square_avg[pos] * alpha + g * g * rest)
        square_avg[pos] = avg
        if grad_avg is not None:
            mean = b.local(cube, grad_avg[pos] * alpha + g * rest)
            grad_avg[pos] = mean
            b.set(avg, avg - mean * mean)
        step = b.local(cube, g / (b.sqrt(avg) + epsilon))
        if buf is not None:
            b.set(step, buf[pos] * factor + step)
            buf[pos] = step
        out[pos] = p - step * lr
    return b.kernel()


@cache
def adagrad_kernel(dtype: DType, l2: bool) -> Any:
    """One AdaGrad update per element, the sum of squared gradients updated in place."""
    u = _Update("adagrad_step", dtype, ("weight", "epsilon", "clr"))
    b, cube = u.b, u.cube
    weight, epsilon, clr = u.scalars
    total, out = u.state("sum"), u.state("out")
    pos = b.ABSOLUTE_POS
    with b.if_(pos < out.len):
        p, g = u.read(pos, weight if l2 else None)
        acc = b.local(cube, total[pos] + g * g)
        total[pos] = acc
        out[pos] = p - g / (b.sqrt(acc) + epsilon) * clr
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


def _like(t: Any, param: Tensor, bk: CubeBackend) -> bool:
    """Whether state entry `t` is a tensor of `bk` with `param`'s shape and dtype."""
    return (isinstance(t, Tensor) and t._bk is bk and isinstance(t._prim, CubeTensor)
            and t._prim.dtype is param._prim.dtype and t._prim.shape == param._prim.shape)


def _owned(bk: CubeBackend, param: Tensor, state: dict[str, Any], key: str) -> Any:
    """The flat array of state buffer `key` (a tensor `_like` the param), made one these
    kernels own (a copy, once, when it is not)."""
    prim = state[key]._prim
    if prim not in _OWNED:
        prim = contiguous_copy(bk, prim)
        _OWNED.add(prim)
        state[key] = param._wrap(prim)
    return prim.view((prim.size,), (1,)).array


def _flat(t: CubeTensor) -> Any:
    """`t` as a rank-1 array (contiguous: its offset kept)."""
    return t.view((t.size,), (1,)).array


def _run(param: Tensor, grad: Tensor, state: dict[str, Any], keys: tuple[str, ...],
         kernel: Callable[[DType], Any], scalars: Callable[[], tuple[float, ...]]
         ) -> Tensor | None:
    """Launch `kernel(dtype)` over `param`: scalars (from `scalars()`, called once the kernel
    applies: it may advance counters in `state`), param, gradient, the state buffers `keys`
    (made the kernels' own) and the new param.

    Returns:
        The new param values, or None when the kernel does not apply (nothing changed).
    """
    bk = _fusable(param, grad)
    if bk is None or not all(_like(state.get(k), param, bk) for k in keys):
        return None
    buffers = [_owned(bk, param, state, k) for k in keys]
    values = scalars()
    p = param._prim
    out = bk.empty(p.shape, p.dtype)
    if p.size:
        bk.launch_planned(kernel(p.dtype), p.size, *values, _flat(p), _flat(grad._prim),
                          *buffers, _flat(out))
    return param._wrap(out)


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
    keys = ("moment_1", "moment_2", "max_moment_2") if amsgrad else ("moment_1", "moment_2")
    if decoupled:
        decay, weight = ("decoupled", 1 - lr * weight_decay) if weight_decay else ("", 0.0)
    else:
        decay, weight = ("l2", weight_decay) if weight_decay else ("", 0.0)

    def scalars() -> tuple[float, ...]:
        step = state["step"] = state["step"] + 1
        return (weight, beta_1, 1 - beta_1, beta_2, 1 - beta_2, math.sqrt(1 - beta_2**step),
                epsilon, lr / (1 - beta_1**step))
    return _run(param, grad, state, keys, lambda dtype: adam_kernel(dtype, decay, amsgrad),
                scalars)


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
    if not momentum or "momentum" not in state:
        return None
    return _run(param, grad, state, ("momentum",),
                lambda dtype: sgd_kernel(dtype, bool(weight_decay), nesterov),
                lambda: (weight_decay, momentum, 1 - dampening, lr))


def rmsprop_step(param: Tensor, grad: Tensor, state: dict[str, Any], lr: float, alpha: float,
                 epsilon: float, weight_decay: float, centered: bool, momentum: float
                 ) -> Tensor | None:
    """RMSProp's update of `param` as one kernel, its averages (and momentum buffer) updated in
    place.

    Args:
        param: the param's inner tensor (read only).
        grad: its gradient (read only).
        state: RMSProp's state ("square_avg", "grad_avg" when centered, "momentum" with
            momentum).
        lr, alpha, epsilon, weight_decay, centered, momentum: RMSProp's hyperparameters.

    Returns:
        The new param values, or None when the kernel does not apply (nothing changed).
    """
    keys = ("square_avg", *(("grad_avg",) if centered else ()),
            *(("momentum",) if momentum else ()))
    return _run(param, grad, state, keys,
                lambda dtype: rmsprop_kernel(dtype, bool(weight_decay), centered,
                                             bool(momentum)),
                lambda: (weight_decay, alpha, 1 - alpha, epsilon, momentum, lr))


def adagrad_step(param: Tensor, grad: Tensor, state: dict[str, Any], lr: float,
                 lr_decay: float, epsilon: float, weight_decay: float) -> Tensor | None:
    """AdaGrad's update of `param` as one kernel, its sum of squared gradients updated in place.

    Args:
        param: the param's inner tensor (read only).
        grad: its gradient (read only).
        state: AdaGrad's state ("step", "sum").
        lr, lr_decay, epsilon, weight_decay: AdaGrad's hyperparameters.

    Returns:
        The new param values, or None when the kernel does not apply (nothing changed).
    """
    def scalars() -> tuple[float, ...]:
        step = state["step"] = state["step"] + 1
        return weight_decay, epsilon, lr / (1 + (step - 1) * lr_decay)
    return _run(param, grad, state, ("sum",),
                lambda dtype: adagrad_kernel(dtype, bool(weight_decay)), scalars)
