"""The gradient graph: nodes, grad mode, the topological backward pass and `Gradients`."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from contextlib import ContextDecorator
from typing import TYPE_CHECKING, Any

from burn.errors import AutodiffError

if TYPE_CHECKING:
    from burn.autodiff.tensor import AutodiffTensor
    from burn.backend.protocol import Backend

P = Any  # an inner backend primitive
#: A backward rule: (output grad, resolved saved tensors) -> one grad (or None) per parent.
BackwardFn = Callable[[P, tuple[Any, ...]], tuple[P | None, ...]]

_ids = itertools.count()


class _SelfRef:
    """Marker in `Node.saved` for the node's own output, recomputed when needed."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "SELF"


SELF = _SelfRef()


class Node:
    """One recorded op (or a leaf that requires grad).

    Attributes:
        id: creation order; parents always have smaller ids, so decreasing ids are a topological
            order of any subgraph.
        parents: one entry per differentiable input: its node, or None when it is untracked.
        fn: the backward rule; None for leaves and for nodes freed by a backward pass.
        saved: what `fn` needs: inner primitives, or (checkpointing) a parent `Node` / `SELF`
            whose value is recomputed at backward time.
        recompute: for a recomputable (memory-bound) node: its forward from its parent's value.
        retained: the node's output kept for recomputation (checkpoint), or its recomputed value.
        leaf: whether this is a leaf that requires grad.
    """

    __slots__ = ("id", "parents", "fn", "saved", "recompute", "retained", "leaf")

    def __init__(self, parents: tuple[Node | None, ...], fn: BackwardFn | None,
                 saved: tuple[Any, ...] = (), recompute: Callable[[P], P] | None = None) -> None:
        self.id = next(_ids)
        self.parents = parents
        self.fn = fn
        self.saved = saved
        self.recompute = recompute
        self.retained: P | None = None
        self.leaf = fn is None

    def value(self) -> P:
        """The node's output: retained, or recomputed from the nearest retained ancestor."""
        chain: list[Node] = []
        node = self
        while node.retained is None:
            if node.recompute is None:
                raise AutodiffError("backward", "a saved tensor was neither kept nor recomputable")
            chain.append(node)
            node = node.parents[0]  # type: ignore[assignment]
        value = node.retained
        for node in reversed(chain):
            value = node.retained = node.recompute(value)  # type: ignore[misc]
        return value

    def free(self) -> None:
        """Drop what backward needed; leaves stay usable for later graphs."""
        self.saved = ()
        self.retained = None
        if not self.leaf:
            self.fn = None
            self.recompute = None
            self.parents = ()


class _GradMode(threading.local):
    enabled = True


_MODE = _GradMode()


def is_grad_enabled() -> bool:
    """Whether ops on tracked tensors record nodes in this thread."""
    return _MODE.enabled


class no_grad(ContextDecorator):  # noqa: N801 (named like torch.no_grad)
    """Context manager (or decorator) under which no graph is recorded in this thread."""

    def __enter__(self) -> no_grad:
        self._prev = _MODE.enabled
        _MODE.enabled = False
        return self

    def __exit__(self, *exc: object) -> None:
        _MODE.enabled = self._prev


class Gradients:
    """Gradients of the leaves that require grad, keyed by their node (inner primitives)."""

    __slots__ = ("_grads", "by_param")

    def __init__(self, grads: dict[int, P] | None = None) -> None:
        self._grads = {} if grads is None else grads
        #: the gradients optimizers took, by Param id (`burn.optim.grads.param_grad`): found
        #: again once an update made the param's value a new leaf.
        self.by_param: dict[int, Any] = {}

    def get(self, tensor: Any) -> Any:
        """The gradient of `tensor` (a leaf that requires grad), or None: for a burn `Tensor`,
        `tensor.grad(grads)` (a tensor of the inner device); for an autodiff primitive (the
        backend's form), the inner backend's primitive.

        Raises:
            AutodiffError: for a tensor off an autodiff device, or what is no tensor.
        """
        node: Any = getattr(tensor, "node", _NO_NODE)
        if node is _NO_NODE:
            return _frontend_grad(tensor, self, False)
        return None if node is None else self._grads.get(node.id)

    def remove(self, tensor: Any) -> Any:
        """Like `get`, and forget the gradient."""
        node: Any = getattr(tensor, "node", _NO_NODE)
        if node is _NO_NODE:
            return _frontend_grad(tensor, self, True)
        return None if node is None else self._grads.pop(node.id, None)

    def __len__(self) -> int:
        return len(self._grads)

    def __repr__(self) -> str:
        return f"Gradients({len(self._grads)} tensors)"


#: `Gradients.get`'s mark of an argument that is no autodiff primitive (it has no `node`)
_NO_NODE = object()


def _frontend_grad(tensor: Any, grads: Gradients, remove: bool) -> Any:
    """`tensor.grad(grads)` (or `grad_remove`) of a burn Tensor; AutodiffError for anything
    else."""
    method = getattr(tensor, "grad_remove" if remove else "grad", None)
    if not callable(method):
        raise AutodiffError("grad", "expected a tensor of an autodiff device",
                            type=type(tensor).__name__)
    return method(grads)


def _reachable(root: Node) -> list[Node]:
    """Nodes reachable from `root`, children before parents."""
    seen = {root.id: root}
    stack = [root]
    while stack:
        for parent in stack.pop().parents:
            if parent is not None and parent.id not in seen:
                seen[parent.id] = parent
                stack.append(parent)
    return [seen[i] for i in sorted(seen, reverse=True)]


def _resolve(node: Node, saved: tuple[Any, ...]) -> tuple[Any, ...]:
    """Saved entries with lazy ones (a parent node, or SELF) recomputed."""
    for s in saved:
        if type(s) is Node or s is SELF:
            return tuple(node.value() if s is SELF else s.value() if type(s) is Node else s
                         for s in saved)
    return saved


def run_backward(inner: Backend, root: AutodiffTensor) -> Gradients:
    """Backward from `root` seeded with ones; frees the traversed graph.

    Raises:
        AutodiffError: when `root` is untracked or the graph was already freed.
    """
    p = root.primitive
    if root.node is None:
        raise AutodiffError("backward", "tensor is not tracked (no input requires grad)",
                            shape=inner.shape(p))
    order = _reachable(root.node)
    for n in order:  # (a loop, not any() over a generator: this runs every step)
        if n.fn is None and not n.leaf:
            raise AutodiffError("backward", "graph already freed (backward already ran "
                                "through it)", shape=inner.shape(p))
    grads: dict[int, P] = {
        root.node.id: inner.float_full(inner.shape(p), 1.0, inner.dtype(p), inner.device_of(p))}
    leaves: dict[int, P] = {}
    pop, get, add = grads.pop, grads.get, inner.float_add
    for node in order:
        grad = pop(node.id, None)
        if node.leaf:
            if grad is not None:
                leaves[node.id] = grad
            node.saved = ()  # (`Node.free` inlined: this runs per node every step)
            node.retained = None
            continue
        if grad is not None:
            saved = node.saved
            for parent, g in zip(node.parents, node.fn(  # type: ignore[misc]
                    grad, _resolve(node, saved) if saved else saved), strict=True):
                if parent is not None and g is not None:
                    prev = get(parent.id)
                    grads[parent.id] = g if prev is None else add(prev, g)
        node.saved = ()
        node.retained = None
        node.fn = None
        node.recompute = None
        node.parents = ()
    return Gradients(leaves)


def _saved_primitives(node: Node) -> Iterator[Any]:
    if node.retained is not None:
        yield node.retained
    for s in node.saved:
        if s is not None and s is not SELF and type(s) is not Node:
            yield s


def saved_tensor_count(tensor: AutodiffTensor) -> int:
    """Distinct inner primitives the graph behind `tensor` keeps for backward."""
    if tensor.node is None:
        return 0
    return len({id(s) for n in _reachable(tensor.node) for s in _saved_primitives(n)})
