"""The command line: bad names exit 2 listing the valid ones, a failing child step exits 1
naming it, examples run in their smoke mode, and `python -m xtask` works at the root."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from xtask.build import readme_extras, readme_snippet, sibling_closure, wheel_of
from xtask.checks import nox_backends
from xtask.cli import main
from xtask.errors import StepFailedError
from xtask.examples import smoke_args
from xtask.steps import run_step
from xtask.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]


def test_unknown_backend(workspace: Path, capsys) -> None:
    assert main(["--root", str(workspace), "test", "--backend", "cuda"]) == 2
    err = capsys.readouterr().err
    assert "unknown backend 'cuda'; valid backends: cpu, numpy (cuda needs an NVIDIA GPU" in err
    assert "BURN_DEVICE=cuda python -m pytest packages/burn-core/tests/conformance" in err
    assert main(["--root", str(workspace), "test", "--backend", "metal"]) == 2
    assert "GPU" not in capsys.readouterr().err


def test_unknown_bench_suite(workspace: Path, capsys) -> None:
    assert main(["--root", str(workspace), "bench", "mlp", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown suite 'nope'; valid suites:" in err and "overhead" in err


def test_bench_profiles(workspace: Path, capsys) -> None:
    assert main(["--root", str(workspace), "bench", "--profile", "smoke"]) == 1
    assert "benchmarks.toml is missing" in capsys.readouterr().err
    (workspace / "benchmarks.toml").write_text("[profile.smoke]\n[profile.full]\n")
    assert main(["--root", str(workspace), "bench", "--profile", "quick"]) == 2
    assert "unknown profile 'quick'; valid profiles: full, smoke" in capsys.readouterr().err
    assert main(["--root", str(workspace), "bench", "mlp", "--profile", "smoke"]) == 1
    assert "not both" in capsys.readouterr().err


def test_nox_backends_of_the_repository() -> None:
    assert "numpy" in nox_backends(REPO)


def test_failing_step_names_itself() -> None:
    with pytest.raises(StepFailedError, match="step 'exit three' failed with exit status 3"):
        run_step("exit three", [sys.executable, "-c", "raise SystemExit(3)"])
    with pytest.raises(StepFailedError, match="'missing' failed with exit status 127"):
        run_step("missing", ["/nonexistent/program"])


def test_examples_list_and_run(workspace: Path, capsys) -> None:
    assert main(["--root", str(workspace), "examples", "--list"]) == 0
    assert capsys.readouterr().out == "fast\nslow  (excluded)\n"
    assert main(["--root", str(workspace), "examples", "--run-all"]) == 0
    captured = capsys.readouterr()
    assert "example fast" in captured.err and "example slow" not in captured.err
    assert main(["--root", str(workspace), "examples", "--run", "nope"]) == 2
    assert "valid examples: fast, slow" in capsys.readouterr().err


def test_failing_example_exits_1_naming_it(workspace: Path, capsys) -> None:
    main_py = workspace / "examples" / "slow" / "src" / "slow" / "__main__.py"
    main_py.write_text("raise SystemExit(5)\n")
    assert main(["--root", str(workspace), "examples", "--run-all", "--include-excluded"]) == 1
    assert "step 'example slow' failed with exit status 5" in capsys.readouterr().err


def test_validate_runs_every_step_and_names_the_failing_one(workspace: Path, capsys) -> None:
    tests = workspace / "packages" / "pkg-b" / "tests"
    tests.mkdir()
    (tests / "test_b.py").write_text("def test_b() -> None:\n    assert 1 + 1 == 2\n")
    assert main(["--root", str(workspace), "validate"]) == 0
    steps = [line for line in capsys.readouterr().err.splitlines() if line.startswith("xtask: ")]
    assert steps == [
        "xtask: ruff check",
        "xtask: ruff format --check",
        "xtask: mypy",
        "xtask: pkg-b tests",
    ]
    (tests / "test_b.py").write_text("def test_b() -> None:\n    assert 1 + 1 == 3\n")
    assert main(["--root", str(workspace), "validate"]) == 1
    assert "step 'pkg-b tests' failed with exit status 1" in capsys.readouterr().err


def test_smoke_args(workspace: Path, tmp_path: Path) -> None:
    example = Workspace.load(workspace).example("fast")
    assert smoke_args(example, tmp_path) == ["--smoke", "--artifact-dir", str(tmp_path)]


def test_build_helpers(workspace: Path, tmp_path: Path) -> None:
    ws = Workspace.load(workspace)
    b = ws.package("pkg-b")
    assert [m.name for m in sibling_closure(ws, b)] == ["pkg-a"]
    assert wheel_of(tmp_path, b) == tmp_path / "pkg_b-0.1.0-py3-none-any.whl"
    (b.path / "README.md").write_text("x\n\n```bash\nls\n```\n\n```python\nimport pkg_b\n```\n")
    assert readme_snippet(b) == "import pkg_b\n"
    assert readme_snippet(ws.package("pkg-a")) is None
    assert readme_extras(b) == []
    (b.path / "README.md").write_text(
        "    pip install -e 'packages/pkg-b[gpu,test]'\n    pip install 'pkg-b[io]' pkg-a[x]\n"
    )
    assert readme_extras(b) == ["gpu", "io"]


def test_python_m_xtask_at_the_root_without_site_packages() -> None:
    # -S: no site-packages, so no installed xtask; the root folder must still run the real one
    out = subprocess.run(
        [sys.executable, "-S", "-m", "xtask", "--help"], cwd=REPO, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    for command in ("ops-table", "validate", "test", "examples", "build", "version", "bench"):
        assert command in out.stdout
