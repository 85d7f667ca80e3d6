"""WGSL emitter for the wgpu target.

Tensors are storage buffers (``read`` unless written), metadata and scalars travel in one
read-only ``array<u32>`` (``bc_info``): logical cube counts, each tensor's len/shape/strides, then
the scalars bit-cast to u32 (64-bit ones as two words, low first; ``info_words``). The cube
index is linearized from a possibly 2-D dispatch (more than 65,535 cubes) and extra workgroups
exit at once. bool tensors are ``u32`` buffers (``table_wgsl.STORAGE_TYPES``).
"""

from __future__ import annotations

import math

from burn_cube.codegen import table_wgsl
from burn_cube.codegen.emitter import Emitter
from burn_cube.errors import CompileError
from burn_cube.ir import nodes as ir
from burn_cube.ir.nodes import meta_names
from burn_cube.types import DType


def info_words(dtype: DType) -> int:
    """Number of ``bc_info`` words of a scalar parameter."""
    return 2 if dtype.bits == 64 else 1


def info_layout(kernel: ir.KernelIR) -> list[tuple[str, str, str, int]]:
    """The u32 words of ``bc_info`` after the three cube counts, as
    ``(WGSL name, kernel parameter, field, dim)``; field is len/shape/stride or ``scalar``."""
    out = []
    for p in kernel.params:
        if p.tensor:
            out += [(name, p.name, field, dim) for name, field, dim in
                    meta_names(kernel.buffers[p.name])]
        else:
            out.append((f"v_{p.name}", p.name, "scalar", 0))
    return out


class WgslEmitter(Emitter):
    """Renders a kernel as a WGSL compute shader."""

    target = "wgsl"
    ops = table_wgsl.OPS
    types = table_wgsl.TYPES
    storage_types = table_wgsl.STORAGE_TYPES

    def literal(self, value: int | float | bool, dtype: DType) -> str:
        self.type(dtype)
        return table_wgsl.literal(value, dtype.name)

    def element_type(self, buf: ir.Buffer) -> str:
        """Element type of a buffer (``atomic<T>`` when updated atomically)."""
        t = self.storage_type(buf.dtype)
        if buf.atomic:
            if not buf.dtype.is_integer:
                ops = sorted({f"atomic_{e.op}" for e in ir.expressions(self.kernel.body)
                              if isinstance(e, ir.Atomic) and e.buf == buf.name})
                raise CompileError(f"{'/'.join(ops)} on {buf.dtype} is not supported by WGSL "
                                   "(only i32/u32)", self.kernel.name)
            return f"atomic<{t}>"
        return t

    def load(self, e: ir.Load) -> str:
        if self.kernel.buffers[e.buf].atomic:
            return f"atomicLoad(&{self.element(e.buf, e.index)})"
        return super().load(e)

    def store(self, s: ir.Store) -> str:
        if self.kernel.buffers[s.buf].atomic:
            return f"atomicStore(&{self.element(s.buf, s.index)}, {self.expr(s.value)});"
        return super().store(s)

    def barrier(self) -> str:
        return "workgroupBarrier();"

    def stmt(self, s: ir.Stmt) -> None:
        if isinstance(s, ir.Eval) and isinstance(s.expr, ir.Atomic):
            self.line(f"_ = {self.expr(s.expr)};")
        else:
            super().stmt(s)

    def source(self) -> str:
        k = self.kernel
        body: list[str] = []
        self.out, self.depth = body, 1
        layout = info_layout(k)
        self.line("let bc_ccx = bc_info[0]; let bc_ccy = bc_info[1]; let bc_ccz = bc_info[2];")
        self.line("let bc_cube = bc_wid.x + (bc_wid.y + bc_wid.z * bc_nwg.y) * bc_nwg.x;")
        self.line("if (bc_cube >= bc_ccx * bc_ccy * bc_ccz) { return; }")
        scalars = {p.name: p.dtype for p in k.scalars}
        word = 3
        for name, param, field, _ in layout:
            if field != "scalar":
                self.line(f"let {name} = bc_info[{word}];")
                word += 1
                continue
            dtype = scalars[param]
            raw = [f"bc_info[{word + j}]" for j in range(info_words(dtype))]
            self.line(f"let {name} = {self.render('scalar', dtype, dtype, raw)};")
            word += len(raw)
        for name, dtype in k.locals.items():
            self.line(f"var v_{name}: {self.type(dtype)};")
        for s in k.body:
            self.stmt(s)

        head: list[str] = []
        if "dtype:f16" in k.features:
            head.append("enable f16;")
        cdx, cdy, cdz = k.cube_dim
        head += [f"const BC_CDX: u32 = {cdx}u;", f"const BC_CDY: u32 = {cdy}u;",
                 f"const BC_CDZ: u32 = {cdz}u;", f"const BC_CD: u32 = {math.prod(k.cube_dim)}u;"]
        for i, b in enumerate(k.tensors):
            access = "read_write" if b.written else "read"
            head.append(f"@group(0) @binding({i}) var<storage, {access}> t_{b.name}: "
                        f"array<{self.element_type(b)}>;")
        head.append(f"@group(0) @binding({len(k.tensors)}) var<storage, read> bc_info: "
                    "array<u32>;")
        for b in k.shared:
            head.append(f"var<workgroup> s_{b.name}: array<{self.element_type(b)}, {b.size}>;")
        code = "\n".join(body)
        for prefix, helper in table_wgsl.HELPERS.items():  # (a helper's callees come later)
            for name, wgsl_type in self.types.items():
                if f"{prefix}{name}(" in code:
                    head.append(helper.format(s=name, T=wgsl_type))
                    code += head[-1]
        params = ["@builtin(workgroup_id) bc_wid: vec3<u32>",
                  "@builtin(num_workgroups) bc_nwg: vec3<u32>",
                  "@builtin(local_invocation_index) bc_unit: u32"]
        if "plane" in k.features:
            params += ["@builtin(subgroup_size) bc_plane_dim: u32",
                       "@builtin(subgroup_invocation_id) bc_plane_unit: u32"]
        head.append("@compute @workgroup_size(BC_CDX, BC_CDY, BC_CDZ)")
        head.append(f"fn main({', '.join(params)}) {{")
        return "\n".join(head + body + ["}"]) + "\n"
