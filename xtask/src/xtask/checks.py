"""`xtask validate` (ruff, format check, mypy, every package's tests, in this environment) and
`xtask test --backend NAME` (the noxfile's `tests` session for that backend)."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

from xtask.errors import UnknownNameError, XtaskError
from xtask.steps import python, run_step
from xtask.workspace import Workspace, find_root


def nox_backends(root: Path) -> list[str]:
    """The `BACKENDS` list of the root noxfile: the one backend matrix nox and xtask run.

    Raises:
        XtaskError: the noxfile has no literal `BACKENDS = [...]`.
    """
    noxfile = root / "noxfile.py"
    try:
        tree = ast.parse(noxfile.read_text(), str(noxfile))
    except (OSError, SyntaxError) as exc:
        raise XtaskError(f"cannot read {noxfile}: {exc}") from exc
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "BACKENDS"
        ):
            try:
                return [str(b) for b in ast.literal_eval(node.value)]
            except ValueError:
                break
    raise XtaskError(f"{noxfile}: no literal BACKENDS = [...] list")


#: burn backends outside the nox matrix because CI machines have no GPU: what to run instead.
GPU_ONLY = {"cuda": "cuda needs an NVIDIA GPU and CuPy (pip install 'burn-core[cuda]'): on a "
                    "GPU machine run BURN_DEVICE=cuda python -m pytest "
                    "packages/burn-core/tests/conformance, then with BURN_DEVICE=cuda+autodiff"}


def run_test(args: argparse.Namespace) -> int:
    root = find_root(args.root)
    backends = nox_backends(root)
    if args.backend not in backends:
        raise UnknownNameError("backend", args.backend, backends,
                               GPU_ONLY.get(args.backend.partition(":")[0], ""))
    session = f"tests(backend='{args.backend}')"
    run_step(session, [python(), "-m", "nox", "-s", session, *args.nox_args], cwd=root)
    return 0


def run_validate(args: argparse.Namespace) -> int:
    ws = Workspace.load(find_root(args.root))
    # the library packages and the workspace's own tooling (xtask)
    checked = [*ws.packages(), *(m for m in ws.members if m.path.name == "xtask")]
    run_step("ruff check", [python(), "-m", "ruff", "check", "."], cwd=ws.root)
    run_step(
        "ruff format --check",
        [python(), "-m", "ruff", "format", "--check", "."],
        cwd=ws.root,
    )
    sources = [str(m.path / "src") for m in checked if (m.path / "src").is_dir()]
    run_step("mypy", [python(), "-m", "mypy", *sources], cwd=ws.root)
    for member in checked:
        tests = member.path / "tests"
        if tests.is_dir():
            run_step(
                f"{member.name} tests",
                [python(), "-m", "pytest", str(tests), "-q", "-p", "no:cacheprovider"],
                cwd=ws.root,
                env={"BURN_DEVICE": "numpy"},
            )
    return 0


def add_subcommands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="ruff, format check, mypy, every package's tests")
    p.set_defaults(func=run_validate)
    p = sub.add_parser("test", help="the nox tests session for one backend")
    p.add_argument("--backend", required=True, help="a backend of the noxfile's BACKENDS")
    p.add_argument("nox_args", nargs="*", help="passed to nox after `--` (e.g. -- -R)")
    p.set_defaults(func=run_test)
