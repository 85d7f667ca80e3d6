"""`blas_pair`: mid-sized cpu BLAS products split over the calling thread and a helper,
against numpy and torch; the thread counts of the BLAS libraries restored; the calling thread
multiplying both halves when the helper does not take its half."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burn
from burn.backends.cube import blas_pair
from burn.backends.cube import matmul as mm
from burn.backends.numpy import blas
from burn.dtype import DType


class FakeBlas:
    """A threadpoolctl controller stand-in: records the thread counts set."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.history: list[int] = []

    def get_num_threads(self) -> int:
        return self.threads

    def set_num_threads(self, count: int) -> None:
        self.threads = count
        self.history.append(count)


def operands(m: int, k: int, n: int, dtype: type, transposed: bool
             ) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    lhs = rng.standard_normal((k, m) if transposed else (m, k)).astype(dtype)
    return (lhs.T if transposed else lhs), rng.standard_normal((k, n)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("transposed", [False, True])
def test_pair_matmul_equals_numpy(dtype: type, transposed: bool) -> None:
    lhs, rhs = operands(65, 300, 257, dtype, transposed)  # odd rows: halves of 32 and 33
    lhs[3, 5], lhs[40, 7] = np.nan, np.inf
    fake = FakeBlas(2)
    out = blas_pair.pair_matmul(lhs, rhs, [fake])
    want = np.matmul(lhs, rhs)
    assert out.shape == want.shape and out.dtype == want.dtype
    tol = 1e-4 if dtype is np.float32 else 1e-11  # sums of 300 products of ~1
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)
    assert np.isnan(out[3]).all() and np.isnan(want[3]).all()
    assert fake.history == [1, 2] and fake.threads == 2  # one BLAS thread per half, restored


def test_caller_takes_the_half_the_helper_did_not_claim() -> None:
    helper = blas_pair._Helper.__new__(blas_pair._Helper)  # no thread: nobody serves
    helper.lock, helper.offered = blas_pair.threading.Lock(), None
    helper.wake = blas_pair.threading.Semaphore(0)
    lhs, rhs = operands(40, 50, 30, np.float32, False)
    out = helper.matmul(lhs, rhs)
    assert out.shape == (40, 30) and out.dtype == np.float32
    np.testing.assert_allclose(out, lhs @ rhs, rtol=1e-4, atol=1e-4)
    assert helper.offered is not None and helper.offered.claimed  # taken back by the caller


def test_applies() -> None:
    big = blas_pair.PAIR_MATMUL
    assert blas_pair.applies(np.empty((big // 64, 8), np.float32), np.empty((8, 8), np.float32))
    assert not blas_pair.applies(np.empty((blas_pair.PAIR_ROWS - 1, big), np.float32),
                                 np.empty((big, 1), np.float32))
    assert not blas_pair.applies(np.empty((2, 64, 64)), np.empty((64, 64)))
    assert not blas_pair.applies(np.empty((64, 64)), np.empty((64, 64)))  # too small


@pytest.mark.parametrize("threads", [1, 2])
def test_cpu_matmul_pairs_only_where_blas_may_thread(monkeypatch: pytest.MonkeyPatch,
                                                     threads: int) -> None:
    fake = FakeBlas(threads)
    monkeypatch.setattr(blas, "_openblas", lambda: [fake])
    calls: list[tuple[int, ...]] = []
    pair = blas_pair.pair_matmul

    def counted(lhs: np.ndarray, rhs: np.ndarray, libs: list[FakeBlas]) -> np.ndarray:
        calls.append(lhs.shape)
        return pair(lhs, rhs, libs)

    monkeypatch.setattr(blas_pair, "pair_matmul", counted)
    device = burn.Device("cpu")
    backend = device.backend
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 256, 128)).astype(np.float32)  # batched rows: one product
    w = rng.standard_normal((128, 512)).astype(np.float32)  # 1024 x 128 x 512: 2**26
    small = rng.standard_normal((64, 32)).astype(np.float32)
    # the BLAS strategy itself (the autotuner may pick the runtime's own kernel for these)
    out = mm.matmul(backend, backend.upload(x), backend.upload(w), "blas")
    mm.matmul(backend, backend.upload(small), backend.upload(small.T.copy()), "blas")
    assert tuple(out.shape) == (4, 256, 512) and out.dtype is DType.float32
    want = torch.from_numpy(x) @ torch.from_numpy(w)
    np.testing.assert_allclose(out.array.handle, want.numpy(), rtol=1e-4, atol=1e-4)
    assert calls == ([(1024, 128)] if threads > 1 else [])
    assert fake.threads == threads
    assert mm.CPU_SMALL_MATMUL > 1024 * 128 * 512  # the product is below the threaded size
