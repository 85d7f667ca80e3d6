"""burn-bench's training steps and timing report (behaviour only, nothing timed)."""

from __future__ import annotations

import math

import pytest

from burn_bench.timing import Candidate, measure_interleaved, report
from burn_bench.training import WORKLOADS, burn_step_fn, main, torch_step_fn


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_steps_train_both_models(name: str) -> None:
    """Both steps of every workload run and lower the loss of their fixed batch, from the same
    starting loss scale (log of the class count for a fresh classifier)."""
    work = WORKLOADS[name]
    for make in (burn_step_fn, torch_step_fn):
        step = make(work)
        first = step()
        assert isinstance(first, float)
        assert abs(first - math.log(work.classes)) < 1.5
        for _ in range(4):
            last = step()
        assert last < first


def test_report_lists_min_median_max_and_ratio() -> None:
    calls = {"a": 0, "b": 0}

    def count(key: str) -> None:
        calls[key] += 1

    results = measure_interleaved([Candidate("a", lambda: count("a")),
                                   Candidate("b", lambda: count("b"), vs="a")],
                                  min_time=0.001, rounds=3)
    assert [r.name for r in results] == ["a", "b"]
    for r in results:
        assert r.seconds <= r.median <= r.worst
    assert calls["a"] > 3 and calls["b"] > 3
    text = report("t", results)
    assert "min" in text.splitlines()[1] and "median" in text.splitlines()[1]
    assert f"{results[1].seconds / results[0].seconds:.2f}x" in text.splitlines()[3]


def test_rounds_rotate_which_candidate_runs_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each round starts one candidate further on, so none always follows the same other."""
    import burn_bench.timing as timing

    order: list[str] = []
    monkeypatch.setattr(timing, "_calibrate", lambda fn, min_time: 1)
    monkeypatch.setattr(timing, "_batch_mean", lambda fn, number: fn() or 1.0)
    measure_interleaved([Candidate(name, lambda name=name: order.append(name))
                         for name in "abc"], rounds=4)
    assert order == list("abc" "bca" "cab" "abc")


def test_steps_run_on_the_backends_asked_for(capsys: pytest.CaptureFixture[str]) -> None:
    """`--backends` picks the training steps' devices (each under autodiff once), in place of
    the CPU backends."""
    main(["mlp", "--threads", "1", "--backends", "numpy+autodiff"])
    text = capsys.readouterr().out
    assert "burn numpy+autodiff step" in text
    assert "torch eager step" in text
    assert "burn cpu+autodiff step" not in text
    assert "autodiff+autodiff" not in text
