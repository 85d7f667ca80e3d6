"""benchmarks.toml: the profiles (which benches, backends, dtypes, size and timing the smoke
runs, asv and the full runs use) and Burn's bench list. One source for burn-bench, the asv
benchmarks and xtask."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from burn_bench.errors import ConfigError
from burn_bench.ops import SHAPES
from burn_bench.suites import DTYPES, REFERENCES, check_backend, check_names, suite

FILE = "benchmarks.toml"


@dataclass(frozen=True)
class Profile:
    """One profile of benchmarks.toml: the grid to run and how long to time it."""

    name: str
    benches: list[str]
    backends: list[str]
    dtypes: list[str]
    compare: list[str]
    size: int
    rounds: int
    min_time: float
    threads: int = 1
    #: "square" (n x n operands) or "burn" (Burn's 3-d shapes where it has them)
    shapes: str = "square"


def find_root(start: Path | None = None) -> Path | None:
    """The nearest directory at or above `start` (default: cwd) holding benchmarks.toml."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        if (directory / FILE).is_file():
            return directory
    return None


def read(path: Path) -> dict[str, Any]:
    """Parse benchmarks.toml and check every name in it.

    Raises:
        ConfigError: unreadable or malformed (names the file).
        UnknownNameError: an unknown bench, backend, dtype or reference (names the file).
    """
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, ValueError) as exc:  # (TOMLDecodeError, or bytes that are not UTF-8)
        raise ConfigError(f"{path}: cannot read benchmarks.toml ({exc})") from exc
    for name in doc.get("burn", {}).get("benches", []):
        suite(name, str(path))
    for name in doc.get("profile", {}):
        profile(doc, name, path)
    return doc


def profile(doc: dict[str, Any], name: str, path: Path) -> Profile:
    """Profile `name` of the parsed benchmarks.toml `doc` read from `path`.

    Raises:
        ConfigError: no such profile, or a key missing or of the wrong type.
        UnknownNameError: an unknown bench, backend, dtype or reference.
    """
    profiles = doc.get("profile", {})
    if name not in profiles:
        raise ConfigError(f"{path}: no profile {name!r}; profiles: {', '.join(profiles)}")
    table = profiles[name]
    where = f"{path} [profile.{name}]"
    try:
        result = Profile(name, list(table["benches"]), list(table["backends"]),
                         list(table["dtypes"]), list(table.get("compare", REFERENCES)),
                         int(table["size"]), int(table["rounds"]), float(table["min_time"]),
                         int(table.get("threads", 1)), str(table.get("shapes", "square")))
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: missing or bad key ({exc!r})") from exc
    if min(result.size, result.rounds, result.min_time, result.threads) <= 0:
        raise ConfigError(f"{where}: size, rounds, min_time and threads must be > 0")
    for bench in result.benches:
        suite(bench, where)
    for backend in result.backends:
        check_backend(backend, where)
    check_names("dtype", result.dtypes, DTYPES, where)
    check_names("reference", result.compare, REFERENCES, where)
    check_names("shapes", [result.shapes], SHAPES, where)
    return result
