"""Burn for Python: tensors, backends and autodiff (burn-core)."""

from __future__ import annotations

from burn import errors
from burn.device import (
    Device,
    available_backends,
    default_device,
    flush,
    set_default_device,
    sync,
)
from burn.dtype import (
    DType,
    Kind,
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    int8,
    int32,
    int64,
    uint8,
)

#: The frontend's names: `Tensor`, creation functions and free functions on tensors.
_FRONTEND = (
    "Tensor", "arange", "bernoulli", "blackman_window", "cartesian_grid", "cat", "diag_mask",
    "empty", "empty_like", "eye", "from_dlpack", "from_numpy", "full", "full_like",
    "hamming_window", "hann_window", "logsumexp", "normal", "one_hot", "ones", "ones_like",
    "rand", "randint", "randn", "seed", "stack", "tensor", "tril_mask", "triu_mask", "uniform",
    "where", "zeros", "zeros_like",
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

    from burn import (
        autodiff,
        data,
        functional,
        fusion,
        linalg,
        lr_scheduler,
        nn,
        optim,
        record,
        train,
    )
    from burn.autodiff import Gradients, is_grad_enabled, no_grad
    from burn.backend.registry import register_backend, register_decorator
    from burn.frontend import (
        Tensor,
        arange,
        bernoulli,
        blackman_window,
        cartesian_grid,
        cat,
        diag_mask,
        empty,
        empty_like,
        eye,
        from_dlpack,
        from_numpy,
        full,
        full_like,
        hamming_window,
        hann_window,
        logsumexp,
        normal,
        one_hot,
        ones,
        ones_like,
        rand,
        randint,
        randn,
        seed,
        stack,
        tensor,
        tril_mask,
        triu_mask,
        uniform,
        where,
        zeros,
        zeros_like,
    )
    from burn.profiler import profile

    __version__: str  # the one version: pyproject.toml's

#: Names imported on first access (PEP 562), so `import burn` stays fast (it loads neither
#: numpy nor the backends): the frontend (numpy loads with it, when the first tensor is made or
#: `burn.Tensor` is touched), subpackages (`burn.nn`, `from burn import train`) and the names
#: of modules not needed to make tensors.
_LAZY: dict[str, tuple[str, str | None]] = {
    **{name: ("burn.frontend", name) for name in _FRONTEND},
    **{name: (f"burn.{name}", None) for name in (
        "autodiff", "data", "functional", "fusion", "linalg", "lr_scheduler", "nn", "optim",
        "record", "train")},
    **{name: ("burn.autodiff", name) for name in ("Gradients", "is_grad_enabled", "no_grad")},
    **{name: ("burn.backend.registry", name)
       for name in ("register_backend", "register_decorator")},
    "profile": ("burn.profiler", "profile"),
}


#: torch's name of the bool dtype (and the one its repr prints, `burn.bool`), besides numpy's
#: `bool_`; kept out of `__all__`, as a star import would shadow the builtin.
bool = DType.bool  # noqa: A001


def __getattr__(name: str) -> Any:
    """Import a lazy name on first access and cache it in the module; `__version__` is read
    from the install metadata (pyproject.toml's version) on first access, as importing
    importlib.metadata costs start-up time."""
    if name == "__version__":
        from importlib.metadata import version

        globals()[name] = installed = version("burn-core")
        return installed
    if name not in _LAZY:
        raise AttributeError(f"module 'burn' has no attribute {name!r}")
    import importlib

    module_name, attr = _LAZY[name]
    module = importlib.import_module(module_name)
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | {"__version__"})


__all__ = [
    "DType", "Device", "Gradients", "Kind", "Tensor", "arange", "autodiff", "available_backends",
    "data", "fusion", "linalg", "lr_scheduler", "nn", "optim", "record", "train",
    "bernoulli", "bfloat16", "bool_", "cat", "default_device", "empty", "empty_like", "errors",
    "eye", "flush", "float16", "float32", "float64", "from_dlpack", "from_numpy", "full",
    "full_like", "functional", "int8", "int32", "int64", "is_grad_enabled", "logsumexp",
    "no_grad", "normal", "one_hot", "ones", "ones_like", "profile", "register_backend",
    "register_decorator",
    "rand", "randint", "randn", "seed", "set_default_device", "stack", "sync", "tensor", "uint8",
    "uniform", "where", "zeros", "zeros_like", "blackman_window", "cartesian_grid", "diag_mask",
    "hamming_window", "hann_window", "tril_mask", "triu_mask",
]

