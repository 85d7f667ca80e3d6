"""Workspace tasks of Burn for Python (run as `xtask <command>`)."""

__version__ = "0.1.0"
