"""The float primitive of the Autodiff backend: an inner primitive plus an optional graph node."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from burn.autodiff.graph import Node


class AutodiffTensor:
    """A float primitive of `Autodiff`.

    `primitive` is the inner backend's primitive; `node` is None for an untracked tensor, a leaf
    node for a tensor that requires grad, or the node of the op that produced it. The node never
    points back at the tensor, so dropping the tensor drops its graph once no child needs it.
    """

    __slots__ = ("primitive", "node")

    def __init__(self, primitive: Any, node: Node | None = None) -> None:
        self.primitive = primitive
        self.node = node

    @property
    def is_tracked(self) -> bool:
        """Whether gradients flow through this tensor."""
        return self.node is not None

    def __repr__(self) -> str:
        state = "untracked" if self.node is None else ("leaf" if self.node.leaf else "tracked")
        return f"AutodiffTensor({state}, {type(self.primitive).__name__})"
