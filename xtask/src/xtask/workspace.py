"""The workspace as the root pyproject declares it: `[tool.uv.workspace]` members and exclude
are the one source of truth for which packages and examples exist."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from xtask.errors import UnknownNameError, XtaskError


@dataclass(frozen=True)
class Member:
    """One workspace folder with a pyproject.toml.

    Attributes:
        name: the distribution name (`[project] name`).
        path: the folder.
        version: `[project] version`.
        excluded: whether the root's `exclude` list names it.
    """

    name: str
    path: Path
    version: str
    excluded: bool = False

    @property
    def pyproject(self) -> Path:
        return self.path / "pyproject.toml"

    def requires(self, extras: bool = True) -> list[str]:
        """Every requirement string of `dependencies` and, when `extras`,
        `optional-dependencies`."""
        project = read_toml(self.pyproject).get("project", {})
        reqs = list(project.get("dependencies", []))
        if extras:
            for extra in project.get("optional-dependencies", {}).values():
                reqs.extend(extra)
        return reqs


def read_toml(path: Path) -> dict:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise XtaskError(f"cannot read {path}: {exc}") from exc


def find_root(start: Path | None = None) -> Path:
    """The nearest folder at or above `start` (default: the working directory) whose
    pyproject.toml has `[tool.uv.workspace]`.

    Raises:
        XtaskError: when no such folder exists.
    """
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file() and "workspace" in read_toml(candidate).get("tool", {}).get(
            "uv", {}
        ):
            return folder
    raise XtaskError(f"no pyproject.toml with [tool.uv.workspace] at or above {here}")


@dataclass(frozen=True)
class Workspace:
    """The members (and excluded folders) of the workspace rooted at `root`."""

    root: Path
    members: tuple[Member, ...]

    @classmethod
    def load(cls, root: Path) -> Workspace:
        """Read the root pyproject and every member's; excluded folders are kept, marked.

        Raises:
            XtaskError: a member glob names a folder without pyproject.toml, or an exclude
                entry names no folder.
        """
        config = read_toml(root / "pyproject.toml").get("tool", {}).get("uv", {})
        spec = config.get("workspace", {})
        excluded = {(root / p).resolve() for p in spec.get("exclude", [])}
        for path in sorted(excluded):
            if not path.is_dir():
                raise XtaskError(f"{root / 'pyproject.toml'}: exclude names no folder: {path}")
        folders: dict[Path, None] = {}
        for pattern in spec.get("members", []):
            for path in sorted(root.glob(pattern)):
                if path.is_dir() and not path.name.startswith((".", "_")):
                    folders[path.resolve()] = None
        members = []
        for path in folders:
            if not (path / "pyproject.toml").is_file():
                raise XtaskError(f"workspace member {path} has no pyproject.toml")
            project = read_toml(path / "pyproject.toml").get("project", {})
            members.append(
                Member(
                    project.get("name", path.name),
                    path,
                    project.get("version", "0"),
                    path in excluded,
                )
            )
        return cls(root, tuple(members))

    def _under(self, folder: str) -> list[Member]:
        return [m for m in self.members if m.path.parent == (self.root / folder).resolve()]

    def packages(self) -> list[Member]:
        """The library packages (`packages/*`), excluded ones included."""
        return self._under("packages")

    def examples(self, include_excluded: bool = False) -> list[Member]:
        """The examples (`examples/*`), by folder name; excluded ones only when asked."""
        return [m for m in self._under("examples") if include_excluded or not m.excluded]

    def package(self, name: str) -> Member:
        """The package called `name`.

        Raises:
            UnknownNameError: listing the valid package names.
        """
        found = {m.name: m for m in self.packages()}
        if name not in found:
            raise UnknownNameError("package", name, found)
        return found[name]

    def example(self, name: str) -> Member:
        """The example in folder `examples/<name>` (excluded ones too).

        Raises:
            UnknownNameError: listing the valid example names.
        """
        found = {m.path.name: m for m in self.examples(include_excluded=True)}
        if name not in found:
            raise UnknownNameError("example", name, found)
        return found[name]
