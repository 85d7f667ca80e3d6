"""In-memory state dicts, as torch's `Module.state_dict()` / `load_state_dict()`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from burn.errors import BurnError, ShapeError
from burn.frontend import tensor
from burn.frontend.tensor import Tensor

if TYPE_CHECKING:
    from burn.nn.module import Module


class IncompatibleKeys(NamedTuple):
    """What `load_state_dict` did not match (torch's `_IncompatibleKeys`).

    Attributes:
        missing_keys: module keys the state lacks (left unchanged).
        unexpected_keys: state keys the module lacks (ignored).
    """

    missing_keys: list[str]
    unexpected_keys: list[str]


class StateDictKeyError(BurnError, LookupError):
    """A strict `load_state_dict` whose keys differ from the module's (nothing was loaded)."""


def state_dict(module: Module) -> dict[str, Tensor]:
    """Every Param and Buffer of `module` by dotted path, as detached tensors sharing the data.

    Args:
        module: the module.
    Returns:
        path -> tensor, in `named_tensors` order.
    """
    return {path: p.value().detach() for path, p in module.named_tensors()}


def load_state_dict(module: Module, state: Mapping[str, Any], strict: bool = True
                    ) -> IncompatibleKeys:
    """Copy `state` into `module`'s Params and Buffers (in place, ids kept), each value cast to
    the module tensor's dtype and moved to its device. Nothing is changed when an error is
    raised.

    Args:
        module: the target module.
        state: path -> burn Tensor or array-like (numpy array, CPU torch tensor).
        strict: raise when keys are missing or unexpected (torch's default).
    Returns:
        The missing and unexpected keys.
    Raises:
        StateDictKeyError: strict, with missing or unexpected keys.
        ShapeError: a value whose shape differs from the module's (strict or not, as torch),
            naming the key and both shapes.
    """
    op = "load_state_dict"
    targets = dict(module.named_tensors())
    keys = IncompatibleKeys([k for k in targets if k not in state],
                            [k for k in state if k not in targets])
    if strict and (keys.missing_keys or keys.unexpected_keys):
        raise StateDictKeyError(op, "state keys do not match the module",
                                missing_keys=keys.missing_keys,
                                unexpected_keys=keys.unexpected_keys)
    values = {k: _as_tensor(v) for k, v in state.items() if k in targets}
    for key, value in values.items():
        if tuple(value.shape) != tuple(targets[key].shape):
            raise ShapeError(op, f"shape mismatch for {key!r}", key=key,
                             module=targets[key].shape, state=value.shape)
    for key, value in values.items():
        param = targets[key]
        param.set_(value.to_device(param.device).cast(param.dtype))
    return keys


def _as_tensor(value: Any) -> Tensor:
    if isinstance(value, Tensor):
        return value.detach()
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    return tensor(np.asarray(value))
