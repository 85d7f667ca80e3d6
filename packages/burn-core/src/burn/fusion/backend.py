"""`Fusion(inner)`: the decorator that records elementwise ops and runs them fused.

Under ``Device("cpu").fusion()`` (``"cpu+fusion"``, composing with ``.autodiff()``) every op
whose inner implementation is its op-table lowering is recorded into the device's `Stream`
instead of run: its result is a `FusionTensor` whose shape and dtype the op table infers, so
an argument the op cannot take raises at the call site. Any other op is a sync point for the
pending ops it reads and runs at once on the inner backend, its result the inner primitive
itself (a fusion device's primitives are pending or computed `FusionTensor`s, or inner
primitives: nothing is wrapped or unwrapped on the way), as do reading data, `item()`,
printing and `burn.sync()`; so the cube backends' own rows kernels (cross_entropy, layer_norm
and their backwards) run as one kernel each. Protocol defaults the inner backend does not
override (on the cube backends: attention) run on the fusion backend itself, so their
primitive ops are recorded and fused too. Optimizers' one-kernel updates run on the inner
values (`burn.backends.cube.optim_kernels`).

Over a backend without burn-cube kernels (``numpy+fusion``) nothing is recorded: every op
runs at once.
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, cast

from burn.backend.decorator import Decorator
from burn.backend.protocol import Backend
from burn.errors import AllocationError
from burn.frontend.validation import check_alloc
from burn.fusion.elementwise import fusable
from burn.fusion.handle import FusionTensor
from burn.fusion.matmul import MATMULS
from burn.fusion.stats import STATS
from burn.fusion.stream import MAX_PLANS, Stream, accepts, planned_ops
from burn.fusion.view import RESHAPES, VIEWS
from burn.ir import OPS, OpDef, TensorIR
from burn.ir.cube import cube_dtype

#: Most inferred results a fusion backend keeps (all are dropped when full).
MAX_RESULTS = 4096
_ref = weakref.ref

if TYPE_CHECKING:
    from burn.device import Device
    from burn.dtype import DType


#: inner-backend methods outside the op table that Autodiff uses where a backend has them
#: (the cube backends' conv keeping its im2col columns for the backward), run at once
AT_ONCE_EXTRAS = ("conv_saving_columns", "conv_backward_from_columns")


class Fusion(Decorator):
    """Lazy op streams fused into generated kernels.

    Args:
        inner: the backend that computes (a cube backend for fusion; any other runs eagerly).
    """

    decorator_name: ClassVar[str] = "fusion"

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        #: the result (shape, dtype) of recorded ops by op, input shapes and dtypes, cast
        #: dtype; () where they run at once (the fuser cannot take them, or the stream found
        #: that recording them gains nothing: `Stream.flush`).
        self._results: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self.stream = Stream(inner, self._results)
        cls = type(inner)
        lowered: dict[str, Any] = {}
        if hasattr(inner, "runtime"):
            from burn.backends.cube.elementwise import ELEMENTWISE_METHODS
            from burn.backends.cube.math import FUSED_MATH, CubeMathOps

            lowered = {**ELEMENTWISE_METHODS,
                       **{n: getattr(CubeMathOps, n) for n in FUSED_MATH}}
        #: ops recorded into the stream (those the inner backend runs by their lowering, or
        #: by a `FUSED_MATH` expression): the positions of their tensor arguments, of their
        #: compile-time arguments (a cast's dtype, GELU's approximation) and of their
        #: optional numbers (clamp's bounds: None is compiled in).
        self.recorded = {n: (OPS[n].tensor_at, _positions(OPS[n], ("dtype", "str")),
                             _positions(OPS[n], ("scalar?", "float?")))
                         for n, m in lowered.items() if getattr(cls, n, None) is m}
        if lowered:  # and the reductions and matmuls the planner fuses (`stream.PLANNED`)
            self.recorded.update(planned_ops(cls))
            # a cube primitive's shape and dtype are its own attributes, as a handle's (C
            # getters: the frontend and Autodiff ask for them per op)
            self.shape = operator.attrgetter("shape")  # type: ignore[method-assign,assignment]
            self.dtype = operator.attrgetter("dtype")  # type: ignore[method-assign,assignment]
        #: how an op runs at once on the inner backend (`at_once`)
        self.run_inner = at_once(inner)
        #: protocol defaults the inner backend keeps, run on this backend.
        self.defaults = {n: getattr(Backend, n) for n, op in OPS.items()
                         if op.default and n not in self.recorded and op.device_at is None
                         and getattr(cls, n, None) is getattr(Backend, n)}
        for name, positions in self.recorded.items():  # the hot path of recording
            method = _method(self, OPS[name], positions)
            if method is not None:
                setattr(self, name, method)
        for name, op in OPS.items():  # ops run at once: straight to the inner backend
            if name not in self.recorded and name not in self.defaults \
                    and (op.device_at is None or not op.tensor_at):
                setattr(self, name, _runner(self, op))
        for name in AT_ONCE_EXTRAS:  # the inner backend's own extras Autodiff looks for
            extra = getattr(inner, name, None)
            if extra is not None:
                setattr(self, name, self._at_once(extra))

    def _at_once(self, method: Any) -> Any:
        """`method` of the inner backend on the inner primitives of its arguments (pending
        ones run first); its results are the inner backend's, as an op run at once."""
        value, run = self.value, self.run_inner

        def call(*args: Any) -> Any:
            return run(method, [value(a) if type(a) is FusionTensor else a for a in args])

        call.__name__ = method.__name__
        return call

    def handle(self, op: OpDef, args: tuple[Any, ...]) -> Any:
        name = op.name
        positions = self.recorded.get(name)
        if positions is not None and (name not in VIEWS or (
                type(args[0]) is FusionTensor and args[0].value is None)):
            tensor_at, casts, optional = positions
            handles = [args[i] for i in tensor_at]
            key: list[Any] = [name]
            for h in handles:
                key += (h.shape, h.dtype)
            if casts:
                key += [args[i] for i in casts]
            if optional:
                key += [args[i] is None for i in optional]
            structure = tuple(key)
            stream = self.stream
            if structure not in stream.lone or (stream.pending and any(
                    type(h) is FusionTensor and h.value is None for h in handles)):
                result = self._results.get(structure)
                if result is None:
                    result = self._infer(op, args, handles, structure)
                if result:
                    if name in RESHAPES and stream.reads_view(handles[0]):
                        self._check_room(op, result[0], result[1])
                    return stream.record(op, args, tensor_at, handles, structure, result)
            elif name not in MATMULS and name not in VIEWS:  # (a lone op: `Stream.made`)
                out = self.eager(op, args)
                if stream.feeding:
                    stream.note_made(out, structure)
                return out
        default = self.defaults.get(name)
        if default is not None:
            return default(self, *args)
        return self.eager(op, args)

    def _infer(self, op: OpDef, args: tuple[Any, ...], handles: list[FusionTensor],
               key: tuple[Any, ...]) -> tuple[Any, ...]:
        """The (shape, dtype) of a recorded op's result, by the op table's rules (raising
        their typed errors here, at the call site, and AllocationError for a result with no
        room: `_check_room`), kept for `key`; () where the fuser cannot take the dtypes."""
        casts = [a for p, a in zip(op.params, args, strict=True) if p.type == "dtype"]
        result: tuple[Any, ...] = ()
        if fusable([*(h.dtype for h in handles), *casts]) and \
                accepts(op, args, handles, self.stream.cpu):
            names = [op.params[i].name for i in op.tensor_at]
            scalars = {p.name: a for p, a in zip(op.params, args, strict=True)
                       if not p.is_tensor}
            result = op.infer(dict(zip(names, (h.shape for h in handles), strict=True)),
                              dict(zip(names, (h.dtype for h in handles), strict=True)),
                              scalars)[0]
            if None not in result[0] and op.name not in VIEWS:  # (a view allocates nothing)
                self._check_room(op, cast(tuple[int, ...], result[0]), result[1])
        if len(self._results) >= MAX_RESULTS:
            self._results.clear()
        self._results[key] = result
        if not result:
            self.stream.run_at_once(key)
        return result

    def _check_room(self, op: OpDef, shape: tuple[int, ...], dtype: DType) -> None:
        """Raise AllocationError, as the unfused op would at once (naming its user name),
        for a result of `op` larger than this machine's memory or than the device's fixed
        limits (`Runtime.fits`: wgpu's largest buffer, a GPU's memory)."""
        name = op.user_name
        check_alloc(name, shape, dtype)
        inner: Any = self.inner
        runtime = getattr(inner, "runtime", None)
        if runtime is not None and not runtime.fits(shape, cube_dtype(name, dtype)):
            raise AllocationError(name, "tensor larger than the device holds in one buffer",
                                  shape=shape, dtype=dtype.value, device=str(inner.device))

    def eager(self, op: OpDef, args: tuple[Any, ...]) -> Any:
        """Run `op` at once on the inner backend (after the pending ops it reads); what it
        returns is the inner backend's. (Inner backends are thread-safe as plain devices are:
        the stream's lock is held only while pending ops run, in `value`.)"""
        inner_args = list(args)
        for i in op.tensor_at:
            h = args[i]
            if type(h) is FusionTensor:
                inner_args[i] = h.value if h.value is not None else self.value(h)
        for i in op.list_at:
            inner_args[i] = [self.value(h) for h in args[i]]
        return self.run_inner(getattr(self.inner, op.name), inner_args)

    def value(self, x: Any) -> Any:
        """The inner primitive of `x` (itself where it is one), running the pending ops first
        when it is pending."""
        if type(x) is not FusionTensor:
            return x
        if x.value is None:
            if x.failure is None:
                self.stream.flush()
            if x.value is None:
                raise x.failed() from x.failure
        return x.value

    def describe(self, x: Any) -> TensorIR:
        return TensorIR(x.id, x.shape, x.dtype) if type(x) is FusionTensor \
            else super().describe(x)

    # --- hooks: handles answered without running anything; data through `value` ---
    def shape(self, x: Any) -> tuple[int, ...]:
        return x.shape if type(x) is FusionTensor else self.inner.shape(x)  # type: ignore

    def dtype(self, x: Any) -> DType:
        return x.dtype if type(x) is FusionTensor else self.inner.dtype(x)  # type: ignore

    def device_of(self, x: Any) -> Device:
        return self.outer_device(x.device if type(x) is FusionTensor else
                                 self.inner.device_of(x))

    def detach_values(self, x: Any) -> Any:
        return x

    def check_indices(self, op: str, indices: Any, size: int, wrap_negative: bool = True) -> Any:
        return self.inner.check_indices(op, self.value(indices), size, wrap_negative)

    def check_nonzero(self, op: str, divisor: Any) -> None:
        self.inner.check_nonzero(op, self.value(divisor))

    def exported(self, x: Any) -> Any:
        """The inner backend's export of `x`, a sync point: the pending ops run first (those
        reading `x` read it as it is now, not as a write through the export leaves it), and
        from now on an op recorded with `x` as input runs with the stream at once
        (`Stream.export`)."""
        value = self.value(x)
        stream = self.stream
        with stream.lock:
            if stream.pending:
                stream.flush()
            stream.export(value)
        return self.inner.exported(value)

    def sync(self) -> None:
        # (nothing pending: the inner sync alone, as cheap as the plain device's; an op
        # another thread records meanwhile is not ordered before this sync either way)
        if self.stream.pending:
            self.stream.flush()
        self.inner.sync()

    def flush(self) -> None:
        # (the pending ops' kernels launched, their results' handles computed, no wait)
        if self.stream.pending:
            self.stream.flush()
        self.inner.flush()


def _positions(op: OpDef, types: tuple[str, ...]) -> tuple[int, ...]:
    """The positions of `op`'s parameters of `types`."""
    return tuple(i for i, p in enumerate(op.params) if p.type in types)


def at_once(inner: Backend) -> Callable[[Callable[..., Any], Any], Any]:
    """How a fusion backend runs an inner-backend method at once on inner arguments: counted
    in `FusionStats.ops_eager`, the kernels it launches (the inner burn-cube runtime's count)
    in `kernels_launched`."""
    runtime = getattr(inner, "runtime", None)
    if runtime is None:  # (no kernels: numpy+fusion)
        def run_uncounted(method: Callable[..., Any], args: Any) -> Any:
            STATS.ops_eager += 1
            return method(*args)

        return run_uncounted

    def run(method: Callable[..., Any], args: Any) -> Any:
        STATS.ops_eager += 1
        before = runtime.launches
        result = method(*args)
        STATS.kernels_launched += runtime.launches - before
        return result

    return run


def _runner(fusion: Fusion, op: OpDef) -> Any:
    """`op`'s method on `fusion` for an op run at once: `_method`'s for one or two tensors;
    else the inner backend's method on the arguments as they are where none is a
    `FusionTensor` (a creation op's device made the inner one), else `Fusion.eager` (the
    generic method for keyword calls)."""
    method = _method(fusion, op, None)
    if method is not None:
        return method
    generic = getattr(Decorator, op.name)
    eager, inner, name, tensor_at = fusion.eager, fusion.inner, op.name, op.tensor_at
    run = fusion.run_inner
    dev = op.device_at
    if dev is not None:  # a creation op (no tensor arguments)
        last: list[tuple[Any, Any]] = [(None, None)]  # the last device argument, its inner

        def method(*args: Any, **kwargs: Any) -> Any:
            if kwargs:
                return generic(fusion, *args, **kwargs)
            device = args[dev]
            seen, inner_device = last[0]
            if seen is not device:  # (a device does not change: `inner` once per object)
                inner_device = device.inner()
                last[0] = device, inner_device
            return run(getattr(inner, name), (*args[:dev], inner_device, *args[dev + 1:]))
    elif op.list_at:
        def method(*args: Any, **kwargs: Any) -> Any:
            if kwargs:
                return generic(fusion, *args, **kwargs)
            return eager(op, args)
    else:
        def method(*args: Any, **kwargs: Any) -> Any:
            if kwargs:
                return generic(fusion, *args, **kwargs)
            for i in tensor_at:
                if type(args[i]) is FusionTensor:
                    return eager(op, args)
            return run(getattr(inner, name), args)

    method.__name__ = op.name
    return method


def _method(fusion: Fusion, op: OpDef,
            recorded: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None) -> Any:
    """`op`'s method on `fusion` where it has one or two tensors and no list of them (None
    for other ops): with `recorded` (`Fusion.recorded`'s positions), `Fusion.handle`'s
    recording inlined (the same structures, so one cache); then, where the op is not
    recorded (its structure is not, or is `Stream.lone` and reads no pending result, or it
    is a view, `view.VIEWS`, of a computed tensor) and no
    argument is a `FusionTensor`, the inner backend's method at once, counted as
    `at_once` counts (inline); else `Fusion.eager`; the generic method for keyword calls."""
    tensor_at = op.tensor_at
    if not 0 < len(tensor_at) <= 2 or op.list_at or op.device_at is not None:
        return None
    generic = getattr(Decorator, op.name)
    name, results, inner, stream = op.name, fusion._results, fusion.inner, fusion.stream
    record, lone, eager, run = stream.record, stream.lone, fusion.eager, fusion.run_inner
    first, second = tensor_at[0], tensor_at[-1]
    two = len(tensor_at) == 2
    _, casts, optional = recorded or ((), (), ())
    # the compile-time arguments as `handle` appends them: one by index, more by one getter
    # (a generic tuple of them cost ~0.6 us an op, measured)
    one_at = casts[0] if casts else 0
    pick = operator.itemgetter(*casts) if len(casts) > 1 else None
    # (`at_once`'s counting inlined: the call it saves was ~0.2 us an op in a training step)
    # (What an op run at once costs here, measured on the H100's host with burn-bench's mlp
    # step on cuda, 20 ops at once, as the ratio to the plain device's step with parts of
    # the fusion backend's methods swapped out after warm-up: as is 1.095; this method made
    # a bare forwarding closure 1.039, with only its counting 1.049, none of these methods
    # 1.031, every op the inner backend's method 1.017. So the structure's key, its `lone`
    # lookup and the checks around them cost ~5% of that step, about 2 us an op there: the
    # bytecodes of this path, not the lookup's data (a lookup by the key's hash measured no
    # faster). The cpu runtime's step, 1 thread: 1.043 as is, 1.010-1.016 with none.)
    stats, runtime = STATS, getattr(inner, "runtime", None)

    view = name in VIEWS
    copies = name in RESHAPES  # (a reshape of a pending view copies it)
    # recorded ops are looked up by structure on every call, views only where they read a
    # pending result; compile-time arguments or optional numbers join the structure (the
    # flags spare the lone path's checks: ~0.1 us an op run at once)
    keyed, viewed, extra = bool(recorded) and not view, bool(recorded) and view, \
        bool(casts or optional)
    # a lone op run at once notes what it computed (`Stream.made`: `_reconsider` records it
    # again where that starts a block that pays); products run at once by their own rule
    made = stream.made if keyed and name not in MATMULS else None

    def method(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            return generic(fusion, *args, **kwargs)
        a, b = args[first], args[second]  # (one tensor: the same)
        if keyed or (viewed and type(a) is FusionTensor and a.value is None):
            # (dtypes hash by identity, in C: `DType.__hash__`)
            key: tuple[Any, ...] = (name, a.shape, a.dtype, b.shape, b.dtype) if two \
                else (name, a.shape, a.dtype)
            if extra:
                if casts:
                    key += (args[one_at],) if pick is None else pick(args)
                if optional:
                    key += tuple([args[i] is None for i in optional])
            # (a lone one runs at once unless it reads a pending result; it was inferred
            # when recorded)
            if key not in lone or (stream.pending and (
                    (type(a) is FusionTensor and a.value is None)
                    or (type(b) is FusionTensor and b.value is None))):
                result = results.get(key)
                if result is None:
                    result = fusion._infer(op, args, [a, b] if two else [a], key)
                if result:
                    if copies and stream.reads_view(a):
                        fusion._check_room(op, result[0], result[1])
                    return record(op, args, tensor_at, [a, b] if two else [a], key, result)
        if type(a) is FusionTensor or type(b) is FusionTensor:
            return eager(op, args)
        if runtime is None:
            return run(getattr(inner, name), args)
        stats.ops_eager += 1
        before = runtime.launches
        result = getattr(inner, name)(*args)
        stats.kernels_launched += runtime.launches - before
        if made is not None and stream.feeding and type(result) is not tuple:
            if len(made) >= MAX_PLANS:  # (a tuple of results: no feeder reads it as such)
                made.clear()
            made[id(result)] = key, _ref(result)
        return result

    method.__name__ = name
    return method
