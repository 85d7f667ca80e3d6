"""Runtime selection for the kernel suite, and its own compile cache.

``BURN_CUBE_RUNTIMES=cpu,wgpu`` requires exactly those runtimes (an unavailable one makes its
tests error, never skip). Unset, every available runtime runs. The list is printed in the
pytest header and summary.

The suite compiles into a fresh cache directory (removed at exit), never the user's: it is set
here, before the runtimes are made (a runtime keeps the directory it started with), so tests
that count compilations do not find kernels of earlier runs.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest

_CACHE = tempfile.mkdtemp(prefix="burn-cube-test-cache-")
os.environ["BURN_CUBE_CACHE_DIR"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)

import burn_cube  # noqa: E402  (after the cache directory is set)


def selected_runtimes() -> list[str]:
    """Runtimes the suite is parametrized over."""
    env = os.environ.get("BURN_CUBE_RUNTIMES")
    if env:
        return [name.strip() for name in env.split(",") if name.strip()]
    return burn_cube.available()


RUNTIMES = selected_runtimes()


def pytest_report_header(config: pytest.Config) -> str:
    return f"burn-cube runtimes under test: {', '.join(RUNTIMES)}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    terminalreporter.write_line(f"burn-cube runtimes under test: {', '.join(RUNTIMES)}")


@pytest.fixture(params=RUNTIMES)
def rt(request: pytest.FixtureRequest) -> burn_cube.Runtime:
    """Each runtime under test."""
    return burn_cube.runtime(request.param)
