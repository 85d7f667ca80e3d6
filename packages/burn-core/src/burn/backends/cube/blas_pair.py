"""Mid-sized cpu BLAS products on two threads without OpenBLAS's thread pool.

Products below `matmul.CPU_SMALL_MATMUL` multiply-adds run on one OpenBLAS thread: OpenBLAS's
own workers spin after a threaded call, and on a loaded 2-core machine a threaded product
waits for its worker's time slice (a 2-thread MLP step with its [64, 784] x [784, 256]
products threaded took 11 ms instead of 2 ms there). Here the rows are split in two instead:
the second half is offered to one helper thread, the calling thread multiplies the first and
then takes the second itself unless the helper has already claimed it, so a busy machine
costs a wake-up, never a wait for a thread that is not running. Both halves run on one
OpenBLAS thread; numpy's matmul releases the GIL, so the halves run at once.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

#: multiply-adds from which a one-BLAS-thread product is split over two threads. Measured on
#: 2 idle cores: a [64, 784] x [784, 256] product (12.8M) alone took 183 us split against 268
#: us, but the MLP step with its two such products split ran ~8% slower (the helper's
#: wake-ups); the transformer step's 16.7M and 67M products split ran it 20% faster.
PAIR_MATMUL = 1 << 24
#: fewest rows a split product has.
PAIR_ROWS = 16


class _Half:
    """The second half of one product: its operands and result rows, who claimed it, and
    when it is done."""

    __slots__ = ("lhs", "rhs", "out", "claimed", "done", "error")

    def __init__(self, lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray) -> None:
        self.lhs, self.rhs, self.out = lhs, rhs, out
        self.claimed = False
        self.done = threading.Event()
        self.error: BaseException | None = None


class _Helper:
    """One daemon thread multiplying the halves offered to it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.offered: _Half | None = None
        self.wake = threading.Semaphore(0)
        self.pid = os.getpid()
        threading.Thread(target=self._serve, name="burn-blas-pair", daemon=True).start()

    def _serve(self) -> None:
        np.seterr(all="ignore")  # this thread's state: NaN and inf propagate silently
        while True:
            self.wake.acquire()
            with self.lock:
                half, self.offered = self.offered, None
                if half is None or half.claimed:
                    continue
                half.claimed = True
            try:
                np.matmul(half.lhs, half.rhs, out=half.out)
            except BaseException as exc:  # re-raised on the calling thread
                half.error = exc
            finally:
                half.done.set()

    def matmul(self, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        out = np.empty((lhs.shape[0], rhs.shape[1]), np.result_type(lhs, rhs))
        cut = lhs.shape[0] // 2
        half = _Half(lhs[cut:], rhs, out[cut:])
        with self.lock:
            self.offered = half
        self.wake.release()
        np.matmul(lhs[:cut], rhs, out=out[:cut])
        with self.lock:
            mine = not half.claimed
            half.claimed = True
        if mine:
            np.matmul(half.lhs, rhs, out=half.out)
        else:
            half.done.wait()
            if half.error is not None:
                raise half.error
        return out


_helper: _Helper | None = None


def applies(lhs: np.ndarray, rhs: np.ndarray) -> bool:
    """Whether `pair_matmul` takes `lhs @ rhs`: two matrices of at least `PAIR_ROWS` rows and
    `PAIR_MATMUL` multiply-adds (the caller keeps it to products below its threaded size)."""
    return (lhs.ndim == 2 and rhs.ndim == 2 and lhs.shape[0] >= PAIR_ROWS
            and lhs.size * rhs.shape[1] >= PAIR_MATMUL)


def pair_matmul(lhs: np.ndarray, rhs: np.ndarray, blas_libs: list[Any]) -> np.ndarray:
    """`lhs @ rhs` (matrices, `applies`) as two products of half the rows, on this thread and
    the helper, each on one thread of the OpenBLAS libraries `blas_libs` (threadpoolctl
    controllers, their counts restored after).

    Returns:
        The product, as np.matmul.
    """
    global _helper
    if _helper is None or _helper.pid != os.getpid():  # none yet, or forked without it
        _helper = _Helper()
    threads = [lib.get_num_threads() for lib in blas_libs]
    for lib in blas_libs:
        lib.set_num_threads(1)
    try:
        return _helper.matmul(lhs, rhs)
    finally:
        for lib, count in zip(blas_libs, threads, strict=True):
            lib.set_num_threads(count)
