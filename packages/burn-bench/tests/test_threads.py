"""The suites measured per thread count: children with the thread variables set, and a module's
command line rerun in one where its process is sized otherwise."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from burn_bench import dqn, fusion, threads, training


class Children:
    """Stands in for `subprocess.run` in `burn_bench.threads`: records each child's command,
    environment and whether its output was captured, and answers with `status` and a report
    naming its thread count (captured, or written to this process's streams as a child
    sharing them writes as it runs)."""

    def __init__(self, status: int = 0) -> None:
        self.runs: list[tuple[list[str], dict[str, str]]] = []
        self.captured: list[bool] = []
        self.status = status

    def __call__(self, cmd: list[str], env: dict[str, str], **kwargs: Any
                 ) -> subprocess.CompletedProcess[str]:
        self.runs.append((cmd, env))
        report, why = f"report at {env['OMP_NUM_THREADS']}\n", "why\n"
        self.captured.append(bool(kwargs.get("capture_output")))
        if self.captured[-1]:
            return subprocess.CompletedProcess(cmd, self.status, report, why)
        sys.stdout.write(report)
        sys.stderr.write(why)
        return subprocess.CompletedProcess(cmd, self.status)


@pytest.mark.parametrize("main, module, argv", [
    (training.main, "burn_bench.training",
     ["mlp", "--threads", "1", "--backends", "numpy", "--parts", "--steps", "2"]),
    (fusion.main, "burn_bench.fusion", ["--threads", "1", "--size", "64"]),
    (dqn.main, "burn_bench.dqn", ["--threads", "1"]),
])
def test_a_command_line_at_another_thread_count_reruns_in_a_child(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], main: Any,
        module: str, argv: list[str]) -> None:
    """`--threads 1` in a process whose thread variables say 2: the report comes from a child
    with all of them at 1 writing to this process's streams as it runs (not captured: a run
    stopped part way keeps what it printed), a failure's exit status passed on."""
    children = Children()
    monkeypatch.setattr(threads.subprocess, "run", children)
    for var in threads.THREAD_VARS:
        monkeypatch.setenv(var, "2")
    main(argv)
    assert capsys.readouterr().out == "report at 1\n"
    (cmd, env), = children.runs
    assert cmd[1:] == ["-m", module, *argv]
    assert all(env[var] == "1" for var in threads.THREAD_VARS)
    assert children.captured == [False]
    children.status = 3
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 3 and capsys.readouterr().err == "why\n"


def test_a_command_line_at_its_thread_count_runs_here(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    children = Children()
    monkeypatch.setattr(threads.subprocess, "run", children)
    for var in threads.THREAD_VARS:
        monkeypatch.setenv(var, "1")
    training.main(["mlp", "--threads", "1", "--backends", "numpy", "--parts", "--steps", "2"])
    assert children.runs == [] and "numpy+autodiff" in capsys.readouterr().out


def test_run_each_measures_every_thread_count_in_its_own_child(
        monkeypatch: pytest.MonkeyPatch) -> None:
    children = Children()
    monkeypatch.setattr(threads.subprocess, "run", children)
    text = threads.run_each("burn_bench.training", ["mlp"], "mlp bench")
    assert text == "\n\n".join(f"report at {n}" for n in threads.THREADS)
    for (cmd, env), n in zip(children.runs, threads.THREADS, strict=True):
        assert cmd[1:] == ["-m", "burn_bench.training", "--threads", str(n), "mlp"]
        assert all(env[var] == str(n) for var in threads.THREAD_VARS)
    children.status = 1
    with pytest.raises(RuntimeError, match="mlp bench at 1 thread"):
        threads.run_each("burn_bench.training", ["mlp"], "mlp bench")


def test_thread_env_keeps_the_rest_of_the_environment() -> None:
    env = threads.thread_env(2, {"PATH": "/bin", "OMP_NUM_THREADS": "8"})
    assert env == {"PATH": "/bin", **dict.fromkeys(threads.THREAD_VARS, "2")}
