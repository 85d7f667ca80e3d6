"""Names usable inside ``@kernel`` functions.

They are markers resolved by the frontend; calling them from plain Python raises.
"""

from __future__ import annotations

import builtins
import math
import types
from collections.abc import Callable
from typing import Any

from burn_cube.errors import KernelError
from burn_cube.ir.scope import UNARY_MATH
from burn_cube.types import DType

#: Maps a Python object (stub, ``math`` function, builtin) to the IR operation it denotes.
BUILTINS: dict[Any, str] = {}


class Position:
    """A position builtin such as ``ABSOLUTE_POS``; a u32 value inside kernels."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


_AXES = ("", "_X", "_Y", "_Z")
ABSOLUTE_POS, ABSOLUTE_POS_X, ABSOLUTE_POS_Y, ABSOLUTE_POS_Z = (
    Position("ABSOLUTE_POS" + a) for a in _AXES)
UNIT_POS, UNIT_POS_X, UNIT_POS_Y, UNIT_POS_Z = (Position("UNIT_POS" + a) for a in _AXES)
CUBE_POS, CUBE_POS_X, CUBE_POS_Y, CUBE_POS_Z = (Position("CUBE_POS" + a) for a in _AXES)
CUBE_DIM, CUBE_DIM_X, CUBE_DIM_Y, CUBE_DIM_Z = (Position("CUBE_DIM" + a) for a in _AXES)
CUBE_COUNT, CUBE_COUNT_X, CUBE_COUNT_Y, CUBE_COUNT_Z = (Position("CUBE_COUNT" + a) for a in _AXES)
PLANE_DIM = Position("PLANE_DIM")
UNIT_POS_PLANE = Position("UNIT_POS_PLANE")


def _stub(op: str) -> Callable[..., Any]:
    def stub(*_args: Any, **_kwargs: Any) -> Any:
        raise KernelError(f"burn_cube.{op}() is only usable inside a @burn_cube.kernel function")

    stub.__name__ = op
    stub.__qualname__ = op
    BUILTINS[stub] = op
    return stub


exp, exp2, log, log2, log1p, sin, cos, tan, tanh, asin, acos, atan, sinh, cosh, sqrt, rsqrt, \
    floor, ceil, round, trunc, erf = (_stub(n) for n in UNARY_MATH)
pow = _stub("pow")
select = _stub("select")
isnan = _stub("isnan")
isinf = _stub("isinf")
iszero = _stub("iszero")
opaque = _stub("opaque")
shared_memory = _stub("shared_memory")
sync_units = _stub("sync_units")
atomic_add = _stub("atomic_add")
atomic_min = _stub("atomic_min")
atomic_max = _stub("atomic_max")
plane_sum = _stub("plane_sum")
plane_max = _stub("plane_max")
unroll = _stub("unroll")
index_of = _stub("index_of")

for _name in UNARY_MATH + ("pow", "isnan", "isinf"):
    if hasattr(math, _name):
        BUILTINS[getattr(math, _name)] = _name
BUILTINS[math.fabs] = "abs"
for _name in ("abs", "min", "max", "len", "range", "float", "int", "bool", "round", "pow"):
    BUILTINS[getattr(builtins, _name)] = _name


def fingerprint(obj: Any) -> str | None:
    """What lowering can read from a global the kernel names, as a stable string.

    Literals, dtypes, positions, builtins and modules (attribute bases) have one; anything else
    gives None (such a kernel is not put in the launch index).
    """
    if obj is None or isinstance(obj, bool | int | float | str):
        return f"{type(obj).__name__}:{obj!r}"
    if isinstance(obj, Position | DType):
        return f"{type(obj).__name__}:{obj!r}"
    if isinstance(obj, types.ModuleType):
        return f"module:{obj.__name__}"
    try:
        op = BUILTINS.get(obj)
    except TypeError:  # unhashable
        return None
    return None if op is None else f"op:{op}"

