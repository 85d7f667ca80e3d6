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
from burn_cube.autotune import MAX_QUEUED, MAX_ROUNDS, QUEUED, QUEUED_SECONDS, Autotuner, bucket


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
    back to back and waited for once: a candidate whose device work is long loses to one
    whose host work is shorter than that work."""
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
    queued_round = [*["device_bound"] * QUEUED, "sync", *["host_bound"] * QUEUED, "sync"]
    assert events == ["device_bound", "host_bound", "sync", *queued_round * 2]


def test_tuner_queues_more_runs_of_short_candidates(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A candidate whose runs take less than `QUEUED_SECONDS` / `QUEUED` is timed over more
    queued runs from its second timing on (as many as fill `QUEUED_SECONDS`, at most
    `MAX_QUEUED`), so one sync's latency weighs less on each run; a long one keeps `QUEUED`.
    The tuner reads a clock that only the sync moves, by the queued runs' seconds (a real
    sleep of 0.1 ms a run timed 0.7 ms or more on a loaded machine)."""
    seconds = {"short": QUEUED_SECONDS / 16, "long": 2 * QUEUED_SECONDS}
    per_sync: dict[str, list[int]] = {name: [] for name in seconds}
    pending: list[str] = []
    clock = [0.0]
    # (the module, not the `burn_cube.autotune` decorator the package exports by its name)
    monkeypatch.setattr(sys.modules["burn_cube.autotune"], "time",
                        SimpleNamespace(perf_counter=lambda: clock[0]))

    def sync() -> None:
        for name in seconds:
            per_sync[name].append(pending.count(name))
        clock[0] += sum(seconds[name] for name in pending)
        pending.clear()

    tuner = Autotuner(tmp_path / "tune.json", repeats=3, seconds=0.0)
    assert tuner.tune("k", "dev", 10, ["short", "long"], pending.append, sync) == "short"
    short = [n for n in per_sync["short"] if n]
    assert short == [1, QUEUED, 16, 16]  # the warm-up, the first timing, then 2 ms of runs
    assert 16 <= MAX_QUEUED
    assert [n for n in per_sync["long"] if n] == [1, QUEUED, QUEUED, QUEUED]


def test_autotune_decorator(rt: bc.Runtime) -> None:
    @bc.autotune(candidates=[{"cube_dim": 64}, {"cube_dim": 256}], size=lambda x, out: x.size)
    def gelu(runtime: bc.Runtime, x, out, cube_dim: int) -> None:
        gelu_tanh.launch(runtime, -(-x.size // cube_dim), cube_dim, x, out)

    x = np.linspace(-3, 3, 5000, dtype=np.float32)
    out = rt.allocate(x.shape, bc.f32)
    gelu(rt, rt.upload(x), out)
    np.testing.assert_allclose(out.numpy(), 0.5 * x * (1 + np.tanh(
        0.7978845608 * (x + 0.044715 * x**3))), rtol=1e-5, atol=1e-6)
