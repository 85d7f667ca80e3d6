"""DataLoader timeout and interrupt: a hung worker never blocks iteration forever."""

from __future__ import annotations

import multiprocessing
import signal
import threading
import time
from pathlib import Path
from types import FrameType

import numpy as np
import pytest

from burn.data import DataLoader, DataLoaderError, DataLoaderTimeoutError

HUNG = 5  # the item whose worker hangs


class ThreadHang:
    """Item HUNG blocks until `release` is set."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> np.ndarray:
        if i == HUNG:
            self.release.wait()
        return np.full(2, i, np.float32)


class ProcessHang:
    """Item HUNG sleeps for a long time, then writes `marker` (it never should)."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> np.ndarray:
        if i == HUNG:
            time.sleep(20)
            Path(self.marker).write_text("the hung worker finished")
        return np.full(2, i, np.float32)


def test_thread_worker_timeout_names_worker_and_batch() -> None:
    dataset = ThreadHang()
    loader = DataLoader(dataset, batch_size=2, num_workers=2, timeout=0.5)
    got = []
    try:
        with pytest.raises(DataLoaderTimeoutError) as info:
            for batch in loader:
                got.append(batch.to_numpy())
    finally:
        dataset.release.set()
    assert info.value.batch == HUNG // 2 and info.value.indices == [4, 5]
    assert info.value.worker.startswith("burn-data") and info.value.worker in str(info.value)
    assert isinstance(info.value, DataLoaderError)
    assert [b.shape for b in got] == [(2, 2), (2, 2)]
    np.testing.assert_array_equal(np.stack(got)[:, :, 0], [[0, 1], [2, 3]])


def test_process_worker_timeout_terminates_the_workers(tmp_path: Path) -> None:
    marker = tmp_path / "finished"
    loader = DataLoader(ProcessHang(marker), batch_size=2, num_workers=2,
                        worker_type="process", timeout=2)
    before = set(multiprocessing.active_children())
    with pytest.raises(DataLoaderTimeoutError, match=r"batch 2 .*pids") as info:
        list(loader)
    assert info.value.indices == [4, 5]
    assert not set(multiprocessing.active_children()) - before
    assert not marker.exists()


def test_interrupt_ends_hung_process_workers(tmp_path: Path) -> None:
    marker = tmp_path / "finished"
    loader = DataLoader(ProcessHang(marker), batch_size=2, num_workers=2,
                        worker_type="process")  # timeout 0: wait forever

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    before = set(multiprocessing.active_children())
    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 2.0)
    try:
        with pytest.raises(KeyboardInterrupt):
            list(loader)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert not set(multiprocessing.active_children()) - before
    assert not marker.exists()


def test_negative_timeout_is_refused() -> None:
    with pytest.raises(ValueError, match="timeout"):
        DataLoader(ThreadHang(), timeout=-1)
