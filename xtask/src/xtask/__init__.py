"""Workspace tasks of Burn for Python (run as `xtask <command>` or `python -m xtask <command>`;
not published, so it has no `__version__`: it also runs from the source tree, uninstalled)."""
