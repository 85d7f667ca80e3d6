"""The root pyproject's members and exclude lists decide which packages and examples exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from xtask.errors import UnknownNameError, XtaskError
from xtask.workspace import Workspace, find_root

REPO = Path(__file__).resolve().parents[2]


def test_members_and_exclude(workspace: Path) -> None:
    ws = Workspace.load(find_root(workspace / "packages" / "pkg-a" / "src"))
    assert ws.root == workspace.resolve()
    assert [m.name for m in ws.packages()] == ["pkg-a", "pkg-b"]
    assert [m.path.name for m in ws.examples()] == ["fast"]
    assert [m.path.name for m in ws.examples(include_excluded=True)] == ["fast", "slow"]
    # an excluded example still runs when named
    assert ws.example("slow").excluded


def test_new_example_folder_appears(workspace: Path) -> None:
    (workspace / "examples" / "new").mkdir()
    (workspace / "examples" / "new" / "pyproject.toml").write_text(
        '[project]\nname = "new"\nversion = "0.1.0"\n'
    )
    assert [m.path.name for m in Workspace.load(workspace).examples()] == ["fast", "new"]


def test_unknown_names_list_the_valid_ones(workspace: Path) -> None:
    ws = Workspace.load(workspace)
    with pytest.raises(UnknownNameError, match="valid examples: fast, slow"):
        ws.example("nope")
    with pytest.raises(UnknownNameError, match="valid packages: pkg-a, pkg-b"):
        ws.package("fast")


def test_exclude_naming_no_folder_is_an_error(workspace: Path) -> None:
    toml = workspace / "pyproject.toml"
    toml.write_text(toml.read_text().replace("examples/slow", "examples/notebook"))
    with pytest.raises(XtaskError, match="exclude names no folder"):
        Workspace.load(workspace)


def test_no_workspace_above(tmp_path: Path) -> None:
    with pytest.raises(XtaskError, match=r"no pyproject.toml with \[tool.uv.workspace\]"):
        find_root(tmp_path)


def test_repository_examples() -> None:
    ws = Workspace.load(REPO)
    folders = sorted(p.name for p in (REPO / "examples").iterdir() if p.is_dir())
    assert [m.path.name for m in ws.examples(include_excluded=True)] == folders
    excluded = [m.path.name for m in ws.examples(include_excluded=True) if m.excluded]
    assert excluded == ["dqn-agent", "notebook"]
