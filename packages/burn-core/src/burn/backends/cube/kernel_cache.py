"""Kernel factories whose IR is built only where the launch index misses it.

`cached_kernel` replaces `functools.cache` on a function that returns a burn-cube kernel built
with `KernelBuilder` from its arguments: the kernel it returns is an `IRKernel.built`, named by
the function, its arguments and burn-core's code, so a process whose runtime finds that name in
its on-disk launch index loads the compiled kernel without building or hashing the IR (about
2 ms each a kernel: ~0.1 s of the first steps of a small MLP on the cpu runtime). A call with
an argument that has no stable text (see `stable_text`) builds the kernel at once, as before.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def stable_text(value: Any) -> str | None:
    """A text naming `value` exactly and alike in every process, or None: for None, bools,
    ints, floats, strings, enum members, burn-cube dtypes, and tuples and frozen dataclasses
    of these."""
    from burn_cube.types import DType as CubeDType

    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return repr(value)
    if isinstance(value, enum.Enum):
        return f"{kind.__module__}.{kind.__qualname__}.{value.name}"
    if kind is CubeDType:
        return f"cube.{value.name}"
    parts: list[str | None]
    if kind is tuple:
        parts = [stable_text(v) for v in value] + [""]  # "(a,)": no other value's text
    elif is_dataclass(value) and not isinstance(value, type) and \
            value.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        parts = [f"{kind.__module__}.{kind.__qualname__}"]
        parts += [stable_text(getattr(value, f.name)) for f in fields(value)]
    else:
        return None
    if any(part is None for part in parts):
        return None
    return "(" + ",".join(parts) + ")"  # type: ignore[arg-type]


@functools.cache
def code_identity() -> str:
    """burn-core's code (every module's path, size and mtime), hashed."""
    import hashlib

    from burn_cube.cache import source_identity

    root = str(Path(__file__).resolve().parents[2])
    return hashlib.sha256(source_identity(root).encode()).hexdigest()[:32]


def cached_kernel(factory: F) -> F:
    """`functools.cache` for a kernel factory whose kernel depends on its arguments only:
    the kernel is an `IRKernel.built` whose IR `factory` builds on a launch-index miss.

    Args:
        factory: Returns an `IRKernel` (`KernelBuilder.kernel()`) built from its arguments.

    Returns:
        The cached factory.
    """
    name = f"{factory.__module__}.{factory.__qualname__}"

    @functools.cache
    def cached(*args: Any, **kwargs: Any) -> Any:
        text = stable_text((args, tuple(sorted(kwargs.items()))))
        if text is None:
            return factory(*args, **kwargs)
        from burn_cube.kernel import IRKernel

        return IRKernel.built(factory.__name__, f"{name}{text}@{code_identity()}",
                              lambda: factory(*args, **kwargs).kernel)

    functools.update_wrapper(cached, factory)
    return cached  # type: ignore[return-value]
