"""`table_c.calls_library` says which float ops the C target leaves as per-element library
calls: checked against gcc's own vectorizer report, with the cpu runtime's compiler and flags,
one loop per op and dtype."""

from __future__ import annotations

from pathlib import Path

import pytest

import burn_cube as bc
from burn_cube.codegen import table_c
from burn_cube.runtime.cpu import vectorized_lines

pytestmark = pytest.mark.skipif("cpu" not in bc.available(), reason="no C compiler")

OPS = (*table_c.MATH_CALLS, "pow", "fmod", "add", "round", "abs.float")
CTYPES = {"f32": ("float", "f"), "f64": ("double", "")}


def _vectorized(tmp_path: Path, dtype: str) -> dict[str, bool]:
    """Per op of `OPS`, whether gcc vectorizes a loop applying its C lowering to `dtype`."""
    ctype, suffix = CTYPES[dtype]
    lines = [table_c.PRELUDE, table_c.HELPERS_F32_MATH]
    for op in OPS:
        template = table_c.OPS.get(f"{op}.{dtype}") or table_c.OPS[op]
        expr = template.format(a="a[i]", b="b[i]", f=suffix, s=dtype, t=ctype)
        lines.append(f"void loop_{op.replace('.', '_')}(const {ctype} *restrict a, "
                     f"const {ctype} *restrict b, {ctype} *restrict o, int n) "
                     f"{{ for (int i = 0; i < n; i++) o[i] = {expr}; }}")
    source = "\n".join(lines)
    first = source.count("\n", 0, source.index("void loop_")) + 1
    done = vectorized_lines(source, tmp_path)
    return {op: first + k in done for k, op in enumerate(OPS)}


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_library_calls_are_the_loops_gcc_leaves_scalar(tmp_path: Path, dtype: str) -> None:
    """An op is a library call exactly where gcc does not vectorize its loop (f32 exp and
    tanh are the C target's inline polynomials, sqrt, floor, ceil and trunc instructions;
    arithmetic, rint and fabs vectorize)."""
    vectorized = _vectorized(tmp_path, dtype)
    assert vectorized["add"] and vectorized["round"] and vectorized["abs.float"]
    calls = {op: table_c.calls_library(op, dtype) for op in OPS}
    assert {op: not v for op, v in vectorized.items()} == calls
    assert calls["log"] and not calls["sqrt"] and not calls["floor"]
    assert calls["exp"] == calls["tanh"] == (dtype == "f64")
