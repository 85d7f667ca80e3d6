"""The NumPy backend keeps freed memory in the process (glibc thresholds), and leaves the
allocator alone when told to."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")

# Frees 12 MB at the top of the heap per round: glibc's default trim threshold (twice the last
# freed mapped block, 8 MB here) gives it back, so every round faults its pages in again.
SCRIPT = """
import resource, sys
import numpy as np
import burn
from burn.backends.numpy import memory
burn.zeros([1], device="numpy")
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(3):
    arrays = [np.ones(1 << 20, np.float32) for _ in range(3)]
    del arrays
start = faults()
for _ in range(20):
    arrays = [np.ones(1 << 20, np.float32) for _ in range(3)]
    del arrays
print(memory._done, faults() - start)
"""


def _run(**env: str) -> tuple[str, int]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith("MALLOC_") and k not in ("GLIBC_TUNABLES", "BURN_NUMPY_MALLOC")}
    done = subprocess.run([sys.executable, "-c", SCRIPT],
                          env={**clean, **env}, capture_output=True, text=True, check=True)
    flag, faults = done.stdout.split()
    return flag, int(faults)


def test_freed_arrays_are_reused_without_page_faults():
    flag, faults = _run()
    assert flag == "True"
    assert faults < 1000, faults  # 20 rounds of 3 x 4 MB: ~61,000 faults if returned each time


def test_opt_out_leaves_the_allocator_alone():
    flag, faults = _run(BURN_NUMPY_MALLOC="system")
    assert flag == "False"
    assert faults > 10_000, faults  # glibc's defaults: the pages come back every round


def test_user_malloc_tunables_win():
    flag, _ = _run(MALLOC_TRIM_THRESHOLD_="0")
    assert flag == "False"
