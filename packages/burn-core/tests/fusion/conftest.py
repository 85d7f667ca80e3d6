"""Fixtures of the fusion tests."""

from __future__ import annotations

from typing import Any

import pytest

import burn


@pytest.fixture
def empty_stream(base: str) -> None:
    """Run what earlier tests left pending, so launches and statistics are the test's own, and
    forget which op structures earlier tests flushed alone (`Stream.lone`: they would run at
    once here instead of being recorded)."""
    burn.sync(f"{base}+fusion")
    stream: Any = burn.Device(f"{base}+fusion").backend.stream
    stream.alone.clear()
    stream.lone.clear()
