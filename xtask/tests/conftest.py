"""A small throwaway workspace: two packages (b requires a), two examples (one excluded)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT_TOML = """[project]
name = "ws"
version = "0.1.0"

[tool.uv.workspace]
members = ["packages/*", "examples/*"]
exclude = ["examples/slow"]
"""

MAIN = """import argparse
import sys

p = argparse.ArgumentParser()
p.add_argument("--smoke", action="store_true")
p.add_argument("--artifact-dir")
a = p.parse_args()
print("smoke" if a.smoke else "full", a.artifact_dir)
sys.exit(0 if a.smoke else 3)
"""


def _member(root: Path, folder: str, name: str, deps: str, extra: str = "") -> Path:
    path = root / folder
    module = name.replace("-", "_")
    (path / "src" / module).mkdir(parents=True)
    (path / "src" / module / "__init__.py").write_text("")
    (path / "src" / module / "__main__.py").write_text(MAIN)
    (path / "pyproject.toml").write_text(
        f'[project]\nname = "{name}"\nversion = "0.1.0"\ndependencies = [{deps}]\n{extra}\n'
        f'[tool.hatch.build.targets.wheel]\npackages = ["src/{module}"]\n'
    )
    (path / "CHANGELOG.md").write_text(
        f"# Changelog of {name}\n\n## Unreleased\n\n## 0.1.0\n\n- First release.\n"
    )
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "pyproject.toml").write_text(ROOT_TOML)
    (root / "noxfile.py").write_text('BACKENDS = ["numpy", "cpu"]\n')
    _member(root, "packages/pkg-a", "pkg-a", '"numpy>=1.26"')
    _member(
        root,
        "packages/pkg-b",
        "pkg-b",
        '"pkg-a>=0.1,<0.2", "numpy"',
        '[project.optional-dependencies]\ntrain = ["pkg-a[train]>=0.1,<0.2"]\n',
    )
    _member(root, "examples/fast", "fast", '"pkg-b"')
    _member(root, "examples/slow", "slow", '"pkg-a"')
    return root
