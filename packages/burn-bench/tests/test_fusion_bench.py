"""The fusion suite's count of backend calls per training step."""

from __future__ import annotations

import numpy as np
import pytest

import burn
from burn_bench.fusion import BACK_TO_BACK, cube_calls


def test_cube_calls_counts_the_ops_a_step_runs_and_removes_its_counters() -> None:
    if not any(b.name == "cpu" and b.available for b in burn.available_backends()):
        pytest.skip("the cpu backend is not available here")
    cube = burn.Device("cpu").backend
    x = burn.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device="cpu")
    fused = burn.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device="cpu+fusion")

    def step() -> None:
        ((x + x) * 2.0).swap_dims(0, 1).to_numpy()
        (fused + 1.0).matmul(fused.swap_dims(0, 1)).to_numpy()  # through the fusion layer

    calls = cube_calls(step, cube)
    assert calls["float_add"] == 1 and calls["float_mul_scalar"] == 1
    assert calls["float_swap_dims"] == 2 and calls["float_matmul"] == 1
    assert calls["float_into_data"] == 2
    assert not [name for name in vars(cube) if name.startswith("float_")]
    assert cube_calls(lambda: None, cube).total() == 0


@pytest.mark.parametrize("base", ["cpu", "wgpu"])
def test_gelu_report_runs_on_the_base_device_against_torch_there(
        base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The GELU-chain table of a base device: burn unfused and fused on it, torch's chain,
    F.gelu and copies on torch's device of that kind (the CPU here: no CUDA), NumPy's chain
    only on the cpu; the summary gives the fused chain's share of the copy's bandwidth."""
    import burn_bench.timing as timing
    from burn_bench.fusion import gelu_report

    if not any(b.name == base and b.available for b in burn.available_backends()):
        pytest.fail(f"the {base} backend is not available here")
    quick = timing.measure_interleaved
    monkeypatch.setattr(timing, "measure_interleaved",
                        lambda candidates, **kw: quick(candidates, min_time=0.001, rounds=1))
    text = gelu_report(1000, 1, base)
    assert f"1000 x float32, {base} (torch on cpu)" in text
    for row in ("torch copy_", "torch F.gelu(tanh)", "torch eager chain", f"burn {base} chain",
                f"burn {base}+fusion chain"):
        assert row in text
    assert ("numpy chain" in text) == (base == "cpu")
    # a GPU device also queues calls before one wait (burn.flush between them)
    queued = (f"torch copy_ (into a kept tensor), {BACK_TO_BACK} queued",
              f"burn {base}+fusion chain, {BACK_TO_BACK} queued")
    assert all((row in text) == (base != "cpu") for row in queued)
    summary = text.splitlines()[-1]
    assert "of its bandwidth (medians)" in summary
    assert ("calls queued before one wait" in summary) == (base != "cpu")


def test_a_candidate_of_several_calls_is_timed_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """`Candidate.calls`: the batch means are divided by the calls one `fn` call makes."""
    import burn_bench.timing as timing

    clock = [0.0]
    monkeypatch.setattr(timing.time, "perf_counter", lambda: clock[0])

    def tick(seconds: float) -> None:
        clock[0] += seconds

    one, four = timing.measure_interleaved(
        [timing.Candidate("one", lambda: tick(1.0)),
         timing.Candidate("four", lambda: tick(4.0), vs="one", calls=4)],
        min_time=0.001, rounds=3)
    assert (one.seconds, one.median, one.worst) == (1.0, 1.0, 1.0)
    assert (four.seconds, four.median, four.worst) == (1.0, 1.0, 1.0)
    assert four.ratio_to(one) == 1.0
