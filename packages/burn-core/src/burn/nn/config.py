"""`Config`: dataclass configs that save/load JSON and build modules."""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import typing
from pathlib import Path
from typing import Any, Self

from burn.device import Device


class Config:
    """Base of configs; subclasses are `@dataclass`es and define `init(device)` to build their
    module (as Burn's `#[derive(Config)]`). Nested configs save and load too.
    """

    def init(self, device: Device | str | None = None) -> Any:
        """Build the configured module on `device` (the default device when None)."""
        raise TypeError(f"{type(self).__name__} does not build a module")

    def to_dict(self) -> dict[str, Any]:
        """Fields as plain JSON-ready values (nested configs as dicts)."""
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Build a config from `to_dict()` output (unknown keys raise TypeError)."""
        hints = typing.get_type_hints(cls)
        values = {}
        for key, value in data.items():
            hint = hints.get(key)
            if isinstance(value, dict) and isinstance(hint, type) and issubclass(hint, Config):
                value = hint.from_dict(value)
            elif isinstance(value, list) and typing.get_origin(hint) is tuple:
                value = tuple(value)
            values[key] = value
        return cls(**values)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the config as JSON, atomically (temp file, then rename)."""
        target = Path(path)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(self.to_dict(), f, indent=2)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Self:
        """Read a config written by `save`."""
        return cls.from_dict(json.loads(Path(path).read_text()))
