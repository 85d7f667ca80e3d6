"""`xtask build`: a wheel and an sdist of every package into `dist/`, then each wheel installed
alone in a fresh venv (with only the sibling wheels it requires), imported, and the first Python
snippet of its README run (with the extras its README installs it with)."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import tempfile
from pathlib import Path

from xtask.examples import module_name
from xtask.steps import python, run_step
from xtask.workspace import Member, Workspace, find_root

_SNIPPET = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
_NAME = re.compile(r"^[A-Za-z0-9_.-]+")


def readme_snippet(member: Member) -> str | None:
    """The first ```python block of the member's README.md, or None."""
    readme = member.path / "README.md"
    found = _SNIPPET.search(readme.read_text()) if readme.is_file() else None
    return found.group(1) if found else None


def readme_extras(member: Member) -> list[str]:
    """The extras the member's README installs it with (`pip install ...<folder or name>[a,b]`),
    test extras left out: what its README snippet may rely on."""
    readme = member.path / "README.md"
    text = readme.read_text() if readme.is_file() else ""
    names = "|".join(re.escape(n) for n in (member.name, member.path.name))
    found: dict[str, None] = {}
    for line in text.splitlines():
        if "pip install" in line:
            for group in re.findall(rf"(?:{names})\[([\w,\s-]+)\]", line):
                found.update(dict.fromkeys(e.strip() for e in group.split(",")))
    return [e for e in found if e and e != "test"]


def sibling_closure(ws: Workspace, member: Member) -> list[Member]:
    """The workspace packages `member` requires (`dependencies` only), directly or not."""
    by_name = {m.name: m for m in ws.packages()}
    seen: dict[str, Member] = {}
    todo = [member]
    while todo:
        current = todo.pop()
        for req in current.requires(extras=False):
            match = _NAME.match(req)
            name = match.group(0) if match else ""
            if name in by_name and name not in seen and name != member.name:
                seen[name] = by_name[name]
                todo.append(by_name[name])
    return list(seen.values())


def wheel_of(dist: Path, member: Member) -> Path:
    """The wheel of `member` in `dist` (names normalised as wheels spell them)."""
    stem = re.sub(r"[-.]+", "_", member.name)
    return dist / f"{stem}-{member.version}-py3-none-any.whl"


def check_wheel(ws: Workspace, member: Member, dist: Path) -> None:
    """Install `member`'s wheel alone in a fresh venv, import it, run its README snippet."""
    with tempfile.TemporaryDirectory(prefix=f"xtask-build-{member.name}-") as tmp:
        venv = Path(tmp) / "venv"
        run_step(f"{member.name}: venv", [python(), "-m", "venv", venv])
        py = venv / "bin" / "python"
        wheels = [wheel_of(dist, m) for m in [member, *sibling_closure(ws, member)]]
        run_step(
            f"{member.name}: install wheel",
            [py, "-m", "pip", "install", "-q", "--no-cache-dir", *wheels],
        )
        run_step(
            f"{member.name}: import", [py, "-c", f"import {module_name(member)}"], cwd=Path(tmp)
        )
        snippet = readme_snippet(member)
        if snippet is not None:
            extras = readme_extras(member)
            if extras:
                run_step(
                    f"{member.name}: install README extras {','.join(extras)}",
                    [
                        py,
                        "-m",
                        "pip",
                        "install",
                        "-q",
                        "--no-cache-dir",
                        f"{wheels[0]}[{','.join(extras)}]",
                        *wheels[1:],
                    ],
                )
            # a file, not `-c`: burn-cube kernels read their own source
            script = Path(tmp) / "readme_snippet.py"
            script.write_text(snippet)
            run_step(f"{member.name}: README snippet", [py, script], cwd=Path(tmp))


def run(args: argparse.Namespace) -> int:
    ws = Workspace.load(find_root(args.root))
    members = [ws.package(n) for n in args.package] if args.package else ws.packages()
    dist = ws.root / "dist"
    dist.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="xtask-dist-") as staging:
        for member in members:
            run_step(
                f"{member.name}: build",
                [python(), "-m", "build", "--sdist", "--wheel", "--outdir", staging, member.path],
            )
        for built in Path(staging).iterdir():
            shutil.copy2(built, dist / f".{built.name}.tmp")
            os.replace(dist / f".{built.name}.tmp", dist / built.name)
    for member in members:
        check_wheel(ws, member, dist)
    print(f"built and checked: {', '.join(m.name for m in members)} -> {dist}")
    return 0


def add_subcommand(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "build", help="wheel + sdist per package into dist/, each wheel checked in a fresh venv"
    )
    p.add_argument(
        "--package",
        action="append",
        default=[],
        help="only this package (repeatable; default: every package)",
    )
    p.set_defaults(func=run)
