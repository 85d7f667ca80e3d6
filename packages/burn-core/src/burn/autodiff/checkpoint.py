"""Gradient checkpointing strategies (Burn's `CheckpointStrategy`).

Ops are either compute-bound (matmul, conv, reductions, ...: they save what their backward needs)
or memory-bound (elementwise ops of one tensor: unary math, scalar arithmetic, clamp, powf_scalar).
The strategy decides what a memory-bound op keeps:

- `NoCheckpointing` saves its input or output like any op.
- `BalancedCheckpointing` saves nothing: it records how to recompute its output from its parent,
  and checkpoints (retains) the parent's output when the parent is not itself recomputable. Any
  later op that needs a recomputable tensor saves a reference to its node instead of the tensor,
  and backward recomputes the value from the nearest retained ancestor.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from enum import Enum
from typing import Any

from burn.autodiff.graph import SELF, BackwardFn, Node
from burn.autodiff.tensor import AutodiffTensor

P = Any


class Uses(Enum):
    """Which value the backward of a one-input elementwise op needs."""

    NOTHING = 0
    INPUT = 1
    OUTPUT = 2


class CheckpointStrategy(ABC):
    """How much forward state the graph keeps for backward (see the module docstring)."""

    __slots__ = ()

    @abstractmethod
    def elementwise_node(self, x: AutodiffTensor, out: P, forward: Callable[[P], P],
                         fn: BackwardFn, uses: Uses) -> Node:
        """The node of a memory-bound op `out = forward(x.primitive)` on a tracked `x`."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class NoCheckpointing(CheckpointStrategy):
    """Every op saves what its backward needs."""

    __slots__ = ()

    def elementwise_node(self, x: AutodiffTensor, out: P, forward: Callable[[P], P],
                         fn: BackwardFn, uses: Uses) -> Node:
        saved = (x.primitive,) if uses is Uses.INPUT else (out,) if uses is Uses.OUTPUT else ()
        return Node((x.node,), fn, saved)


class BalancedCheckpointing(CheckpointStrategy):
    """Memory-bound ops save nothing; backward recomputes their values (Burn's balanced)."""

    __slots__ = ()

    def elementwise_node(self, x: AutodiffTensor, out: P, forward: Callable[[P], P],
                         fn: BackwardFn, uses: Uses) -> Node:
        parent = x.node
        assert parent is not None
        if parent.leaf:
            # a leaf's node is shared by every graph using it (and outlives an update of the
            # leaf's value): the checkpoint is this graph's own node, passing gradients
            # through, which its backward frees (retained on the leaf, the first graph's
            # backward dropped it for the others)
            parent = Node((parent,), _pass_through)
            parent.retained = x.primitive
        elif parent.recompute is None and parent.retained is None:
            parent.retained = x.primitive  # checkpoint: recomputation starts here
        saved = (parent,) if uses is Uses.INPUT else (SELF,) if uses is Uses.OUTPUT else ()
        return Node((parent,), fn, saved, recompute=forward)


def _pass_through(grad: P, saved: tuple[Any, ...]) -> tuple[P]:
    """The backward of a checkpoint node standing for a leaf: the gradient as it is."""
    return (grad,)
