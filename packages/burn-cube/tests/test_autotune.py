"""Autotuning picks a candidate, persists it, and reuses it."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from test_kernels import gelu_tanh

import burn_cube as bc
from burn_cube.autotune import (
    MAX_QUEUED,
    MAX_ROUNDS,
    PRUNE_AFTER,
    PRUNE_RATIO,
    PRUNE_SECONDS,
    QUEUED,
    QUEUED_SECONDS,
    Autotuner,
    bucket,
)


def test_bucket() -> None:
    assert [bucket(n) for n in (0, 1, 2, 3, 1000, 1024, 1025)] == [1, 1, 2, 4, 1024, 1024, 2048]


def test_tuner_persists_and_reuses(tmp_path: Path) -> None:
    calls: list[int] = []
    tuner = Autotuner(tmp_path / "tune.json", repeats=1, seconds=0.0)
    best = tuner.tune("k", "dev", 1000, [1, 2], calls.append)
    assert best in (1, 2) and len(calls) == 4
    saved = json.loads((tmp_path / "tune.json").read_text())
    assert saved == {"k|dev|1024": best}
    again = Autotuner(tmp_path / "tune.json")
    assert again.tune("k", "dev", 900, [1, 2], calls.append) == best and len(calls) == 4


def test_tuner_rounds_go_on_for_its_seconds(tmp_path: Path) -> None:
    """Quick candidates are timed in `MAX_ROUNDS` rounds (the seconds are not reached), slow
    ones in `repeats` (the seconds are past after them)."""
    quick: list[int] = []
    Autotuner(tmp_path / "a.json", repeats=3, seconds=10.0).tune("q", "dev", 8, [1, 2],
                                                                 quick.append)
    assert len(quick) == 2 + 2 * MAX_ROUNDS
    slow: list[int] = []

    def sleepy(candidate: int) -> None:
        slow.append(candidate)
        time.sleep(0.002)

    Autotuner(tmp_path / "b.json", repeats=3, seconds=0.001).tune("s", "dev", 8, [1, 2], sleepy)
    assert len(slow) == 2 + 2 * 3


def test_tuner_with_sync_times_queued_runs(tmp_path: Path) -> None:
    """With `sync`, every candidate warms up, then rounds time each candidate's runs queued
    back to back and waited for once (one run the first round, and one a timing for runs this
    long): a candidate whose device work is long loses to one whose host work is shorter than
    that work."""
    queued: list[float] = []
    events: list[str] = []

    def run(candidate: str) -> None:
        events.append(candidate)
        if candidate == "host_bound":
            time.sleep(0.005)  # host work, nothing queued
        else:
            queued.append(0.02)  # device work the sync waits for

    def sync() -> None:
        events.append("sync")
        time.sleep(sum(queued))
        queued.clear()

    tuner = Autotuner(tmp_path / "tune.json", repeats=2)
    assert tuner.tune("k", "dev", 10, ["device_bound", "host_bound"], run, sync) == "host_bound"
    # (runs of `QUEUED_SECONDS` or more: one a timing; the device-bound one, 4x slower, drops
    # out after round `PRUNE_AFTER`, the last)
    timed_round = ["device_bound", "sync", "host_bound", "sync"]
    assert events == ["device_bound", "host_bound", "sync", *timed_round * 2]


class FakeDevice:
    """Candidates whose runs take the given seconds of a clock only `sync` moves (the tuner
    reads it: a real sleep timed 0.7 ms or more a run on a loaded machine); the runs queued
    per sync, by candidate."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, seconds: dict[str, float]) -> None:
        self.seconds = seconds
        self.per_sync: dict[str, list[int]] = {name: [] for name in seconds}
        self.pending: list[str] = []
        self.clock = 0.0
        # (the module, not the `burn_cube.autotune` decorator the package exports by its name)
        monkeypatch.setattr(sys.modules["burn_cube.autotune"], "time",
                            SimpleNamespace(perf_counter=lambda: self.clock))

    def sync(self) -> None:
        for name in self.seconds:
            self.per_sync[name].append(self.pending.count(name))
        self.clock += sum(self.seconds[name] for name in self.pending)
        self.pending.clear()

    def runs(self, name: str) -> list[int]:
        """The runs of `name` per sync it had runs in."""
        return [n for n in self.per_sync[name] if n]


def test_tuner_queues_more_runs_of_short_candidates(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A candidate whose runs take less than `QUEUED_SECONDS` / `QUEUED` is timed over more
    queued runs from its second timing on (as many as fill `QUEUED_SECONDS`, at most
    `MAX_QUEUED`), so one sync's latency weighs less on each run; one of `QUEUED_SECONDS`
    or more over one run; the ones between keep `QUEUED`."""
    device = FakeDevice(monkeypatch, {"short": QUEUED_SECONDS / 16, "middle": QUEUED_SECONDS / 2.5,
                                      "long": 1.5 * QUEUED_SECONDS, "longer": 2 * QUEUED_SECONDS})
    # (under `PRUNE_SECONDS`, or within `PRUNE_RATIO` of each other: none drops out)
    assert QUEUED_SECONDS / 2.5 < PRUNE_SECONDS and 2 / 1.5 < PRUNE_RATIO
    assert 16 <= MAX_QUEUED
    tuner = Autotuner(tmp_path / "tune.json", repeats=3, seconds=0.0)
    assert tuner.tune("k", "dev", 10, ["short", "middle"], device.pending.append,
                      device.sync) == "short"
    # the warm-up, the first timing, then the queued runs of rounds 2 and 3
    assert device.runs("short") == [1, 1, 16, 16]
    assert device.runs("middle") == [1, 1, QUEUED, QUEUED]
    assert tuner.tune("l", "dev", 10, ["long", "longer"], device.pending.append,
                      device.sync) == "long"
    assert device.runs("long") == device.runs("longer") == [1, 1, 1, 1]


def test_tuner_drops_clearly_slower_long_candidates(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """From round `PRUNE_AFTER` on a candidate of `PRUNE_SECONDS` or more a run and over
    `PRUNE_RATIO` times the best is timed no more; the rounds end once one is left. Short
    candidates race on however slower (their timings are the noisiest)."""
    slow, fast = 0.05, 0.05 / (PRUNE_RATIO + 1)
    device = FakeDevice(monkeypatch, {"slow": slow, "close": fast * 1.2, "fast": fast,
                                      "tiny": 1e-5, "tinier": 1e-6})
    tuner = Autotuner(tmp_path / "a.json", repeats=4, seconds=0.0)
    assert tuner.tune("k", "dev", 10, ["slow", "close", "fast"], device.pending.append,
                      device.sync) == "fast"
    assert PRUNE_AFTER == 2
    assert device.runs("slow") == [1, 1, 1]  # warm-up, rounds 1 and 2
    assert device.runs("close") == device.runs("fast") == [1, 1, 1, 1, 1]  # 4 rounds
    alone = Autotuner(tmp_path / "b.json", repeats=4, seconds=0.0)
    assert alone.tune("k", "dev", 10, ["slow", "fast"], device.pending.append,
                      device.sync) == "fast"
    assert device.runs("slow")[3:] == [1, 1, 1] and device.runs("fast")[5:] == [1, 1, 1]
    short = Autotuner(tmp_path / "c.json", repeats=4, seconds=0.0)
    assert short.tune("k", "dev", 10, ["tiny", "tinier"], device.pending.append,
                      device.sync) == "tinier"
    assert len(device.runs("tiny")) == 5  # warm-up and 4 rounds: neither drops out
    assert PRUNE_SECONDS > 1e-5


def test_autotune_decorator(rt: bc.Runtime) -> None:
    @bc.autotune(candidates=[{"cube_dim": 64}, {"cube_dim": 256}], size=lambda x, out: x.size)
    def gelu(runtime: bc.Runtime, x, out, cube_dim: int) -> None:
        gelu_tanh.launch(runtime, -(-x.size // cube_dim), cube_dim, x, out)

    x = np.linspace(-3, 3, 5000, dtype=np.float32)
    out = rt.allocate(x.shape, bc.f32)
    gelu(rt, rt.upload(x), out)
    np.testing.assert_allclose(out.numpy(), 0.5 * x * (1 + np.tanh(
        0.7978845608 * (x + 0.044715 * x**3))), rtol=1e-5, atol=1e-6)
