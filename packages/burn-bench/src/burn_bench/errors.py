"""burn-bench's typed errors."""

from __future__ import annotations

from collections.abc import Iterable


class BenchError(ValueError):
    """Base of burn-bench's errors: bad names, bad configuration, bad result files."""


class UnknownNameError(BenchError):
    """An unknown bench, backend or dtype; the message lists the valid names."""

    def __init__(self, kind: str, name: str, valid: Iterable[str], where: str = "") -> None:
        origin = f" in {where}" if where else ""
        super().__init__(f"unknown {kind} {name!r}{origin}; valid: {', '.join(sorted(valid))}")
        self.kind, self.name = kind, name


class ConfigError(BenchError):
    """benchmarks.toml is missing, unreadable or malformed (the message names the file)."""


class ResultSchemaError(BenchError):
    """A result file does not match the results schema (the message names the file)."""
