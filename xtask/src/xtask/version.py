"""`xtask version PACKAGE major|minor|patch`: bump one package's version (its pyproject is the one
place it is written), release its CHANGELOG.md's Unreleased section under the new version, and
move every workspace member's requirement on it to the new compatible range."""

from __future__ import annotations

import argparse
import datetime
import re
from pathlib import Path

from xtask.errors import UnknownNameError, XtaskError
from xtask.steps import atomic_write
from xtask.workspace import Workspace, find_root

PARTS = ("major", "minor", "patch")
_VERSION_LINE = re.compile(r'^version\s*=\s*"([^"]+)"', re.MULTILINE)
_UNRELEASED = "## Unreleased\n"


def bump(version: str, part: str) -> str:
    """`version` ("X.Y.Z") with `part` incremented and the parts after it zeroed.

    Raises:
        UnknownNameError: `part` is not major, minor or patch.
        XtaskError: `version` is not three integers.
    """
    if part not in PARTS:
        raise UnknownNameError("version part", part, PARTS)
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise XtaskError(f"version {version!r} is not MAJOR.MINOR.PATCH")
    major, minor, patch = (int(p) for p in version.split("."))
    if part == "major":
        return f"{major + 1}.0.0"
    if part == "minor":
        return f"{major}.{minor + 1}.0"
    return f"{major}.{minor}.{patch + 1}"


def compatible_range(version: str) -> str:
    """The range of releases compatible with `version`: the same minor before 1.0
    (0.1.3 -> ">=0.1,<0.2"), the same major from 1.0 on (1.4.0 -> ">=1.4,<2")."""
    major, minor = (int(p) for p in version.split(".")[:2])
    upper = f"0.{minor + 1}" if major == 0 else f"{major + 1}"
    return f">={major}.{minor},<{upper}"


def set_requirement(text: str, name: str, spec: str) -> str:
    """`text` (a pyproject) with every requirement on `name` in an array (extras and markers
    kept) given the version specifier `spec`."""
    # an array item: after `[` or `,` (not `name = "..."`)
    pattern = re.compile(
        rf'([\[,]\s*)"{re.escape(name)}(\[[^\]"]*\])?\s*(?:[<>=!~][^";]*)?(;[^"]*)?"'
    )
    return pattern.sub(
        lambda m: f'{m.group(1)}"{name}{m.group(2) or ""}{spec}{m.group(3) or ""}"', text
    )


def set_version(text: str, version: str, path: Path) -> str:
    """`text` (a pyproject) with its `[project] version` set to `version`."""
    if len(_VERSION_LINE.findall(text)) != 1:
        raise XtaskError(f'{path}: expected exactly one `version = "..."` line')
    return _VERSION_LINE.sub(f'version = "{version}"', text, count=1)


def _split_unreleased(text: str, path: Path) -> tuple[str, str, str]:
    """(everything above `## Unreleased`, its entries stripped, the older sections from their
    `## ` heading on, or "").

    Raises:
        XtaskError: the changelog has no `## Unreleased` section.
    """
    if _UNRELEASED not in text:
        raise XtaskError(f"{path}: no '## Unreleased' section")
    head, _, rest = text.partition(_UNRELEASED)
    body, sep, older = rest.partition("\n## ")
    return head, body.strip(), f"## {older}" if sep else ""


def _join(head: str, sections: list[str]) -> str:
    return head + "\n\n".join(s.strip("\n") for s in sections if s) + "\n"


def release_changelog(text: str, version: str, date: datetime.date, path: Path) -> str:
    """`text` (a CHANGELOG.md) with its Unreleased entries moved under a `## version (date)`
    heading and an empty Unreleased section above it.

    Raises:
        XtaskError: the changelog has no `## Unreleased` section.
    """
    head, entries, older = _split_unreleased(text, path)
    released = f"## {version} ({date.isoformat()})\n\n{entries or '- No changes recorded.'}"
    return _join(head, [_UNRELEASED, released, older])


def note_unreleased(text: str, line: str, path: Path) -> str:
    """`text` (a CHANGELOG.md) with `line` appended to its Unreleased entries.

    Raises:
        XtaskError: the changelog has no `## Unreleased` section.
    """
    head, entries, older = _split_unreleased(text, path)
    return _join(head, [_UNRELEASED, f"{entries}\n{line}".strip("\n"), older])


def plan(ws: Workspace, name: str, part: str, today: datetime.date) -> dict[Path, str]:
    """Every file `version NAME PART` rewrites, with its new text (nothing written yet)."""
    member = ws.package(name)
    new = bump(member.version, part)
    changelog = member.path / "CHANGELOG.md"
    if not changelog.is_file():
        raise XtaskError(f"{changelog} is missing")
    files = {
        member.pyproject: set_version(member.pyproject.read_text(), new, member.pyproject),
        changelog: release_changelog(changelog.read_text(), new, today, changelog),
    }
    spec = compatible_range(new)
    for other in ws.members:
        if other is member:
            continue
        text = other.pyproject.read_text()
        updated = set_requirement(text, name, spec)
        if updated != text:
            files[other.pyproject] = updated
            other_log = other.path / "CHANGELOG.md"
            if other_log.is_file():
                files[other_log] = note_unreleased(
                    other_log.read_text(), f"- Requires {name}{spec}.", other_log
                )
    return files


def run(args: argparse.Namespace) -> int:
    ws = Workspace.load(find_root(args.root))
    files = plan(ws, args.package, args.part, datetime.date.today())
    atomic_write(files)
    for path in files:
        print(f"updated {path.relative_to(ws.root)}")
    print(
        "next: `uv lock` (uv.lock records versions); editable installs report the new "
        "__version__ once reinstalled (`uv sync` or `pip install -e`)"
    )
    return 0


def add_subcommand(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("version", help="bump one package; its CHANGELOG and dependents' ranges")
    p.add_argument("package", help="a package name (e.g. burn-core)")
    p.add_argument("part", help="major, minor or patch")
    p.set_defaults(func=run)
