"""What every burn-core test run shares: figures tests report (kernel counts) printed at the end.

A test reports a figure with ``record_property("figure", text)``; the run's summary prints each
one, with or without pytest-xdist (a worker's output is not shown, its reports' properties are).
"""

from __future__ import annotations

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    figures = [value for outcome in ("passed", "failed")
               for report in terminalreporter.getreports(outcome)
               for name, value in report.user_properties if name == "figure"]
    if figures:
        terminalreporter.section("figures reported by tests")
        for figure in figures:
            terminalreporter.write_line(str(figure))
