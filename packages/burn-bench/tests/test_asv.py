"""The asv benchmark module (benchmarks/bench_ops.py at the repository root): one class per op
bench of benchmarks.toml's "asv" profile, runnable, with skips for what cannot run here."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from burn_bench.ops import BUILDERS

ROOT = Path(__file__).resolve().parents[3]


def _module(name: str = "bench_ops") -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_one_parametrised_class_per_bench() -> None:
    module = _module()
    classes = {getattr(module, n).bench: getattr(module, n) for n in dir(module)
               if n.startswith("Time") and issubclass(getattr(module, n), module._OpBench)}
    assert sorted(classes) == sorted(b for b in module.PROFILE.benches if b in BUILDERS)
    for cls in classes.values():
        assert cls.param_names == ("backend", "dtype", "candidate")
        assert cls.params[2][0] == "burn" and callable(cls.time_op)


def test_setup_runs_or_skips() -> None:
    module = _module()
    bench = module.TimeMatmul()
    bench.setup("numpy", "float32", "numpy")
    out = bench.time_op("numpy", "float32", "numpy")
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    with pytest.raises(NotImplementedError, match="cuda"):
        bench.setup("cuda", "float32", "burn")
    with pytest.raises(NotImplementedError, match="no numpy reference"):
        module.TimeSoftmax().setup("numpy", "float32", "numpy")


def test_train_step_bench_trains() -> None:
    bench = _module().TimeTrainStep()
    assert bench.params[0] == ["lenet", "mlp", "transformer-encoder"]
    bench.setup("mlp", "burn")
    try:
        first, second = bench.time_step("mlp", "burn"), bench.time_step("mlp", "burn")
    finally:
        bench.teardown("mlp", "burn")
    assert isinstance(first, float) and second < first


def test_compile_tracks_read_the_suites_rows() -> None:
    """One asv parameter per backend of the "compile" profile and case; the tracked values are
    the rows' burn median and compile_s, rows not measured are skipped."""
    module = _module("bench_compile")
    bench = module.TrackCompile()
    assert bench.params == (module.PROFILE.backends, ["cold", "warm", "edit"])
    assert "cpu+fusion" in module.PROFILE.backends and bench.unit == "seconds"
    ok = {"status": "ok", "reason": None, "compile_s": 0.25,
          "times": {"burn": {"min": 1.0, "median": 1.5, "max": 2.0}}}
    rows = {"cpu warm": ok, "cuda warm": {**ok, "status": "unavailable", "reason": "no GPU"}}
    bench.setup(rows, "cpu", "warm")
    assert bench.track_to_first_step(rows, "cpu", "warm") == 1.5
    assert bench.track_compile(rows, "cpu", "warm") == 0.25
    with pytest.raises(NotImplementedError, match="no GPU"):
        bench.setup(rows, "cuda", "warm")
