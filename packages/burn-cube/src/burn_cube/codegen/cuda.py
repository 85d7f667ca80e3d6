"""CUDA C emitter for the cuda target.

``extern "C" __global__ void bc_<kernel name>(...)`` (``entry_point``: named after the kernel, so
a GPU profile tells kernels apart): tensor pointers, then every tensor's
len/shape/strides as ``unsigned int`` values, then scalars; one CUDA block per cube, the grid is
the cube count. No software bounds checks (GPU semantics, like CubeCL's unchecked mode).

Tensor pointers are ``__restrict__`` (and ``const`` where the kernel never writes the tensor), so
NVCC/NVRTC may use the read-only data path (``ld.global.nc``) and reorder loads past stores; that
is only valid when no two tensor arguments overlap, so ``generate_aliased`` renders the variant
without those qualifiers, which the runtime launches when arguments do overlap (in-place calls).
The unit index uses the compile-time cube_dim (``threadIdx.x`` alone for 1-D cubes).
"""

from __future__ import annotations

import math
import re

from burn_cube.codegen import table_cuda
from burn_cube.codegen.emitter import Emitter
from burn_cube.ir import nodes as ir
from burn_cube.ir.nodes import meta_names
from burn_cube.types import DType

#: Longest kernel name kept in an entry point (profilers truncate long names anyway).
ENTRY_CHARS = 96


def entry_point(kernel: ir.KernelIR) -> str:
    """The CUDA function name of `kernel`: ``bc_`` and its name, non-identifier characters as
    ``_``, cut to ``ENTRY_CHARS``.

    Args:
        kernel: The kernel.

    Returns:
        A C identifier.
    """
    return "bc_" + re.sub(r"[^0-9A-Za-z_]", "_", kernel.name)[:ENTRY_CHARS]


def param_layout(kernel: ir.KernelIR) -> list[tuple[str, str, int]]:
    """Kernel parameters in ABI order as ``(kernel parameter, field, dim)``; field is ``tensor``,
    ``len``, ``shape``, ``stride`` or ``scalar``."""
    out = [(b.name, "tensor", 0) for b in kernel.tensors]
    for b in kernel.tensors:
        out += [(b.name, field, dim) for _, field, dim in meta_names(b)]
    out += [(p.name, "scalar", 0) for p in kernel.scalars]
    return out


class CudaEmitter(Emitter):
    """Renders a kernel as CUDA C."""

    target = "cuda"
    ops = table_cuda.OPS
    types = table_cuda.TYPES
    storage_types = table_cuda.STORAGE_TYPES

    lane_wise = True
    helper_prefix = "__device__ __forceinline__"
    #: Whether tensor pointers may be declared non-aliasing (``__restrict__``).
    noalias = True

    def pointer(self, b: ir.Buffer) -> str:
        """Kernel parameter declaring tensor ``b``."""
        t = self.storage_type(b.dtype)
        if not self.noalias:
            return f"{t} *t_{b.name}"
        const = "" if b.written or b.atomic else "const "
        return f"{const}{t} *__restrict__ t_{b.name}"

    def unit_index(self) -> str:
        """The unit's linear index within its cube (cube_dim is a compile-time constant)."""
        _, cdy, cdz = self.kernel.cube_dim
        if cdy == 1 and cdz == 1:
            return "threadIdx.x"
        if cdz == 1:
            return "threadIdx.x + threadIdx.y * BC_CDX"
        return "threadIdx.x + (threadIdx.y + threadIdx.z * BC_CDY) * BC_CDX"

    def literal(self, value: int | float | bool, dtype: DType) -> str:
        return table_cuda.literal(value, self.type(dtype), dtype.name)

    def lane(self, value: str, k: int) -> str:
        return f"{value}.{'xyzw'[k]}"

    def fields(self, dtype: DType) -> dict[str, str]:
        return {"f": "f" if dtype.bits <= 32 else ""}

    def barrier(self) -> str:
        return "__syncthreads();"

    def source(self) -> str:
        k = self.kernel
        cdx, cdy, cdz = k.cube_dim
        args = [self.pointer(b) for b in k.tensors]
        args += [f"unsigned int {name}" for b in k.tensors for name, _, _ in meta_names(b)]
        args += [f"{self.storage_type(p.dtype)} a_{p.name}" for p in k.scalars]
        includes = [table_cuda.BF16_INCLUDE] if "dtype:bf16" in k.features else []
        self.out = [*includes, table_cuda.PRELUDE, f"#define BC_CDX {cdx}u",
                    f"#define BC_CDY {cdy}u", f"#define BC_CDZ {cdz}u",
                    f"#define BC_CD {math.prod(k.cube_dim)}u", "",
                    f'extern "C" __global__ void __launch_bounds__(BC_CD) '
                    f'{entry_point(k)}({", ".join(args)}) {{']
        self.depth = 1
        self.line("const unsigned int bc_ccx = gridDim.x, bc_ccy = gridDim.y, "
                  "bc_ccz = gridDim.z;")
        self.line("const unsigned int bc_cube = blockIdx.x + (blockIdx.y + blockIdx.z * "
                  "gridDim.y) * gridDim.x;")
        self.line(f"const unsigned int bc_unit = {self.unit_index()};")
        for p in k.scalars:
            value = self.render("load", p.dtype, p.dtype, [f"a_{p.name}"])
            self.line(f"const {self.type(p.dtype)} v_{p.name} = {value};")
        for b in k.shared:
            self.line(f"__shared__ {self.storage_type(b.dtype)} s_{b.name}[{b.size}];")
        for name, dtype in k.locals.items():
            self.line(f"{self.type(dtype)} v_{name} = {self.zero(dtype)};")
        for s in k.body:
            self.stmt(s)
        self.out.append("}")
        at = self.out.index("") + 1  # after the #defines
        self.out[at:at] = list(self.line_helpers.values())
        return "\n".join(self.out) + "\n"


class AliasedCudaEmitter(CudaEmitter):
    """CUDA C for launches whose tensor arguments overlap: no ``__restrict__``/``const``."""

    noalias = False


def generate_aliased(kernel: ir.KernelIR) -> str:
    """CUDA C of ``kernel`` safe for overlapping tensor arguments.

    Args:
        kernel: The typed IR.

    Returns:
        The source text.
    """
    return AliasedCudaEmitter(kernel).source()
