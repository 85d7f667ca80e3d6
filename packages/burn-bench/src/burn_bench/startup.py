"""The `startup` suite: wall time of fresh interpreters that import burn (and run a first op),
interleaved with the same for numpy and PyTorch, so that load drifts hit them alike.

Every sample is a new ``python -c <snippet>`` process timed from launch to exit (start-up and
exit included, alike for every candidate). Rounds run each candidate once, at 1 thread and at 2
(OMP / OpenBLAS / MKL threads), and then the burn rows again under ``python -S`` with the same
``sys.path``: the difference shows what the environment's ``.pth`` files import at start-up
(modules burn then finds already loaded). ``import burn`` loads no numpy (the first tensor
does), so burn's own share is ``import burn`` less ``python -c pass``, and that of the first
op is ``burn: import, first op`` less ``import numpy``, each from the same run. Bytecode is
cached as for an installed package: where the environment disables writing it
(PYTHONDONTWRITEBYTECODE), the children cache it under a temporary PYTHONPYCACHEPREFIX, filled
by the warm-up round.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

from burn_bench.threads import thread_env
from burn_bench.timing import Measurement, report

#: (candidate, snippet, candidate it is compared with)
CANDIDATES = (
    ("python -c pass", "pass", None),
    ("import numpy", "import numpy", None),
    ("import torch", "import torch", None),
    ("import burn", "import burn", "import torch"),
    ("torch: import, first op", "import torch; torch.tensor([1.0]) + 1", None),
    ("burn: import, first op", "import burn; burn.tensor([1.0]) + 1",
     "torch: import, first op"),
)
#: the candidates also timed without site processing
NO_SITE = ("python -c pass", "import numpy", "import burn", "burn: import, first op")


def _launch(snippet: str, threads: int, site: bool, base_env: dict[str, str]) -> float:
    """Seconds from launching a fresh interpreter running `snippet` to its exit."""
    env = thread_env(threads, base_env)
    flags = []
    if not site:
        flags = ["-S"]
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    start = time.perf_counter()
    subprocess.run([sys.executable, *flags, "-c", snippet], env=env, check=True,
                   capture_output=True, timeout=120)
    return time.perf_counter() - start


def measure(rounds: int = 10, candidates: tuple[tuple[str, str, str | None], ...] = CANDIDATES
            ) -> dict[str, list[Measurement]]:
    """Time every candidate in `rounds` interleaved rounds (after one warm-up round).

    Args:
        rounds: samples per candidate.
        candidates: (name, snippet, name compared with) triples; CANDIDATES by default.
    Returns:
        Measurements (min, median, max over the rounds) per table: "1 thread", "2 threads",
        "1 thread, python -S".
    """
    plan = [(table, name, snippet, vs, threads, True) for table, threads in
            (("1 thread", 1), ("2 threads", 2)) for name, snippet, vs in candidates]
    plan += [("1 thread, python -S", name, snippet, vs if vs in NO_SITE else None, 1, False)
             for name, snippet, vs in candidates if name in NO_SITE]
    samples: list[list[float]] = [[] for _ in plan]
    with tempfile.TemporaryDirectory(prefix="burn-bench-pyc-") as pyc:
        env = dict(os.environ)
        if env.pop("PYTHONDONTWRITEBYTECODE", None):
            env["PYTHONPYCACHEPREFIX"] = pyc
        for *_, snippet, _, threads, site in plan:  # warm caches (bytecode, disk) once
            _launch(snippet, threads, site, env)
        for _ in range(rounds):
            for times, (*_, snippet, _, threads, site) in zip(samples, plan, strict=True):
                times.append(_launch(snippet, threads, site, env))
    tables: dict[str, list[Measurement]] = {}
    for times, (table, name, _, vs, _, _) in zip(samples, plan, strict=True):
        tables.setdefault(table, []).append(
            Measurement(name, min(times), vs, statistics.median(times), max(times)))
    return tables


#: (label, candidate, baseline): burn's own share of start-up is candidate less baseline
SHARES = (("import burn - python -c pass", "import burn", "python -c pass"),
          ("burn: import, first op - import numpy", "burn: import, first op", "import numpy"))


def run(rounds: int = 10) -> str:
    """Measure and return the report: a table per thread count and site mode, each followed by
    burn's own shares (SHARES: `import burn` less a bare interpreter, the first op less
    `import numpy`)."""
    parts = []
    for table, results in measure(rounds).items():
        by_name = {r.name: r for r in results}
        shares = [f"burn's own share ({label}): "
                  f"{(by_name[name].seconds - by_name[base].seconds) * 1e3:.1f} ms min, "
                  f"{(by_name[name].median - by_name[base].median) * 1e3:.1f} ms median"
                  for label, name, base in SHARES]
        parts.append("\n".join(
            [report(f"fresh-interpreter start-up, {table}, {rounds} rounds", results), *shares]))
    return "\n\n".join(parts)
