"""The op table section of docs/ops.md, rendered from `burn.ir.OPS` (burn-core's op table)."""

from __future__ import annotations

from typing import Any


def _cube_text(expr: Any) -> str:
    if isinstance(expr, tuple):
        return f"{expr[0]}({', '.join(_cube_text(e) for e in expr[1:])})"
    return str(expr)


def render_op_rows() -> list[str]:
    """Markdown lines: one row per backend op with its kind, family, signature, result dtype
    and shape rules and burn-cube lowering.

    Raises:
        SystemExit: when burn-core is not importable (nothing is written then).
    """
    try:
        from burn.ir import OPS
    except ImportError as exc:
        raise SystemExit(f"xtask ops-table: burn-core is not installed ({exc}); install it "
                         "(pip install -e packages/burn-core) before generating docs/ops.md"
                         ) from exc
    lines = [
        "## The op table",
        "",
        f"Every op of the backend protocol ({len(OPS)} ops), from `burn.ir.OPS` "
        "(`packages/burn-core/src/burn/ir/table.py`). Types: `T` a tensor of the op's kind,",
        "`F`/`I`/`B` float/int/bool tensors, `I64` an int64 result, `?` optional, `[T]` a list.",
        "The shape rule is in `burn/ir/rules.py`; a default op is written with other ops.",
        "",
        "The last column says whether the cube backends (cpu, wgpu, cuda) run the op on their",
        "own kernels or on the host NumPy backend (no kernel yet).",
        "",
        "| op | kind | family | signature | result dtype | shape rule | burn-cube lowering "
        "| cube backends |",
        "|---|---|---|---|---|---|---|---|",
    ]
    on_host = _cube_host_ops()
    for name in sorted(OPS, key=lambda n: (OPS[n].family, n)):
        row = OPS[name]
        kind = row.kind.value if row.kind else "module"
        rule = getattr(row.shape_rule, "__name__", "rule").removesuffix("_")
        cube = f"`{_cube_text(row.cube)}`" if row.cube else ""
        default = " (default)" if row.default else ""
        signature = row.signature.replace("|", "\\|")
        cube_backends = "host" if name in on_host else "kernel"
        lines.append(f"| {name}{default} | {kind} | {row.family} | `{signature}` | "
                     f"{row.dtype_rule} | {rule} | {cube} | {cube_backends} |")
    return lines


def _cube_host_ops() -> set[str]:
    """Ops the cube backends run on the host NumPy backend."""
    from burn.backends.cube import CubeBackend
    from burn.backends.cube.fallback import host_ops

    return set(host_ops(CubeBackend))
