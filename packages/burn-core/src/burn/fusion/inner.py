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
from burn.fusion.handle import FusionTensor

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
    if not isinstance(bk, Fusion):
        return steps(lr, members)
    for p, g, _ in members:
        if p._bk is not bk or g._bk is not bk:
            return steps(lr, members)
    if bk.stream.pending:  # in-place updates must not change what a pending op reads
        bk.stream.flush()
    value, wrap = bk.value, _inner_wrap(bk, members[0][0])

    def inner_of(t: Tensor) -> Tensor:  # the inner backend's tensor of a fusion tensor
        prim = t._prim
        return wrap(value(prim) if type(prim) is FusionTensor else prim, t._dtype)

    inner: list[Member] = []
    handed: list[dict[str, Tensor]] = []  # per member the state tensors handed over
    for p, g, state in members:
        mine, tensors = dict(state), {}
        for k, v in state.items():
            if isinstance(v, Tensor) and v._bk is bk:
                mine[k] = tensors[k] = inner_of(v)
        inner.append((inner_of(p), inner_of(g), mine))
        handed.append(tensors)
    outs = steps(lr, inner)
    for (param, _, state), (_, _, after), tensors in zip(members, inner, handed, strict=True):
        for k, v in after.items():  # replaced entries back: buffers on the fusion device
            if v is not state.get(k) and v is not tensors.get(k):
                state[k] = param._wrap(v._prim, v._dtype) \
                    if isinstance(v, Tensor) and v._bk is bk.inner else v
    return [None if out is None else param._wrap(out._prim, out._dtype)
            for (param, _, _), out in zip(members, outs, strict=True)]


#: per fusion backend, a tensor of its inner device (no values) whose `_wrap` makes inner
#: tensors: the inner device and backend are found once.
_TEMPLATES: dict[int, tuple[Fusion, Tensor]] = {}


def _inner_wrap(bk: Fusion, first: Tensor) -> Callable[[Any, Any], Tensor]:
    """`_wrap` of a tensor of `bk`'s inner device (`first`: a tensor of `bk`)."""
    found = _TEMPLATES.get(id(bk))
    if found is None or found[0] is not bk:
        prim = bk.value(first._prim)
        found = _TEMPLATES[id(bk)] = (bk, make(None, bk.inner.device_of(prim), first._dtype))
    return found[1]._wrap
