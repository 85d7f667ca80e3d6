"""C emitter for the CPU target.

Each kernel becomes ``void bc_kernel(const int64_t *blob, int32_t *status)`` (``blob``: one int64
slot per value: the cube counts x, y, z, then per parameter a tensor's data pointer and metadata,
``meta_names(extent=True)``, or a scalar in the slot's first bytes) calling ``bc_run``, a loop
over a range of cubes and inside it a loop over the units of the cube (a compile-time trip count;
cube and unit counters are ``int64_t``, positions are cast to ``uint32_t`` where the kernel reads
them): over every cube on the calling thread below `PARALLEL_UNITS` of work, else from an OpenMP
parallel region, a contiguous range of cubes a thread.
Kernels with ``sync_units()`` are split at the barriers ("loop fission"): each barrier-free
region is its own unit loop and locals become per-unit arrays; control flow that contains a
barrier must be uniform across the cube (as on GPUs) and is evaluated once, for unit 0.

Every tensor/shared access is bounds-checked (a tensor's storage index against ``extent``, the
elements of its storage, which a strided view may exceed with ``len``): an out-of-bounds
statement is skipped and flagged in ``status``, which the runtime turns into a ``LaunchError``.
Barrier-free kernels also get a per-cube fast path (``hoist.py``): when the cube's affine accesses
are proven in bounds up front, its unit loop runs without those checks (``#pragma omp simd``
where units are independent), over the units its leading guard admits, with a variant per
broadcast (stride-0) input. Innermost counted loops get the same treatment per loop: reads and
writes affine in the counter are checked once before the loop, which then runs unchecked with
``int64_t`` indexes (the vectorizer's form).

``Line`` values are GCC vector types whose ops are lane-wise helpers; a loop over them does not
vectorize (GCC's loop vectorizer skips vector statements), so lines would run one lane at a time.
Where the fast path's units each touch one line at ``off + bc_unit`` of line tensors only, it is
rendered *lane-flat* instead: one scalar loop over the ``BC_CD * lanes`` elements of the cube
(every line op is lane-wise, so lane ``k`` of a unit is the scalar kernel on element
``(off + unit) * lanes + k``), which vectorizes at the machine's own width like a scalar kernel;
where the kernel reads tensors that loop runs in blocks, each prefetching its inputs ahead.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from burn_cube.codegen import table_c
from burn_cube.codegen.emitter import Emitter
from burn_cube.codegen.hoist import Hoist, LoopHoist, walk
from burn_cube.errors import CompileError
from burn_cube.ir import nodes as ir
from burn_cube.ir.nodes import meta_names
from burn_cube.types import DTYPES, DType, dtype_named

#: Integer ops that may trap on some operands (division by zero), never evaluated speculatively.
_TRAPPING = frozenset(("div", "mod", "floordiv", "fmod", "pow"))
#: Fewest elements of work (cubes x units per cube, times ``KernelIR.unit_work`` where the
#: kernel names one) a launch spreads over OpenMP threads.
PARALLEL_UNITS = 32768
#: A lane-flat loop that reads tensors runs in blocks of `PREFETCH_BLOCK` bytes of its widest
#: tensor, each block first prefetching the cache lines of its inputs `PREFETCH_AHEAD` bytes on
#: (gcc vectorizes no loop holding a prefetch, hence the blocks): with the hardware prefetcher
#: alone the fused tanh-GELU chain over 16M float32 ran 1.16x and ``x + y`` 1.24x slower.
PREFETCH_AHEAD = 8192
PREFETCH_BLOCK = 512
CACHE_LINE = 64
#: Outputs of at least `STREAM_BYTES` that a lane-flat block loop writes whole (straight-line
#: body) are stored past the caches where a block starts on a cache line (the cpu runtime's
#: large buffers do): each block is computed into a staging buffer on the stack, then copied
#: with non-temporal stores (x86). Such an output would not stay cached for its reader anyway,
#: and ordinary stores first read every line they write: x * 2 over 16M float32 took 9.5-10.4
#: ms, 5.7-6.3 streamed (torch's copy_ 8.8); the tanh-GELU chain 23.0 against 19.0-20.5 in
#: paired runs. Half the last-level cache of the hosts measured (32 MiB).
STREAM_BYTES = 1 << 24


def _has_barrier(stmts: list[ir.Stmt]) -> bool:
    for s in stmts:
        if isinstance(s, ir.Barrier):
            return True
        for child in ("then", "orelse", "body"):
            if _has_barrier(getattr(s, child, [])):
                return True
    return False


def _has_loop(stmts: list[ir.Stmt]) -> bool:
    for s in stmts:
        if isinstance(s, ir.For | ir.While):
            return True
        for child in ("then", "orelse", "body"):
            if _has_loop(getattr(s, child, [])):
                return True
    return False


def _likely(conds: Iterable[str]) -> str:
    """The conjunction of a fast path's conditions, marked as the likely branch: GCC guesses a
    long chain of conditions false, treats the fast loop as cold and leaves it scalar."""
    return f"__builtin_expect(!!({' && '.join(conds)}), 1)"


class CEmitter(Emitter):
    """Renders a kernel as a C translation unit for the CPU runtime."""

    target = "c"
    ops = table_c.OPS
    types = table_c.TYPES
    storage_types = table_c.STORAGE_TYPES

    def __init__(self, kernel: ir.KernelIR) -> None:
        super().__init__(kernel)
        self.fission = "barrier" in kernel.features
        self.regions = 0
        self.lazy = 0  # > 0 while rendering select branches (loads checked inline)
        self.hoist: Hoist | None = None  # set while rendering the per-cube fast path
        self.flat = 0  # lanes while rendering a lane-flat fast path (lines as scalars)
        self.fast = 0  # fast paths rendered (their end labels are numbered)
        self.staged: set[str] = set()  # buffers written to staging buffers (streamed blocks)
        self.loops: list[LoopHoist] = []  # the loop fast paths being rendered, innermost last
        self.magic: dict[str, str] = {}  # shape metadata divided by -> its magic's name
        self.loop_keys = 0

    @property
    def lane_wise(self) -> bool:  # type: ignore[override]
        """Line ops are lane-wise helpers, except in a lane-flat loop (plain scalars)."""
        return not self.flat

    def literal(self, value: int | float | bool, dtype: DType) -> str:
        return table_c.literal(value, self.type(dtype), dtype.name)

    def type(self, dtype: DType) -> str:
        return super().type(dtype.scalar if self.flat else dtype)

    def render(self, op: str, dtype: DType, result: DType, args: list[str]) -> str:
        if self.flat:
            dtype, result = dtype.scalar, result.scalar
        return super().render(op, dtype, result, args)

    def zero(self, dtype: DType) -> str:
        return "0" if self.flat else super().zero(dtype)

    def lane(self, value: str, k: int) -> str:
        return f"{value}[{k}]"

    def fields(self, dtype: DType) -> dict[str, str]:
        return {"f": "f" if dtype.bits <= 32 else ""}

    def var(self, name: str) -> str:
        if self.fission and name in self.kernel.locals:
            return f"v_{name}[bc_unit]"
        return f"v_{name}"

    def ret(self) -> str:
        if self.fission:
            return f"{{ bc_ret[bc_unit] = 1; goto bc_end{self.regions}; }}"
        return f"goto bc_end_fast{self.fast};" if self.hoist else "goto bc_end;"

    # ------------------------------------------------------------------------ bounds checks
    def proven(self, buf_name: str, index: ir.Expr) -> str | None:
        """The unchecked int64 index of an access a fast path proved in bounds, or None."""
        for hoist in (*reversed(self.loops), self.hoist):
            found = hoist.index(buf_name, index) if hoist else None
            if found:
                return found
        return None

    def bound(self, buf_name: str, index: ir.Expr) -> str:
        """The in-bounds condition of one access ("" when a fast path proved it)."""
        if self.proven(buf_name, index):
            return ""
        buf = self.kernel.buffers[buf_name]
        size = str(buf.size) if buf.shared else f"t_{buf.name}_extent"
        return f"(uint64_t)({self.expr(index)}) < (uint64_t){size}"

    def guard(self, exprs: list[ir.Expr]) -> str:
        """Conjunction of the bounds conditions of the accesses in ``exprs``, inner first.

        Accesses inside the branches of a ``select`` are checked lazily where they are rendered.
        """
        conds: list[str] = []

        def visit(e: ir.Expr) -> None:
            if isinstance(e, ir.Op) and e.op == "select":
                visit(e.args[0])
                return
            if isinstance(e, ir.Op):
                for a in e.args:
                    visit(a)
            elif isinstance(e, ir.Load | ir.Atomic):
                visit(e.index)
                if isinstance(e, ir.Atomic):
                    visit(e.value)
                conds.append(self.bound(e.buf, e.index))

        for root in exprs:
            visit(root)
        return " && ".join(c for c in dict.fromkeys(conds) if c)

    def element(self, name: str, index: ir.Expr) -> str:
        if name in self.staged:
            return f"bc_nt_{name}[bc_e - bc_b]"
        if self.flat and self.hoist:
            return f"{self.buf(name)}_e[({self.hoist.offsets[(name, index)]}) * {self.flat} " \
                   "+ bc_e]"
        fast = self.proven(name, index)
        return f"{self.buf(name)}[{fast}]" if fast else super().element(name, index)

    def expr(self, e: ir.Expr) -> str:
        if self.hoist and isinstance(e, ir.Op) and e in self.hoist.flags:
            return self.hoist.flags[e]
        if isinstance(e, ir.Op) and e.op in ("div", "mod") and e.dtype.name == "u32" and \
                isinstance(e.args[1], ir.Meta) and e.args[1].field == "shape":
            d = self.expr(e.args[1])
            m = self.magic.setdefault(d, f"bc_m_{d}")
            return f"bc_f{e.op}_u32({self.expr(e.args[0])}, {m}, {d})"
        if isinstance(e, ir.Op) and e.op == "select":
            if self.speculable(e.args[1:]):  # both branches read first: the select vectorizes
                t = self.type(e.dtype)
                a, b = (self.expr(x) for x in e.args[1:])
                pick = self.render("select", e.dtype, e.dtype,
                                   [self.expr(e.args[0]), "bc_sa", "bc_sb"])
                return f"({{ {t} bc_sa = {a}; {t} bc_sb = {b}; {pick}; }})"
            self.lazy += 1
            branches = [self.expr(a) for a in e.args[1:]]
            self.lazy -= 1
            return self.render("select", e.dtype, e.dtype, [self.expr(e.args[0]), *branches])
        return super().expr(e)

    def speculable(self, exprs: tuple[ir.Expr, ...]) -> bool:
        """Whether `exprs` may all be evaluated whichever a select takes: every load proven in
        bounds by a fast path, no atomics, no integer division (a select guards divisors)."""
        if not (self.hoist or self.loops):
            return False
        for e in (x for root in exprs for x in walk(root)):
            if isinstance(e, ir.Atomic) or (isinstance(e, ir.Op) and e.op in _TRAPPING and
                                            not e.dtype.is_float):
                return False
            if isinstance(e, ir.Load) and not (self.flat or self.proven(e.buf, e.index)):
                return False
        return True

    def load(self, e: ir.Load) -> str:
        if self.lazy and self.bound(e.buf, e.index):
            zero = self.literal(0, e.dtype)
            return f"({self.bound(e.buf, e.index)} ? {super().load(e)} : (bc_oob = 1, {zero}))"
        if e.dtype.name == "bool" and not self.flat and self.proven(e.buf, e.index):
            # its byte (0 or 1): GCC vectorizes selects on bytes, not on loaded _Bools
            return f"(*(const uint8_t *)&{super().load(e)})"
        return super().load(e)

    def stmt(self, s: ir.Stmt) -> None:
        match s:
            case ir.Assign(value=v) | ir.Eval(expr=v) | ir.If(cond=v):
                exprs = [v]
            case ir.Store(buf=buf, index=index, value=v):
                exprs = [v, ir.Load(buf, index, v.dtype)]
            case ir.For(start=start, stop=stop, body=body) if not self.fission and not self.flat \
                    and not _has_loop(body):
                self.loop(s)
                return
            case ir.For(start=start, stop=stop):
                exprs = [start, stop]
            case ir.While(cond=cond, body=body) if self.guard([cond]):
                self.line("for (;;) {")
                self.depth += 1
                self.line(f"if (!({self.guard([cond])})) {{ bc_oob = 1; break; }}")
                self.line(f"if (!{self.expr(cond)}) break;")
                self.depth -= 1
                self.block(body)
                self.line("}")
                return
            case _:
                super().stmt(s)
                return
        self.guarded(self.guard(exprs), s)

    def loop(self, s: ir.For) -> None:
        """An innermost counted loop: where its body's accesses are proven in bounds for every
        iteration up front, a copy without per-access checks; else the checked loop."""
        self.loop_keys += 1
        hoist = LoopHoist(self.kernel, self.expr, s, self.loop_keys)
        guard = self.guard([s.start, s.stop])
        if not hoist.indexes:
            self.guarded(guard, s)
            return
        first, trips, step = hoist.first, hoist.trips, s.step
        stop = f"(int64_t){self.expr(s.stop)}"
        count = f"({stop} - {first} + {step - 1}) / {step}" if step > 0 else \
            f"({first} - {stop} + {-step - 1}) / {-step}"
        more = f"{stop} > {first}" if step > 0 else f"{first} > {stop}"
        self.line("{")
        self.depth += 1
        self.line(f"const int64_t {first} = (int64_t){self.expr(s.start)};")
        self.line(f"const int64_t {trips} = {more} ? {count} : 0;")
        self.line(f"if ({_likely(hoist.conds)}) {{")
        self.depth += 1
        self.loops.append(hoist)
        self.guarded(guard, s)
        self.loops.pop()
        self.depth -= 1
        self.line("} else {")
        self.depth += 1
        self.guarded(guard, s)
        self.depth -= 1
        self.line("}")
        self.depth -= 1
        self.line("}")

    def guarded(self, cond: str, s: ir.Stmt) -> None:
        """Render ``s`` behind a bounds condition (flagging ``bc_oob`` when it fails)."""
        if cond:
            self.line(f"if (!({cond})) bc_oob = 1; else")
            self.depth += 1
            super().stmt(s)
            self.depth -= 1
        else:
            super().stmt(s)

    # ---------------------------------------------------------------------- barrier fission
    def region(self, stmts: list[ir.Stmt]) -> None:
        """A barrier-free run of statements as one loop over the units of the cube."""
        for s in stmts:
            if isinstance(s, ir.Break | ir.Continue):
                raise CompileError("break/continue in a loop containing sync_units() is not "
                                   "supported by the cpu target", self.kernel.name)
        self.regions += 1
        self.line("for (bc_unit = 0; bc_unit < BC_CD; ++bc_unit) {")
        self.depth += 1
        self.line("if (bc_ret[bc_unit]) continue;")
        for s in stmts:
            self.stmt(s)
        self.line(f"bc_end{self.regions}: ;")
        self.depth -= 1
        self.line("}")

    def cube_level(self, stmts: list[ir.Stmt]) -> None:
        """Render statements at cube level: barrier-free runs become unit loops."""
        run: list[ir.Stmt] = []
        for s in stmts + [ir.Barrier()]:
            if not _has_barrier([s]):
                run.append(s)
                continue
            if run:
                self.region(run)
                run = []
            match s:
                case ir.If(cond=cond, then=then, orelse=orelse):
                    self.line(f"bc_unit = 0; if ({self.expr(cond)}) {{")
                    self.depth += 1
                    self.cube_level(then)
                    self.depth -= 1
                    self.line("} else {")
                    self.depth += 1
                    self.cube_level(orelse)
                    self.depth -= 1
                    self.line("}")
                case ir.While(cond=cond, body=body):
                    self.line("for (;;) {")
                    self.depth += 1
                    self.line(f"bc_unit = 0; if (!{self.expr(cond)}) break;")
                    self.cube_level(body)
                    self.depth -= 1
                    self.line("}")
                case ir.For(var=var, start=start, stop=stop, step=step, body=body):
                    cmp = "lt" if step > 0 else "gt"
                    update = ir.Op("add", (var, ir.Const(step, var.dtype)), var.dtype)
                    self.region([ir.Assign(var, start)])
                    self.cube_level([ir.While(ir.Op(cmp, (var, stop), var.dtype), body + [
                        ir.Assign(var, update)])])
                case ir.Barrier():
                    pass
                case _:
                    raise CompileError("sync_units() cannot appear here on the cpu target",
                                       self.kernel.name)

    # ---------------------------------------------------------------------------- the unit
    def helpers(self) -> list[str]:
        """Helper functions for the dtypes the kernel uses."""
        out = []
        for name, type_name in table_c.SCALAR_TYPES.items():
            if f"dtype:{name}" not in self.kernel.features and name != "u32":
                continue
            dtype_kind = DTYPES[name].kind
            fmt = {"T": type_name, "s": name}
            if dtype_kind != "bool":
                out.append(table_c.HELPERS_NUMERIC.format(**fmt))
            if dtype_kind == "uint":
                out.append(table_c.HELPERS_UNSIGNED.format(**fmt))
            if dtype_kind == "int":
                out.append(table_c.HELPERS_SIGNED.format(**fmt))
            if dtype_kind in ("int", "uint") and f"atomic:{name}" in self.kernel.features:
                out.append(table_c.HELPERS_INT_ATOMIC.format(**fmt))
            if dtype_kind == "float" and f"atomic:{name}" in self.kernel.features:
                out.append(table_c.HELPERS_FLOAT_ATOMIC.format(
                    U=table_c.BITS_TYPE[DTYPES[name].bits], **fmt))
        if self.kernel.features & {"dtype:f32", "dtype:f16", "dtype:bf16"}:
            out.append(table_c.HELPERS_F32_MATH)  # 16-bit float math is computed in f32, too
        if "dtype:bf16" in self.kernel.features:
            out.append(table_c.HELPERS_BF16)
        for feature in sorted(self.kernel.features):
            if feature.startswith("line:"):
                dtype = dtype_named(feature[5:])
                out.append(table_c.LINE_TYPEDEF.format(
                    T=table_c.SCALAR_TYPES[dtype.scalar.name], s=dtype.name,
                    size=dtype.bits // 8 * dtype.lanes, align=dtype.bits // 8))
        return out

    def flat_lanes(self, hoist: Hoist) -> int:
        """The lanes of a kernel whose fast path can be lane-flat (0 when it cannot): every
        access at ``off + bc_unit``, every buffer a line tensor of that many lanes."""
        lanes = {b.dtype.lanes if not b.shared else 0 for b in self.kernel.buffers.values()}
        lanes |= {dtype_named(f[5:]).lanes for f in self.kernel.features if f.startswith("line:")}
        if not hoist.unit_stride or len(lanes) != 1:
            return 0
        n = lanes.pop()
        return n if n > 1 else 0

    def unit_loop(self, label: str, pragma: str | None) -> None:
        """The loop over the units of a barrier-free kernel; ``label`` ends a unit early."""
        if self.flat:
            for p in self.kernel.params:
                if p.tensor:
                    t = self.storage_type(p.dtype)
                    self.line(f"{t} *t_{p.name}_e = ({t} *)t_{p.name};")
        guarded = self.cube_flag()
        body = self.kernel.body if guarded is None else guarded[1]
        if guarded is not None:  # a guard that is a cube constant: tested once, out of the loop
            self.line(f"if ({guarded[0]}) {{")
            self.depth += 1
        prefetches = self.prefetches() if self.flat else []
        streams, flags = self.streamed(body) if prefetches else ({}, [])
        if prefetches:
            self.flat_block(prefetches)
        if streams:
            self.streamed_block(streams, flags, body, label, pragma)
        self.element_loop(body, label, pragma, "bc_b" if prefetches else None)
        if streams:
            self.depth -= 1
            self.line("}")
        if prefetches:
            self.depth -= 1
            self.line("}")
        if guarded is not None:
            self.depth -= 1
            self.line("}")

    def element_loop(self, body: list[ir.Stmt], label: str, pragma: str | None,
                     block: str | None) -> None:
        """The loop over the units (or, lane-flat, the elements from `block` to ``bc_stop``,
        or of the whole cube where `block` is None) running `body`."""
        if pragma:
            self.line(pragma)
        if self.flat:
            start, stop = ("bc_b", "bc_stop") if block else ("0", f"bc_n * {self.flat}")
            self.line(f"for (int64_t bc_e = {start}; bc_e < {stop}; ++bc_e) {{")
            self.depth += 1
            self.line(f"const int64_t bc_unit = bc_e / {self.flat};")
        else:
            units = "bc_n" if self.hoist else "BC_CD"
            self.line(f"for (int64_t bc_unit = 0; bc_unit < {units}; ++bc_unit) {{")
            self.depth += 1
        for name, dtype in self.kernel.locals.items():
            self.line(f"{self.type(dtype)} v_{name} = {self.zero(dtype)};")
        for s in body:
            self.stmt(s)
        self.line(f"{label}: ;")
        self.depth -= 1
        self.line("}")

    def streamed(self, body: list[ir.Stmt]) -> tuple[dict[str, str], list[str]]:
        """The tensors a lane-flat block loop may write with non-temporal stores, by name, with
        their offsets: those `body` stores to at one offset and never reads, where `body` is
        straight-line but for ``if``s on cube constants (every store unconditional once those
        hold, so a block's staging buffer is written whole); and the flags of those ``if``s."""
        assert self.hoist is not None
        stores: list[ir.Store] = []
        flags: list[str] = []
        pending = list(body)
        while pending:
            match pending.pop():
                case ir.Assign():
                    pass
                case ir.Store() as store:
                    stores.append(store)
                case ir.If(cond=ir.Op() as cond, then=then, orelse=[]) \
                        if cond in self.hoist.flags:
                    flags.append(self.hoist.flags[cond])
                    pending += then
                case _:
                    return {}, []
        reads = self.hoist.reads()
        offsets: dict[str, set[str]] = {}
        for store in reversed(stores):
            offsets.setdefault(store.buf, set()).add(self.hoist.offsets[(store.buf, store.index)])
        return {name: next(iter(offs)) for name, offs in offsets.items()
                if name not in reads and len(offs) == 1}, flags

    def streamed_block(self, streams: dict[str, str], flags: list[str], body: list[ir.Stmt],
                       label: str, pragma: str | None) -> None:
        """A whole block of a large launch whose outputs start on cache lines, where `flags`
        hold: computed into staging buffers on the stack, then stored past the caches
        (`STREAM_BYTES`); opens the ``else`` branch that the ordinary loop follows."""
        block = self.flat_block_size()
        dests = {name: f"&{self.buf(name)}_e[({off}) * {self.flat} + bc_b]"
                 for name, off in streams.items()}
        large = " && ".join(
            f"(int64_t){self.buf(name)}_len * {self.flat * self.item_bytes(name)} >= "
            f"{STREAM_BYTES}" for name in streams)
        aligned = " && ".join(f"((uintptr_t)({d}) & 63) == 0" for d in dests.values())
        held = "".join(f" && {flag}" for flag in flags)
        self.line(f"if ({large} && bc_stop - bc_b == {block} && {aligned}{held}) {{")
        self.depth += 1
        for name in streams:
            t = self.storage_type(self.kernel.buffers[name].dtype)
            self.line(f"{t} bc_nt_{name}[{block}] __attribute__((aligned(32)));")
        self.staged = set(streams)
        self.element_loop(body, f"{label}_nt", pragma, "bc_b")
        self.staged = set()
        for name, dest in dests.items():
            self.line(f"bc_stream_bytes({dest}, bc_nt_{name}, sizeof bc_nt_{name});")
        self.line("bc_streamed = 1;")
        self.depth -= 1
        self.line("} else {")
        self.depth += 1
        self.line_helpers["bc_stream"] = table_c.HELPER_STREAM

    def item_bytes(self, name: str) -> int:
        """Bytes of one storage element of buffer `name`."""
        return self.kernel.buffers[name].dtype.bits // 8

    def prefetches(self) -> list[str]:
        """The prefetches of one block of a lane-flat loop (from element ``bc_b``): every cache
        line of the block in each tensor the kernel reads, `PREFETCH_AHEAD` bytes on (none
        where it reads no tensor)."""
        assert self.hoist is not None
        out = []
        for name, off in self.hoist.reads().items():
            size = self.item_bytes(name)
            at = f"(uintptr_t)({self.buf(name)}_e + ({off}) * {self.flat} + bc_b)"
            out += [f"__builtin_prefetch((const void *)({at} + {PREFETCH_AHEAD + line}), 0, 3);"
                    for line in range(0, self.flat_block_size() * size, CACHE_LINE)]
        return out

    def flat_block_size(self) -> int:
        """Elements per block of a lane-flat loop: `PREFETCH_BLOCK` bytes of its widest
        tensor."""
        widest = max(b.dtype.bits // 8 for b in self.kernel.buffers.values())
        return max(PREFETCH_BLOCK // widest, 1)

    def flat_block(self, prefetches: list[str]) -> None:
        """Open the block loop of a lane-flat loop: its prefetches and its end ``bc_stop``."""
        total, block = f"bc_n * {self.flat}", self.flat_block_size()
        self.line(f"for (int64_t bc_b = 0; bc_b < {total}; bc_b += {block}) {{")
        self.depth += 1
        for line in prefetches:
            self.line(line)
        self.line(f"const int64_t bc_stop = bc_b + {block} < {total} ? bc_b + {block} : {total};")

    def cube_flag(self) -> tuple[str, list[ir.Stmt]] | None:
        """The flag and branch of a fast-path body that is one ``if`` on a cube constant (the
        kernel's guard ``pos < n``), else None: gcc does not unswitch it out of the unit loop,
        and the loop it vectorizes then reloads its constants per iteration."""
        match self.kernel.body:
            case [ir.If(cond=ir.Op() as cond, then=then, orelse=[])] if self.hoist is not None \
                    and cond in self.hoist.flags:
                return self.hoist.flags[cond], then
        return None

    def fast_paths(self, hoists: list[Hoist]) -> None:
        """The first fast path whose per-cube conditions hold, else the checked loop; each in
        a block of its own (its ``bc_n`` and flags)."""
        if not hoists:
            self.unit_loop("bc_end", None)
            return
        hoist = hoists[0]
        self.line("{")
        self.depth += 1
        self.line(f"const int64_t bc_n = {hoist.limit};")
        for flag in hoist.flag_defs:
            self.line(flag)
        self.line(f"if ({_likely(hoist.conds)}) {{")
        self.depth += 1
        self.hoist, self.flat, self.fast = hoist, self.flat_lanes(hoist), self.fast + 1
        self.unit_loop(f"bc_end_fast{self.fast}", "#pragma omp simd" if hoist.simd else None)
        self.hoist, self.flat = None, 0
        self.depth -= 1
        self.line("} else {")
        self.depth += 1
        self.fast_paths(hoists[1:])
        self.depth -= 1
        self.line("}")
        self.depth -= 1
        self.line("}")

    def declarations(self, names: Iterable[str] | None = None) -> None:
        """The locals a kernel reads from its argument block: each tensor's data pointer and
        metadata and each scalar's value (those of parameters `names` only, where given),
        then the cube counts and ``bc_cubes``."""
        k = self.kernel
        slot = 3
        for p in k.params:
            t = self.storage_type(p.dtype)
            if names is not None and p.name not in names:
                slot += 1 + (len(meta_names(k.buffers[p.name], extent=True)) if p.tensor else 0)
                continue
            if p.tensor:
                self.line(f"{t} *t_{p.name} = ({t} *)(uintptr_t)bc_blob[{slot}];")
                for name, _, _ in meta_names(k.buffers[p.name], extent=True):
                    slot += 1
                    self.line(f"const uint32_t {name} = (uint32_t)bc_blob[{slot}];")
            else:
                self.line(f"{t} bc_s_{p.name};")
                self.line(f"__builtin_memcpy(&bc_s_{p.name}, &bc_blob[{slot}], "
                          f"sizeof bc_s_{p.name});")
                value = self.render("load", p.dtype, p.dtype, [f"bc_s_{p.name}"])
                self.line(f"const {self.type(p.dtype)} v_{p.name} = {value};")
            slot += 1
        self.line("const uint32_t bc_ccx = (uint32_t)bc_blob[0], bc_ccy = (uint32_t)bc_blob[1], "
                  "bc_ccz = (uint32_t)bc_blob[2];")
        self.line("const int64_t bc_cubes = (int64_t)bc_ccx * bc_ccy * bc_ccz;")

    def entry(self) -> None:
        """``bc_kernel``: small launches run ``bc_run`` over every cube on the calling thread
        (no OpenMP call: entering a parallel region with a false ``if`` cost ~0.3 us a
        launch), as do launches of one cube, or on a team of one thread, where the kernel
        weighs its units' work (``unit_work``: a single long row); others split the cubes
        over the OpenMP team as ``schedule(static)`` does, one contiguous range a thread."""
        weighed = self.kernel.unit_work is not None
        self.out += ["", "int omp_get_num_threads(void);", "int omp_get_thread_num(void);",
                     *(["int omp_get_max_threads(void);"] if weighed else []), "",
                     "void bc_kernel(const int64_t *bc_blob, int32_t *bc_status) {"]
        self.depth = 1
        self.declarations(() if self.kernel.unit_work is None else (self.kernel.unit_work,))
        self.line("int bc_oob = 0;")
        alone = " || bc_cubes < 2 || omp_get_max_threads() < 2" if weighed else ""
        self.line(f"if ({self.launch_work()} < {PARALLEL_UNITS}{alone}) {{")
        self.line(f"{self.indent_unit}bc_run(bc_blob, 0, bc_cubes, &bc_oob);")
        self.line("} else {")
        self.depth += 1
        self.line("#pragma omp parallel reduction(|:bc_oob)")
        self.line("{")
        self.depth += 1
        self.line("const int64_t bc_team = omp_get_num_threads(), "
                  "bc_me = omp_get_thread_num();")
        self.line("const int64_t bc_q = bc_cubes / bc_team, bc_r = bc_cubes % bc_team;")
        self.line("const int64_t bc_lo = bc_me * bc_q + (bc_me < bc_r ? bc_me : bc_r);")
        self.line("bc_run(bc_blob, bc_lo, bc_lo + bc_q + (bc_me < bc_r), &bc_oob);")
        self.depth -= 1
        self.line("}")
        self.depth -= 1
        self.line("}")
        self.line("if (bc_oob) *bc_status = 1;")
        self.out.append("}")

    def launch_work(self) -> str:
        """The C expression of a launch's work: its units, times the value of the kernel's
        ``unit_work`` scalar where it names one (a row kernel's row length)."""
        units = "bc_cubes * BC_CD"
        work = self.kernel.unit_work
        return units if work is None else f"{units} * (int64_t)v_{work}"

    def source(self) -> str:
        k = self.kernel
        cdx, cdy, cdz = k.cube_dim
        self.out = [table_c.PRELUDE, *self.helpers(),
                    f"#define BC_CDX {cdx}u", f"#define BC_CDY {cdy}u", f"#define BC_CDZ {cdz}u",
                    f"#define BC_CD {math.prod(k.cube_dim)}u", "",
                    "static __attribute__((noinline)) void bc_run(const int64_t *bc_blob, "
                    "int64_t bc_first, int64_t bc_last, int *bc_flag) {"]
        self.depth = 1
        self.declarations()
        magic_at = len(self.out)
        self.line("int bc_oob = 0;")
        self.line("for (int64_t bc_cube = bc_first; bc_cube < bc_last; ++bc_cube) {")
        self.depth += 1
        for b in k.shared:
            self.line(f"{self.storage_type(b.dtype)} s_{b.name}[{b.size}] = {{0}};")
        if self.fission:
            for name, dtype in k.locals.items():
                self.line(f"{self.type(dtype)} v_{name}[BC_CD];")
            self.line("unsigned char bc_ret[BC_CD] = {0};")
            self.line("int64_t bc_unit;")
            self.cube_level(k.body)
        else:
            self.line("const int64_t bc_base = bc_cube * BC_CD;")
            hoist = Hoist(k, self.expr)
            self.fast_paths(hoist.variants() if hoist.active else [])
        self.depth -= 1
        self.line("}")
        self.line("if (bc_oob) *bc_flag = 1;")
        if "bc_stream" in self.line_helpers:  # the streamed blocks' stores, ordered
            self.line("if (bc_streamed) bc_stream_fence();")
            self.out.insert(magic_at, self.indent_unit + "int bc_streamed = 0;")
        self.out.append("}")
        self.out[magic_at:magic_at] = [self.indent_unit + table_c.MAGIC.format(m=m, d=d)
                                       for d, m in self.magic.items()]
        if self.magic:
            self.line_helpers["bc_magic"] = table_c.HELPERS_MAGIC
        self.entry()
        at = self.out.index("") + 1  # after the #defines
        self.out[at:at] = list(self.line_helpers.values())
        return "\n".join(self.out) + "\n"
