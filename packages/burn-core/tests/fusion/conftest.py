"""Fixtures of the fusion tests."""

from __future__ import annotations

from typing import Any

import pytest

import burn
from burn.fusion import stream as fusion_stream


@pytest.fixture
def empty_stream(base: str) -> None:
    """Run what earlier tests left pending, so launches and statistics are the test's own, and
    forget what the stream learned from earlier tests (`Stream.forget`: structures flushed
    alone, products run at once, flush plans), so a test's decisions do not depend on which
    tests ran before it in its process (pytest-xdist splits the suite)."""
    burn.sync(f"{base}+fusion")
    stream: Any = burn.Device(f"{base}+fusion").backend.stream
    stream.forget()


@pytest.fixture
def fuse_small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fuse short blocks however often they run (`CPU_FUSE_WORK`, `GPU_FUSE_WORK` at 0)."""
    monkeypatch.setattr(fusion_stream, "CPU_FUSE_WORK", 0)
    monkeypatch.setattr(fusion_stream, "GPU_FUSE_WORK", 0)


@pytest.fixture
def small_cpu_epilogues_pay(monkeypatch: pytest.MonkeyPatch) -> None:
    """On the cpu runtime, fuse a product's epilogue of two ops or more however few elements
    it keeps out of memory (`CPU_EPILOGUE_WORK` at 0): tests of the matmul fuser's workings
    on small tensors."""
    monkeypatch.setattr(fusion_stream, "CPU_EPILOGUE_WORK", 0)
