"""burn-bench's training steps and timing report (behaviour only, nothing timed)."""

from __future__ import annotations

import math

import pytest

from burn_bench.timing import Candidate, measure_interleaved, report
from burn_bench.training import (
    CPU_WORKLOADS,
    LARGE_ENCODER,
    PARTS,
    WORKLOADS,
    burn_parts_fn,
    burn_step_fn,
    main,
    measure,
    parts_report,
    torch_step_fn,
)


@pytest.mark.parametrize("name", CPU_WORKLOADS)
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


def test_steps_run_on_the_backends_asked_for(capfd: pytest.CaptureFixture[str]) -> None:
    """`--backends` picks the training steps' devices (each under autodiff once), in place of
    the CPU backends. (The report may come from a child at 1 thread, writing to this process's
    stdout: captured at the file descriptor.)"""
    main(["mlp", "--threads", "1", "--backends", "numpy+autodiff"])
    text = capfd.readouterr().out
    assert "burn numpy+autodiff step" in text
    assert "torch eager step" in text
    assert "burn cpu+autodiff step" not in text
    assert "autodiff+autodiff" not in text


def test_large_encoder_is_the_gpu_target_model_in_both_libraries() -> None:
    """The GPU workload (not trained here: seconds a step on a CPU) builds burn's and torch's
    encoder of the same size: 6 layers of d_model 512, 8 heads, d_ff 2048 (burn keeps q, k and
    v projections apart where torch packs them: equal parameter totals)."""
    import numpy as np

    import burn

    work = WORKLOADS["transformer-encoder-large"]
    assert not work.cpu_sized and "transformer-encoder-large" not in CPU_WORKLOADS
    assert work.input_shape == (32, 256, LARGE_ENCODER.d_model)
    ours = [int(np.prod(p.shape)) for _, p in
            work.burn_model(burn.Device("numpy")).named_parameters()]
    reference = work.torch_model()
    layer = reference.encoder.layers[0]
    assert len(reference.encoder.layers) == 6 and layer.self_attn.num_heads == 8
    assert (layer.linear1.in_features, layer.linear1.out_features) == (512, 2048)
    assert sum(ours) == sum(p.numel() for p in reference.parameters()) == 18_919_434


def test_each_backend_is_compared_with_torch_on_its_kind_of_device(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A GPU backend's step is timed against torch on CUDA, a host backend's against torch on
    the CPU: one torch candidate per torch device, each burn row's ratio against its own."""
    import burn_bench.training as training

    made: list[str] = []

    def fake_torch_step(work: object, device: str = "cpu") -> object:
        made.append(device)
        return lambda: 0.0

    monkeypatch.setattr(training, "torch_step_fn", fake_torch_step)
    monkeypatch.setattr(training, "burn_step_fn", lambda work, spec: lambda: 0.0)
    monkeypatch.setattr("burn_bench.ops.torch_device",
                        lambda torch, spec: "cuda" if spec.startswith("cuda") else "cpu")
    monkeypatch.setattr("burn_bench.suites.unavailable_reason", lambda spec: None)
    seen: dict[str, str | None] = {}

    def fake_measure(candidates: list[Candidate], **kwargs: object) -> list[object]:
        seen.update({c.name: c.vs for c in candidates})
        return []

    monkeypatch.setattr("burn_bench.timing.measure_interleaved", fake_measure)
    monkeypatch.setattr("burn_bench.timing.report", lambda title, results: title)
    measure("mlp", 1, ["numpy", "cuda", "cuda+fusion"])
    assert made == ["cpu", "cuda"]
    assert seen == {"torch eager step": None, "torch eager step on cuda": None,
                    "burn numpy+autodiff step": "torch eager step",
                    "burn cuda+autodiff step": "torch eager step on cuda",
                    "burn cuda+fusion+autodiff step": "torch eager step on cuda"}


def test_backends_this_machine_lacks_are_listed_not_raised(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A backend that cannot be made here (cuda without a GPU or CuPy) is listed under the
    table with its reason; the other rows still run."""
    import burn_bench.training as training

    monkeypatch.setattr(training, "torch_step_fn", lambda work, device="cpu": lambda: 0.0)
    monkeypatch.setattr(training, "burn_step_fn", lambda work, spec: lambda: 0.0)
    monkeypatch.setattr("burn_bench.suites.unavailable_reason",
                        lambda spec: "no GPU here" if spec.startswith("cuda") else None)
    seen: list[str] = []

    def fake_measure(candidates: list[Candidate], **kwargs: object) -> list[object]:
        seen.extend(c.name for c in candidates)
        return []

    monkeypatch.setattr("burn_bench.timing.measure_interleaved", fake_measure)
    monkeypatch.setattr("burn_bench.timing.report", lambda title, results: title)
    text = measure("mlp", 1, ["numpy", "cuda+fusion"])
    assert seen == ["torch eager step", "burn numpy+autodiff step"]
    assert text.splitlines()[-1] == "burn cuda+fusion: unavailable (no GPU here)"


def test_the_command_line_prints_a_report_as_text(capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A report's brackets (an install hint such as burn-cube[cuda]) print as written."""
    from burn_bench import cli

    monkeypatch.setattr(cli, "run_grid", lambda *a, **k: {
        "reports": {"mlp-train-step": "burn cuda: unavailable (pip install 'burn-cube[cuda]')"},
        "rows": []})
    cli.main(["run", "--benches", "mlp-train-step", "--no-save"])
    assert "pip install 'burn-cube[cuda]'" in capsys.readouterr().out


def test_a_step_timed_in_parts_returns_each_part() -> None:
    """A step timed in parts returns the seconds of each of `PARTS`, every one of them
    taking time (the forward and backward run kernels, the update one, `item()` a read)."""
    parts = burn_parts_fn(WORKLOADS["mlp"], "cpu")
    for _ in range(3):
        seconds = parts()
        assert len(seconds) == len(PARTS) and all(s > 0 for s in seconds)


def test_parts_report_rows_fusion_counters_and_missing_backends(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One row per backend with a min / median cell per part and for the whole step, the
    fusion device's counters per step (its MLP step runs every op at once in steady state: 20
    ops, no flush), and a backend this machine lacks listed with its reason."""
    from burn_bench import suites

    real = suites.unavailable_reason
    monkeypatch.setattr(suites, "unavailable_reason",
                        lambda spec: "no GPU here" if spec.startswith("cuda") else real(spec))
    text = parts_report("mlp", 1, ["cpu", "cpu+fusion", "cuda"], steps=4)
    lines = text.splitlines()
    assert lines[0].startswith("## MLP 784-256-10") and "min / median of 4 steps" in lines[0]
    assert lines[1].split() == ["backend", *PARTS, "step"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:4]}
    assert set(rows) == {"cpu+autodiff", "cpu+fusion+autodiff"}
    for cells in rows.values():
        numbers = [float(c) for c in cells if c != "/"]
        assert len(numbers) == 2 * (len(PARTS) + 1)
        mins, medians = numbers[0::2], numbers[1::2]
        assert all(0 < low <= mid for low, mid in zip(mins, medians, strict=True))
        assert mins[-1] >= sum(mins[:-1]) * 0.999  # a step's parts add up to it
    fusion = lines[4]
    assert fusion.startswith("fusion per step, cpu+fusion:")
    counts = [float(w) for w in fusion.split(":")[1].replace(",", " ").split()
              if w.replace(".", "").isdigit()]
    assert counts[1] > 0 and counts[3] > 0  # ops run at once, kernels launched
    assert lines[-1] == "burn cuda: unavailable (no GPU here)"


def test_the_command_line_prints_parts_without_torch(capfd: pytest.CaptureFixture[str]
                                                     ) -> None:
    main(["mlp", "--threads", "1", "--backends", "cpu", "--parts", "--steps", "2"])
    text = capfd.readouterr().out  # (from a child at 1 thread, as above)
    assert "step parts" in text and "cpu+autodiff" in text and "torch" not in text
