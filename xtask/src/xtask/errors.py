"""Typed errors of the xtask commands; the command line prints them and exits non-zero."""

from __future__ import annotations

from collections.abc import Iterable


class XtaskError(Exception):
    """Any failure of an xtask command (exit status 1)."""


class UnknownNameError(XtaskError):
    """A backend, example or package name that the workspace does not have (exit status 2)."""

    def __init__(self, kind: str, name: str, valid: Iterable[str], hint: str = "") -> None:
        self.valid = sorted(valid)
        super().__init__(f"unknown {kind} {name!r}; valid {kind}s: {', '.join(self.valid)}"
                         + (f" ({hint})" if hint else ""))


class StepFailedError(XtaskError):
    """A child step (a subprocess) that exited non-zero."""

    def __init__(self, step: str, returncode: int) -> None:
        self.step = step
        self.returncode = returncode
        super().__init__(f"step {step!r} failed with exit status {returncode}")
