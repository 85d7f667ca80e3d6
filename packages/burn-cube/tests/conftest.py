"""Runtime selection for the kernel suite.

``BURN_CUBE_RUNTIMES=cpu,wgpu`` requires exactly those runtimes (an unavailable one makes its
tests error, never skip). Unset, every available runtime runs. The list is printed in the
pytest header and summary.
"""

from __future__ import annotations

import os

import pytest

import burn_cube


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


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory,
                    monkeypatch: pytest.MonkeyPatch) -> None:
    """One compile cache for the whole session, away from the user's."""
    root = tmp_path_factory.getbasetemp() / "cache"
    monkeypatch.setenv("BURN_CUBE_CACHE_DIR", str(root))


@pytest.fixture(params=RUNTIMES)
def rt(request: pytest.FixtureRequest) -> burn_cube.Runtime:
    """Each runtime under test."""
    return burn_cube.runtime(request.param)
