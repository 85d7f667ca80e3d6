"""`on_inner`: an inner-backend computation (an optimizer's one-kernel update) run on the
values of fusion tensors.

An optimizer's `_fused` update (`burn.backends.cube.optim_kernels`) needs the cube backend's
own tensors: fusion tensors would make it fall back to recording its dozen tensor ops per
param. `on_inner` runs the pending ops, hands the update the inner tensors and hands what it
returns (and the state buffers it replaced) back as tensors of the fusion device around the
same inner primitives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from burn.frontend.base import make
from burn.frontend.tensor import Tensor
from burn.fusion.backend import Fusion

#: An optimizer's `_fused(lr, param, grad, state)`.
Update = Callable[[float, Tensor, Tensor, dict[str, Any]], Tensor | None]


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
    bk = param._bk
    if not isinstance(bk, Fusion) or grad._bk is not bk:
        return update(lr, param, grad, state)
    bk.stream.flush()  # in-place updates must not change what a pending op reads
    given = {k: _inner(bk, v) if isinstance(v, Tensor) and v._bk is bk else v
             for k, v in state.items()}
    inner = dict(given)
    out = update(lr, _inner(bk, param), _inner(bk, grad), inner)
    if out is None:
        return None
    for k, v in inner.items():
        if v is not given.get(k):  # a replaced buffer: its primitive on the fusion device
            state[k] = param._wrap(v._prim, v._dtype) \
                if isinstance(v, Tensor) and v._bk is bk.inner else v
    return param._wrap(out._prim, out._dtype)


def _inner(bk: Fusion, t: Tensor) -> Tensor:
    """The inner backend's tensor of fusion tensor `t` (computed)."""
    prim = bk.value(t._prim)
    return make(prim, bk.inner.device_of(prim), t._dtype)
