"""Optimizer updates of the cube backends as burn-cube kernels.

`adam_steps` runs Adam / AdamW (L2 or decoupled weight decay, AMSGrad) over a step's params,
those of one backend and dtype in one launch (torch's multi-tensor "foreach"; up to `MAX_GROUP`
a launch on the cpu and cuda runtimes, one a launch on wgpu); `sgd_step` SGD with momentum,
`rmsprop_step` RMSProp (centered, momentum) and `adagrad_step` AdaGrad over one param, through
the same kernels (`_build`). Params are dense float tensors of a cube backend, or of a fusion
backend over one (`_computing`: the kernels read its tensors' computed values once its stream
has run, and their results are tensors of the fusion device around inner primitives, so an
optimizer under fusion records nothing). A kernel reads each param and gradient, updates the
state buffers in place and writes the new param into a new buffer, or over the old values where
nothing but the param holds them (`overwritable`: an optimizer's step on the cpu and cuda
runtimes; torch updates params in place too, and the old buffer's traffic and its place in the
caches are saved). They compute the float
operations of `burn.optim.buffers.TensorOps` in the same order, in the param's dtype, so
trajectories match the tensor-op path to rounding (the C compiler may contract a multiply and
an add into one fused multiply-add, about an ulp away; Adam multiplies the second moment's
square root by the reciprocal of its bias correction where the tensor ops divide by it, an ulp
away: a CPU's divider is the kernel's bottleneck, and this is one of its three long operations
an element). Each returns None (and changes
nothing) for anything else: another backend, dtypes or layouts that are not dense float, or
state unlike the param.

Moment buffers are overwritten only when a step of these kernels made them (`_OWNED`); others
(fresh zeros, loaded state, tensor-op results) are copied once into a buffer of its own first.
"""

from __future__ import annotations

import math
import sys
import weakref
from collections.abc import Callable, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, cast

from burn.autodiff.tensor import AutodiffTensor
from burn.dtype import DType
from burn.frontend.tensor import Tensor
from burn.ir.cube import cube_dtype

from .backend import CUBE_DIM, CubeBackend
from .layout import contiguous_copy
from .tensor import CubeTensor, layout_key

if TYPE_CHECKING:
    from burn.backend.protocol import Backend
    from burn.fusion.backend import Fusion

#: Dtypes the kernels update (the others fall back to tensor ops). Not float16: the C target
#: keeps a fused kernel's float16 intermediates unrounded (excess precision), a few ulp away from
#: the tensor-op path, which rounds each op's result to float16.
FLOATS = (DType.float32, DType.float64)
#: Moment buffers these kernels allocated, which later steps overwrite in place.
_OWNED: weakref.WeakSet[CubeTensor] = weakref.WeakSet()


#: Elements one unit of an update kernel walks on the cpu runtime (a unit per cube: OpenMP
#: splits the units; GPUs run a unit per element).
CPU_CHUNK = 4096
#: Params one cpu or cuda launch updates at most (each adds its arguments and a branch to the
#: kernel; WGSL's storage-buffer bindings per shader are few, so wgpu updates one a launch).
MAX_GROUP = 16
#: Bytes of kernel arguments a cuda launch may take (CUDA's limit is 4096).
CUDA_ARG_BYTES = 4000
#: Arguments of one param in a launch: its first unit, own scalars, then its arrays.
_Args = tuple[int, tuple[float, ...], list[Any]]


class _Param:
    """One param's arguments in an update kernel being built: its own scalars (by name), the
    param and gradient (read, at their offsets), the state buffers (by key) and `out`."""

    def __init__(self, b: Any, cube: Any, k: int, rank: int, own: tuple[str, ...],
                 states: tuple[str, ...]) -> None:
        from burn_cube import u32

        self.b, self.cube = b, cube
        self.first = b.scalar(f"first{k}", u32)
        self.scalars = {name: b.scalar(f"{name}{k}", cube) for name in own}
        self.param = b.tensor(f"param{k}", cube, rank, write=False)
        self.grad = b.tensor(f"grad{k}", cube, rank, write=False)
        self.state = {key: b.tensor(f"{key}{k}", cube, rank, write=True) for key in states}
        self.out = b.tensor(f"out{k}", cube, rank, write=True)

    def read(self, pos: Any, l2: Any | None, negate: bool = False) -> tuple[Any, Any]:
        """The param and gradient at `pos` as locals: the gradient negated with `negate`, then
        `l2` (a weight scalar) times the param added to it when given."""
        b, cube, param, grad = self.b, self.cube, self.param, self.grad
        p = b.local(cube, param[param.offset + pos])
        g = b.local(cube, grad[grad.offset + pos])
        if negate:
            b.set(g, -g)
        if l2 is not None:
            b.set(g, g + p * l2)
        return p, g


#: The update of one element: (shared scalars by name, the param's arguments, position).
Element = Callable[[dict[str, Any], _Param, Any], None]


def _build(name: str, dtype: DType, shared: tuple[str, ...], own: tuple[str, ...],
           states: tuple[str, ...], ranks: tuple[int, ...], cpu: bool, element: Element
           ) -> Any:
    """An update kernel over `len(ranks)` params (of those ranks; dense state and `out`).

    Arguments, in order: the `shared` scalars, `chunk` (elements per unit) and `units` (all
    params' units), then per param `first<k>` (its first unit), its `own` scalars, param,
    grad, the `states` buffers and `out`. Param k owns units ``first<k>`` up to the next
    param's first (`units` for the last); each of its units walks `chunk` elements in a loop
    that the C target runs unchecked and vectorized. On the cpu runtime a cube is one unit
    (OpenMP splits the units, `chunk` being each one's work); on GPUs a cube has `CUBE_DIM`.
    """
    from burn_cube import KernelBuilder, u32

    cube = cube_dtype(name, dtype)
    b = KernelBuilder(name, 1 if cpu else CUBE_DIM, unit_work="chunk")
    values = {scalar: b.scalar(scalar, cube) for scalar in shared}
    chunk, units = b.scalar("chunk", u32), b.scalar("units", u32)
    params = [_Param(b, cube, k, rank, own, states) for k, rank in enumerate(ranks)]
    unit = b.ABSOLUTE_POS
    for k, p in enumerate(params):
        end = params[k + 1].first if k + 1 < len(params) else units
        with b.if_(b.and_(unit >= p.first, unit < end)):
            start = b.local(u32, (unit - p.first) * chunk)
            stop = b.local(u32, b.min(start + chunk, p.out.len))
            with b.for_range(start, stop) as pos:
                element(values, p, pos)
    return b.kernel()


@cache
def adam_kernel(dtype: DType, decay: str, amsgrad: bool, maximize: bool, ranks: tuple[int, ...],
                cpu: bool) -> Any:
    """Adam's update of params of `ranks` (`_build`): `decay` is "" (none), "l2" (added to the
    gradient) or "decoupled" (AdamW's shrink of the param); `amsgrad` keeps the running maximum
    of the second moment; `maximize` negates the gradient first. Scalars: lr-like factors as
    `TensorOps` computes them on the host, the bias corrections per param (their step counts
    may differ; the second's as the reciprocal of its square root, a multiply per element)."""
    def element(s: dict[str, Any], u: _Param, pos: Any) -> None:
        b, cube = u.b, u.cube
        m1, m2, peak = u.state["moment_1"], u.state["moment_2"], u.state.get("max_moment_2")
        p, g = u.read(pos, s["weight"] if decay == "l2" else None, maximize)
        if decay == "decoupled":
            b.set(p, p * s["weight"])
        first = b.local(cube, m1[pos] * s["beta_1"] + g * s["rest_1"])
        second = b.local(cube, m2[pos] * s["beta_2"] + g * g * s["rest_2"])
        m1[pos] = first
        m2[pos] = second
        if peak is not None:
            b.set(second, b.select(second > peak[pos], second, peak[pos]))
            peak[pos] = second
        u.out[pos] = p - first / (b.sqrt(second) * u.scalars["inv_root_2"] + s["epsilon"]) * \
            u.scalars["step_size"]

    return _build("adam_step", dtype, ("weight", "beta_1", "rest_1", "beta_2", "rest_2",
                                       "epsilon"), ("inv_root_2", "step_size"), _ADAM_KEYS[amsgrad],
                  ranks, cpu, element)


_ADAM_KEYS = {False: ("moment_1", "moment_2"), True: ("moment_1", "moment_2", "max_moment_2")}


@cache
def sgd_kernel(dtype: DType, l2: bool, nesterov: bool, ranks: tuple[int, ...], cpu: bool
               ) -> Any:
    """SGD-with-momentum's update (`_build`; the momentum buffer already exists)."""
    def element(s: dict[str, Any], u: _Param, pos: Any) -> None:
        b, buf = u.b, u.state["momentum"]
        p, g = u.read(pos, s["weight"] if l2 else None)
        new = b.local(u.cube, buf[pos] * s["momentum"] + g * s["rest"])
        buf[pos] = new
        if nesterov:
            b.set(new, g + new * s["momentum"])
        u.out[pos] = p - new * s["lr"]

    return _build("sgd_step", dtype, ("weight", "momentum", "rest", "lr"), (), ("momentum",),
                  ranks, cpu, element)


@cache
def rmsprop_kernel(dtype: DType, l2: bool, centered: bool, momentum: bool,
                   ranks: tuple[int, ...], cpu: bool) -> Any:
    """RMSProp's update (`_build`): the squared-gradient average (and with `centered` the
    gradient average) and with `momentum` the momentum buffer, updated in place."""
    def element(s: dict[str, Any], u: _Param, pos: Any) -> None:
        b, cube = u.b, u.cube
        square_avg, grad_avg = u.state["square_avg"], u.state.get("grad_avg")
        buf = u.state.get("momentum")
        p, g = u.read(pos, s["weight"] if l2 else None)
        avg = b.local(cube, square_avg[pos] * s["alpha"] + g * g * s["rest"])
        square_avg[pos] = avg
        if grad_avg is not None:
            mean = b.local(cube, grad_avg[pos] * s["alpha"] + g * s["rest"])
            grad_avg[pos] = mean
            b.set(avg, avg - mean * mean)
        step = b.local(cube, g / (b.sqrt(avg) + s["epsilon"]))
        if buf is not None:
            b.set(step, buf[pos] * s["momentum"] + step)
            buf[pos] = step
        u.out[pos] = p - step * s["lr"]

    return _build("rmsprop_step", dtype, ("weight", "alpha", "rest", "epsilon", "momentum",
                                          "lr"), (), _rmsprop_keys(centered, momentum),
                  ranks, cpu, element)


def _rmsprop_keys(centered: bool, momentum: float) -> tuple[str, ...]:
    return ("square_avg", *(("grad_avg",) if centered else ()),
            *(("momentum",) if momentum else ()))


@cache
def adagrad_kernel(dtype: DType, l2: bool, ranks: tuple[int, ...], cpu: bool) -> Any:
    """AdaGrad's update (`_build`), the sum of squared gradients updated in place."""
    def element(s: dict[str, Any], u: _Param, pos: Any) -> None:
        b, total = u.b, u.state["sum"]
        p, g = u.read(pos, s["weight"] if l2 else None)
        acc = b.local(u.cube, total[pos] + g * g)
        total[pos] = acc
        u.out[pos] = p - g / (b.sqrt(acc) + s["epsilon"]) * u.scalars["clr"]

    return _build("adagrad_step", dtype, ("weight", "epsilon"), ("clr",), ("sum",), ranks, cpu,
                  element)


def _fusable(param: Tensor, grad: Tensor, keys: tuple[str, ...], state: dict[str, Any]
             ) -> tuple[CubeBackend, CubeTensor, CubeTensor, list[CubeTensor]] | None:
    """The cube backend computing `param` and `grad` with their values and those of the
    state entries `keys`, when param and gradient are contiguous tensors of one shape and a
    float dtype of `FLOATS` on one backend (a cube backend, or a fusion backend over one:
    `_computing`) and the state entries tensors of that backend of that shape and dtype; else
    None (the dtype's support is checked per group)."""
    bk = param._bk
    cube = cast(CubeBackend, bk) if _is_cube(type(bk)) else _computing(bk)
    if cube is None or grad._bk is not bk:
        return None
    p, g = _value(param._prim), _value(grad._prim)
    if (type(p) is not CubeTensor or type(g) is not CubeTensor or p.dtype is not g.dtype
            or p.dtype not in FLOATS or p.shape != g.shape or not p.is_contiguous
            or not g.is_contiguous):
        return None
    states = []
    for key in keys:
        t = state.get(key)
        if not isinstance(t, Tensor) or t._bk is not bk:
            return None
        s = _value(t._prim)
        if type(s) is not CubeTensor or s.dtype is not p.dtype or s.shape != p.shape:
            return None
        states.append(s)
    return cube, p, g, states


@cache
def _is_cube(kind: type) -> bool:
    """Whether backend class `kind` is a cube backend (not a decorator)."""
    return issubclass(kind, CubeBackend)


@cache
def _fusion() -> type[Fusion]:
    """The fusion decorator's class (imported on first use)."""
    from burn.fusion.backend import Fusion

    return Fusion


def _computing(bk: Backend) -> CubeBackend | None:
    """The inner cube backend of `bk` where it is a fusion backend over one, after its stream
    ran the pending ops (the kernels overwrite state buffers in place: an op recorded on one
    must read the values before; and handles then hold their values: `_value`); else None.
    A fusion backend's primitives are the inner backend's or handles on them, so the kernels
    run on those, their results tensors of the fusion device around inner primitives."""
    if not isinstance(bk, _fusion()) or not _is_cube(type(bk.inner)):
        return None
    if bk.stream.pending:
        bk.stream.flush()
    return cast(CubeBackend, bk.inner)


def _value(prim: Any) -> Any:
    """A cube primitive as is; a fusion handle's computed value (None while pending)."""
    return prim if type(prim) is CubeTensor else getattr(prim, "value", None)


def _owned(bk: CubeBackend, param: Tensor, state: dict[str, Any], key: str,
           prim: CubeTensor) -> Any:
    """The array of state buffer `key` (`prim`, a tensor like the param), made one these
    kernels own (a dense copy, once, when it is not)."""
    if prim not in _OWNED:
        prim = contiguous_copy(bk, prim)
        _OWNED.add(prim)
        state[key] = param._wrap(prim)
    return prim.array


#: Runtimes whose update kernels may write a param's new values over its old ones (their
#: kernels may read and write one buffer: WGSL refuses a buffer bound twice when one is
#: written; CUDA launches the kernel's variant without ``__restrict__``).
OVERWRITING = ("cpu", "cuda")
_refs = sys.getrefcount


def overwritable(param: Tensor, value: Tensor) -> bool:
    """Whether an update may write the new values of `param` (a module's param) over its old
    ones: `value`, its tensor on the inner device, is an owning cube tensor on a runtime of
    `OVERWRITING` that nothing holds but `param` (and `value`): no other tensor, view, numpy or
    DLPack export, or saved autodiff graph, each of which would see the values change.

    References are counted against a local name's own count (`probe`), so the test holds
    however the interpreter counts a call's arguments.
    """
    prim = value._prim
    if type(prim) is not CubeTensor:
        return False
    array = prim.array
    if array.base is not None or array.shared or array.runtime.name not in OVERWRITING:
        return False
    probe = object()
    alone = _refs(probe)  # a local name and nothing else
    outer = param._prim
    if outer is prim:  # a device without autodiff: `value` is `param`
        holders = 2  # param._prim and the name `outer`
    elif type(outer) is AutodiffTensor and outer.primitive is prim and _refs(outer) == alone + 1:
        holders = 2  # the AutodiffTensor (held by param._prim alone) and value._prim
    else:
        return False
    handle = array.handle
    return (_refs(prim) == alone + holders and _refs(array) == alone + 1
            and _refs(handle) == alone + 1)


#: A kernel of the update for (dtype, the params' ranks, whether on the cpu runtime).
Kernel = Callable[[DType, tuple[int, ...], bool], Any]
#: One param's update: (param, gradient, state).
Member = tuple[Tensor, Tensor, dict[str, Any]]


def _run(members: list[Member], keys: tuple[str, ...], kernel: Kernel,
         shared: tuple[float, ...], own: Callable[[dict[str, Any]], tuple[float, ...]],
         owners: Sequence[Tensor] | None = None) -> list[Tensor | None]:
    """Launch `kernel` over the members it applies to, those of one backend and dtype together
    (`_batches`: at most `MAX_GROUP` a launch on cpu and cuda, one on wgpu): the `shared`
    scalars, then per member its own scalars (from `own(state)`, called once the kernel
    applies: it may advance counters in `state`), param, gradient, the state buffers `keys`
    (made the kernels' own) and the new param: written over the old values where `owners`
    (the module params the members' values belong to, or None) lets it (`overwritable`).

    Returns:
        Per member, the new param values, or None where the kernel does not apply (nothing
        changed).
    """
    results: list[Tensor | None] = [None] * len(members)
    groups: dict[tuple[CubeBackend, DType], list[int]] = {}
    ready: dict[int, tuple[CubeTensor, CubeTensor, list[CubeTensor]]] = {}
    # (before anything here holds a value: `overwritable` counts its holders)
    over = set() if owners is None else {
        i for i, (owner, (param, _, _)) in enumerate(zip(owners, members, strict=True))
        if overwritable(owner, param)}
    for i, (param, grad, state) in enumerate(members):
        found = _fusable(param, grad, keys, state)
        if found is not None:
            bk, ready[i] = found[0], found[1:]
            groups.setdefault((bk, param._dtype), []).append(i)
    for (bk, dtype), indexes in groups.items():
        if not bk.supports(dtype):
            continue
        chunk = CPU_CHUNK if bk.runtime_name == "cpu" else 1
        for batch in _batches(bk.runtime_name, indexes, members, len(keys), len(shared)):
            launched: list[tuple[int, _Args]] = []
            units = 0
            for i in batch:
                param, _, state = members[i]
                p, g, states = ready[i]
                buffers = [_owned(bk, param, state, k, s)
                           for k, s in zip(keys, states, strict=True)]
                values = own(state)
                out = p if i in over else bk.empty(p.shape, p.dtype)
                results[i] = param._wrap(out)
                if p.size:
                    arrays = [p.array, g.array, *buffers, out.array]
                    if not p.shape:  # (a 0-d param: the kernels index tensors of rank >= 1)
                        arrays = [a.view((1,), (1,), a.offset) for a in arrays]
                    launched.append((max(1, len(p.shape)), (units, values, arrays)))
                    units += -(-p.size // chunk)
            if launched:
                _launch(bk, kernel(dtype, tuple(r for r, _ in launched),
                                   bk.runtime_name == "cpu"),
                        units, chunk, shared, [a for _, a in launched])
    return results


def _batches(runtime: str, indexes: list[int], members: list[Member], states: int,
             shared: int) -> list[list[int]]:
    """The members one launch updates each, in order: up to `MAX_GROUP` on the cpu and cuda
    runtimes, on cuda also within `CUDA_ARG_BYTES` of arguments (a param's storages, metadata
    and up to 4 scalars: an upper bound, its own scalars being known only as it launches);
    one on wgpu."""
    if runtime == "cpu":
        return [indexes[k:k + MAX_GROUP] for k in range(0, len(indexes), MAX_GROUP)]
    if runtime != "cuda":
        return [[i] for i in indexes]
    limit = CUDA_ARG_BYTES - 8 * (shared + 2)
    batches: list[list[int]] = []
    used = 0
    for i in indexes:
        cost = (3 + states) * (8 + 4 * (2 + 2 * len(members[i][0].shape))) + 4 + 8 * 4
        if not batches or used + cost > limit or len(batches[-1]) == MAX_GROUP:
            batches.append([])
            used = 0
        batches[-1].append(i)
        used += cost
    return batches


def _launch(bk: CubeBackend, kernel: Any, units: int, chunk: int, shared: tuple[float, ...],
            params: list[_Args]) -> None:
    """Launch an update kernel (`_build`'s arguments) over `units` units, its plan kept by the
    backend per kernel, unit count and array layouts."""
    args: list[Any] = [*shared, chunk, units]
    key: list[Any] = [kernel, units]
    for first, values, arrays in params:
        args += [first, *values, *arrays]
        key += [a.shape if a.base is None else layout_key(a) for a in arrays]
    cube_dim = 1 if chunk > 1 else CUBE_DIM
    plan = bk.plans.get(tuple(key))
    if plan is None:
        plan = bk.planned(tuple(key), lambda: kernel.plan(
            bk.runtime, (-(-units // cube_dim), 1, 1), cube_dim, *args))
    plan(args)


def adam_steps(members: list[Member], lr: float, beta_1: float, beta_2: float, epsilon: float,
               weight_decay: float, decoupled: bool, amsgrad: bool, maximize: bool = False,
               owners: Sequence[Tensor] | None = None) -> list[Tensor | None]:
    """Adam's update of params, those of one backend and dtype in one kernel (`_run`), with
    each state's moments updated in place.

    Args:
        members: (param's inner tensor, its gradient, Adam's state: "step", "moment_1",
            "moment_2", "max_moment_2" with amsgrad) per param; the tensors read only (but
            see `owners`).
        lr, beta_1, beta_2, epsilon: Adam's hyperparameters.
        weight_decay: the L2 penalty, or AdamW's decoupled decay when `decoupled`.
        amsgrad: use the running maximum of the second moment.
        maximize: ascend: the gradient negated first.
        owners: the module params whose values `members` hold, or None: the new values are
            written over those nothing else holds (`overwritable`), else into new buffers.

    Returns:
        Per param, the new values, or None where the kernel does not apply (nothing changed).
    """
    if decoupled:
        decay, weight = ("decoupled", 1 - lr * weight_decay) if weight_decay else ("", 0.0)
    else:
        decay, weight = ("l2", weight_decay) if weight_decay else ("", 0.0)

    def own(state: dict[str, Any]) -> tuple[float, ...]:
        step = state["step"] = state["step"] + 1
        return 1 / math.sqrt(1 - beta_2**step), lr / (1 - beta_1**step)
    return _run(members, _ADAM_KEYS[amsgrad],
                lambda dtype, ranks, cpu: adam_kernel(dtype, decay, amsgrad, maximize, ranks,
                                                      cpu),
                (weight, beta_1, 1 - beta_1, beta_2, 1 - beta_2, epsilon), own, owners)


def sgd_step(param: Tensor, grad: Tensor, state: dict[str, Any], lr: float, momentum: float,
             dampening: float, weight_decay: float, nesterov: bool) -> Tensor | None:
    """SGD-with-momentum's update of `param` as one kernel, its momentum buffer updated in
    place (from the second step: the first one copies the gradient, through tensor ops).

    Args:
        param: the param's inner tensor (read only).
        grad: its gradient (read only).
        state: SGD's state ("momentum": the buffer).
        lr, momentum, dampening, weight_decay, nesterov: SGD's hyperparameters.

    Returns:
        The new param values, or None when the kernel does not apply (nothing changed).
    """
    if not momentum or "momentum" not in state:
        return None
    return _run([(param, grad, state)], ("momentum",),
                lambda dtype, ranks, cpu: sgd_kernel(dtype, bool(weight_decay), nesterov, ranks,
                                                     cpu),
                (weight_decay, momentum, 1 - dampening, lr), lambda _: ())[0]


def rmsprop_step(param: Tensor, grad: Tensor, state: dict[str, Any], lr: float, alpha: float,
                 epsilon: float, weight_decay: float, centered: bool, momentum: float
                 ) -> Tensor | None:
    """RMSProp's update of `param` as one kernel, its averages (and momentum buffer) updated in
    place.

    Args:
        param: the param's inner tensor (read only).
        grad: its gradient (read only).
        state: RMSProp's state ("square_avg", "grad_avg" when centered, "momentum" with
            momentum).
        lr, alpha, epsilon, weight_decay, centered, momentum: RMSProp's hyperparameters.

    Returns:
        The new param values, or None when the kernel does not apply (nothing changed).
    """
    return _run([(param, grad, state)], _rmsprop_keys(centered, momentum),
                lambda dtype, ranks, cpu: rmsprop_kernel(dtype, bool(weight_decay), centered,
                                                         bool(momentum), ranks, cpu),
                (weight_decay, alpha, 1 - alpha, epsilon, momentum, lr), lambda _: ())[0]


def adagrad_step(param: Tensor, grad: Tensor, state: dict[str, Any], lr: float,
                 lr_decay: float, epsilon: float, weight_decay: float) -> Tensor | None:
    """AdaGrad's update of `param` as one kernel, its sum of squared gradients updated in place.

    Args:
        param: the param's inner tensor (read only).
        grad: its gradient (read only).
        state: AdaGrad's state ("step", "sum").
        lr, lr_decay, epsilon, weight_decay: AdaGrad's hyperparameters.

    Returns:
        The new param values, or None when the kernel does not apply (nothing changed).
    """
    def own(state: dict[str, Any]) -> tuple[float, ...]:
        step = state["step"] = state["step"] + 1
        return (lr / (1 + (step - 1) * lr_decay),)
    return _run([(param, grad, state)], ("sum",),
                lambda dtype, ranks, cpu: adagrad_kernel(dtype, bool(weight_decay), ranks, cpu),
                (weight_decay, epsilon), own)[0]
