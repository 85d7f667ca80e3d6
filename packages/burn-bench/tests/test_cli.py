"""burn-bench's command line, results schema and benchmarks.toml (behaviour only, no timed
assertions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import burn
from burn_bench import config, results, runner
from burn_bench.__main__ import SUITES
from burn_bench.cli import main
from burn_bench.errors import ConfigError, ResultSchemaError, UnknownNameError
from burn_bench.runner import run_grid, run_op

ROOT = Path(__file__).resolve().parents[3]
TINY = ["--size", "4", "--rounds", "1", "--min-time", "0.0005"]


@pytest.mark.parametrize(("flag", "bad", "valid"), [
    ("--benches", "nope", "matmul"), ("--backends", "tpu", "cuda"),
    ("--backends", "numpy+turbo", "fusion"), ("--dtypes", "int3", "float32"),
    ("--compare", "jax", "torch"), ("--size", "0", "must be > 0"),
    ("--rounds", "-1", "must be > 0")])
def test_unknown_names_exit_listing_valid_ones(flag: str, bad: str, valid: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["run", flag, bad, "--no-save"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert valid in err
    assert repr(bad.split("+")[-1]) in err or bad in err


def test_bare_suite_names_run_like_before(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["unknown-suite"])
    assert "dispatch-overhead" in capsys.readouterr().err
    assert {"overhead", "mlp", "lenet", "transformer-encoder", "loader", "record", "vision",
            "dqn-step", "matmul", "unary"} <= set(SUITES)


def test_list_names_every_suite_and_missing_backends(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("matmul", "dqn-step", "compile", "bool_select", "numpy", "available", "wgpu",
                 "missing"):
        assert name in out
    fusion = next(line for line in out.splitlines() if "decorator" in line and " fusion " in line)
    assert "available" in fusion


def test_run_saves_valid_json(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    code = main(["run", "--benches", "unary,matmul", "--backends", "numpy,cuda",
                 "--dtypes", "float32", "--compare", "torch,numpy", *TINY,
                 "--json", str(target), "--results-dir", str(tmp_path / "res")])
    assert code == 0
    doc = results.load(target)
    saved = list((tmp_path / "res").glob("*/*.json"))
    assert len(saved) == 1 and results.load(saved[0]) == doc
    assert [(r["bench"], r["backend"], r["status"]) for r in doc["rows"]] == [
        ("unary", "numpy", "ok"), ("unary", "cuda", "unavailable"),
        ("matmul", "numpy", "ok"), ("matmul", "cuda", "unavailable")]
    ok = doc["rows"][0]
    assert set(ok["times"]) == {"burn", "torch", "numpy"} and set(ok["ratios"]) == {"torch",
                                                                                    "numpy"}
    burn_t, torch_t = ok["times"]["burn"], ok["times"]["torch"]
    assert burn_t["min"] <= burn_t["median"] <= burn_t["max"]
    assert ok["ratios"]["torch"] == pytest.approx(burn_t["median"] / torch_t["median"])
    assert doc["rows"][1]["reason"]


def test_a_second_run_of_a_commit_keeps_the_rows_it_does_not_measure(tmp_path: Path) -> None:
    """Runs at one commit add to its results file: a row measured again is replaced, the
    others stay (the fusion rows of one run survive a later run of other benches)."""
    res = tmp_path / "res"

    def run(benches: str, backends: str) -> list[tuple[str, str]]:
        assert main(["run", "--benches", benches, "--backends", backends, "--dtypes", "float32",
                     "--compare", "numpy", *TINY, "--results-dir", str(res)]) == 0
        (saved,) = res.glob("*/*.json")
        return sorted((r["bench"], r["backend"]) for r in results.load(saved)["rows"])

    assert run("custom-gelu", "cpu,cpu+fusion") == [("custom-gelu", "cpu"),
                                                   ("custom-gelu", "cpu+fusion")]
    assert run("unary,custom-gelu", "numpy,cpu") == [
        ("custom-gelu", "cpu"), ("custom-gelu", "cpu+fusion"), ("custom-gelu", "numpy"),
        ("unary", "cpu"), ("unary", "numpy")]


@pytest.mark.parametrize("where", ["json-directory", "json-missing-parent", "results-file"])
def test_bad_output_paths_are_refused_before_running(tmp_path: Path, where: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    option = {"json-directory": ["--json", str(tmp_path)],
              "json-missing-parent": ["--json", str(tmp_path / "no" / "out.json")],
              "results-file": ["--results-dir", str(a_file)]}[where]
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--benches", "unary", "--backends", "numpy", *TINY, *option])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert option[1] in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_failing_row_is_reported_and_others_run() -> None:
    row = run_op("conv2d", "numpy", "float32", 0, ["torch"], rounds=1, min_time=0.0005)
    assert row["status"] == "error" and row["reason"]
    doc = run_grid(["conv2d", "unary"], ["numpy"], ["float32"], 4, ["torch"], rounds=1,
                   min_time=0.0005)
    assert [r["status"] for r in doc["rows"]] == ["ok", "ok"]


def test_exit_status_says_whether_anything_was_measured(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """1 where every row is unavailable or a bench failed, 0 where the rows that could run
    ran (an unavailable backend beside them is no failure)."""
    real = runner.unavailable_reason
    monkeypatch.setattr(runner, "unavailable_reason",
                        lambda spec: "not here" if spec == "wgpu" else real(spec))
    assert main(["run", "--benches", "unary", "--backends", "wgpu", *TINY, "--no-save"]) == 1
    assert "nothing was measured" in capsys.readouterr().out
    assert main(["run", "--benches", "unary", "--backends", "numpy,wgpu", *TINY,
                 "--no-save"]) == 0

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("broken bench")

    monkeypatch.setattr(runner, "build", broken)
    assert main(["run", "--benches", "unary", "--backends", "numpy", *TINY, "--no-save"]) == 1
    assert "1 bench(es) failed" in capsys.readouterr().out


def test_compile_suite_times_fresh_processes_per_case() -> None:
    """Every case runs in new processes (numpy: no kernels to compile, so the cases differ only
    by load); a missing backend gives unavailable rows, the others still run."""
    doc = run_grid(["compile"], ["numpy+autodiff", "cuda"], ["float32"], 4, ["torch"],
                   rounds=1, min_time=0.0005)
    results.validate(doc)
    rows = doc["rows"]
    assert [(r["backend"], r["case"], r["status"]) for r in rows] == [
        ("numpy", "cold", "ok"), ("numpy", "warm", "ok"), ("numpy", "edit", "ok"),
        ("cuda", "cold", "unavailable"), ("cuda", "warm", "unavailable"),
        ("cuda", "edit", "unavailable")]
    for row in rows[:3]:
        assert set(row["times"]) == {"burn", "torch"}
        burn_t = row["times"]["burn"]
        # the process start and the imports count: far above one small step
        assert 0.05 < burn_t["min"] <= burn_t["median"] <= burn_t["max"]
        assert row["ratios"]["torch"] == pytest.approx(
            burn_t["median"] / row["times"]["torch"]["median"])
        assert row["compile_s"] is not None and row["compile_s"] >= 0
    assert [r["size"] for r in rows[:3]] == [256, 256, 384]
    assert "CuPy" in rows[3]["reason"] or rows[3]["reason"]


def test_burn_shapes_use_burns_3d_operands(monkeypatch: pytest.MonkeyPatch) -> None:
    from burn_bench import ops, runner

    monkeypatch.setitem(ops.BURN_SHAPES, "unary", (2, 3, 4))
    monkeypatch.setitem(ops.BURN_SHAPES, "matmul", (2, 3, 5, 4))
    doc = run_grid(["unary", "matmul", "softmax"], ["numpy"], ["float32"], 6, ["torch"],
                   rounds=1, min_time=0.0005, shapes="burn")
    assert doc["settings"]["shapes"] == "burn"
    assert [(r["bench"], r["shape"], r["status"]) for r in doc["rows"]] == [
        ("unary", [2, 3, 4], "ok"), ("matmul", [2, 3, 5, 4], "ok"), ("softmax", None, "ok")]
    out = runner.build("matmul", 6, "float32", burn.Device("numpy"), "burn")["burn"]()
    assert out.shape == (2, 3, 4) and out.dtype == burn.float32


def _doc() -> dict[str, object]:
    return run_grid(["binary"], ["numpy"], ["float32"], 4, ["torch"], rounds=1, min_time=0.0005)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.pop("rows"), "missing key rows"),
    (lambda d: d.update(version=99), "version 99"),
    (lambda d: d["rows"][0].update(status="fast"), "status 'fast'"),
    (lambda d: d["rows"][0]["times"]["burn"].pop("median"), "numeric min, median and max"),
    (lambda d: d["rows"][0].update(size="4"), "rows[0].size is str")])
def test_schema_mismatch_names_the_file(tmp_path: Path, edit: object, message: str) -> None:
    doc = _doc()
    edit(doc)  # type: ignore[operator]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultSchemaError, match=str(path)) as info:
        results.load(path)
    assert message in str(info.value)
    with pytest.raises(ResultSchemaError):
        results.save(doc, tmp_path / "never.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json"]  # nothing half-written


def test_not_json_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("{")
    with pytest.raises(ResultSchemaError, match="x.json"):
        results.load(path)


def test_benchmarks_toml_maps_burns_list_to_suites() -> None:
    doc = config.read(ROOT / config.FILE)
    burn_list = doc["burn"]["benches"]
    assert len(burn_list) == 18
    for name in doc["profile"]:
        config.profile(doc, name, ROOT / config.FILE)


@pytest.mark.parametrize(("text", "error", "message"), [
    ('[profile.p]\nbenches=["matmul"]\nbackends=["tpu"]\ndtypes=["float32"]\nsize=1\nrounds=1\n'
     'min_time=0.1\n', UnknownNameError, "backend 'tpu'"),
    ('[profile.p]\nbenches=["mat"]\nbackends=["numpy"]\ndtypes=["float32"]\nsize=1\nrounds=1\n'
     'min_time=0.1\n', UnknownNameError, "bench 'mat'"),
    ('[profile.p]\nbenches=["matmul"]\n', ConfigError, "missing or bad key"),
    ('[profile.p]\nbenches=["matmul"]\nbackends=["numpy"]\ndtypes=["float32"]\nsize=0\n'
     'rounds=1\nmin_time=0.1\n', ConfigError, "must be > 0"),
    ("[burn\n", ConfigError, "cannot read"),
    ('[burn]\nbenches = ["caf\xe9"]\n'.encode("latin-1"), ConfigError, "cannot read")])
def test_bad_benchmarks_toml_names_the_file(tmp_path: Path, text: str | bytes,
                                            error: type[Exception], message: str) -> None:
    """Bad names, keys and values, TOML syntax, and bytes that are not UTF-8 (a latin-1
    file: UnicodeDecodeError escaped before)."""
    path = tmp_path / config.FILE
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(error, match=message) as info:
        config.read(path)
    assert str(path) in str(info.value)


def test_same_threads_limits_both_libraries_and_restores() -> None:
    import torch
    from threadpoolctl import threadpool_info

    from burn_bench.runner import same_threads

    torch_before = torch.get_num_threads()
    blas_before = [pool["num_threads"] for pool in threadpool_info()]
    with same_threads(1):
        assert torch.get_num_threads() == 1
        assert all(pool["num_threads"] == 1 for pool in threadpool_info())
    assert torch.get_num_threads() == torch_before
    assert [pool["num_threads"] for pool in threadpool_info()] == blas_before


def test_commit_names_the_checkout_and_marks_uncommitted_changes(tmp_path: Path) -> None:
    import subprocess

    from burn_bench.runner import commit

    assert commit(tmp_path) == "unknown"
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "f").write_text("a")
    subprocess.run([*git, "add", "f"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "m"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()
    assert head.startswith(commit(tmp_path)) and len(commit(tmp_path)) == 12
    (tmp_path / "f").write_text("b")
    assert commit(tmp_path) == head[:12] + "-dirty"


def test_short_forms_expand_to_run() -> None:
    from burn_bench.cli import expand
    from burn_bench.suites import SUITES as ALL

    assert expand(["mlp", "matmul"]) == ["run", "--benches", "mlp,matmul"]
    assert expand(["list"]) == ["list"]
    every = expand([])
    assert every[:2] == ["run", "--benches"]
    assert set(every[2].split(",")) == set(ALL)


def test_rows_under_fusion_count_the_kernels_launched() -> None:
    """Under fusion a row counts the kernels its streams launched (the profile decorator the
    other rows record with would stop fusion): Burn's custom-gelu is one fused kernel."""
    doc = run_grid(["custom-gelu"], ["cpu", "cpu+fusion"], ["float32"], 512, [], rounds=1,
                   min_time=0.0005)
    kernels = {r["backend"]: r["kernels"] for r in doc["rows"]}
    assert kernels == {"cpu": 5, "cpu+fusion": 1}


def test_rows_count_the_backend_ops_of_one_call() -> None:
    doc = run_grid(["unary", "custom-gelu", "autodiff"], ["numpy", "numpy+autodiff"],
                   ["float32"], 4, ["torch"], rounds=1, min_time=0.0005)
    kernels = {(r["bench"], r["backend"]): r["kernels"] for r in doc["rows"]}
    assert all(isinstance(k, int) and k >= 1 for k in kernels.values())
    # the composed GELU dispatches more ops than one tanh; backward adds ops to the forward
    assert kernels["custom-gelu", "numpy"] > kernels["unary", "numpy"]
    assert kernels["autodiff", "numpy"] > 2
    assert kernels["unary", "numpy+autodiff"] == kernels["unary", "numpy"]
