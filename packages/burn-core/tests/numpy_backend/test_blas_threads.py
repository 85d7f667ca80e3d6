"""Small matrix products run on one BLAS thread, large ones on the configured count; the count
is restored after each call and the products equal numpy's. Products OpenBLAS runs on one
thread by itself are not pinned."""

from __future__ import annotations

import numpy as np
import pytest

from burn.backends.numpy import NumpyBackend, blas

B = NumpyBackend()


class FakeLib:
    """A threadpoolctl lib controller that records the thread count each product ran with."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.sets: list[int] = []
        self.seen: list[int] = []  # the thread count of each product

    def get_num_threads(self) -> int:
        return self.threads

    def set_num_threads(self, n: int) -> None:
        self.sets.append(n)
        self.threads = n


@pytest.fixture
def lib(monkeypatch: pytest.MonkeyPatch) -> FakeLib:
    fake = FakeLib(2)
    monkeypatch.setattr(blas, "_libs", [fake])
    original = np.matmul

    def spy(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        fake.seen.append(fake.threads)
        return original(a, b)

    monkeypatch.setattr(blas.np, "matmul", spy)
    return fake


@pytest.mark.parametrize(("lhs", "rhs", "threads"), [
    ((64, 784), (784, 256), 1),  # 12.8M multiply-adds: one thread
    ((4, 64, 32), (32, 64), 1),  # batched, broadcast rhs
    ((1024, 512), (512, 128), 2),  # 67M: the configured two
    ((2, 1024, 256), (2, 256, 64), 2),  # batched, 33.5M
])
def test_threads_follow_the_product_size(lib: FakeLib, lhs: tuple, rhs: tuple,
                                         threads: int) -> None:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(lhs).astype(np.float32), rng.standard_normal(rhs).astype(np.float32)
    out = B.float_matmul(a, b)
    ref = np.asarray(np.einsum("...ij,...jk->...ik", a, b))
    assert out.shape == ref.shape and out.dtype == np.float32
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-3)
    assert lib.seen == [threads]
    assert lib.threads == 2  # restored
    assert lib.sets == ([1, 2] if threads == 1 else [])


@pytest.mark.parametrize(("lhs", "rhs", "pinned"), [
    ((64, 64), (64, 64), False),  # gemm of 2**18 multiply-adds: OpenBLAS's own one thread
    ((64, 64), (64, 3), False),
    ((4, 8, 16), (16, 8), False),  # batched
    ((2, 16, 64), (2, 64, 32), False),
    ((64, 65), (65, 64), True),  # past 2**18
    ((1, 64), (64, 128), False),  # gemv below 9216
    ((1, 96), (96, 96), True),  # gemv of 9216
    ((96, 96), (96, 1), True),
    ((128, 8), (8, 128), True),  # square: numpy may call syrk, which threads from 100
])
def test_products_openblas_runs_on_one_thread_are_not_pinned(
        lib: FakeLib, lhs: tuple, rhs: tuple, pinned: bool) -> None:
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(lhs), rng.standard_normal(rhs)
    out = B.float_matmul(a, b)
    ref = np.einsum("...ij,...jk->...ik", a, b)
    assert out.shape == ref.shape and out.dtype == np.float64
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
    assert blas.one_thread(a, b) is not pinned
    assert lib.sets == ([1, 2] if pinned else []) and lib.threads == 2


def test_square_product_of_a_matrix_and_its_transpose_equals_numpy() -> None:
    a = np.random.default_rng(3).standard_normal((40, 7)).astype(np.float32)
    out = B.float_matmul(a, a.T)  # numpy's syrk path: one buffer, transposed
    assert out.shape == (40, 40) and out.dtype == np.float32
    wide = a.astype(np.float64)
    np.testing.assert_allclose(out, wide @ wide.T, rtol=1e-5, atol=1e-5)


def test_single_threaded_pool_is_left_alone(lib: FakeLib) -> None:
    lib.threads = 1
    B.float_matmul(np.ones((3, 4), np.float32), np.ones((4, 5), np.float32))
    assert lib.sets == [] and lib.seen == [1]


def test_count_is_restored_when_the_product_fails(lib: FakeLib) -> None:
    with pytest.raises(ValueError):
        blas.matmul(np.ones((600, 400), np.float32), np.ones((500, 6), np.float32))
    assert lib.threads == 2 and lib.sets == [1, 2]


def test_finds_numpys_openblas() -> None:
    libs = blas._openblas()
    assert all(lib.internal_api == "openblas" for lib in libs)
    assert all(lib.get_num_threads() >= 1 for lib in libs)


@pytest.mark.parametrize(("lhs", "rhs", "transpose"), [
    ((4, 5, 6), (6, 3), False),  # one [20, 6] @ [6, 3] product
    ((2, 3, 5, 6), (6, 7), False),
    ((4, 6, 5), (6, 3), True),  # non-contiguous lhs: numpy's batched product
    ((0, 5, 6), (6, 3), False),  # empty batch
    ((4, 5, 0), (0, 3), False),  # empty inner dim: zeros
    ((4, 0, 6), (6, 3), False),
])
def test_batched_lhs_times_matrix_equals_numpy(lhs: tuple, rhs: tuple, transpose: bool) -> None:
    rng = np.random.default_rng(2)
    a = rng.standard_normal(lhs).astype(np.float32)
    if transpose:
        a = a.swapaxes(-1, -2)
    b = rng.standard_normal(rhs).astype(np.float32)
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    out = B.float_matmul(a, b)
    assert out.shape == expected.shape and out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
