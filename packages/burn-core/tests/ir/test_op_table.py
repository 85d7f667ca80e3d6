"""The op table: agreement with the protocol and the backends, and its cube lowerings checked
against the NumPy backend by evaluating them with numpy."""

from __future__ import annotations

import importlib
import math
from typing import Any

import numpy as np
import pytest

import burn
from burn.autodiff import Autodiff
from burn.backend.protocol import Backend
from burn.backend.registry import _BUILTIN
from burn.backends.numpy import NumpyBackend
from burn.dtype import DType, Kind
from burn.frontend import arithmetic, bitwise, comparison
from burn.frontend.dispatch import BinaryOp
from burn.ir import HOOKS, OPS, check_protocol, missing_ops
from burn.profiler import Profile


def test_protocol_methods_are_the_table_rows():
    check_protocol(Backend)  # raises on any disagreement
    protocol_ops = {n for n in dir(Backend) if not n.startswith("_")
                    and callable(getattr(Backend, n)) and n not in HOOKS}
    assert protocol_ops - {"unavailable_reason"} == set(OPS)


def test_check_protocol_names_a_renamed_parameter():
    class Renamed(Backend):
        def float_add(self, a: Any, b: Any) -> Any:  # type: ignore[override]
            return a

    with pytest.raises(TypeError, match=r"float_add: protocol parameters \['a', 'b'\]"):
        check_protocol(Renamed)


def test_check_protocol_names_a_missing_method():
    Missing = type("Missing", (Backend,), {"float_exp": None})
    with pytest.raises(TypeError, match="float_exp"):
        check_protocol(Missing)


@pytest.mark.parametrize("cls", [NumpyBackend, Autodiff, Profile])
def test_backends_implement_every_op(cls):
    assert missing_ops(cls) == []


@pytest.mark.parametrize("group,name", [(g, n) for g, names in _BUILTIN.items() for n in names])
def test_builtin_registry_targets_implement_every_op(group, name):
    # The registry loads burn-core's own classes unchecked (no op table at the first tensor);
    # this keeps the guarantee that each is complete.
    module, _, attr = _BUILTIN[group][name].partition(":")
    assert missing_ops(getattr(importlib.import_module(module), attr)) == []


def test_an_incomplete_backend_lacks_the_ops_it_left_out():
    assert missing_ops(Backend)[:3] == ["adaptive_avg_pool", "adaptive_avg_pool_backward",
                                        "avg_pool"]
    assert "float_add" in missing_ops(Backend)


def test_frontend_binary_ops_name_table_rows():
    ops = [v for module in (arithmetic, bitwise, comparison) for v in vars(module).values()
           if isinstance(v, BinaryOp)]
    assert len(ops) > 10
    names = {impl for o in ops for impl in (*o.tensor.values(), *o.scalar.values())
             if isinstance(impl, str)}
    assert names and names <= set(OPS), sorted(names - set(OPS))


def test_rows_are_well_formed():
    for name, row in OPS.items():
        assert row.name == name
        assert row.family in {"creation", "arithmetic", "math", "comparison", "bitwise",
                              "layout", "indexing", "reduction", "activation", "module"}
        assert row.signature.startswith(f"{name}(")
        if row.kind is not None and not row.default:
            assert name.startswith(f"{row.kind.value}_"), name
        assert (row.returns in ("data", "none")) == (not row.results), name


# --- cube lowerings ------------------------------------------------------------------------

def _cube_ops() -> set[str]:
    from burn_cube.codegen.table_c import OPS as C_OPS

    return {key.split(".")[0] for key in C_OPS}


def _operands(expr: Any) -> set[str]:
    if isinstance(expr, str):
        return {expr}
    if isinstance(expr, tuple):
        return set().union(*(_operands(e) for e in expr[1:]))
    return set()


def _op_names(expr: Any) -> set[str]:
    if not isinstance(expr, tuple):
        return set()
    return {expr[0]}.union(*(_op_names(e) for e in expr[1:]))


LOWERED = sorted(name for name, row in OPS.items() if row.cube is not None)


def test_lowerings_use_burn_cube_ops_and_the_rows_own_parameters():
    cube_ops = _cube_ops()
    assert len(LOWERED) > 60
    for name in LOWERED:
        row = OPS[name]
        assert _op_names(row.cube) <= cube_ops, (name, _op_names(row.cube) - cube_ops)
        assert _operands(row.cube) <= {p.name for p in row.params}, name


_NUMPY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "neg": np.negative,
    "exp": np.exp, "log": np.log, "log1p": np.log1p, "sqrt": np.sqrt, "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "round": np.round,
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "abs": np.abs, "pow": np.power,
    "fmod": np.fmod,
    "isnan": np.isnan, "isinf": np.isinf, "iszero": lambda a: np.asarray(a) == 0,
    "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal,
    "and": np.logical_and, "or": np.logical_or, "not": np.logical_not,
    "bitand": np.bitwise_and, "bitor": np.bitwise_or, "bitxor": np.bitwise_xor,
    "shl": np.left_shift, "shr": np.right_shift, "invert": np.invert,
    "min": np.minimum, "max": np.maximum, "select": np.where,
    "erf": np.vectorize(math.erf, otypes=[np.float64]),
}


def _evaluate(expr: Any, env: dict[str, Any], dtype: np.dtype) -> Any:
    """A cube lowering evaluated with numpy in `dtype` (C semantics for int division)."""
    if isinstance(expr, str):
        return env[expr]
    if not isinstance(expr, tuple):
        return np.asarray(expr).astype(dtype) if not isinstance(expr, bool) else expr
    op, *args = expr
    if op == "cast":
        return _evaluate(args[0], env, dtype).astype(env[args[1]].numpy)
    values = [_evaluate(a, env, dtype) for a in args]
    if op == "div":
        a, b = values
        if np.issubdtype(np.result_type(a, b), np.integer):
            return (np.trunc(np.true_divide(a, b))).astype(np.result_type(a, b))
        return np.true_divide(a, b)
    return _NUMPY[op](*values)


_POSITIVE = {"float_log", "float_sqrt", "float_powf", "float_powf_scalar", "float_acosh"}


def _inputs(row: Any, rng: np.random.Generator) -> dict[str, Any]:
    """Arguments for an elementwise row: floats in (-0.9, 0.9) of both signs (positive for
    log, sqrt and pow, above 1 for acosh), ints in [-20, 20] with non-zero divisors."""
    env: dict[str, Any] = {}
    low = 0.1 if row.name in _POSITIVE else -0.9
    for p in row.params:
        if p.kind is Kind.FLOAT:
            env[p.name] = rng.uniform(low, 0.9, (3, 4)) + (1.5 if row.name.endswith("acosh") else
                                                          0.0)
        elif p.kind is Kind.INT:
            v = rng.integers(-20, 21, (3, 4))
            env[p.name] = np.where(v == 0, 3, v) if p.name == "rhs" else v
        elif p.kind is Kind.BOOL:
            env[p.name] = rng.random((3, 4)) < 0.5
        elif p.type in ("float", "float?"):
            env[p.name] = 0.3
        elif p.type in ("scalar", "scalar?"):
            env[p.name] = 0.25 if row.kind is Kind.FLOAT else (3 if "shift" not in row.name else 2)
        elif p.type == "dtype":
            env[p.name] = DType.float64 if row.name.endswith("into_float") or row.kind is \
                Kind.FLOAT and row.name.endswith("cast") else DType.int32
    if row.name.endswith("shift"):
        env["rhs"] = np.abs(env["rhs"]) % 8
    return env


@pytest.mark.parametrize("name", LOWERED)
def test_lowering_computes_what_the_numpy_backend_computes(name):
    row = OPS[name]
    rng = np.random.default_rng(len(name))
    env = _inputs(row, rng)
    if row.kind is Kind.FLOAT:
        for k, v in env.items():
            if isinstance(v, np.ndarray) and v.dtype == np.float64:
                env[k] = v.astype(np.float32)
    backend = NumpyBackend()
    device = burn.Device("numpy")
    args = [env[p.name] if p.kind is None or not isinstance(env[p.name], np.ndarray) else
            getattr(backend, f"{p.kind.value}_from_data")(env[p.name], device)
            for p in row.params]
    expected = np.asarray(getattr(backend, name)(*args))
    got = np.asarray(_evaluate(row.cube, env, expected.dtype))
    assert got.shape == expected.shape
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=2e-5,
                               atol=2e-6, err_msg=name)
