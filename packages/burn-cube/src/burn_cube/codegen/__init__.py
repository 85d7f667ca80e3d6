"""Code generation: one expression table per target plus a small statement emitter."""

from __future__ import annotations

from burn_cube.codegen.c import CEmitter
from burn_cube.codegen.cuda import CudaEmitter
from burn_cube.codegen.emitter import Emitter
from burn_cube.codegen.wgsl import WgslEmitter
from burn_cube.ir.nodes import KernelIR

EMITTERS: dict[str, type[Emitter]] = {"c": CEmitter, "wgsl": WgslEmitter, "cuda": CudaEmitter}


def generate(kernel: KernelIR, target: str) -> str:
    """Render a kernel for a target.

    Args:
        kernel: The typed IR.
        target: ``c``, ``wgsl`` or ``cuda``.

    Returns:
        The source text.
    """
    return EMITTERS[target](kernel).source()
