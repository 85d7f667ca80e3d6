"""`Module`: the base of layers and models. Parameters and submodules are found from attributes."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from burn.device import Device, as_device
from burn.errors import DeviceError
from burn.frontend.tensor import Tensor
from burn.nn.param import Param

M = TypeVar("M", bound="Module")


class Buffer(Param):
    """Non-trainable module state saved with the module (e.g. BatchNorm's running statistics).
    Optimizers never see it and `freeze` / `unfreeze` leave it alone."""

    __slots__ = ()

    def __init__(self, value: Tensor) -> None:
        super().__init__(value, trainable=False)

    @Param.trainable.setter  # type: ignore[attr-defined, untyped-decorator]
    def trainable(self, flag: bool) -> None:
        if flag:
            raise ValueError("a Buffer is never trainable")


def _entries(name: str, value: Any) -> Iterator[tuple[str, Any]]:
    """(dotted name, item) for an attribute that is a module, param, or list/tuple/dict of them."""
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _entries(f"{name}.{i}", item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _entries(f"{name}.{key}", item)
    elif isinstance(value, (Module, Param)):
        yield name, value


def _collect(module: Module, prefix: str, found: list[tuple[str, Param]]) -> None:
    """Append `module`'s Params and Buffers with their dotted paths under `prefix` to `found`,
    depth first (one list for the whole tree: an optimizer walks it every step)."""
    for name, item in module._items():
        path = f"{prefix}.{name}" if prefix else name
        if isinstance(item, Module):
            _collect(item, path, found)
        else:
            found.append((path, item))


def first_of_each(named: list[tuple[str, Param]]) -> list[tuple[str, Param]]:
    """`named` with each Param (by identity) once, at its first entry.

    Args:
        named: (path, param) pairs.
    Returns:
        The pairs kept, in order.
    """
    seen: set[int] = set()
    first = []
    for path, param in named:
        if id(param) not in seen:
            seen.add(id(param))
            first.append((path, param))
    return first


def _device_hint(module: Module, err: DeviceError, inputs: list[Any]) -> DeviceError:
    """`err`, or (when plain inputs meet an autodiff model, or autodiff inputs a model on their
    inner device, as after `Learner.fit`) a DeviceError saying what to call."""
    if err.details.get("hint"):
        return err
    devices = module.devices()
    tensors = [x.device for x in inputs if isinstance(x, Tensor)]
    model = [d for d in devices if d.is_autodiff]
    plain = [d for d in tensors if not d.is_autodiff]
    if model and plain:
        hint = f"move the input with x.to('{model[0]}') or use model.valid() for inference"
        return DeviceError(f"{type(module).__name__}",
                           f"input is on {plain[0]}, the model on {model[0]}", hint=hint,
                           cause=str(err))
    tracked = [d for d in tensors if d.is_autodiff and d.inner() in devices]
    if tracked and not model:
        hint = (f"pass x.inner() (or x.to('{tracked[0].inner()}')) for inference, or move the "
                f"model with model.to('{tracked[0]}') to train it")
        return DeviceError(f"{type(module).__name__}",
                           f"input is on {tracked[0]}, the model on {tracked[0].inner()}",
                           hint=hint, cause=str(err))
    return err


class Module:
    """Base class of layers and models, as Burn's `Module` and torch's `nn.Module`.

    Subclasses set `Param`s, `Buffer`s and submodules (also inside lists, tuples and dicts) as
    attributes in `__init__` and define `forward`; calling the module calls `forward`.
    """

    training: bool = True

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self.forward(*args, **kwargs)  # type: ignore[attr-defined]
        except DeviceError as err:
            raise _device_hint(self, err, [*args, *kwargs.values()]) from err

    # --- traversal ---
    def _items(self) -> Iterator[tuple[str, Module | Param]]:
        for name, value in vars(self).items():
            if name.startswith("_"):
                continue
            if isinstance(value, (Module, Param)):
                yield name, value
            elif isinstance(value, (list, tuple, dict)):
                yield from _entries(name, value)

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Direct submodules with their dotted names (`layers.0` for list entries)."""
        for name, item in self._items():
            if isinstance(item, Module):
                yield name, item

    def children(self) -> list[Module]:
        """Direct submodules."""
        return [m for _, m in self.named_children()]

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """This module (named `prefix`) and every submodule, depth first, with dotted paths."""
        yield prefix, self
        for name, child in self.named_children():
            yield from child.named_modules(f"{prefix}.{name}" if prefix else name)

    def named_tensors(self, prefix: str = "") -> Iterator[tuple[str, Param]]:
        """Every Param and Buffer with its dotted path (what a record saves)."""
        found: list[tuple[str, Param]] = []
        _collect(self, prefix, found)
        return iter(found)

    def named_parameters(self, prefix: str = "", remove_duplicate: bool = True
                         ) -> Iterator[tuple[str, Param]]:
        """Every Param (Buffers excluded) with its dotted path, e.g. `encoder.layers.0.weight`.

        Args:
            prefix: prepended to every path.
            remove_duplicate: a Param reached by several paths (tied weights, one module
                under two names) comes once, under its first path, as in torch; False gives
                every path (`named_tensors` and `state_dict` always do).
        Returns:
            An iterator over (path, param).
        """
        found: list[tuple[str, Param]] = []
        _collect(self, prefix, found)
        params = [(path, p) for path, p in found if not isinstance(p, Buffer)]
        return iter(first_of_each(params) if remove_duplicate else params)

    def parameters(self) -> list[Param]:
        """Every Param (Buffers excluded), each once (tied weights: `named_parameters`)."""
        return [p for _, p in self.named_parameters()]

    def num_params(self) -> int:
        """Number of scalar values in all Params."""
        return sum(p.numel() for p in self.parameters())

    # --- transforms ---
    def map(self: M, fn: Callable[[str, Param], Tensor]) -> M:
        """Replace each Param's and Buffer's values by `fn(path, param)` (ids kept)."""
        for path, item in self.named_tensors():
            item.set_(fn(path, item))
        return self

    def visit(self, fn: Callable[[str, Param], None]) -> None:
        """Call `fn(path, param)` on every Param and Buffer."""
        for path, item in self.named_tensors():
            fn(path, item)

    def to(self: M, device: Device | str) -> M:
        """Move every Param and Buffer to `device` (an autodiff device makes trainable Params
        gradient leaves); returns self."""
        dev = as_device(device)
        return self.map(lambda _, p: p.value().to_device(dev))

    def devices(self) -> list[Device]:
        """The distinct devices holding this module's tensors."""
        return list(dict.fromkeys(p.device for _, p in self.named_tensors()))

    def train(self: M, mode: bool = True) -> M:
        """Set training mode (dropout active, batch statistics used) recursively; returns self."""
        for _, module in self.named_modules():
            module.training = mode
        return self

    def eval(self: M) -> M:
        """`train(False)`."""
        return self.train(False)

    def valid(self: M) -> M:
        """Ready for inference, as Burn's `AutodiffModule::valid`: every tensor on its device
        without the Autodiff decorator (no gradient tracking) and eval mode. Unlike Burn it
        moves this module in place and returns it (as `to`)."""
        for _, item in self.named_tensors():
            if item.device.is_autodiff:
                item.set_(item.value().to_device(item.device.inner()))
        return self.eval()

    def freeze(self: M) -> M:
        """Stop training every Param (optimizers skip them, autodiff does not track them)."""
        return self._set_trainable(False)

    def unfreeze(self: M) -> M:
        """Train every Param again."""
        return self._set_trainable(True)

    def _set_trainable(self: M, flag: bool) -> M:
        for p in self.parameters():
            p.trainable = flag
        return self

    # --- records ---
    def save(self, path: str | os.PathLike[str], format: str | None = None) -> None:
        """Save every Param and Buffer (format from the extension: `.bpk` burnpack,
        `.safetensors`); see `burn.record.save`."""
        from burn import record

        record.save(self, path, format)

    def load(self: M, path: str | os.PathLike[str], **options: Any) -> M:
        """Load values saved by `save` (or a PyTorch `.pt`/`.pth` state dict) into this module;
        options as `burn.record.load` (dtype policy, remap, strict). Returns self."""
        from burn import record

        record.load(self, path, **options)
        return self

    def state_dict(self) -> dict[str, Tensor]:
        """Every Param and Buffer by dotted path, detached (torch's `state_dict`)."""
        from burn.nn import state

        return state.state_dict(self)

    def load_state_dict(self, state_dict: Any, strict: bool = True) -> Any:
        """Copy a state dict (burn tensors or arrays by path) into this module, as torch's
        `load_state_dict`; returns `IncompatibleKeys(missing_keys, unexpected_keys)`. See
        `burn.nn.state.load_state_dict`."""
        from burn.nn import state

        return state.load_state_dict(self, state_dict, strict)

    def load_torch_state_dict(self, state_dict: Any, strict: bool = True) -> Any:
        """Load a torch `state_dict()` (torch names and layouts: packed LSTM / GRU / attention
        weights, [out, in] linear weights) into this module; returns the `LoadReport`. See
        `burn.nn.torch_adapters.load_torch_state_dict`."""
        from burn.nn import torch_adapters

        return torch_adapters.load_torch_state_dict(self, state_dict, strict=strict)

    # --- printing ---
    def extra_repr(self) -> str:
        """Layer settings shown in the summary (override in layers)."""
        return ""

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}({self.extra_repr()}"]
        children = list(self.named_children())
        for name, child in children:
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        return "\n".join(lines) + ("\n)" if children else ")")

    def summary(self) -> str:
        """The module tree, then a table of parameter paths, shapes and dtypes, and the total."""
        rows = [f"{path:<48} {str(p.shape):<20} {p.dtype.value:<9} "
                f"{'buffer' if isinstance(p, Buffer) else 'trainable' if p.trainable else 'frozen'}"
                for path, p in self.named_tensors()]
        total = self.num_params()
        trainable = sum(p.numel() for p in self.parameters() if p.trainable)
        return "\n".join([repr(self), "", *rows, "",
                          f"params: {total:,} ({trainable:,} trainable)"])
