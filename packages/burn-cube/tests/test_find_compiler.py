"""The cpu runtime looks its C compiler up once per ($CC, $PATH), and again when either changes;
a missing compiler is not remembered."""

from __future__ import annotations

import os
import shutil

import pytest

from burn_cube.errors import MissingCompilerError
from burn_cube.runtime import cpu


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names `shutil.which` is asked for, with no answer remembered yet."""
    monkeypatch.setattr(cpu, "_COMPILERS", {})
    asked: list[str] = []
    which = shutil.which

    def spy(name: str) -> str | None:
        asked.append(name)
        return which(name)

    monkeypatch.setattr(cpu.shutil, "which", spy)
    return asked


def test_compiler_is_looked_up_once_per_cc_and_path(lookups: list[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CC", raising=False)  # (a machine may set it: setting it must be new)
    first = cpu.find_compiler()
    assert os.path.isabs(first) and first == os.path.realpath(first)
    asked = len(lookups)
    assert asked >= 1
    assert cpu.find_compiler() == first and len(lookups) == asked
    monkeypatch.setenv("CC", first)
    assert cpu.find_compiler() == first and lookups[asked:] == [first]
    monkeypatch.setenv("PATH", os.environ.get("PATH", "") + os.pathsep + "/nonexistent")
    assert cpu.find_compiler() == first and lookups[asked:] == [first, first]


def test_missing_compiler_is_not_remembered(lookups: list[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "/nonexistent/cc")
    for _ in range(2):
        with pytest.raises(MissingCompilerError, match="/nonexistent/cc"):
            cpu.find_compiler()
    assert lookups == ["/nonexistent/cc", "/nonexistent/cc"]
