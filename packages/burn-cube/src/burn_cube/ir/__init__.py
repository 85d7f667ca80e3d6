"""The typed intermediate representation shared by every target, and the builders that make it:
``Scope`` (typing rules, used by the Python-source frontend) and ``KernelBuilder`` (kernels
built in code)."""

from burn_cube.ir.builder import KernelBuilder, TensorHandle, Value
from burn_cube.ir.nodes import *  # noqa: F403
from burn_cube.ir.scope import Scope

__all__ = [  # noqa: F405
    "Atomic", "Assign", "Barrier", "Break", "Buffer", "Const", "Continue", "Eval", "Expr", "For",
    "If", "KernelBuilder", "KernelIR", "Load", "Meta", "Op", "Param", "Return", "Scope", "Stmt",
    "Store", "TensorHandle", "Value", "Var", "While", "expressions", "meta_names", "statements",
]
