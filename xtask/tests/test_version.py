"""`xtask version`: one version per package, its changelog, its dependents' ranges."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import pytest

from xtask import steps
from xtask.cli import main
from xtask.errors import UnknownNameError, XtaskError
from xtask.version import bump, compatible_range, plan, set_requirement
from xtask.workspace import Workspace

DAY = datetime.date(2026, 12, 1)


@pytest.mark.parametrize(
    ("version", "part", "expected"),
    [("0.1.0", "patch", "0.1.1"), ("0.1.3", "minor", "0.2.0"), ("0.9.3", "major", "1.0.0")],
)
def test_bump(version: str, part: str, expected: str) -> None:
    assert bump(version, part) == expected


def test_bad_part_and_version() -> None:
    with pytest.raises(UnknownNameError, match="valid version parts: major, minor, patch"):
        bump("0.1.0", "micro")
    with pytest.raises(XtaskError, match="MAJOR.MINOR.PATCH"):
        bump("0.1", "patch")


def test_compatible_range() -> None:
    assert compatible_range("0.1.4") == ">=0.1,<0.2"
    assert compatible_range("1.4.0") == ">=1.4,<2"


def test_set_requirement_keeps_extras_markers_and_other_names() -> None:
    text = '["pkg-a", "pkg-a[x]>=0.1,<0.2", "pkg-ab>=1", "pkg-a ; python_version>\'3\'"]'
    assert set_requirement(text, "pkg-a", ">=0.2,<0.3") == (
        '["pkg-a>=0.2,<0.3", "pkg-a[x]>=0.2,<0.3", "pkg-ab>=1", '
        "\"pkg-a>=0.2,<0.3; python_version>'3'\"]"
    )


def test_set_requirement_leaves_the_project_name() -> None:
    text = '[project]\nname = "pkg-a"\ndependencies = [\n    "pkg-a",\n]\n'
    assert set_requirement(text, "pkg-a", ">=0.1,<0.2") == (
        '[project]\nname = "pkg-a"\ndependencies = [\n    "pkg-a>=0.1,<0.2",\n]\n'
    )


def test_plan_bumps_and_updates_dependents(workspace: Path) -> None:
    files = plan(Workspace.load(workspace), "pkg-a", "minor", DAY)
    a, b = workspace / "packages" / "pkg-a", workspace / "packages" / "pkg-b"
    fast, slow = workspace / "examples" / "fast", workspace / "examples" / "slow"
    assert set(files) == {
        a / "pyproject.toml",
        a / "CHANGELOG.md",
        b / "pyproject.toml",
        b / "CHANGELOG.md",
        slow / "pyproject.toml",
        slow / "CHANGELOG.md",
    }
    assert 'version = "0.2.0"' in files[a / "pyproject.toml"]
    assert files[a / "CHANGELOG.md"].startswith(
        "# Changelog of pkg-a\n\n## Unreleased\n\n## 0.2.0 (2026-12-01)\n\n- No changes recorded.\n"
    )
    assert "## 0.1.0\n\n- First release." in files[a / "CHANGELOG.md"]
    assert '"pkg-a>=0.2,<0.3"' in files[b / "pyproject.toml"]
    assert '"pkg-a[train]>=0.2,<0.3"' in files[b / "pyproject.toml"]
    assert files[b / "CHANGELOG.md"] == (
        "# Changelog of pkg-b\n\n## Unreleased\n\n- Requires pkg-a>=0.2,<0.3.\n\n"
        "## 0.1.0\n\n- First release.\n"
    )
    assert '"pkg-a>=0.2,<0.3"' in files[slow / "pyproject.toml"]
    assert fast / "pyproject.toml" not in files  # requires pkg-b only


def test_version_command_writes_everything(workspace: Path, capsys) -> None:
    log = workspace / "packages" / "pkg-a" / "CHANGELOG.md"
    log.write_text(log.read_text().replace("## Unreleased\n", "## Unreleased\n\n- Faster.\n"))
    b = workspace / "packages" / "pkg-b" / "pyproject.toml"
    b_before = b.read_text()
    assert main(["--root", str(workspace), "version", "pkg-a", "patch"]) == 0
    assert Workspace.load(workspace).package("pkg-a").version == "0.1.1"
    assert "## 0.1.1 (" in log.read_text() and "- Faster.\n\n## 0.1.0" in log.read_text()
    out = capsys.readouterr().out
    # a patch release stays in pkg-b's range; the bare requirement of `slow` gets one
    assert b.read_text() == b_before and "updated examples/slow/pyproject.toml" in out


def test_unknown_package_exits_2_listing_names(workspace: Path, capsys) -> None:
    before = (workspace / "packages" / "pkg-a" / "pyproject.toml").read_text()
    assert main(["--root", str(workspace), "version", "pkg-c", "patch"]) == 2
    assert "valid packages: pkg-a, pkg-b" in capsys.readouterr().err
    assert (workspace / "packages" / "pkg-a" / "pyproject.toml").read_text() == before


def test_missing_changelog_writes_nothing(workspace: Path, capsys) -> None:
    (workspace / "packages" / "pkg-a" / "CHANGELOG.md").unlink()
    before = {p: p.read_text() for p in workspace.rglob("pyproject.toml")}
    assert main(["--root", str(workspace), "version", "pkg-a", "minor"]) == 1
    assert "CHANGELOG.md is missing" in capsys.readouterr().err
    assert {p: p.read_text() for p in workspace.rglob("pyproject.toml")} == before


def test_atomic_write_failure_leaves_targets_and_no_temp(tmp_path: Path, monkeypatch) -> None:
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("old a")
    second.write_text("old b")
    real_fdopen = os.fdopen
    calls = []

    def failing_fdopen(fd: int, *args, **kwargs):
        calls.append(fd)
        if len(calls) == 2:
            os.close(fd)
            raise OSError("disk full")
        return real_fdopen(fd, *args, **kwargs)

    monkeypatch.setattr(steps.os, "fdopen", failing_fdopen)
    with pytest.raises(OSError, match="disk full"):
        steps.atomic_write({first: "new a", second: "new b"})
    assert (first.read_text(), second.read_text()) == ("old a", "old b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]
