"""Shared machinery of the op mixins: recording nodes, saving tensors, reducing broadcast grads."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from burn.autodiff.checkpoint import CheckpointStrategy, Uses
from burn.autodiff.graph import _MODE, BackwardFn, Node
from burn.autodiff.tensor import AutodiffTensor

if TYPE_CHECKING:
    from burn.backend.protocol import Backend

P = Any
Shape = tuple[int, ...]
#: Backward of a one-input elementwise op: (inner, grad, saved value or None) -> input grad.
ElementwiseRule = Callable[["Backend", P, P], P]
#: Backward of one operand of a binary op: (inner, grad, lhs, rhs) -> that operand's grad before
#: unbroadcasting; lhs / rhs are the saved operand primitives, None where not saved.
BinaryRule = Callable[["Backend", P, P, P], P]


def tracked(*xs: AutodiffTensor | None) -> bool:
    """Whether an op on `xs` must record a node (grad mode on and some input tracked)."""
    if _MODE.enabled:
        for x in xs:
            if x is not None and x.node is not None:
                return True
    return False


def record(out: P, inputs: Sequence[AutodiffTensor | None], fn: BackwardFn,
           saved: tuple[Any, ...] = ()) -> AutodiffTensor:
    """`out` as a tracked tensor whose node has one parent per input (None if untracked)."""
    return AutodiffTensor(out, Node(tuple([None if x is None else x.node for x in inputs]), fn,
                                    saved))


def save(x: AutodiffTensor | None) -> Any:
    """What to keep of `x` for a backward: its primitive, or its node when recomputable."""
    if x is None:
        return None
    node = x.node
    return node if node is not None and node.recompute is not None else x.primitive


def unbroadcast(inner: Backend, grad: P, shape: Shape) -> P:
    """`grad` summed over the dims broadcasting added to `shape`, then reshaped to it.

    Leading dims that are all summed merge into one first (a bias's gradient over [batch, seq,
    d] is one reduction of [batch * seq, d] over its rows, not one per dim)."""
    gshape = inner.shape(grad)
    if gshape == shape:
        return grad
    lead = len(gshape) - len(shape)
    summed = [n != 1 and (d < lead or shape[d - lead] == 1) for d, n in enumerate(gshape)]
    prefix = 0
    while prefix < len(gshape) and (summed[prefix] or gshape[prefix] == 1):
        prefix += 1
    if sum(summed[:prefix]) > 1:
        grad = inner.float_reshape(grad, (math.prod(gshape[:prefix]), *gshape[prefix:]))
        grad = inner.float_sum_dim(grad, 0)
        summed = [False, *summed[prefix:]]
    for d, reduce in enumerate(summed):
        if reduce:
            grad = inner.float_sum_dim(grad, d)
    return inner.float_reshape(grad, shape)


def zeros(inner: Backend, like: P, shape: Shape | None = None) -> P:
    """Zeros of `like`'s dtype and device (and shape, unless given)."""
    return inner.float_full(inner.shape(like) if shape is None else shape, 0.0,
                            inner.dtype(like), inner.device_of(like))


class OpsBase:
    """State the op mixins share: the inner backend and the checkpoint strategy."""

    inner: Backend
    checkpoint: CheckpointStrategy

    def _elementwise(self, x: AutodiffTensor, forward: Callable[[P], P], rule: ElementwiseRule,
                     uses: Uses) -> AutodiffTensor:
        """A memory-bound one-input op: `forward` on the inner primitive, `rule` for backward."""
        out = forward(x.primitive)
        if x.node is None or not _MODE.enabled:
            return AutodiffTensor(out)
        inner = self.inner
        if uses is Uses.NOTHING:
            def fn(g: P, saved: tuple[Any, ...]) -> tuple[P]:
                return (rule(inner, g, None),)
        else:
            def fn(g: P, saved: tuple[Any, ...]) -> tuple[P]:
                return (rule(inner, g, saved[0]),)
        return AutodiffTensor(out, self.checkpoint.elementwise_node(x, out, forward, fn, uses))

    def _binary(self, op: str, lhs: AutodiffTensor, rhs: AutodiffTensor, lhs_rule: BinaryRule,
                rhs_rule: BinaryRule, lhs_reads: str = "", rhs_reads: str = "") -> AutodiffTensor:
        """A broadcasting two-input op: the inner `op`, and a node whose backward applies
        `lhs_rule` / `rhs_rule` for the tracked operands, each grad summed back to its operand's
        shape. `lhs_reads` / `rhs_reads` name the operands ("a" lhs, "b" rhs) a rule reads: only
        those are saved, and only for rules that will run.
        """
        out = getattr(self.inner, op)(lhs.primitive, rhs.primitive)
        if not tracked(lhs, rhs):
            return AutodiffTensor(out)
        inner = self.inner
        ls, rs = inner.shape(lhs.primitive), inner.shape(rhs.primitive)
        need_l, need_r = lhs.node is not None, rhs.node is not None
        reads = (lhs_reads if need_l else "") + (rhs_reads if need_r else "")

        def fn(g: P, saved: tuple[P, P]) -> tuple[P | None, P | None]:
            a, b = saved
            return (unbroadcast(inner, lhs_rule(inner, g, a, b), ls) if need_l else None,
                    unbroadcast(inner, rhs_rule(inner, g, a, b), rs) if need_r else None)
        return record(out, (lhs, rhs), fn, (save(lhs) if "a" in reads else None,
                                            save(rhs) if "b" in reads else None))
