"""Random op programs and networks under fusion against the same on the device without it.

Each seeded program makes one to three inputs of one family of broadcasting shapes (0-d,
empty, size-1, broadcast and non-contiguous ones) in float16/32/64, int32/64 or bool, holding
NaN, infinities and 1e30 among ordinary values; then runs 2 to 11 random ops on them and on
earlier results: elementwise ops, scalars, comparisons, selects, casts, reductions, views,
activations, products, softmax, ops no fuser takes (cat, indexing, cumsum, sort, gather,
repeat, slice_assign), reads of intermediate results and dropped handles. The program runs on
`base` first, then on `base+fusion` with every block fused however short; both must raise the
same error types at the same steps and give every live result the same shape, dtype and values.
Other programs run under autodiff, float inputs requiring grad, and compare each input's
gradient of the sum of the live float results too; and random networks of linear layers,
activations and residuals under four losses compare the loss and every gradient, over two
steps (the second from the first's plans). The plain device is the reference here:
the conformance suite checks it against torch, and its `test_fuzz_fusion.py` draws programs of
one running value against torch; these mix several inputs and results, more dtypes, the ops
no fuser takes and dropped handles. Integer division is left out: its error is
deferred to a sync point (docs/ops.md), which a fused and an unfused program reach at
different reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from fusion_testing import DEVICES

import burn
import burn.functional as F
from burn.errors import BurnError

pytestmark = [pytest.mark.parametrize("base", DEVICES),
              pytest.mark.usefixtures("empty_stream", "fuse_small_blocks")]

#: Programs per device (each one a test, so pytest-xdist spreads them).
PROGRAMS = 30
SHAPES = [(), (0,), (1,), (3,), (2, 3), (4, 1, 3), (2, 0, 3), (5, 7), (1, 1), (3, 1, 1), (16, 16),
          (2, 16, 16)]
UNARY = ["exp", "log", "sqrt", "tanh", "sigmoid", "relu", "abs", "neg", "sin", "cos", "floor",
         "ceil", "round", "recip", "erf", "square", "log1p", "expm1", "sign", "rsqrt", "trunc"]
BINARY = ["add", "sub", "mul", "maximum", "minimum", "atan2", "pow", "hypot"]
FLOAT_BINARY = ["div", "remainder", "fmod"]  # (float operands only: see the module's note)
COMPARISONS = ["greater", "lower", "equal", "not_equal", "greater_equal", "lower_equal"]
REDUCTIONS = ["sum_dim", "mean_dim", "max_dim", "min_dim", "argmax", "logsumexp", "var",
              "prod_dim"]
ACTIVATIONS = ["gelu", "silu", "softplus", "leaky_relu", "elu", "hardtanh", "mish",
               "log_sigmoid"]
VIEWS = ["transpose", "flip", "slice", "unsqueeze", "expand", "reshape", "permute"]
AT_ONCE = ["cat", "getitem", "cumsum", "sort", "gather", "repeat", "narrow", "slice_assign",
           "roll", "stack"]


class MissingInput(Exception):
    """A step reads the result of an earlier step that raised (on both devices alike)."""


class Env(dict[str, burn.Tensor]):
    """A program's live tensors by name."""

    def __missing__(self, name: str) -> burn.Tensor:
        raise MissingInput(name)


Step = Callable[[Env], burn.Tensor]


@dataclass
class Op:
    """One step of a program: a label for failure messages and the op on the named tensors."""

    label: str
    run: Step


def _floats(t: burn.Tensor) -> bool:
    return t.dtype.is_float


def _dim(t: burn.Tensor, pick: int) -> int:
    """A dim of `t` chosen by `pick`, negative for odd picks."""
    d = pick % t.ndim
    return d - t.ndim if pick % 2 else d


def _view(kind: str, t: burn.Tensor, pick: int) -> burn.Tensor:
    if kind == "transpose" and t.ndim >= 2:
        return t.transpose(0, t.ndim - 1)
    if kind == "flip" and t.ndim:
        return t.flip([pick % t.ndim])
    if kind == "slice" and t.ndim and t.shape[0] > 1:
        return t[1:]
    if kind == "expand":
        return t.unsqueeze(0).expand([2, *t.shape])
    if kind == "reshape":
        return t.reshape([-1])
    if kind == "permute" and t.ndim >= 2:
        return t.permute(list(reversed(range(t.ndim))))
    return t.unsqueeze(-1)


def _reduce(kind: str, t: burn.Tensor, pick: int) -> burn.Tensor:
    if not t.ndim:
        return t.sum()
    d = _dim(t, pick)
    if kind in ("logsumexp", "var") and not _floats(t):
        return t.sum_dim(d)
    return getattr(t, kind)(d)


def _at_once(kind: str, t: burn.Tensor, other: burn.Tensor, pick: int) -> burn.Tensor:
    """An op no fuser takes: a sync point for the pending results it reads."""
    if not t.ndim:
        return burn.stack([t, t], 0)
    d = _dim(t, pick)
    numeric = t.dtype != burn.bool_  # (bool tensors neither sort nor multiply)
    if kind == "cat":
        return burn.cat([t, t], d)
    if kind == "getitem":
        return t[pick % t.shape[0]] if t.shape[0] else t[0:0]
    if kind == "cumsum":
        return t.cumsum(d)
    if kind == "sort" and numeric:
        return t.sort(d)
    if kind == "gather" and t.shape[d]:
        return t.gather(d, burn.zeros(list(t.shape), dtype=burn.int64, device=t.device))
    if kind == "repeat":
        return t.repeat_dim(d, 2)
    if kind == "narrow" and t.shape[d]:
        return t.narrow(d, 0, 1)
    if kind == "slice_assign" and t.shape[0] and numeric:
        return t.slice_assign([slice(0, 1)], t[0:1] * 0)
    if kind == "roll":
        return t.roll([1], [d])
    return burn.stack([t, other.cast(t.dtype).expand_as(t)] if other.ndim <= t.ndim
                      and _broadcasts(other.shape, t.shape) else [t, t], 0)


def _broadcasts(shape: tuple[int, ...], to: tuple[int, ...]) -> bool:
    return all(a in (1, b) for a, b in zip(reversed(shape), reversed(to), strict=False))


def random_op(rng: np.random.Generator, names: list[str]) -> Op:
    """One random op on tensors of `names` (its arguments chosen now, by `rng`)."""
    a, b = str(rng.choice(names)), str(rng.choice(names))
    pick = int(rng.integers(0, 100))
    kind = str(rng.choice(["unary", "binary", "scalar", "compare", "select", "cast", "reduce",
                           "view", "clamp", "activation", "matmul", "softmax", "read",
                           "at_once"]))
    if kind == "unary":
        op = str(rng.choice(UNARY))
        return Op(f"{op}({a})", lambda T: getattr(T[a], op)())
    if kind == "binary":
        op = str(rng.choice(BINARY + FLOAT_BINARY))

        def binary(T: Env) -> burn.Tensor:
            x, y = T[a], T[b]
            if op in FLOAT_BINARY and not (_floats(x) and _floats(y)):
                return x.mul(y)
            return getattr(x, op)(y)

        return Op(f"{op}({a}, {b})", binary)
    if kind == "scalar":
        op = str(rng.choice(["add", "sub", "mul", "pow", "clamp_min"]))
        value: float = float(rng.choice([0.0, 1.5, -2.0, 3.0, 0.5]))
        if rng.random() < 0.3:
            value = int(value)
        return Op(f"{op}({a}, {value})", lambda T: getattr(T[a], op)(value))
    if kind == "compare":
        op = str(rng.choice(COMPARISONS))
        if rng.random() < 0.5:
            return Op(f"{op}({a}, {b})", lambda T: getattr(T[a], op)(T[b]))
        return Op(f"{op}({a}, 0.5)", lambda T: getattr(T[a], op)(0.5))
    if kind == "select":
        m = str(rng.choice(names))
        if rng.random() < 0.5:
            return Op(f"mask_fill({a}, {m} > 0, 2)",
                      lambda T: T[a].mask_fill(T[m].cast(burn.float32) > 0, 2.0))
        return Op(f"where({m} > 0, {a}, {b})",
                  lambda T: T[a].mask_where(T[m].cast(burn.float32) > 0, T[b]))
    if kind == "cast":
        dtype = str(rng.choice(["float32", "float16", "int32", "int64", "bool"]))
        return Op(f"cast({a}, {dtype})", lambda T: T[a].cast(dtype))
    if kind == "reduce":
        op = str(rng.choice(REDUCTIONS))
        return Op(f"{op}({a}, {pick})", lambda T: _reduce(op, T[a], pick))
    if kind == "view":
        op = str(rng.choice(VIEWS))
        return Op(f"{op}({a}, {pick})", lambda T: _view(op, T[a], pick))
    if kind == "clamp":
        return Op(f"clamp({a})", lambda T: T[a].clamp(-1.0, 2.0))
    if kind == "activation":
        op = str(rng.choice(ACTIVATIONS))
        return Op(f"{op}({a})", lambda T: getattr(F, op)(T[a]))
    if kind == "matmul":  # (by the transpose where both are matrices: most shapes fit)
        return Op(f"matmul({a}, {b})", lambda T: T[a].matmul(
            T[b].mT if min(T[a].ndim, T[b].ndim) >= 2 else T[b]))
    if kind == "softmax":
        return Op(f"softmax({a})", lambda T: F.softmax(T[a], -1))
    if kind == "read":
        return Op(f"read({a})", lambda T: (T[a].to_numpy(), T[a])[1])
    op = str(rng.choice(AT_ONCE))
    return Op(f"{op}({a}, {b}, {pick})", lambda T: _at_once(op, T[a], T[b], pick))


def _input(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith("int"):
        return rng.integers(-5, 6, shape).astype(dtype)
    values = rng.standard_normal(shape) * rng.choice([1, 3, 50])
    if values.size and rng.random() < 0.3:
        values.reshape(-1)[rng.integers(0, values.size)] = rng.choice(
            [np.nan, np.inf, -np.inf, 0.0, 1e30, -1e30])
    with np.errstate(over="ignore"):  # (1e30 saturates float16 to inf, as intended)
        return values.astype(dtype)


def _broadcast_shape(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape broadcasting to `shape`: some dims 1, maybe fewer leading dims."""
    dims = [1 if rng.random() < 0.3 else n for n in shape]
    return tuple(dims[int(rng.integers(0, len(dims) + 1)):]) if rng.random() < 0.4 \
        else tuple(dims)


@dataclass
class Program:
    """A seeded random program: its inputs and steps, each step's result named t<i>, and the
    handles dropped after each step."""

    inputs: dict[str, np.ndarray]
    steps: list[Op]
    dropped: list[list[str]]


def make_program(seed: int, base: str) -> Program:
    rng = np.random.default_rng(seed)
    shape = SHAPES[int(rng.integers(0, len(SHAPES)))]
    floats = ["float32", "float32", "float32", "float16"] + (["float64"] if base != "wgpu"
                                                              else [])
    inputs: dict[str, np.ndarray] = {}
    for i in range(int(rng.integers(1, 4))):
        dtype = str(rng.choice(floats)) if rng.random() < 0.85 else str(
            rng.choice(["int32", "int64", "bool"]))
        inputs[f"x{i}"] = _input(rng, _broadcast_shape(rng, shape) if i else shape, dtype)
    names, steps, dropped = list(inputs), [], []
    for i in range(int(rng.integers(2, 12))):
        steps.append(random_op(rng, names))
        names.append(f"t{i}")
        gone = [names.pop(int(rng.integers(0, len(names) - 1)))] \
            if rng.random() < 0.2 and len(names) > 2 else []
        dropped.append(gone)
    return Program(inputs, steps, dropped)


Outcome = tuple[list[str | None], dict[str, Any]]


def run_program(program: Program, device: str, gradients: bool = False) -> Outcome:
    """Each step's error type (None where it ran) and every live result at the end: its
    array, or the type of the error reading it raised; with `gradients` (an autodiff
    `device`, float inputs requiring grad), also each input's gradient of the sum of the live
    float results, as "grad <input>" (None where it has none)."""
    env = Env({k: burn.tensor(v, device=device) for k, v in program.inputs.items()})
    if gradients:
        env.update({k: t.require_grad() for k, t in env.items() if _floats(t)})
    errors: list[str | None] = []
    for i, (op, gone) in enumerate(zip(program.steps, program.dropped, strict=True)):
        try:
            env[f"t{i}"] = op.run(env)
            errors.append(None)
        except (BurnError, MissingInput) as e:
            errors.append(type(e).__name__)
        for name in gone:
            env.pop(name, None)
    results: dict[str, Any] = {}
    if gradients:
        results.update(_gradients(program, env))
    for name, t in env.items():
        try:
            results[name] = t.to_numpy()
        except BurnError as e:
            results[name] = type(e).__name__
    return errors, results


def _gradients(program: Program, env: Env) -> dict[str, Any]:
    """Each float input's gradient of the sum of the live non-empty float results (an array,
    None, or the type of the error backward raised)."""
    terms = [t.cast(burn.float32).sum() for t in env.values() if _floats(t) and t.numel()]
    if not terms:
        return {}
    loss = terms[0]
    for term in terms[1:]:
        loss = loss + term
    try:
        grads = loss.backward()
    except BurnError as e:
        return {"backward": type(e).__name__}
    found = {}
    for name in program.inputs:
        grad = env[name].grad(grads) if name in env and _floats(env[name]) else None
        found[f"grad {name}"] = None if grad is None else grad.to_numpy()
    return found


def assert_same_results(label: str, fused: Any, plain: Any, tol: float = 1e-5) -> None:
    """Shape and dtype first, then values (float16 to 2e-3, other floats to `tol`, with NaN
    where NaN)."""
    assert type(fused) is type(plain), f"{label}: {fused!r} vs {plain!r}"
    if plain is None or isinstance(plain, str):
        assert fused == plain, label
        return
    assert (fused.shape, fused.dtype) == (plain.shape, plain.dtype), label
    if plain.dtype.kind == "f":
        tol = 2e-3 if plain.dtype == np.float16 else tol
        np.testing.assert_allclose(fused.astype(np.float64), plain.astype(np.float64),
                                   rtol=tol, atol=tol, equal_nan=True, err_msg=label)
    else:
        np.testing.assert_array_equal(fused, plain, err_msg=label)


def assert_fused_like_plain(seed: int, base: str, gradients: bool, tol: float) -> None:
    """Program `seed` on `base+fusion` against `base` (each under autodiff with `gradients`,
    their gradients compared too): the same errors at the same steps, then every result."""
    program = make_program(seed, base)
    label = f"seed {seed}: " + "; ".join(op.label for op in program.steps)
    tail = "+autodiff" if gradients else ""
    plain_errors, plain = run_program(program, f"{base}{tail}", gradients)
    fused_errors, fused = run_program(program, f"{base}+fusion{tail}", gradients)
    assert fused_errors == plain_errors, label
    assert fused.keys() == plain.keys(), label
    for name, value in plain.items():
        assert_same_results(f"{label}: {name}", fused[name], value, tol=tol)


@pytest.mark.parametrize("seed", range(PROGRAMS))
def test_a_random_program_fused_gives_what_it_gives_unfused(base: str, seed: int) -> None:
    assert_fused_like_plain(seed, base, gradients=False, tol=1e-5)


@pytest.mark.parametrize("seed", range(PROGRAMS))
def test_a_random_program_fused_gives_the_gradients_it_gives_unfused(base: str,
                                                                     seed: int) -> None:
    # (the gradients sum in another order: 1e-4)
    assert_fused_like_plain(PROGRAMS + seed, base, gradients=True, tol=1e-4)


#: Activations of the random networks (None: the layer is linear).
NETWORK_ACTIVATIONS = [None, "relu", "gelu", "tanh", "sigmoid", "silu", "leaky_relu"]


@dataclass
class Network:
    """A seeded random network: input, layer weights and biases, each layer's activation,
    whether it adds its input back (same width), and the loss."""

    x: np.ndarray
    layers: list[tuple[np.ndarray, np.ndarray, str | None, bool]]
    target: np.ndarray
    loss: str


def make_network(seed: int) -> Network:
    rng = np.random.default_rng(seed)
    batch = int(rng.choice([1, 3, 16]))
    widths = [int(rng.choice([1, 4, 16, 33])) for _ in range(int(rng.integers(2, 5)))]
    layers = []
    for d_in, d_out in zip(widths, widths[1:], strict=False):
        weight = (rng.standard_normal((d_in, d_out)) / np.sqrt(d_in)).astype(np.float32)
        bias = rng.standard_normal(d_out).astype(np.float32)
        activation = NETWORK_ACTIVATIONS[int(rng.integers(0, len(NETWORK_ACTIVATIONS)))]
        layers.append((weight, bias, activation, d_in == d_out and rng.random() < 0.5))
    loss = str(rng.choice(["cross_entropy", "mse", "layer_norm_sum", "softmax_sum"]))
    target = rng.integers(0, widths[-1], batch) if loss == "cross_entropy" \
        else rng.standard_normal((batch, widths[-1])).astype(np.float32)
    return Network(rng.standard_normal((batch, widths[0])).astype(np.float32), layers, target,
                   loss)


def network_gradients(net: Network, device: str, steps: int = 2) -> list[np.ndarray]:
    """The loss and the gradients of the input and of every weight and bias of `net` on
    `device` (an autodiff device), for each of `steps` repeated steps (the second reuses
    the first's fusion plans)."""
    out: list[np.ndarray] = []
    for _ in range(steps):
        x = burn.tensor(net.x, device=device).require_grad()
        params = [(burn.tensor(w, device=device).require_grad(),
                   burn.tensor(b, device=device).require_grad()) for w, b, _, _ in net.layers]
        h = x
        for (w, b), (_, _, activation, residual) in zip(params, net.layers, strict=True):
            z = F.linear(h, w, b)
            z = z if activation is None else getattr(F, activation)(z)
            h = z + h if residual else z
        target = burn.tensor(net.target, device=device)
        if net.loss == "cross_entropy":
            loss = F.cross_entropy(h, target)
        elif net.loss == "mse":
            loss = F.mse_loss(h, target)
        elif net.loss == "layer_norm_sum":
            loss = (F.layer_norm(h, h.shape[-1]) * target).sum()
        else:
            loss = (F.softmax(h, -1) * target).sum()
        grads = loss.backward()
        out.append(loss.to_numpy())
        out += [t.grad(grads).to_numpy() for t in (x, *(p for pair in params for p in pair))]
    return out


@pytest.mark.parametrize("seed", range(PROGRAMS))
def test_a_random_network_fused_gives_the_gradients_it_gives_unfused(base: str,
                                                                     seed: int) -> None:
    """Random linear layers (widths 1 to 33, batch 1 to 16) with random activations and
    residuals, under one of four losses: the loss and every gradient, twice, as unfused (the
    products' epilogues and prologues, and the backward pass's products beside elementwise
    terms, are what fuse here)."""
    net = make_network(2 * PROGRAMS + seed)
    plain = network_gradients(net, f"{base}+autodiff")
    fused = network_gradients(net, f"{base}+fusion+autodiff")
    label = f"seed {2 * PROGRAMS + seed}: {[(w.shape, a, r) for w, _, a, r in net.layers]} " \
        f"{net.loss}"
    for i, (got, want) in enumerate(zip(fused, plain, strict=True)):
        assert_same_results(f"{label}: result {i}", got, want, tol=1e-4)
