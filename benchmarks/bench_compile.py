"""asv: burn-bench's compile suite (`burn_bench.compile`) tracked over commits, per backend of
benchmarks.toml's "compile" profile and case (cold, warm, edit): the seconds from a fresh
process's start to the end of its first training step, and what compiling or loading kernels
added to that step. One round of the suite runs once (`setup_cache`: fresh processes, a new
cache directory and model file); a backend that is not here is skipped (n/a)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from burn_bench import config
from burn_bench.compile import CASES, run_rows

ROOT = Path(__file__).resolve().parents[1]
PROFILE = config.profile(config.read(ROOT / config.FILE), "compile", ROOT / config.FILE)
Rows = dict[str, dict[str, Any]]


class TrackCompile:
    """The compile suite's rows of one round, by backend and case."""

    params = (PROFILE.backends, [case.name for case in CASES])
    param_names = ("backend", "case")
    unit = "seconds"
    timeout = 3600  # cold runs compile every kernel: minutes on two cores

    def setup_cache(self) -> Rows:
        """Run one round of the suite over every backend (burn only, no torch processes)."""
        return {f"{r['backend']} {r['case']}": r
                for r in run_rows(PROFILE.backends, [], 1, PROFILE.threads)}

    def setup(self, rows: Rows, backend: str, case: str) -> None:
        """NotImplementedError (asv: skipped) where the row was not measured."""
        row = rows[f"{backend} {case}"]
        if row["status"] != "ok":
            raise NotImplementedError(f"{backend}: {row['reason']}")

    def track_to_first_step(self, rows: Rows, backend: str, case: str) -> float:
        """Fresh process start to the end of the first training step."""
        return float(rows[f"{backend} {case}"]["times"]["burn"]["median"])

    def track_compile(self, rows: Rows, backend: str, case: str) -> float:
        """The first step's excess over the second (compiling or loading kernels)."""
        return float(rows[f"{backend} {case}"]["compile_s"])
