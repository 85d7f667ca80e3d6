"""`on_inner` / `on_inner_steps`: inner-backend computations (an optimizer's one-kernel
updates) run on the values of fusion tensors.

An optimizer's `_fused` update, or its multi-tensor `_fused_steps`
(`burn.backends.cube.optim_kernels`), needs the cube backend's own tensors: fusion tensors
would make it fall back to recording its dozen tensor ops per param. These run the pending
ops once, hand the update the inner tensors and hand what it returns (and the state buffers
it replaced) back as tensors of the fusion device around the same inner primitives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from burn.frontend.base import make
from burn.frontend.tensor import Tensor
from burn.fusion.backend import Fusion

#: An optimizer's `_fused(lr, param, grad, state)`.
Update = Callable[[float, Tensor, Tensor, dict[str, Any]], Tensor | None]
#: A param's (values, gradient, optimizer state).
Member = tuple[Tensor, Tensor, dict[str, Any]]
#: An optimizer's `_fused_steps(lr, members)`: per member the new values, or None.
Steps = Callable[[float, list[Member]], list[Tensor | None]]


def on_inner(update: Update, lr: float, param: Tensor, grad: Tensor,
             state: dict[str, Any]) -> Tensor | None:
    """`update(lr, param, grad, state)`, on the inner tensors where `param` and `grad` are
    tensors of one fusion backend (after its pending ops ran), else as is.

    Args:
        update: the update; it returns None (changing nothing) where it does not apply.
        lr: the learning rate.
        param: the param's values (read only).
        grad: its gradient (read only).
        state: the optimizer's state of the param; buffers the update replaces are replaced
            here too, as fusion tensors.
    Returns:
        The new param values (a tensor like `param`), or None.
    """
    return on_inner_steps(lambda rate, members: [update(rate, *members[0])], lr,
                          [(param, grad, state)])[0]


def on_inner_steps(steps: Steps, lr: float, members: list[Member]) -> list[Tensor | None]:
    """`steps(lr, members)` (a multi-tensor update), on the inner tensors where every param
    and gradient is a tensor of one fusion backend (after its pending ops ran, once), else
    as is.

    Args:
        steps: the update; per member the new values, or None (that member unchanged).
        lr: the learning rate.
        members: per param its values and gradient (read only) and its optimizer state;
            buffers the update replaces are replaced there too, as fusion tensors.
    Returns:
        Per member the new values (a tensor like its param), or None.
    """
    bk = members[0][0]._bk if members else None
    if not isinstance(bk, Fusion) or any(p._bk is not bk or g._bk is not bk
                                         for p, g, _ in members):
        return steps(lr, members)
    bk.stream.flush()  # in-place updates must not change what a pending op reads
    value, first = bk.value, members[0][0]
    prim = value(first._prim)
    wrap = make(prim, bk.inner.device_of(prim), first._dtype)._wrap  # on the inner device

    def inner_of(t: Tensor) -> Tensor:  # the inner backend's tensor of a fusion tensor
        return wrap(value(t._prim), t._dtype)

    given = [{k: inner_of(v) if isinstance(v, Tensor) and v._bk is bk else v
              for k, v in state.items()} for _, _, state in members]
    inner = [dict(g) for g in given]
    outs = steps(lr, [(inner_of(p), inner_of(g), s)
                      for (p, g, _), s in zip(members, inner, strict=True)])
    for (param, _, state), before, after in zip(members, given, inner, strict=True):
        for k, v in after.items():
            if v is not before.get(k):  # a replaced buffer: its primitive on the fusion device
                state[k] = param._wrap(v._prim, v._dtype) \
                    if isinstance(v, Tensor) and v._bk is bk.inner else v
    return [None if out is None else param._wrap(out._prim, out._dtype)
            for (param, _, _), out in zip(members, outs, strict=True)]

