"""`Stream`: the ops a fusion device has recorded and not run yet.

Recorded ops (`Pending`) name their tensors by id: an input already computed (a computed
handle, or an inner primitive, named by its `id` while it is kept) is kept by value
(`values`), a pending result only by a weak reference to its handle. `flush` cuts the pending
ops into blocks (`_blocks`, the planner), works out which results must be written (a live
handle holds them, or a live record of a later block reads them: liveness runs back through
the whole flush) and runs each block through its fuser; results nobody holds and nothing live
reads are never computed, and a block with none is not run. Blocks are runs of consecutive
ops:

- elementwise: results of one shape (`elementwise.run_block`);
- reduce: reductions of one shape along one dim, with the elementwise ops of that shape before
  and between them and those of that shape or the reduced shape after them
  (`reduce.run_reduce`);
- matmul: a matmul and the elementwise ops of its result's shape after it, its epilogue, and
  on GPU runtimes the elementwise block before it where that computes an operand and has no
  result to write, its prologue (`matmul.run_matmul`; a prologue with one stays an
  elementwise block: `_written_prologues`);
- view: a reshape, expand, swap_dims or permute reading a pending result, alone
  (`view.run_view`).
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Iterable
from typing import Any, cast

from burn.dtype import DType
from burn.fusion.elementwise import run_block, vectorizes_on_cpu
from burn.fusion.handle import Cell, FusionTensor, Pending, block_key, new_tuple
from burn.fusion.matmul import MATMULS, Split, Unfused, product_at, run_matmul
from burn.fusion.matmul import accepts as matmul_accepts
from burn.fusion.reduce import REDUCTIONS, WITH_INDICES, reduce_layout, reduced_dim, run_reduce
from burn.fusion.reduce import accepts as reduce_accepts
from burn.fusion.stats import STATS
from burn.fusion.view import VIEWS, run_view
from burn.ir import OPS, OpDef, TensorIR, new_id

_ref = weakref.ref
#: Most ops a stream holds before it runs them (a bound on kernel size and on the memory the
#: inputs of pending ops keep): every block but the last, still growing, runs then
#: (`Stream._flush_head`), the whole stream where it is one block.
MAX_PENDING = 128
#: Most flush plans and block cells a stream keeps (each dict is emptied when full).
MAX_PLANS = 4096
#: Times an op structure is flushed alone (its result needed, no other op pending; or it
#: led a later block of a flush, reading no pending result, alone or in a block that does
#: not pay) before it runs at once where it reads no pending result (`Stream.lone`), unless
#: it led a block that paid (`LONE_SHARED` then): recorded, it only adds the recording and a
#: flush to its one kernel; likewise a matmul run as the inner backend's product without an
#: epilogue runs at once from then on (`Stream._unfused_matmul`). (The main job's 2-64-64-3
#: MLP step with plain SGD, cpu, 1 thread: 26 ops recorded into 8 kernels, 824 us against
#: 614 unfused; with later blocks counted, its SGD updates (a block of two ops per param)
#: run at once: 15 ops into 3 kernels, 763 against 610 us.)
LONE = 3
#: Times in a row a structure in `Stream.shared` (it led a block that paid) is flushed alone,
#: with no block that pays in between, before it runs at once all the same: what it fused
#: with runs at once by then (a relu that was the prologue of a product later run at once:
#: recorded, then flushed alone, at every step of an MLP on the cpu, 5% of the step).
LONE_SHARED = 2 * LONE
#: Which blocks pay for their recording (`Stream._pays`): on every runtime a block computing
#: `FUSE_OPS` live ops or more (each a launch saved), so a chain is one kernel however small
#: its tensors and a loop keeps that plan; a shorter one where it keeps enough intermediate
#: elements out of memory (its live ops but one, times its largest result's elements):
#: `CPU_FUSE_WORK` on the cpu runtime, where a launch costs about what recording an op and a
#: flush do (a relu backward and the bias gradient's sum over the batch, over 64 x 256
#: floats: its kernel 7.3 us against 7.8 for the two, but its recording and flush 15-20 us
#: more; there a product's block pays only where its epilogue also keeps
#: `CPU_EPILOGUE_WORK` elements out of memory), `GPU_FUSE_WORK` on GPU runtimes (work that
#: keeps the GPU busy longer than the host takes to record it).
#: Else the block's first op's structure counts as a flush alone (`LONE`). (Measured on the
#: cpu, 1 thread, fused against one kernel an op: add + relu over 64 x 256 floats 16 us
#: against 10 us, over 512 x 256 29 against 43 us; 3 ops over 64 x 256 18 against 14 us; a
#: chain of 64 scalar products over 64 floats 3.1 us an op recorded as run, 3.7 us run at
#: once under fusion; the MLP step of the mlp suite alone 620 us with its add + relu fused or
#: not, but 3-4% slower fused when timed interleaved with an unfused step, as burn-bench
#: does. On the H200's host: an op recorded about 3.5 us, a flush and launch of an
#: elementwise block 16 us, an op run at once 8-10 us: a block of two small ops costs more
#: fused. In a 784-256-10 MLP step there the second layer's product with its bias and the
#: relu backward with the bias-gradient sum run at once from the fourth step; the first
#: layer's product, bias and relu stay one kernel.)
#: On the cpu runtime a reduce block of the whole tensor pays only where the kernels' team
#: is one thread, from `FUSE_OPS` live ops and twice `CPU_FUSE_WORK` kept elements: its row runs
#: on one thread (the unfused reduction spreads over the team), a block of fewer ops saves
#: less than its single row costs, and below that its flush costs more than the launches it
#: saves. (Measured, 1 thread, fused against unfused: x.exp().sum() 29 / 17 us over 128 x
#: 128, 167 / 158 over 512 x 512; (x * x).sum() 55 / 40 us over 2**17 floats, 116 / 91 over
#: 2**18; ((x - 1) ** 2).mean() 47 / 37 us over 128 x 128, 94 / 128 over 512 x 512;
#: ((x - y) ** 2).mean() 54 / 44 us over 2**16 floats, 85 / 103 over 2**17; the
#: autodiff op suite's (a @ b).exp().sum() step over 128 x 128 192 / 155 us; a reduce block
#: along rows of two ops, (x * x).mean_dim(1), 22 / 13 us over 128 x 128, 70 / 80 over 512 x
#: 512. 2 threads: ((x - y) ** 2).mean() 85 / 49 us over 2**17 floats, 197 / 98 over 2**18.)
FUSE_OPS = 3
CPU_FUSE_WORK = 1 << 17
GPU_FUSE_WORK = 1 << 20
#: On the cpu runtime a product's block (the vendor product, then its epilogue as one kernel)
#: pays from `FUSE_OPS` live ops where its epilogue keeps this many elements out of memory
#: (its live ops but the product, which is written either way, and one, times the product's
#: elements): its flush and epilogue kernel cost about what the launches they save do, so a
#: small layer's bias and activation run as a kernel each. (Measured, 1 thread, `relu(x @ w +
#: b)` with w [784, 256], the product's kernel and one epilogue kernel against three
#: launches: 64 rows 15% slower, 256 rows 5%, 512 rows 1%, 1024 rows 1.5% faster; the mlp
#: suite's step at 64 rows 10% slower than unfused with its first layer's epilogue recorded,
#: 4% with every op run at once.)
CPU_EPILOGUE_WORK = 1 << 17
#: Most reductions one reduce block takes (a reduction with indices counts once); the next
#: starts a block of its own. The kernel's source, and the C compiler's time, grow with each
#: (cpu runtime, gcc 12: ~0.4 s a reduction cold; 40 sums of one input took 36 s as one
#: kernel), while the ops the models fuse (softmax, layer norm and their backward) take at
#: most 3.
MAX_BLOCK_REDUCTIONS = 4
#: A flush plan: the blocks as (kind, start, end, cell, released: the records whose results
#: the flush drops once the block has run, `_released`), the positions of results to write,
#: and the structures that lead a block that does not pay (`Stream._pays`), then those that
#: lead one that pays (`Stream.shared`): the op that started the stream, the products of
#: later matmul blocks, and the first records of later blocks that read no pending result;
#: last, the (record, argument) positions of the computed tensors those leaders of blocks
#: that pay read (`Stream._reconsider`).
FlushPlan = tuple[tuple[tuple[str | None, int, int, "Cell", tuple[int, ...]], ...],
                  tuple[int, ...],
                  tuple[tuple[Any, ...], ...], tuple[tuple[Any, ...], ...],
                  tuple[tuple[int, int], ...]]


class Stream:
    """The pending ops of one fusion device.

    Args:
        inner: the cube backend that runs them.
        results: the fusion backend's results of recorded ops by structure (`Fusion._results`);
            a matmul whose product is not a tiled burn-cube kernel (BLAS or the cpu runtime's
            gemm, cuBLAS: `matmul.Unfused`) gets () there, so later ones of its structure run
            at once: recorded, it gains nothing (on GPU runtimes its epilogue is an
            elementwise block reading the product either way); on the cpu runtime not while
            its block has an epilogue that pays (`_pays`, `_unfused_matmul`: run at once,
            those ops would run as a kernel each).
    """

    def __init__(self, inner: Any, results: dict[tuple[Any, ...], tuple[Any, ...]]) -> None:
        self.inner = inner
        self.results = results
        #: the inner device, where every tensor of the stream lives.
        self.device: Any = getattr(inner, "device", None)
        self.pending: list[Pending] = []
        #: pending results' handles, weakly, by id.
        self.weak: dict[int, weakref.ref[FusionTensor]] = {}
        #: computed inputs of pending ops (inner primitives) by id.
        self.values: dict[int, Any] = {}
        #: pending results' positions in `pending`, and computed inputs' order of first use.
        self.position: dict[int, int] = {}
        self.external: dict[int, int] = {}
        #: flush plans by signature (`flush`), and the fusers' cells by block structure.
        self.plans: dict[Any, FlushPlan] = {}
        self.cells: dict[Any, Cell] = {}
        #: op structures flushed alone so far (`LONE`), those that led a block that paid,
        #: and those run at once where they read no pending result (`Fusion`'s recorders).
        self.alone: dict[tuple[Any, ...], int] = {}
        self.shared: set[tuple[Any, ...]] = set()
        self.lone: set[tuple[Any, ...]] = set()
        #: the structure of the lone op that computed each inner primitive, and a weak
        #: reference to the primitive, by the primitive's id (the recorders note it as they
        #: run one at once; `_reconsider`: the reference tells a freed primitive's id taken
        #: by another tensor), noted only once a flush plan has feeders (`feeding`): ~0.15 us
        #: an op run at once saved where none has (a loop of lone ops: the op suites)
        self.made: dict[int, tuple[tuple[Any, ...], weakref.ref[Any]]] = {}
        self.feeding = False
        #: held while ops are recorded or run: threads (data-loader workers) share a device.
        self.lock = threading.RLock()
        #: storages (burn-cube arrays) whose memory was exported (`export`), weakly, by id.
        self.exported: dict[int, weakref.ref[Any]] = {}
        #: whether this is the cpu runtime: its short blocks pay for their recording by
        #: `CPU_FUSE_WORK` (`_pays`; GPU runtimes' by `GPU_FUSE_WORK`), and a product takes
        #: no prologue (`_blocks`).
        self.cpu = getattr(inner, "runtime_name", None) == "cpu"
        #: most tensors a kernel of the runtime binds (0: no limit; `_bounded`)
        runtime = getattr(inner, "runtime", None)
        self.max_tensors: int = runtime.properties.max_tensors if runtime is not None else 0
        STATS.streams += 1

    def record(self, op: OpDef, args: tuple[Any, ...], tensor_at: tuple[int, ...],
               inputs: list[FusionTensor], structure: tuple[Any, ...],
               result: tuple[Any, ...]) -> Any:
        """Defer `op` on `args`; its result's handle (on the device of its first tensor), or
        the handles of values and indices for a reduction with indices (two records).

        Args:
            op: the op (one the fuser takes).
            args: its arguments in protocol order.
            tensor_at: the positions of its tensor arguments.
            inputs: the handles there.
            structure: the op, input shapes and dtypes and compile-time arguments.
            result: the (shape, dtype) of its result.
        """
        lock = self.lock
        lock.acquire()  # (not `with`: ~0.2 us less an op, on the recording path)
        try:
            pending, position, external = self.pending, self.position, self.external
            n = len(pending)
            ir = list(args)
            wiring = []  # a pending input as its distance back, a computed one as -1 - its order
            exported, shared = self.exported, False
            # (zip's strict check costs ~0.2 us a call; one handle per position by construction)
            for i, h in zip(tensor_at, inputs, strict=False):
                if type(h) is FusionTensor:
                    value, ir[i] = h.value, h.ir
                    if value is None:
                        at = position.get(h.id)
                        if at is None:  # not pending: the kernel computing it failed
                            raise h.failed() from h.failure
                        wiring.append(n - at)
                        continue
                    tid = h.id
                else:  # an inner primitive: its id while the stream keeps it
                    value, tid = h, id(h)
                    ir[i] = new_tuple(TensorIR, (tid, h.shape, h.dtype))
                self.values[tid] = value
                wiring.append(-1 - external.setdefault(tid, len(external)))
                if exported and (ref := exported.get(id(storage := value.storage))) is not None:
                    shared = shared or ref() is storage
            handle = FusionTensor(new_id(), result[0], result[1], self.device)
            out = handle.ir
            tid = out.id
            position[tid] = n
            pending.append(new_tuple(Pending, (op, tuple(ir), out, (structure, tuple(wiring)))))
            self.weak[tid] = _ref(handle)
            STATS.ops_recorded += 1
            if op.name in WITH_INDICES and result[1] is not DType.int64:
                # the indices: a record of their own (the reduce fuser computes both in one pass)
                indices = self.record(op, args, tensor_at, inputs, (*structure, "indices"),
                                      (result[0], DType.int64))
                return handle, indices
            if shared:  # (it reads an exported tensor now, as an eager op would)
                self.flush()
            elif n + 1 >= MAX_PENDING:
                self._flush_head()
            return handle
        finally:
            lock.release()

    def reads_view(self, handle: FusionTensor) -> bool:
        """Whether `handle` is the pending result of a recorded view (`VIEWS`): not
        contiguous (an expand, a permute), so a reshape of it copies it."""
        with self.lock:  # (another thread's flush empties `pending`, then `position`)
            at = self.position.get(handle.id)
            return at is not None and self.pending[at].op.name in VIEWS

    def export(self, value: Any) -> None:
        """Note that the memory of `value` (an inner primitive) was exported: an array
        library may write it at any time, so an op recorded reading it, or any view of its
        storage, runs with the stream at once (`record`), reading it as an op run at once
        would."""
        if len(self.exported) >= MAX_PLANS:
            self.exported = {k: r for k, r in self.exported.items() if r() is not None}
        storage = value.storage
        self.exported[id(storage)] = _ref(storage)

    def flush(self) -> None:
        """Run every pending op whose result is needed; handles still held get their values.

        The blocks, the results to write and each block's `Cell` are worked out once per
        signature (the records' structures and which results a handle still holds) and kept
        in `plans`, so a repeated loop only slices its records and launches."""
        with self.lock:
            pending = self.pending
            if not pending:
                return
            weak, values = self.weak, self.values
            self.pending, self.weak, self.values = [], {}, {}
            self.position.clear()
            self.external.clear()
            STATS.flushes += 1
            if len(pending) == 1 and pending[0].op.name not in MATMULS:
                self._run_one(pending[0], weak[pending[0].out.id](), values)
                return
            self._run(pending, tuple([ref() is not None for ref in weak.values()]), weak,
                      values)

    def _flush_head(self) -> None:
        """At `MAX_PENDING` ops: run every block but the last, whose records stay pending
        (wired anew to the values the others computed), so a block still growing is not cut;
        all of them where the last block is the whole stream (a bound on kernel size). Where
        a block fails, the records of the last block reading its results carry its error (the
        others stay pending), then it is raised."""
        pending, weak, values = self.pending, self.weak, self.values
        last = len(_blocks(pending, self.cpu)[-1][1])
        if last == len(pending):
            self.flush()
            return
        head, tail = pending[:-last], pending[-last:]
        read = _read_from_outside(tail)
        self.pending, self.weak, self.values = [], {}, {}
        self.position.clear()
        self.external.clear()
        STATS.flushes += 1
        failure: Exception | None = None
        try:
            self._run(head, tuple([weak[r.out.id]() is not None or r.out.id in read
                                   for r in head]), weak, values)
        except Exception as exc:  # (the blocks not reading the failed one have run)
            failure = exc
        position, external = self.position, self.external
        for r in tail:
            j = len(self.pending)
            wiring = []
            for i in r.op.tensor_at:
                tid = r.args[i].id
                at = position.get(tid)
                if at is not None:
                    wiring.append(j - at)
                elif tid in values:
                    self.values[tid] = values[tid]
                    wiring.append(-1 - external.setdefault(tid, len(external)))
                else:  # a result of the failed block, or of a record reading one
                    handle = weak[r.out.id]()
                    if handle is not None:
                        handle.failure = failure
                    break
            else:
                position[r.out.id] = j
                self.pending.append(r._replace(key=(r.key[0], tuple(wiring))))
                self.weak[r.out.id] = weak[r.out.id]
        if failure is not None:
            raise failure

    def _run(self, pending: list[Pending], held: tuple[bool, ...],
             weak: dict[int, weakref.ref[FusionTensor]], values: dict[int, Any]) -> None:
        """Run `pending` (taken out of the stream) by its flush plan; `held`: which results
        must be written besides those later blocks read; `values`: the inputs by id, and
        the results written, as they are. A block that fails leaves its error on its handles
        and on those of the blocks reading its results; the others still run, then the
        first error is raised."""
        signature = (tuple([r.key for r in pending]), held)
        plan = self.plans.get(signature)
        if plan is None:
            if len(self.plans) >= MAX_PLANS:
                self.plans.clear()
            plan = self.plans[signature] = self._plan(pending, held)
        blocks, written, unpaid, paid, feeders = plan
        if paid:
            self._shared(paid)
        if feeders:
            self.feeding = True
            if self.made:
                self._reconsider(pending, feeders, values)
        for structure in unpaid:  # (a product leading a block is counted as it runs, below)
            if structure[0] not in MATMULS:
                self._alone(structure)
        needed = {pending[i].out.id for i in written}
        failure: Exception | None = None
        failed: set[int] = set()  # results of failed blocks and of blocks reading them
        for kind, start, end, cell, released in blocks:
            block = pending[start:end]
            run = run_block if kind is None else run_matmul if kind == "matmul" \
                else run_view if kind == "view" else run_reduce
            if failure is not None and any(type(a) is TensorIR and a.id in failed
                                           for r in block for a in r.args):
                _fail(block, weak, failure, failed)
                continue
            try:
                results = run(self.inner, block, values, needed, cell)
            except Exception as exc:  # the blocks that do not read it run, then it is raised
                failure = failure or exc
                _fail(block, weak, exc, failed)
                continue
            for tid, value in results.items():
                values[tid] = value
                handle = weak[tid]()
                if handle is not None:
                    handle.value = value
            for i in released:  # (read by no later block, held by no handle)
                values.pop(pending[i].out.id, None)
            if kind == "matmul":
                plan, first = cell.plan, start
                if type(plan) is Split:  # (a prologue not fused: the product is its own)
                    plan, first = plan.rest.plan, start + plan.at
                structure = pending[first].key[0]
                if type(plan) is Unfused:  # (on the cpu runtime a vendor product whose
                    # block pays stays recorded, its epilogue one kernel)
                    epilogue = end - first > 1 and structure not in unpaid and (
                        _saves_kernel(plan.epilogue) if self.cpu else not plan.vendor)
                    self._unfused_matmul(structure, "epilogue" if epilogue
                                         else "vendor" if plan.vendor else "alone")
                elif structure in unpaid:  # (one kernel with its epilogue, not paying)
                    self._unfused_matmul(structure, "alone")
        if failure is not None:
            raise failure

    def _unfused_matmul(self, structure: tuple[Any, ...], how: str) -> None:
        """Note a matmul block of `structure` run as the inner backend's product (`how`:
        "vendor", not a tiled burn-cube kernel (BLAS or the cpu runtime's gemm, cuBLAS) and
        without an epilogue (on GPU runtimes with one too, on the cpu runtime with one of a
        single op); "alone", without an epilogue, or leading a block that does not pay,
        `_pays`; "epilogue", with one). A vendor product, or one run alone `LONE` times and
        never with an epilogue that paid, runs at once from then on (its structure's result
        is () in `results`): recorded, it only adds its recording and a flush to its one
        kernel. On the cpu runtime a vendor product with an epilogue that pays (`_pays`)
        stays recorded, its epilogue one kernel (a linear layer with a bias alone runs at
        once: its bias add is one kernel either way; recorded, the tiny MLP's step took ~20
        us more), and one of its structure without an epilogue (a backward product of the
        forward's shapes) runs at once only after
        `LONE_SHARED` such flushes in a row (a linear layer's bias and activation: run at
        once they were a kernel each, and a settled MLP step launched as many kernels as
        unfused; measured on the 784-256-10 Adam step, 1 thread, fused over unfused: min
        +3-5% -> +4-7%, median +4-8% -> +8-10%: the issue's kernel counts over that)."""
        if how == "epilogue":
            self._shared((structure,))
            return
        if how == "alone" and not self._lone_again(structure):
            return
        if how == "vendor" and self.cpu and structure in self.shared \
                and not self._lone_again(structure):
            return
        self.results[structure] = ()
        self.run_at_once(structure)

    def forget(self) -> None:
        """Drop what the stream learned of lone ops (`LONE`) and of products run at once
        (`_unfused_matmul`), and its flush plans (which blocks pay, `_pays`): every structure
        is recorded again (for a changed configuration of the fusers; the fusers' cells and
        kernels stay)."""
        with self.lock:
            self.plans.clear()
            self.results.clear()  # (the results of recorded ops are inferred again)
            self.alone.clear()
            self.shared.clear()
            self.lone.clear()
            self.made.clear()
            self.feeding = False

    def _run_one(self, record: Pending, handle: FusionTensor | None,
                 values: dict[int, Any]) -> None:
        """A flush of one op (no matmul): the inner backend's own kernel where `handle`
        (its result's, if still held) needs it, without a plan; from its structure's `LONE`th
        such flush on, it runs at once where it reads no pending result."""
        if handle is None:
            STATS.ops_dead += 1
            return
        op, args = record.op, record.args
        try:
            handle.value = getattr(self.inner, op.name)(
                *[values[a.id] if type(a) is TensorIR else a for a in args])
        except Exception as exc:  # the handle says why when it is read
            handle.failure = exc
            raise
        STATS.kernels_launched += 1
        self._alone(record.key[0])

    def _alone(self, structure: tuple[Any, ...]) -> None:
        """Count a flush that `structure` led alone (or leading a block that does not pay);
        from its `LONE`th on, it runs at once where it reads no pending result, unless it
        led a block that pays (`shared`: `LONE_SHARED` then)."""
        if self._lone_again(structure):
            self.run_at_once(structure)

    def run_at_once(self, structure: tuple[Any, ...]) -> None:
        """Run ops of `structure` at once where they read no pending result (`lone`): a lone
        one, or one never recorded (its result () in `results`; in `lone` too, so that the
        recorder's first test settles it)."""
        if len(self.lone) >= MAX_PLANS:
            self.lone.clear()
        self.lone.add(structure)

    def _lone_again(self, structure: tuple[Any, ...]) -> bool:
        """Count one more time `structure` ran alone; True at its `LONE`th (the count then
        dropped); for a structure in `shared`, at its `LONE_SHARED`th since it last led a
        block that pays (it leaves `shared` then: what it fused with runs at once now)."""
        shared = structure in self.shared
        times = self.alone.get(structure, 0) + 1
        if times < (LONE_SHARED if shared else LONE):
            if len(self.alone) >= MAX_PLANS:
                self.alone.clear()
            self.alone[structure] = times
            return False
        self.alone.pop(structure, None)
        self.shared.discard(structure)
        return True

    def _plan(self, pending: list[Pending], held: tuple[bool, ...]) -> FlushPlan:
        """How `pending` runs: its blocks as (kind, start, end, cell) and the positions of
        the results to write (held by a handle, or read by a later block). Blocks of one
        structure share a cell across flush plans (`cells`). On GPU runtimes a prologue
        with a result to write is a block of its own (`_written_prologues`), and no block
        binds more tensors than a kernel takes (`_bounded`)."""
        cut = _blocks(pending, self.cpu)
        blocks, needed = _needed(pending, cut, held)
        while (split := self._refined(cut, needed)) is not None:
            cut = split
            blocks, needed = _needed(pending, cut, held)
        # (the record each leads with: the stream's first, then later blocks' first)
        leaders = [(0, self._leader(blocks[0][0], pending[:blocks[0][2]], needed))]
        leaders += [(start, self._leader(kind, pending[start:end], needed))
                    for kind, start, end, _ in blocks[1:]
                    if kind == "matmul" or all(w < 0 for w in pending[start].key[1])]
        if len(self.cells) >= MAX_PLANS:
            self.cells.clear()
        released = _released(pending, blocks, held)
        shared = [(kind, start, end, self.cells.setdefault(
            block_key(kind, pending[start:end], needed), cell), released[b])
            for b, (kind, start, end, cell) in enumerate(blocks)]
        paying = [start for start, lead in leaders if lead is not None and lead[1]]
        return (tuple(shared), tuple(i for i, r in enumerate(pending) if r.out.id in needed),
                tuple(lead[0] for _, lead in leaders if lead is not None and not lead[1]),
                tuple(lead[0] for _, lead in leaders if lead is not None and lead[1]),
                tuple((i, p) for i in paying for p, w in zip(pending[i].op.tensor_at,
                                                              pending[i].key[1], strict=True)
                      if w < 0))

    def _refined(self, cut: list[tuple[str | None, list[Pending]]], needed: set[int]
                 ) -> list[tuple[str | None, list[Pending]]] | None:
        """`cut` with more blocks where the GPU runtimes need them (`_written_prologues`,
        then `_bounded`), or None where it stands as it is."""
        if self.cpu:
            return None
        split = _written_prologues(cut, needed)
        if split is None and self.max_tensors:
            split = _bounded(cut, needed, self.max_tensors)
        return split

    def _leader(self, kind: str | None, block: list[Pending], needed: set[int]
                ) -> tuple[tuple[Any, ...], bool] | None:
        """The structure of `block`'s first record (the op that started the stream, a
        later block's product, or a later block's first record reading no pending result)
        where it is a live op of the block (needed, or read by a live op of the block), and
        whether the block pays (`_pays`; one live op never does, but a product alone is
        counted as it runs, `_unfused_matmul`).

        Returns:
            (structure, pays), or None where the first record is not such a live op. Each
            run of the plan notes a structure that pays in `shared` (`_shared`), and counts
            one that does not as a flush alone.
        """
        want, live = set(needed), set()
        for r in reversed(block):
            if r.out.id in want:
                live.add(r.out.id)
                want.update(a.id for a in r.args if type(a) is TensorIR)
        if block[0].out.id not in live:
            return None
        if len(live) < 2:  # (a product alone is counted as it runs: `_unfused_matmul`)
            return None if kind == "matmul" else (block[0].key[0], False)
        widest = max(math.prod(cast(tuple[int, ...], r.out.shape)) for r in block)
        if kind == "reduce" and self.cpu:
            kind = reduce_layout(block)
        return block[0].key[0], self._pays(kind, len(live), widest)

    def _shared(self, structures: Iterable[tuple[Any, ...]]) -> None:
        """Note that each of `structures` led a block that pays: in `shared`, its flushes
        alone counted from zero again (`LONE_SHARED`)."""
        if len(self.shared) >= MAX_PLANS:
            self.shared.clear()
        shared, alone = self.shared, self.alone
        for structure in structures:
            shared.add(structure)
            alone.pop(structure, None)

    def note_made(self, value: Any, structure: tuple[Any, ...]) -> None:
        """Note that a lone op of `structure`, run at once, computed `value` (`made`; the
        `_method` recorders inline this; a tuple of results is not noted: no feeder reads
        it as such)."""
        if type(value) is tuple:
            return
        if len(self.made) >= MAX_PLANS:
            self.made.clear()
        self.made[id(value)] = structure, _ref(value)

    def _reconsider(self, pending: list[Pending], feeders: tuple[tuple[int, int], ...],
                    values: dict[int, Any]) -> None:
        """Record again the lone structures whose op, run at once, computed a tensor that
        the leader of a block that pays reads (`feeders`: its positions): the op starts that
        block from its next run (it leaves `lone` for `shared`, so `LONE_SHARED` flushes
        alone make it lone again). A lone structure stays lone otherwise, so an op that ran
        alone elsewhere (a short loop) would keep a longer chain it starts cut for good.

        Args:
            pending: the records of the flush.
            feeders: (record, argument) positions of the computed tensors read.
            values: the flush's inputs by id.
        """
        made, lone, results = self.made, self.lone, self.results
        for i, p in feeders:
            tid = pending[i].args[p].id
            noted = made.pop(tid, None)
            if noted is None:
                continue
            structure, ref = noted
            if ref() is values.get(tid) and structure in lone and results.get(structure):
                lone.discard(structure)
                self.alone.pop(structure, None)
                self.shared.add(structure)

    def _pays(self, kind: str | None, live: int, elements: int) -> bool:
        """Whether a block of `kind` (None: elementwise; on the cpu runtime a reduce block's
        `reduce.reduce_layout`) computing `live` ops (two or more) whose largest result has
        `elements` elements gains more than its recording costs: from `FUSE_OPS` live ops,
        or keeping `CPU_FUSE_WORK` (cpu runtime) / `GPU_FUSE_WORK` intermediate elements out
        of memory; on the cpu runtime a product's block only from `FUSE_OPS` live ops whose
        epilogue keeps `CPU_EPILOGUE_WORK` elements out of memory, and a reduce block of the
        whole tensor only on a one-thread team, from `FUSE_OPS` live ops and twice
        `CPU_FUSE_WORK` kept elements."""
        kept = (live - 1) * elements
        if self.cpu and kind == "whole":
            return self.inner.runtime.threads == 1 and live >= FUSE_OPS \
                and kept >= 2 * CPU_FUSE_WORK
        if self.cpu and kind == "matmul":  # (the product is written either way)
            return live >= FUSE_OPS and (live - 2) * elements >= CPU_EPILOGUE_WORK
        if live >= FUSE_OPS:
            return True
        if self.cpu:
            return kept >= CPU_FUSE_WORK
        return kept >= GPU_FUSE_WORK


def _saves_kernel(epilogue: Cell) -> bool:
    """Whether the epilogue run after a product (`epilogue`: its elementwise block's cell,
    run) computes two ops or more in its one kernel (`Stream._pays`: one op is one kernel,
    recorded or not)."""
    program = epilogue.plan
    return program is not None and program.live >= 2


def _needed(pending: list[Pending], cut: list[tuple[str | None, list[Pending]]],
            held: tuple[bool, ...]) -> tuple[list[tuple[str | None, int, int, Cell]], set[int]]:
    """The blocks of `cut` (the planner's, consecutive) as (kind, start, end, new cell), and
    the ids of the results to write: those `held` by a handle, and those a live record of a
    later block reads (a dead block's inputs are not written for it; a matmul block with a
    live record reads its product's operands whatever else in it is live, so all its records
    count as live)."""
    blocks: list[tuple[str | None, int, int, Cell]] = []
    at: dict[int, int] = {}  # the block of each result by id
    start = 0
    for kind, block in cut:
        for r in block:
            at[r.out.id] = len(blocks)
        blocks.append((kind, start, start + len(block), Cell()))
        start += len(block)
    needed = {r.out.id for r, h in zip(pending, held, strict=True) if h}
    live, hot = set(needed), set()
    for r in reversed(pending):
        b = at[r.out.id]
        if r.out.id in live or b in hot:
            if blocks[b][0] == "matmul":
                hot.add(b)
            live.add(r.out.id)
            live.update(a.id for a in r.args if type(a) is TensorIR)
    for b, (_, start, end, _) in enumerate(blocks):
        for r in pending[start:end]:
            if r.out.id in live:
                needed.update(a.id for a in r.args
                              if type(a) is TensorIR and at.get(a.id, b) != b)
    return blocks, needed


def _released(pending: list[Pending], blocks: list[tuple[str | None, int, int, Cell]],
              held: tuple[bool, ...]) -> list[tuple[int, ...]]:
    """Per block, the positions of the records whose results it is the last block to read and
    no handle holds (`held`): the flush drops them once it has run, so a chain of blocks (ops
    the cpu runtime leaves as library calls: a block each) keeps two intermediates alive, not
    one per block (a chain of 120 sin and product blocks over 8 MiB held 1 GiB)."""
    made = {pending[i].out.id: (b, i) for b, (_, start, end, _) in enumerate(blocks)
            for i in range(start, end)}
    last: dict[int, int] = {}  # a result's position -> the last block reading it
    for b, (_, start, end, _) in enumerate(blocks):
        for record in pending[start:end]:
            for a in record.args:
                if type(a) is TensorIR and (source := made.get(a.id)) is not None \
                        and source[0] != b:
                    last[source[1]] = b
    released: list[list[int]] = [[] for _ in blocks]
    for i, b in last.items():
        if not held[i]:
            released[b].append(i)
    return [tuple(r) for r in released]


def _written_prologues(cut: list[tuple[str | None, list[Pending]]], needed: set[int]
                       ) -> list[tuple[str | None, list[Pending]]] | None:
    """`cut` with each matmul block whose prologue has a result to write (held, or read by a
    later block: the kernel recomputes a prologue per cube and never writes it) cut into the
    prologue's elementwise block and the rest; None where there is none. The two then pay
    for their recording each by itself (`Stream._pays`): a written prologue saves only its
    own launches, as its block alone would (a small MLP's bias and relu before its second
    layer's product, recorded and flushed as one such block at every step, cost the H100's
    host more than the two launches they saved)."""
    split: list[tuple[str | None, list[Pending]]] = []
    for kind, block in cut:
        at = product_at(block) if kind == "matmul" else 0
        if at and any(r.out.id in needed for r in block[:at]):
            split += [(None, block[:at]), ("matmul", block[at:])]
        else:
            split.append((kind, block))
    return split if len(split) > len(cut) else None


def _bounded(cut: list[tuple[str | None, list[Pending]]], needed: set[int], limit: int
             ) -> list[tuple[str | None, list[Pending]]] | None:
    """`cut` with each block of several records that would bind more than `limit` tensors
    (its inputs from outside it and its results to write; a reduce or matmul kernel's own
    scratch besides) cut in halves, planned again by `_blocks` (GPU runtimes); None where
    every block fits. (wgpu binds a storage buffer a tensor: a sum of 31 tensors was one
    kernel of 33 bindings, which llvmpipe's limit of 32 refused.)"""
    split: list[tuple[str | None, list[Pending]]] = []
    for kind, block in cut:
        bound = len(_read_from_outside(block)) + sum(r.out.id in needed for r in block) \
            + (kind is not None)
        if len(block) > 1 and bound > limit:
            half = len(block) // 2
            split += _blocks(block[:half], False) + _blocks(block[half:], False)
        else:
            split.append((kind, block))
    return split if len(split) > len(cut) else None


def _read_from_outside(block: list[Pending]) -> set[int]:
    """The ids of the tensors `block`'s records read that none of them computes."""
    mine = {r.out.id for r in block}
    return {a.id for r in block for a in r.args if type(a) is TensorIR and a.id not in mine}


def _fail(block: list[Pending], weak: dict[int, weakref.ref[FusionTensor]], exc: Exception,
          failed: set[int]) -> None:
    """Leave `exc` on the handles of `block`'s results (they say why when read) and add their
    ids to `failed`."""
    for record in block:
        failed.add(record.out.id)
        handle = weak[record.out.id]()
        if handle is not None:
            handle.failure = exc


#: Ops other than elementwise ones that the planner takes (their inner backend must have them).
PLANNED = (*REDUCTIONS, *MATMULS, *VIEWS)


def planned_ops(backend: type) -> dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[()]]]:
    """The reductions, matmuls and views a fusion backend records over `backend` (a cube
    backend class), as `Fusion.recorded` holds them: the positions of their tensors and of
    their compile-time arguments (the reduced dim; a view's shape, dims or axes, tuples)."""
    return {name: (OPS[name].tensor_at,
                   tuple(i for i, p in enumerate(OPS[name].params) if not p.is_tensor), ())
            for name in PLANNED if name in OPS and hasattr(backend, name)}


def accepts(op: OpDef, args: tuple[Any, ...], handles: list[FusionTensor], cpu: bool) -> bool:
    """Whether the planner takes this call of a recorded op (elementwise ops always;
    reductions and matmuls of floats where their fusers do) on a stream of the cpu runtime
    (`cpu`) or of a GPU runtime."""
    name = op.name
    if name not in REDUCTIONS and name not in MATMULS:  # (elementwise ops and views)
        return True
    if not all(h.dtype.is_float for h in handles):
        return False
    if name in MATMULS:
        return matmul_accepts(handles[0].shape, handles[1].shape, cpu)
    return reduce_accepts(handles[0].shape, args[1] if len(args) > 1 else None, cpu)


def _blocks(pending: list[Pending], cpu: bool) -> list[tuple[str | None, list[Pending]]]:
    """The planner: the pending ops cut into blocks (module docstring), each with its kind
    (None: elementwise, "reduce", "matmul" or "view": `view.VIEWS`, one record a block).
    With `cpu` (the cpu runtime), an elementwise op the C target leaves as a library call
    (`vectorizes_on_cpu`) is an elementwise block of its own, run by the inner backend's
    kernel, so the ops around it stay vectorized (reduce kernels' loops are not vectorized:
    it joins them on read and on write)."""
    blocks: list[tuple[str | None, list[Pending]]] = []
    kind: str | None = None
    shapes: tuple[Any, ...] = ()  # the shapes the current block takes
    reduction: Any = None  # the current reduce block's (shape, dim)
    reductions = 0  # those it holds (`MAX_BLOCK_REDUCTIONS`)
    alone = False  # the current block is one such library call
    for record in pending:
        name = record.op.name
        shape = record.out.shape
        if name in VIEWS:  # a block of its own, which nothing joins
            kind, shapes, alone = "view", (), False
            blocks.append((kind, []))
        elif name in REDUCTIONS:
            alone = False
            here = reduced_dim(record)
            indices = record.out.dtype is DType.int64  # (of a max / min: its values' record's)
            if kind == "reduce" and here == reduction and (
                    reductions < MAX_BLOCK_REDUCTIONS or indices):
                reductions += not indices
                blocks[-1][1].append(record)
                continue
            if kind is None and shapes == (here[0],):  # fused on read
                blocks[-1] = ("reduce", blocks[-1][1])
            else:
                blocks.append(("reduce", []))
            kind, reduction, shapes, reductions = "reduce", here, (here[0], shape), 1
        elif name in MATMULS:
            alone = False
            if kind is None and not cpu and blocks and _computes_operand(blocks[-1][1], record):
                blocks[-1] = ("matmul", blocks[-1][1])  # its prologue
            else:
                blocks.append(("matmul", []))
            kind, shapes = "matmul", (shape,)
        else:
            call = cpu and not vectorizes_on_cpu(record.op, record.out.dtype)
            if shape not in shapes or alone or (call and kind is None):
                kind, shapes = None, (shape,)
                blocks.append((kind, []))
            alone = call and kind is None
        blocks[-1][1].append(record)
    return blocks


def _computes_operand(block: list[Pending], matmul: Pending) -> bool:
    """Whether an elementwise block computes an operand of `matmul` (then its prologue)."""
    mine = {r.out.id for r in block}
    return any(type(a) is TensorIR and a.id in mine for a in matmul.args)
