"""Reverse-mode autodiff: the `Autodiff` backend decorator and its graph machinery."""

from burn.autodiff.backend import Autodiff
from burn.autodiff.checkpoint import BalancedCheckpointing, CheckpointStrategy, NoCheckpointing
from burn.autodiff.graph import Gradients, is_grad_enabled, no_grad, saved_tensor_count
from burn.autodiff.tensor import AutodiffTensor

__all__ = [
    "Autodiff", "AutodiffTensor", "BalancedCheckpointing", "CheckpointStrategy", "Gradients",
    "NoCheckpointing", "is_grad_enabled", "no_grad", "saved_tensor_count",
]
