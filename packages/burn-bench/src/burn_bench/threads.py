"""Thread counts of the suites that measure at 1 and 2 threads, each in a fresh process.

The thread pools of OpenMP (burn's cpu kernels, PyTorch), OpenBLAS (NumPy) and MKL are sized
from environment variables when each starts, so a process measures at one thread count for
good: the suites run a child per count with the variables set (`run_each`), and a module run
as ``python -m MODULE --threads N`` in a process sized otherwise reruns itself in a child
(`rerun_with_threads`).
"""

from __future__ import annotations

import os
import subprocess
import sys

#: The thread counts every such suite measures at.
THREADS = (1, 2)
#: The environment variables that size the thread pools.
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def thread_env(threads: int, base: dict[str, str] | None = None) -> dict[str, str]:
    """`base` (this process's environment when None) with every `THREAD_VARS` at `threads`."""
    return {**(os.environ if base is None else base), **dict.fromkeys(THREAD_VARS, str(threads))}


def run_each(module: str, args: list[str], what: str) -> str:
    """``python -m module --threads N *args`` for each of `THREADS`, each in a child with its
    thread variables set; their outputs, stripped, one after another.

    Raises:
        RuntimeError: a child failed (named by `what`, with its stderr).
    """
    reports = []
    for threads in THREADS:
        done = subprocess.run([sys.executable, "-m", module, "--threads", str(threads), *args],
                              env=thread_env(threads), capture_output=True, text=True,
                              check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{what} at {threads} thread(s) failed:\n{done.stderr}")
        reports.append(done.stdout.strip())
    return "\n\n".join(reports)


def rerun_with_threads(module: str, argv: list[str] | None, threads: int) -> bool:
    """Where this process's thread variables are not all `threads`, run ``python -m module
    *argv`` (this process's arguments when None) in a child with them set, writing to this
    process's stdout and stderr as it runs (a run stopped part way keeps the reports printed
    so far); whether it did (the caller then has nothing left to do).

    Raises:
        SystemExit: with the child's exit status, where it failed.
    """
    if all(os.environ.get(var) == str(threads) for var in THREAD_VARS):
        return False
    sys.stdout.flush()
    sys.stderr.flush()
    done = subprocess.run([sys.executable, "-m", module, *(sys.argv[1:] if argv is None
                                                          else argv)],
                          env=thread_env(threads), check=False)
    if done.returncode:
        raise SystemExit(done.returncode)
    return True
