"""`xtask examples --list | --run NAME | --run-all [--include-excluded]`: every example the root
pyproject's workspace names, each run in its smoke mode in an empty temporary directory."""

from __future__ import annotations

import argparse
import os
import re
import tempfile
from pathlib import Path

from xtask.errors import XtaskError
from xtask.steps import python, run_step
from xtask.workspace import Member, Workspace, find_root, read_toml


def module_name(member: Member) -> str:
    """The import name of a member: its wheel's package folder (`src/<module>`)."""
    config = read_toml(member.pyproject)
    wheel = config.get("tool", {}).get("hatch", {}).get("build", {}).get("targets", {})
    folders = wheel.get("wheel", {}).get("packages", [])
    if not folders:
        raise XtaskError(f"{member.pyproject}: no [tool.hatch.build.targets.wheel] packages")
    return Path(folders[0]).name


def smoke_args(member: Member, out: Path) -> list[str]:
    """The flags of the example's quickest run, read from its command line's options:
    `--smoke` where it has one, its output folder (`--artifact-dir` / `--out`) under `out`."""
    main = member.path / "src" / module_name(member) / "__main__.py"
    source = main.read_text() if main.is_file() else ""
    flags = set(re.findall(r"add_argument\(\s*\"(--[\w-]+)\"", source))
    args = ["--smoke"] if "--smoke" in flags else []
    for flag in ("--artifact-dir", "--out"):
        if flag in flags:
            args += [flag, str(out)]
    return args


def run_example(member: Member) -> None:
    """Run one example's smoke mode in an empty temporary working directory.

    Raises:
        StepFailedError: the example exited non-zero.
    """
    with tempfile.TemporaryDirectory(prefix=f"xtask-{member.path.name}-") as tmp:
        src = str(member.path / "src")
        path = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)
        run_step(
            f"example {member.path.name}",
            [python(), "-m", module_name(member), *smoke_args(member, Path(tmp) / "out")],
            cwd=Path(tmp),
            env={"PYTHONPATH": path, "BURN_DATASET_CACHE": f"{tmp}/cache"},
        )


def run(args: argparse.Namespace) -> int:
    ws = Workspace.load(find_root(args.root))
    if args.list:
        for m in ws.examples(include_excluded=True):
            print(f"{m.path.name}{'  (excluded)' if m.excluded else ''}")
    elif args.run:
        run_example(ws.example(args.run))
    else:
        for m in ws.examples(include_excluded=args.include_excluded):
            run_example(m)
    return 0


def add_subcommand(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("examples", help="list or run the workspace's examples (smoke mode)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--list", action="store_true", help="every example; excluded ones marked")
    what.add_argument("--run", metavar="NAME", help="run one example (its folder name)")
    what.add_argument("--run-all", action="store_true", help="run every non-excluded example")
    p.add_argument(
        "--include-excluded", action="store_true", help="with --run-all: the excluded examples too"
    )
    p.set_defaults(func=run)
