"""Devices under threads: DataLoader-style thread workers recording and reading on one fusion
device (its stream), or on its cube device (the runtime's encoder and buffer pool), at once get
the values of each one's own ops."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator

import numpy as np
import pytest
import torch
from fusion_testing import DEVICES

import burn

pytestmark = [pytest.mark.parametrize("base", DEVICES),
              pytest.mark.parametrize("fused", [True, False], ids=["fusion", "plain"]),
              pytest.mark.usefixtures("empty_stream")]

THREADS = 6
ROUNDS = 25


@pytest.fixture
def switch_often() -> Iterator[None]:
    """Threads switch every microsecond, so a race shows within a few rounds."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


def _work(x: torch.Tensor | burn.Tensor, k: int) -> torch.Tensor | burn.Tensor:
    """A chain whose result depends on `k` (a mix of elementwise ops and row sums)."""
    for _ in range(6):
        x = (x * 0.5 + float(k)).tanh() * 2.0 - 0.25
    return x.sum(dim=-1, keepdim=True) + x


def test_threads_share_a_device(base: str, fused: bool, switch_often: None) -> None:
    device = f"{base}+fusion" if fused else base
    rng = np.random.default_rng(0)
    data = [rng.standard_normal((8, 16 + k)).astype(np.float32) for k in range(THREADS)]
    failures: list[str] = []

    def worker(k: int) -> None:
        want = _work(torch.from_numpy(data[k]), k).numpy()
        try:
            for _ in range(ROUNDS):
                got = _work(burn.tensor(data[k], device=device), k).to_numpy()
                assert got.shape == want.shape and got.dtype == want.dtype
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        except Exception as exc:  # noqa: BLE001 -- reported by the test's own thread
            failures.append(f"thread {k}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, "\n".join(failures[:3])


#: Threads using one device for the first time at once: each builds or finds its backend, runs
#: a chain and a product, and the process prints how many backends they got and what failed.
FIRST_USE = """
import sys, threading, numpy as np, burn
sys.setswitchinterval(1e-6)
spec, count = sys.argv[1], 8
barrier = threading.Barrier(count)
backends, failures = [], []
def work(k):
    x, w = np.full((3, 4), k - 3.5, np.float32), np.ones((4, 2), np.float32)
    barrier.wait()
    try:
        device = burn.Device(spec)
        backends.append(device.backend)
        got = ((burn.tensor(x, device=device) * 2.0 + 1.0).relu()
               @ burn.tensor(w, device=device)).to_numpy()
        if not np.array_equal(got, np.maximum(x * 2.0 + 1.0, 0.0) @ w):
            failures.append(k)
    except Exception as exc:
        failures.append(repr(exc))
threads = [threading.Thread(target=work, args=(k,)) for k in range(count)]
[t.start() for t in threads]
[t.join() for t in threads]
print(len({id(b) for b in backends}), failures)
"""


def test_first_use_from_threads_shares_one_backend(base: str, fused: bool) -> None:
    """Eight threads using a device for the first time at once share one backend (under
    fusion one stream: two built at once left a tensor recorded on one to be flushed by the
    other, and reading it failed) and get numpy's values."""
    spec = f"{base}+fusion+autodiff" if fused else f"{base}+autodiff"
    proc = subprocess.run([sys.executable, "-c", FIRST_USE, spec], capture_output=True,
                          text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["1", "[]"]
