"""Ops as data: the op table, op records, and the check that the protocol follows the table.

- `OPS`: backend method name -> `OpDef` (kind, family, parameters, results, shape and dtype
  rules, burn-cube lowering); see `burn.ir.table`.
- `OpIR` / `TensorIR` / `make_record`: an op with its tensors described, shapes and dtypes
  inferred without running it; see `burn.ir.record`.
- `missing_ops(cls)`: ops a backend class lacks (what registration reports).
"""

from burn.ir.opdef import CubeExpr, OpDef
from burn.ir.record import OpIR, TensorArg, TensorIR, make_record, new_id, split_args
from burn.ir.signature import Param, Result
from burn.ir.table import HOOKS, OPS


def check_protocol(protocol: type) -> None:
    """Check that `protocol` has a method per op of the table, with the row's parameter names,
    abstract exactly where the row has no default, and no op method the table lacks.

    Args:
        protocol: the backend protocol class.
    Raises:
        TypeError: naming each disagreement (a bug in the protocol or the table).
    """
    problems = []
    abstract: frozenset[str] = getattr(protocol, "__abstractmethods__", frozenset())
    for name, row in OPS.items():
        method = getattr(protocol, name, None)
        if method is None:
            problems.append(f"{name}: in the op table, not in the protocol")
            continue
        code = method.__code__
        params = list(code.co_varnames[1:code.co_argcount])
        if params != [p.name for p in row.params]:
            problems.append(f"{name}: protocol parameters {params} != table {row.signature}")
        if (name in abstract) == row.default:
            problems.append(f"{name}: abstract in the protocol iff the row has no default")
    extra = [n for n in abstract if n not in OPS and n not in HOOKS]
    problems += [f"{name}: abstract in the protocol, not in the op table" for name in extra]
    if problems:
        raise TypeError("backend protocol and op table disagree:\n  " + "\n  ".join(problems))


def missing_ops(cls: type) -> list[str]:
    """Ops of the table that `cls` does not implement (absent or still abstract).

    Args:
        cls: a backend class.
    Returns:
        Sorted method names; empty for a complete backend.
    """
    abstract: frozenset[str] = getattr(cls, "__abstractmethods__", frozenset())
    return sorted(name for name in OPS if name in abstract or not callable(getattr(cls, name,
                                                                                     None)))


__all__ = ["HOOKS", "OPS", "CubeExpr", "OpDef", "OpIR", "Param", "Result", "TensorArg",
           "TensorIR", "check_protocol", "make_record", "missing_ops", "new_id", "split_args"]
