"""`DataLoader`: the batches of a dataset, shuffled per epoch, built by worker threads or
processes (after Burn's ``DataLoader``).

Workers: with ``worker_type="thread"`` each worker fetches the items (``dataset.get_many``) and
runs the whole batcher, tensors included. With ``"process"`` each worker fetches the items and,
for a `StagedBatcher` (e.g. `StackBatcher`), runs its numpy ``collate``; the main process then
creates the tensors (``to_device``), or runs ``batch`` for a plain `Batcher`. Process workers
receive the dataset and the batcher pickled once, when they start (so both must be picklable
under the ``"spawn"`` start method); each epoch starts a fresh pool unless
``persistent_workers`` keeps it. On Linux, large arrays come back through shared memory rather
than the result pipe: `collate` stacks them straight into a block, which the main process maps
(no copy) and hands to the batcher's ``to_device`` (which copies them into the backend).

Batches are always yielded in index order, whatever order the workers finish in, so a seed
gives the same batches for any number and kind of workers.
"""

from __future__ import annotations

import math
import mmap
import os
import secrets
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from functools import partial
from itertools import islice
from typing import Any, Generic, Literal, Protocol, TypeVar

import numpy as np

from burn.data.batcher import (
    Batcher,
    StagedBatcher,
    default_batcher,
    empty_array,
    map_leaves,
)
from burn.data.errors import DataLoaderError, DataLoaderTimeoutError
from burn.device import Device, as_device

ItemT_co = TypeVar("ItemT_co", covariant=True)
BatchT = TypeVar("BatchT")
WorkerType = Literal["thread", "process"]


class IndexedDataset(Protocol[ItemT_co]):
    """What the loader needs of a dataset: a length and ``dataset[i]`` (``get_many`` is used
    instead of ``dataset[i]`` when the dataset has one)."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> ItemT_co: ...


def fetch(dataset: Any, indices: list[int]) -> list[Any]:
    """The items at ``indices``: ``dataset.get_many(indices)`` if it exists, else one
    ``dataset[i]`` per index."""
    get_many = getattr(dataset, "get_many", None)
    if callable(get_many):
        return list(get_many(indices))
    return [dataset[i] for i in indices]


def _thread_task(dataset: Any, batcher: Batcher[Any, Any], device: Device,
                 workers: dict[int, str], indices: list[int]) -> Any:
    workers[id(indices)] = threading.current_thread().name
    return batcher.batch(fetch(dataset, indices), device)


_SHARE_MIN_BYTES = 1 << 16
_TERMINATE_GRACE_S = 2.0  # a terminated process worker's time to exit before SIGKILL
_SHM_DIR = "/dev/shm"  # POSIX shared memory as files (Linux); elsewhere results are pickled
_SHARED = os.path.isdir(_SHM_DIR)


def _block_path(name: str) -> str:
    return os.path.join(_SHM_DIR, name)


def _create_block(nbytes: int) -> tuple[str, mmap.mmap]:
    """Worker side: a new shared-memory block, registered with the resource tracker (which
    frees it should the main process never do so), and its mapping."""
    from multiprocessing import resource_tracker

    name = f"burn_{secrets.token_hex(8)}"
    fd = os.open(_block_path(name), os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    resource_tracker.register("/" + name, "shared_memory")
    try:
        os.ftruncate(fd, nbytes)
        return name, mmap.mmap(fd, nbytes)
    except BaseException:
        _unlink_block(name)
        raise
    finally:
        os.close(fd)


def _unlink_block(name: str) -> None:
    """Free a block once its last mapping goes (and unregister it from the tracker)."""
    from multiprocessing import resource_tracker

    os.unlink(_block_path(name))
    resource_tracker.unregister("/" + name, "shared_memory")


class _SharedArray:
    """A numpy array a process worker left in a shared-memory block (a leaf for
    `map_leaves`, hence no dataclass)."""

    __slots__ = ("name", "shape", "dtype")

    def __init__(self, name: str, shape: tuple[int, ...], dtype: str) -> None:
        self.name = name
        self.shape = shape
        self.dtype = dtype


class _SharedBlocks:
    """Worker side: the shared-memory blocks of one batch.

    `empty` is the `empty_array` allocator while the batch is collated, so large stacked
    arrays are written straight into a fresh block; `share` then turns the result's arrays into
    `_SharedArray` handles (copying into a block only the large arrays `collate` did not stack).
    Each array owns its block's mapping, so nothing needs closing.
    """

    def __init__(self) -> None:
        self._blocks: dict[int, tuple[str, np.ndarray]] = {}

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """An uninitialized array, in a new block when it is large."""
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if not _SHARED or nbytes < _SHARE_MIN_BYTES or dtype.hasobject:
            return np.empty(shape, dtype)
        name, mapped = _create_block(nbytes)
        array = np.frombuffer(mapped, dtype).reshape(shape)
        self._blocks[id(array)] = (name, array)
        return array

    def share(self, value: Any) -> Any:
        """The handle of a large array (moved into a block unless it is in one), else
        ``value``."""
        if not isinstance(value, np.ndarray):
            return value
        entry = self._blocks.get(id(value))
        if entry is None or entry[1] is not value:
            copy = self.empty(value.shape, value.dtype)
            if id(copy) not in self._blocks:
                return value
            copy[...] = value
            entry = self._blocks[id(copy)]
        return _SharedArray(entry[0], value.shape, value.dtype.str)

    def discard(self) -> None:
        """Free every block (the batch failed)."""
        for name, _ in self._blocks.values():
            _unlink_block(name)
        self._blocks.clear()


def _unshare(value: Any) -> Any:
    """Main side: the array of a `_SharedArray`, mapping its block (no copy); the block is
    unlinked at once and its memory goes with the array."""
    if not isinstance(value, _SharedArray):
        return value
    dtype = np.dtype(value.dtype)
    fd = os.open(_block_path(value.name), os.O_RDWR)
    try:
        mapped = mmap.mmap(fd, math.prod(value.shape) * dtype.itemsize)
    finally:
        os.close(fd)
        _unlink_block(value.name)
    return np.frombuffer(mapped, dtype).reshape(value.shape)


def _release(value: Any) -> Any:
    """Main side: free the block of a `_SharedArray` nobody will read."""
    if isinstance(value, _SharedArray):
        _unlink_block(value.name)
    return value


_worker_state: tuple[Any, Batcher[Any, Any], bool] | None = None


def _init_process_worker(dataset: Any, batcher: Batcher[Any, Any], staged: bool) -> None:
    global _worker_state
    _worker_state = (dataset, batcher, staged)


def _process_task(indices: list[int]) -> Any:
    assert _worker_state is not None, "process worker not initialized"
    dataset, batcher, staged = _worker_state
    blocks = _SharedBlocks()
    try:
        result = fetch(dataset, indices)
        if staged:
            token = empty_array.set(blocks.empty)
            try:
                result = batcher.collate(result)  # type: ignore[attr-defined]
            finally:
                empty_array.reset(token)
        return map_leaves(blocks.share, result)
    except BaseException:
        blocks.discard()
        raise


class DataLoader(Generic[BatchT]):
    """Iterates over a dataset in batches; ``len(loader)`` is the number of batches per epoch.

    Args:
        dataset: any object with ``__len__`` and ``get_many(indices)`` or ``__getitem__``
            (e.g. a ``burn_dataset.Dataset``); picklable for process workers.
        batcher: turns each list of items into a batch (default: `default_batcher`).
        batch_size: items per batch.
        shuffle: visit the items in a new seeded order every epoch.
        seed: base seed of the shuffle; epoch ``k`` (counted from 0 by `epoch`) uses
            ``seed + k``. None draws a random base seed (kept in ``self.seed``).
        drop_last: drop the last batch when it is smaller than ``batch_size``.
        num_workers: worker threads or processes; 0 builds batches in the iterating thread.
        worker_type: ``"thread"`` or ``"process"`` (see the module docstring).
        prefetch: batches in flight per worker (the bound on the prefetch queue).
        device: where the batches' tensors go (the default device when None).
        start_method: multiprocessing start method of process workers (``"spawn"``,
            ``"fork"``, ``"forkserver"``); None uses the platform default.
        persistent_workers: keep the workers from one epoch to the next (until `close`)
            instead of starting them every epoch.
        timeout: seconds to wait for a worker's batch (as torch's DataLoader); 0 waits
            forever. When it passes, the workers are stopped and `DataLoaderTimeoutError`
            names the worker and the batch. A KeyboardInterrupt stops the workers too
            (process workers are terminated; hung threads cannot be, they end on their own).

    Attributes:
        epoch: the epoch the next iteration runs (incremented when an iteration starts; set it
            to resume a run).

    Raises:
        ValueError: for a non-positive ``batch_size`` or ``prefetch``, negative
            ``num_workers``, a negative ``timeout`` or an unknown ``worker_type``.
        TypeError: for a dataset without ``__len__`` or a way to read items.
    """

    def __init__(
        self,
        dataset: IndexedDataset[Any] | Any,
        batcher: Batcher[Any, BatchT] = default_batcher,
        batch_size: int = 1,
        shuffle: bool = False,
        seed: int | None = None,
        drop_last: bool = False,
        num_workers: int = 0,
        worker_type: WorkerType = "thread",
        prefetch: int = 2,
        device: Device | str | None = None,
        start_method: str | None = None,
        persistent_workers: bool = False,
        timeout: float = 0,
    ) -> None:
        if batch_size < 1 or prefetch < 1 or num_workers < 0 or not timeout >= 0:
            raise ValueError(
                f"DataLoader: need batch_size >= 1, prefetch >= 1, num_workers >= 0 and "
                f"timeout >= 0, got batch_size={batch_size}, prefetch={prefetch}, "
                f"num_workers={num_workers}, timeout={timeout}")
        if worker_type not in ("thread", "process"):
            raise ValueError(f"DataLoader: worker_type must be 'thread' or 'process', "
                             f"got {worker_type!r}")
        if not hasattr(dataset, "__len__") or not (
                hasattr(dataset, "get_many") or hasattr(dataset, "__getitem__")):
            raise TypeError(f"DataLoader: dataset {type(dataset).__name__} needs __len__ and "
                            f"get_many or __getitem__")
        self.dataset = dataset
        self.batcher = batcher
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = secrets.randbits(63) if seed is None else seed
        self.drop_last = drop_last
        self.num_workers = num_workers
        self.worker_type = worker_type
        self.prefetch = prefetch
        self.device = as_device(device)
        self.start_method = start_method
        self.persistent_workers = persistent_workers
        self.timeout = timeout
        self._workers: dict[int, str] = {}
        self.epoch = 0
        self._pool: tuple[Executor, Callable[[list[int]], Any], Callable[[Any], BatchT]] | None = (
            None)

    def __len__(self) -> int:
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def batch_indices(self, epoch: int) -> list[list[int]]:
        """The dataset indices of each batch of ``epoch``.

        Args:
            epoch: the epoch number (it picks the shuffle seed ``seed + epoch``).

        Returns:
            One list of indices per batch, ``len(self)`` of them.
        """
        n = len(self.dataset)
        if self.shuffle:
            order = np.random.default_rng(self.seed + epoch).permutation(n).tolist()
        else:
            order = list(range(n))
        size = self.batch_size
        return [order[i:i + size] for i in range(0, len(self) * size, size)]

    def __iter__(self) -> Iterator[BatchT]:
        """The batches of the next epoch, in order.

        Raises:
            DataLoaderError: a batch failed (dataset or batcher error, or a worker died); the
                workers are shut down first.
        """
        batches = self.batch_indices(self.epoch)
        self.epoch += 1
        if self.num_workers == 0:
            return self._iter_serial(batches)
        return self._iter_pool(batches)

    def _iter_serial(self, batches: list[list[int]]) -> Iterator[BatchT]:
        for k, indices in enumerate(batches):
            try:
                batch = self.batcher.batch(fetch(self.dataset, indices), self.device)
            except Exception as e:
                raise DataLoaderError(k, indices, e) from e
            yield batch

    def _start_pool(self) -> tuple[Executor, Callable[[list[int]], Any], Callable[[Any], BatchT]]:
        """The executor, the task it runs on a batch's indices, and the main-process step
        that turns a task's result into the batch."""
        if self.worker_type == "thread":
            pool: Executor = ThreadPoolExecutor(self.num_workers, thread_name_prefix="burn-data")
            task = partial(_thread_task, self.dataset, self.batcher, self.device, self._workers)
            return pool, task, lambda batch: batch
        # multiprocessing is imported here, not with burn: most loaders use threads or none
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import resource_tracker

        staged = isinstance(self.batcher, StagedBatcher)
        resource_tracker.ensure_running()  # shared by the workers: frees blocks left behind
        pool = ProcessPoolExecutor(
            self.num_workers, mp_context=multiprocessing.get_context(self.start_method),
            initializer=_init_process_worker, initargs=(self.dataset, self.batcher, staged))
        build = self.batcher.to_device if staged else self.batcher.batch  # type: ignore
        return pool, _process_task, lambda result: build(map_leaves(_unshare, result),
                                                         self.device)

    def _iter_pool(self, batches: Sequence[list[int]]) -> Iterator[BatchT]:
        started = self._pool or self._start_pool()
        if self.persistent_workers:
            self._pool = started
        pool, task, finish = started
        todo = iter(enumerate(batches))
        pending: deque[tuple[int, Future[Any]]] = deque()

        def submit(count: int) -> None:
            for k, indices in islice(todo, count):
                try:
                    pending.append((k, pool.submit(task, indices)))
                except Exception as e:  # the pool broke (a worker died)
                    raise DataLoaderError(k, indices, e) from e

        failed, stuck = True, False
        try:
            submit(self.num_workers * self.prefetch)
            while pending:
                k, future = pending.popleft()
                try:
                    batch = finish(future.result(timeout=self.timeout or None))
                except Exception as e:
                    if isinstance(e, FutureTimeout) and not future.done():
                        stuck = True
                        raise DataLoaderTimeoutError(k, batches[k], self._worker_of(
                            pool, batches[k]), self.timeout) from None
                    raise DataLoaderError(k, batches[k], e) from e
                self._workers.pop(id(batches[k]), None)
                submit(1)
                yield batch
            failed = False
        except GeneratorExit:  # an early break: the workers are fine
            failed = False
            raise
        except KeyboardInterrupt:
            stuck = True
            raise
        finally:
            for _, future in pending:
                future.cancel()
            if failed or not self.persistent_workers:
                _stop(pool, kill=stuck)
                if self._pool is started:
                    self._pool = None
            for _, future in pending:  # free the shared memory of batches never consumed
                if future.done() and not future.cancelled() and future.exception() is None:
                    map_leaves(_release, future.result())

    def _worker_of(self, pool: Executor, indices: list[int]) -> str:
        """The worker holding a batch: its thread's name, or the pool's process ids."""
        if self.worker_type == "thread":
            return self._workers.get(id(indices), "(none started it)")
        processes = getattr(pool, "_processes", None) or {}
        return "process, one of pids " + str(sorted(processes))

    def close(self) -> None:
        """Shut the workers down (those kept by ``persistent_workers``; they also end with the
        interpreter). The next iteration starts new ones."""
        if self._pool is not None:
            self._pool[0].shutdown(wait=True, cancel_futures=True)
            self._pool = None


def _stop(pool: Executor, kill: bool) -> None:
    """Shut the pool down; with ``kill`` (a timeout or an interrupt) do not wait for the
    workers, and terminate process workers."""
    stopped: set[Any] = set()
    workers = (getattr(pool, "_processes", None) or {}) if kill else {}  # shutdown drops it

    def terminate_workers() -> None:
        processes = [p for p in list(workers.values()) if p not in stopped]
        for process in processes:
            process.terminate()
        for process in processes:  # SIGKILL for workers that ignore SIGTERM
            process.join(_TERMINATE_GRACE_S)
            if process.is_alive():
                process.kill()
                process.join()
        stopped.update(processes)

    manager = getattr(pool, "_executor_manager_thread", None) if kill else None
    terminate_workers()
    pool.shutdown(wait=not kill, cancel_futures=True)
    if manager is not None:  # it may start a worker while noticing the others died
        manager.join(_TERMINATE_GRACE_S)
    terminate_workers()  # a worker the pool started while the first ones were stopping
