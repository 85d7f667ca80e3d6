"""`burn-bench claims`: fusion speedups and compile times read back from saved results."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from burn_bench import results
from burn_bench.claims import fusion_speedups, write_report
from burn_bench.cli import main
from burn_bench.errors import ResultSchemaError
from burn_bench.runner import run_grid


def _saved(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    doc = run_grid(["binary", "unary"], ["numpy"], ["float32"], 4, ["torch"], rounds=1,
                   min_time=0.0005)
    fused = copy.deepcopy(doc["rows"][0])
    fused["backend"] = "numpy+fusion"
    fused["times"]["burn"]["median"] /= 4
    compiled = copy.deepcopy(doc["rows"][0])
    compiled.update(bench="compile", case="edit", compile_s=0.5,
                    times={"burn": {"min": 3.0, "median": 6.0, "max": 7.0},
                           "torch": {"min": 1.0, "median": 2.0, "max": 2.5}})
    missing = {**doc["rows"][0], "backend": "cpu+fusion", "status": "unavailable",
               "reason": "no fusion decorator", "times": {}, "ratios": {}}
    doc["rows"] += [fused, compiled, missing]
    results_dir = tmp_path / "results"
    results.save(doc, results_dir / "m" / "c.json")
    return results_dir, doc


def test_report_has_fusion_speedup_and_compile_time(tmp_path: Path) -> None:
    results_dir, doc = _saved(tmp_path)
    speedups = fusion_speedups([doc])  # type: ignore[list-item]
    assert [(s.bench, s.backend) for s in speedups] == [("binary", "numpy+fusion")]
    assert speedups[0].speedup == pytest.approx(4.0)
    assert main(["claims", "--results-dir", str(results_dir), "--out", str(tmp_path / "o")]) == 0
    text = (tmp_path / "o" / "claims.md").read_text()
    assert "| binary | numpy+fusion | float32 | 4.00 |" in text
    assert "| 1 | numpy | edit | 6.00 | 2.00 | 0.50 | yes |" in text
    assert "| cpu+fusion | not present: no fusion decorator |" in text
    assert "| numpy | present |" in text
    for png in ("fusion.png", "compile.png"):
        assert (tmp_path / "o" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_without_data_says_so(tmp_path: Path) -> None:
    path = write_report(tmp_path / "none", tmp_path / "o")
    assert "No measurement yet" in path.read_text()
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["claims.md"]


def test_bad_results_file_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "results" / "m" / "bad.json"
    bad.parent.mkdir(parents=True)
    bad.write_text('{"schema": "burn-bench/results"}')
    with pytest.raises(ResultSchemaError, match="bad.json"):
        write_report(tmp_path / "results", tmp_path / "o")
