"""burn.data: collation and batches against torch.utils.data, shuffling, workers, failures."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections import namedtuple
from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader as TorchLoader
from torch.utils.data import default_collate

import burn
from burn.data import DataLoader, DataLoaderError, StackBatcher, collate, default_batcher

torch.set_num_threads(1)
Pair = namedtuple("Pair", ["a", "b"])
WORKERS = [(0, "thread"), (2, "thread"), (2, "process")]


@pytest.fixture(autouse=True)
def deadline() -> Iterator[None]:
    """Fail (instead of hanging) any test running past 20 s."""
    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError("test ran past its 20 s deadline (the loader hung?)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


class Records:
    """In-memory dataset of dict items (picklable); `__getitem__` only, like torch's."""

    def __init__(self, n: int = 23, delay: float = 0.0) -> None:
        self.n = n
        self.delay = delay

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict[str, Any]:
        if self.delay:  # early items are the slowest: workers finish out of order
            time.sleep(self.delay * (self.n - i) / self.n)
        rng = np.random.default_rng(i)
        return {"image": rng.integers(0, 256, (3, 4, 4), dtype=np.uint8),
                "feature": rng.random(5), "label": i % 3, "weight": float(i), "name": f"x{i}"}


class Failing(Records):
    """Raises on item `bad`."""

    def __init__(self, bad: int) -> None:
        super().__init__()
        self.bad = bad

    def __getitem__(self, i: int) -> dict[str, Any]:
        if i == self.bad:
            raise KeyError(f"item {i} is broken")
        return super().__getitem__(i)


class Dying(Records):
    """Kills the process reading item `bad`, unless that is the test process itself."""

    def __init__(self, bad: int) -> None:
        super().__init__()
        self.bad = bad
        self.parent = os.getpid()

    def __getitem__(self, i: int) -> dict[str, Any]:
        if i == self.bad and os.getpid() != self.parent:
            os._exit(3)
        return super().__getitem__(i)


class ListBatcher:
    """A plain (not staged) Batcher: item labels as an int tensor."""

    def batch(self, items: list[dict[str, Any]], device: burn.Device) -> burn.Tensor:
        return burn.tensor([item["label"] for item in items], device=device)


def as_numpy(batch: Any) -> Any:
    """A burn or torch batch with numpy arrays in place of tensors (lists for sequences)."""
    if isinstance(batch, burn.Tensor | torch.Tensor):
        return np.asarray(batch)
    if isinstance(batch, dict):
        return {k: as_numpy(v) for k, v in batch.items()}
    if isinstance(batch, tuple | list) and not isinstance(batch[0], str):
        return [as_numpy(v) for v in batch]
    return batch


def assert_same(ours: Any, theirs: Any) -> None:
    ours, theirs = as_numpy(ours), as_numpy(theirs)
    if isinstance(theirs, np.ndarray):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)
    elif isinstance(theirs, dict):
        assert ours.keys() == theirs.keys()
        for k in theirs:
            assert_same(ours[k], theirs[k])
    elif isinstance(theirs, list) and theirs and not isinstance(theirs[0], str):
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs, strict=True):
            assert_same(o, t)
    else:
        assert list(ours) == list(theirs)


def labels(loader: DataLoader[Any]) -> list[list[int]]:
    return [np.asarray(b["weight"]).astype(int).tolist() for b in loader]


def alive_workers() -> list[str]:
    threads = [t.name for t in threading.enumerate() if t.name.startswith("burn-data")]
    return threads + [p.name for p in multiprocessing.active_children()]


@pytest.mark.parametrize("item", [
    np.arange(6, dtype=np.uint8).reshape(2, 3), np.ones(3), np.ones(2, np.float32),
    np.arange(3, dtype=np.int32), np.float32(1.5), np.int64(4), np.bool_(True), np.array(2.0),
    3, 2.5, True, "text", {"a": 1, "b": (np.ones(2), 0.5)}, Pair(np.zeros(2, np.int8), 7),
    [1, 2.0],
], ids=lambda v: f"{type(v).__name__}-{getattr(v, 'dtype', '')}")
def test_collate_like_torch_default_collate(item: Any) -> None:
    items = [item] * 3
    assert_same(default_batcher.batch(items, burn.Device("numpy")), default_collate(items))
    assert_same(collate(items), default_collate(items))


def test_collate_keeps_structure_and_refuses_bad_items() -> None:
    out = collate([Pair(1, "a"), Pair(2, "b")])
    assert isinstance(out, Pair) and out.b == ["a", "b"]
    assert isinstance(collate([(1, 2), (3, 4)]), tuple)
    batch = StackBatcher(float_dtype=burn.float32).batch([np.ones(2)] * 2, burn.Device("numpy"))
    assert batch.dtype == burn.float32
    with pytest.raises(ValueError, match="different shapes"):
        collate([np.ones(2), np.ones(3)])
    with pytest.raises(TypeError, match="NoneType"):
        collate([None])


@pytest.mark.parametrize("batch_size,drop_last", [(4, False), (4, True), (23, True), (30, False)])
def test_unshuffled_batches_match_torch(batch_size: int, drop_last: bool) -> None:
    ds = Records()
    ours = DataLoader(ds, batch_size=batch_size, drop_last=drop_last)
    theirs = TorchLoader(ds, batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    ours_batches, their_batches = list(ours), list(theirs)
    assert len(ours_batches) == len(their_batches) == len(ours)
    for o, t in zip(ours_batches, their_batches, strict=True):
        assert_same(o, t)


@pytest.mark.parametrize("num_workers,worker_type", WORKERS[1:])
def test_workers_yield_batches_in_order(num_workers: int, worker_type: Any) -> None:
    loader = DataLoader(Records(delay=0.02), batch_size=3, num_workers=num_workers,
                        worker_type=worker_type, prefetch=3)
    for o, t in zip(loader, TorchLoader(Records(), batch_size=3), strict=True):
        assert_same(o, t)
    assert not alive_workers()


def test_shuffle_is_seeded_per_epoch_and_independent_of_workers() -> None:
    runs = [labels(DataLoader(Records(), batch_size=5, shuffle=True, seed=7, num_workers=w,
                              worker_type=t)) for w, t in WORKERS]
    assert runs[0] == runs[1] == runs[2]
    assert sorted(sum(runs[0], [])) == list(range(23))
    assert runs[0] != [list(range(i, min(i + 5, 23))) for i in range(0, 23, 5)]

    loader = DataLoader(Records(), batch_size=5, shuffle=True, seed=7)
    first, second = labels(loader), labels(loader)
    assert first == runs[0] and second != first and loader.epoch == 2
    assert second == labels(DataLoader(Records(), batch_size=5, shuffle=True, seed=8))
    assert loader.batch_indices(1) == second


@pytest.mark.parametrize("num_workers,worker_type", WORKERS)
def test_dataset_error_names_the_batch(num_workers: int, worker_type: Any) -> None:
    loader = DataLoader(Failing(bad=9), batch_size=4, num_workers=num_workers,
                        worker_type=worker_type)
    seen = []
    with pytest.raises(DataLoaderError, match=r"batch 2 .*item 9 is broken") as info:
        for batch in loader:
            seen.append(batch)
    assert len(seen) == 2 and info.value.batch == 2 and info.value.indices == [8, 9, 10, 11]
    assert isinstance(info.value.__cause__, KeyError)
    assert not alive_workers()


def test_killed_process_worker_raises_instead_of_hanging() -> None:
    loader = DataLoader(Dying(bad=5), batch_size=4, num_workers=2, worker_type="process")
    with pytest.raises(DataLoaderError) as info:
        list(loader)
    assert isinstance(info.value.__cause__, BrokenProcessPool)
    assert not alive_workers()


@pytest.mark.parametrize("num_workers,worker_type", WORKERS[1:])
def test_early_break_shuts_workers_down(num_workers: int, worker_type: Any) -> None:
    loader = DataLoader(Records(n=200), batch_size=2, num_workers=num_workers,
                        worker_type=worker_type)
    for i, _ in enumerate(loader):
        assert alive_workers()
        if i == 2:
            break
    assert not alive_workers()
    it = iter(loader)
    next(it)
    it.close()
    assert not alive_workers()


class Large:
    """Items of 128 KiB: process workers hand them back through shared memory."""

    def __len__(self) -> int:
        return 12

    def __getitem__(self, i: int) -> tuple[np.ndarray, int]:
        return np.full((128, 256), i, np.float32), i


def shared_blocks() -> set[str]:
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


def test_large_arrays_come_back_through_shared_memory() -> None:
    before = shared_blocks()
    loader = DataLoader(Large(), batch_size=2, num_workers=2, worker_type="process")
    for k, (images, labels) in enumerate(loader):
        assert images.shape == (2, 128, 256) and images.dtype == burn.float32
        assert images[:, 0, 0].tolist() == labels.tolist() == [2 * k, 2 * k + 1]
    for _ in loader:  # batches left in flight by a break are freed too
        break
    assert shared_blocks() == before and not alive_workers()


def test_process_workers_spawn_and_plain_batcher() -> None:
    loader = DataLoader(Records(n=10), ListBatcher(), batch_size=4, num_workers=2,
                        worker_type="process", start_method="spawn")
    assert [b.tolist() for b in loader] == [[0, 1, 2, 0], [1, 2, 0, 1], [2, 0]]
    assert not alive_workers()


@pytest.mark.parametrize("num_workers,worker_type", WORKERS)
def test_burn_dataset_sources(num_workers: int, worker_type: Any) -> None:
    burn_dataset = pytest.importorskip("burn_dataset")
    fake = burn_dataset.FakeDataset(10, (2, 3), np.uint8, seed=1)
    batches = list(DataLoader(fake, batch_size=4, shuffle=True, seed=3, num_workers=num_workers,
                              worker_type=worker_type))
    order = DataLoader(fake, batch_size=4, shuffle=True, seed=3).batch_indices(0)
    for batch, indices in zip(batches, order, strict=True):
        assert batch.dtype == burn.uint8
        np.testing.assert_array_equal(np.asarray(batch), np.stack(fake.get_many(indices)))

    rows = burn_dataset.InMemoryDataset([{"x": i, "y": [i, 2 * i]} for i in range(5)])
    batch = next(iter(DataLoader(rows, batch_size=5, num_workers=num_workers,
                                 worker_type=worker_type)))
    assert batch["x"].tolist() == [0, 1, 2, 3, 4] and batch["y"][1].tolist() == [0, 2, 4, 6, 8]


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        DataLoader(Records(), batch_size=0)
    with pytest.raises(ValueError, match="worker_type"):
        DataLoader(Records(), worker_type="fiber")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="__len__"):
        DataLoader(object())


class Pids(Records):
    """Items carry the id of the process or thread that read them."""

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {"pid": os.getpid(), "thread": threading.get_ident(), "i": i}


@pytest.mark.parametrize("worker_type", ["thread", "process"])
def test_persistent_workers_live_across_epochs_until_close(worker_type: Any) -> None:
    before = shared_blocks()
    loader = DataLoader(Pids(n=12), batch_size=3, num_workers=2, worker_type=worker_type,
                        persistent_workers=True)
    key = "pid" if worker_type == "process" else "thread"
    epochs = [{int(v) for b in loader for v in np.asarray(b[key]).tolist()} for _ in range(3)]
    assert len(set().union(*epochs)) <= 2 and alive_workers()  # the same two workers
    for _ in loader:  # an early break keeps the workers too
        break
    assert alive_workers()
    loader.close()
    assert not alive_workers() and shared_blocks() == before
    assert [np.asarray(b["i"]).tolist() for b in loader][0] == [0, 1, 2]  # new workers
    loader.close()


class HalfBroken(Large):
    """Large arrays, then a field `collate` refuses (after stacking the arrays into a block)."""

    def __getitem__(self, i: int) -> tuple[np.ndarray, Any]:  # type: ignore[override]
        return np.zeros((128, 256), np.float32), None


def test_failed_collate_frees_its_shared_memory() -> None:
    before = shared_blocks()
    with pytest.raises(DataLoaderError, match="NoneType"):
        list(DataLoader(HalfBroken(), batch_size=2, num_workers=2, worker_type="process"))
    assert shared_blocks() == before and not alive_workers()


def test_stack_batcher_copies_through_the_backend() -> None:
    collated = collate([np.ones(3, np.float32)] * 2)
    batch = default_batcher.to_device(collated, burn.Device("numpy"))
    collated[0, 0] = 5  # the backend's from_data copied: the batch keeps its values
    assert batch.shape == (2, 3) and batch.dtype == burn.float32
    np.testing.assert_array_equal(np.asarray(batch), np.ones((2, 3), np.float32))
    copied = burn.data.to_device(collate([np.ones(3)] * 2), burn.Device("numpy"))
    assert copied.dtype == burn.float64


@pytest.mark.parametrize("persistent", [False, True])
def test_concurrent_epochs_of_one_loader(persistent: bool) -> None:
    loader = DataLoader(Records(n=12), batch_size=3, num_workers=2, worker_type="process",
                        persistent_workers=persistent)
    pairs = list(zip(loader, loader, strict=True))  # two epochs interleaved
    assert [np.asarray(a["label"]).tolist() for a, _ in pairs] == [
        np.asarray(b["label"]).tolist() for _, b in pairs]
    loader.close()
    assert not alive_workers()
