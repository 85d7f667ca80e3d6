"""Containers as torch's: `Sequential`, `ModuleList`, `ModuleDict`, and the `Flatten` /
`Unflatten` layers. Their entries are named by position ("0", "1", ...) or key, so parameters
get torch's dotted names ("0.weight", "blocks.1.bias")."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, overload

from burn.errors import BurnIndexError, ShapeError, ValueRangeError
from burn.frontend.tensor import Tensor
from burn.nn.module import Module
from burn.nn.param import Param


def _checked(owner: str, module: Any) -> Module:
    if not isinstance(module, Module):
        raise TypeError(f"{owner}: entries must be Modules, not {type(module).__name__}")
    return module


class ModuleList(Module):
    """A list of modules (torch.nn.ModuleList): index, slice, iterate, append, extend, insert.

    Args:
        modules: the initial entries.
    Raises:
        TypeError: for an entry that is not a Module.
    """

    def __init__(self, modules: Iterable[Module] = ()) -> None:
        self._list: list[Module] = [_checked(type(self).__name__, m) for m in modules]

    def _items(self) -> Iterator[tuple[str, Module | Param]]:
        for i, module in enumerate(self._list):
            yield str(i), module

    def _index(self, index: int) -> int:
        n = len(self._list)
        if not -n <= index < n:
            raise BurnIndexError(type(self).__name__, "index out of range", index=index, len=n)
        return index % n

    @overload
    def __getitem__(self, index: int) -> Module: ...

    @overload
    def __getitem__(self, index: slice) -> Any: ...

    def __getitem__(self, index: int | slice) -> Any:
        """The entry at `index`, or a container of the same class for a slice."""
        if isinstance(index, slice):
            return type(self)(self._list[index])
        return self._list[self._index(index)]

    def __setitem__(self, index: int, module: Module) -> None:
        self._list[self._index(index)] = _checked(type(self).__name__, module)

    def __delitem__(self, index: int | slice) -> None:
        if isinstance(index, slice):
            del self._list[index]
        else:
            del self._list[self._index(index)]

    def __len__(self) -> int:
        return len(self._list)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._list)

    def append(self, module: Module) -> Any:
        """Add `module` at the end; returns self."""
        self._list.append(_checked(type(self).__name__, module))
        return self

    def extend(self, modules: Iterable[Module]) -> Any:
        """Add `modules` at the end; returns self."""
        self._list.extend(_checked(type(self).__name__, m) for m in modules)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Insert `module` before position `index` (as list.insert)."""
        self._list.insert(index, _checked(type(self).__name__, module))


class Sequential(ModuleList):
    """Modules called in order, each on the previous one's output (torch.nn.Sequential).

    Args:
        modules: the layers, in order.
    """

    def __init__(self, *modules: Module) -> None:
        super().__init__(modules)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return Sequential(*self._list[index])
        return self._list[self._index(index)]

    def forward(self, x: Any) -> Any:
        """x through every layer in order."""
        for module in self._list:
            x = module(x)
        return x


class ModuleDict(Module):
    """Modules by string key, in insertion order (torch.nn.ModuleDict).

    Args:
        modules: the initial entries.
    Raises:
        TypeError: for a value that is not a Module. ValueRangeError: for a key that is not a
            non-empty string without dots.
    """

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] = ()
                 ) -> None:
        self._dict: dict[str, Module] = {}
        self.update(modules)

    def _items(self) -> Iterator[tuple[str, Module | Param]]:
        yield from self._dict.items()

    def __getitem__(self, key: str) -> Module:
        if key not in self._dict:
            raise KeyError(f"ModuleDict: no key {key!r} (keys: {list(self._dict)})")
        return self._dict[key]

    def __setitem__(self, key: str, module: Module) -> None:
        if not isinstance(key, str) or not key or "." in key:
            raise ValueRangeError("ModuleDict", "keys must be non-empty strings without '.'",
                                  key=key)
        self._dict[key] = _checked("ModuleDict", module)

    def __delitem__(self, key: str) -> None:
        del self._dict[key]

    def __contains__(self, key: object) -> bool:
        return key in self._dict

    def __len__(self) -> int:
        return len(self._dict)

    def __iter__(self) -> Iterator[str]:
        return iter(self._dict)

    def keys(self) -> list[str]:
        """The keys, in insertion order."""
        return list(self._dict)

    def values(self) -> list[Module]:
        """The modules, in insertion order."""
        return list(self._dict.values())

    def items(self) -> list[tuple[str, Module]]:
        """(key, module) pairs, in insertion order."""
        return list(self._dict.items())

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Add or replace entries."""
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for key, module in pairs:
            self[key] = module

    def pop(self, key: str) -> Module:
        """Remove `key` and return its module."""
        return self._dict.pop(key)


class Flatten(Module):
    """Flatten dims `start_dim`..`end_dim` into one (torch.nn.Flatten).

    Args:
        start_dim: first dim to flatten (default 1: keep the batch dim, as torch).
        end_dim: last dim to flatten.
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        """x with the dims flattened."""
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim `dim` into `unflattened_size` (torch.nn.Unflatten; one entry may be -1).

    Args:
        dim: the dim to split.
        unflattened_size: its new shape.
    """

    def __init__(self, dim: int, unflattened_size: Sequence[int]) -> None:
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, x: Tensor) -> Tensor:
        """x with dim `dim` split.

        Raises:
            ShapeError: when the sizes do not multiply to that dim's size.
        """
        if not -x.ndim <= self.dim < x.ndim:
            raise ShapeError("Unflatten", "dim out of range", dim=self.dim, x=x.shape)
        d = self.dim % x.ndim
        return x.reshape(*x.shape[:d], *self.unflattened_size, *x.shape[d + 1:])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
