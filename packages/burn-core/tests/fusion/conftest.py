"""Fixtures of the fusion tests."""

from __future__ import annotations

import pytest

import burn


@pytest.fixture
def empty_stream(base: str) -> None:
    """Run what earlier tests left pending, so launches and statistics are the test's own."""
    burn.sync(f"{base}+fusion")
