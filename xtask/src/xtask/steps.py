"""Child steps and generated files: a failing step raises naming itself, a generated file is
written to a temporary file beside it and renamed into place only on success."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from xtask.errors import StepFailedError


def run_step(
    step: str,
    cmd: Sequence[str | os.PathLike[str]],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> None:
    """Run one child step, its output going to ours.

    Args:
        step: the name printed before it runs and in the error if it fails.
        cmd: the command line.
        cwd: working directory (default: ours).
        env: variables added to our environment.

    Raises:
        StepFailedError: the command exited non-zero or could not start.
    """
    print(f"xtask: {step}", file=sys.stderr, flush=True)
    try:
        returncode = subprocess.run(
            [os.fspath(c) for c in cmd], cwd=cwd, env={**os.environ, **(env or {})}
        ).returncode
    except OSError as exc:
        print(f"xtask: {step}: {exc}", file=sys.stderr)
        returncode = 127
    if returncode != 0:
        raise StepFailedError(step, returncode)


def atomic_write(files: Mapping[Path, str]) -> None:
    """Write every file's new text: all temporary files first, then one rename each, so a
    failure while writing leaves every target as it was."""
    temps: list[tuple[str, Path]] = []
    try:
        for path, text in files.items():
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            temps.append((tmp, path))
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(text)
        for tmp, path in temps:
            os.replace(tmp, path)
    finally:
        for tmp, _ in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)


def python() -> str:
    """The interpreter xtask runs under (child steps use the same environment)."""
    return sys.executable
