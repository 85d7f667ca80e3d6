"""The repository's packages: one version each (pyproject, read back as `__version__`), a
changelog that has it, compatible version ranges on each other, and a uv.lock of them all that
leaves torch (the tests' reference, a CUDA build on PyPI) out."""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path

import pytest

from xtask.build import sibling_closure
from xtask.examples import module_name
from xtask.version import compatible_range, set_requirement
from xtask.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]
WS = Workspace.load(REPO)


@pytest.mark.parametrize("member", WS.packages(), ids=lambda m: m.name)
def test_version_is_read_from_the_pyproject(member) -> None:
    module = importlib.import_module(module_name(member))
    assert module.__version__ == member.version
    source = (member.path / "src" / module_name(member) / "__init__.py").read_text()
    assert member.version not in source  # not written a second time


@pytest.mark.parametrize("member", WS.packages(), ids=lambda m: m.name)
def test_changelog_has_unreleased_and_the_version(member) -> None:
    text = (member.path / "CHANGELOG.md").read_text()
    assert "\n## Unreleased\n" in text
    assert f"\n## {member.version}" in text


@pytest.mark.parametrize("member", WS.members, ids=lambda m: m.name)
def test_requirements_on_siblings_carry_their_compatible_range(member) -> None:
    text = member.pyproject.read_text()
    for package in WS.packages():
        assert set_requirement(text, package.name, compatible_range(package.version)) == text


def test_burn_rl_requires_burn_core_within_its_minor() -> None:
    rl = WS.package("burn-rl")
    assert [m.name for m in sibling_closure(WS, rl)] == ["burn-core"]
    assert f"burn-core{compatible_range(WS.package('burn-core').version)}" in rl.requires()


def test_uv_lock_covers_the_workspace_without_torch() -> None:
    lock = tomllib.loads((REPO / "uv.lock").read_text())
    root = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["name"]
    expected = sorted([root, *(m.name for m in WS.members if not m.excluded)])
    assert lock["manifest"]["members"] == expected  # regenerate with `uv lock` when this fails
    assert lock["manifest"]["excludes"] == ["torch", "torchvision"]
    names = [p["name"] for p in lock["package"]]
    assert "torch" not in names and "torchvision" not in names
    assert not [n for n in names if n.startswith("nvidia-")]


@pytest.mark.parametrize("member", [m for m in WS.members if not m.excluded], ids=lambda m: m.name)
def test_uv_lock_records_each_members_requirements(member) -> None:
    """Fails when a pyproject's requirements change without `uv lock` (pip install uv; uv lock)."""
    lock = tomllib.loads((REPO / "uv.lock").read_text())
    locked = next(p for p in lock["package"] if p["name"] == member.name)
    assert locked["version"] == member.version
    declared = {_name(r) for r in member.requires()}
    assert {r["name"] for r in locked["metadata"].get("requires-dist", [])} == declared


def _name(requirement: str) -> str:
    """The normalised project name of a requirement string."""
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match is not None, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()
