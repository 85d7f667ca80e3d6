"""Reverse-mode autodiff: the `Autodiff` backend decorator and its graph machinery."""

from typing import TYPE_CHECKING, Any

from burn.autodiff.checkpoint import BalancedCheckpointing, CheckpointStrategy, NoCheckpointing
from burn.autodiff.graph import Gradients, is_grad_enabled, no_grad, saved_tensor_count
from burn.autodiff.tensor import AutodiffTensor

if TYPE_CHECKING:
    from burn.autodiff.backend import Autodiff


def __getattr__(name: str) -> Any:
    """`Autodiff`, imported on first access: it builds its methods from the op table, which
    users of `Gradients` and `no_grad` alone (nn, optim) do not need."""
    if name == "Autodiff":
        from burn.autodiff.backend import Autodiff

        globals()[name] = Autodiff
        return Autodiff
    raise AttributeError(f"module 'burn.autodiff' has no attribute {name!r}")

__all__ = [
    "Autodiff", "AutodiffTensor", "BalancedCheckpointing", "CheckpointStrategy", "Gradients",
    "NoCheckpointing", "is_grad_enabled", "no_grad", "saved_tensor_count",
]
