"""`Optimizer` and `OptimizerConfig`: the base of every optimizer."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from burn.autodiff import Gradients
from burn.errors import DTypeError, ShapeError
from burn.frontend import tensor
from burn.frontend.tensor import Tensor
from burn.nn import Config, Param
from burn.optim.buffers import Buf, NumpyOps, TensorOps, numpy_arrays
from burn.optim.grads import GradientsParams, Params, named_params, param_grad
from burn.optim.multi import SMALL_PARAM, Member, SmallParams, layout

#: One param's optimizer state: tensors on the param's inner device, and counters.
State = dict[str, Any]


@dataclass(kw_only=True)
class OptimizerConfig(Config):
    """Hyperparameters every optimizer has; subclasses' `init()` builds their optimizer.

    Args:
        weight_decay: L2 penalty added to the gradient (`grad + weight_decay * param`, as
            torch's `weight_decay`); AdamW decouples it instead.
    """

    weight_decay: float = 0.0


class Optimizer(ABC):
    """Base of optimizers, as Burn's `Optimizer`: `step(lr, module, grads)` updates the module's
    trainable Params in place.

    Updates are computed on the inner backend (no autodiff graph); on the plain NumPy backend
    they reuse the state's buffers in place (`burn.optim.buffers`), small params of one dtype
    updated together in flat buffers (`burn.optim.multi`), and on the cube backends
    optimizers with kernels run them: all params of one backend and dtype in one launch
    where the optimizer has `_fused_steps` (Adam, AdamW), else one kernel per param
    (`_fused`); under fusion too, on the values its stream computed, with the same values.
    State is kept per Param id as inner tensors; `state_dict()` keys it by parameter path, so
    it survives a module rebuild.

    Args:
        config: the hyperparameters.
    """

    def __init__(self, config: OptimizerConfig) -> None:
        self.config = config
        self._state: dict[int, State] = {}
        self._paths: dict[int, str] = {}
        self._loaded: dict[str, State] = {}
        self._small = SmallParams()

    def step(self, lr: float, params: Params, grads: Gradients | GradientsParams) -> None:
        """Update every trainable param that has a gradient.

        Args:
            lr: the learning rate of this step (e.g. from `LrScheduler.step()`).
            params: the module (paths from `named_parameters`) or a list of Params (paths "0",
                "1", ...).
            grads: `loss.backward()`'s result or per-param gradients (accumulated, clipped).
        """
        named = named_params(params)
        # every gradient first (a param off autodiff raises before any update), from a
        # backward result param by param: no GradientsParams built for it
        if isinstance(grads, GradientsParams):  # (edited by the caller: checked)
            found = [grads.get(p.id) for _, p in named]
            for (path, param), grad in zip(named, found, strict=True):
                if grad is not None and param.trainable:
                    self._check_grad(path, param, grad)
        else:
            found = [param_grad(p, grads) for _, p in named]
        small: dict[tuple[Any, ...], list[tuple[Param, Member]]] = {}
        device: list[tuple[Param, Tensor, Tensor, State]] = []
        for (path, param), grad in zip(named, found, strict=True):
            if grad is None or not param.trainable:
                continue
            value = param.inner()
            state = self._param_state(path, param, value)
            if not numpy_arrays(value, grad):
                device.append((param, value, grad, state))
                continue
            g = grad._prim  # NumPy: reuse the state's and the temporaries' buffers
            if g.size <= SMALL_PARAM:
                small.setdefault((g.dtype, layout(state)), []).append(
                    (param, (param.id, value, g, state)))
                continue
            _set(param, value._wrap(self._numpy_one(lr, value, g, state)))
        if device:
            fused = self._fused_steps(lr, [(v, g, s) for _, v, g, s in device],
                                      [p for p, _, _, _ in device])
            for (param, value, grad, state), new in zip(device, fused, strict=True):
                _set(param, self._device_one(lr, value, grad, state) if new is None else new)
        self._small.begin()
        for entries in small.values():
            members = [m for _, m in entries]
            values = ([self._numpy_one(lr, *members[0][1:])] if len(members) == 1 else
                      self._small.update(members, partial(self._numpy_update, lr)))
            for (param, member), array in zip(entries, values, strict=True):
                _set(param, member[1]._wrap(array))

    def _check_grad(self, path: str, param: Param, grad: Tensor) -> None:
        """Refuse a gradient that does not fit `param` (as torch refuses assigning one).

        Raises:
            ShapeError, DTypeError: naming the optimizer, the param's path and both shapes
                or dtypes.
        """
        op = type(self).__name__
        if not isinstance(grad, Tensor):
            raise DTypeError(op, "a gradient must be a Tensor", path=path,
                             grad=type(grad).__name__)
        if grad.shape != param.shape:
            raise ShapeError(op, "the gradient's shape is not the param's", path=path,
                             grad=grad.shape, param=param.shape)
        if grad.dtype is not param.dtype:
            raise DTypeError(op, "the gradient's dtype is not the param's", path=path,
                             grad=grad.dtype.value, param=param.dtype.value)

    def _device_one(self, lr: float, value: Tensor, grad: Tensor, state: State) -> Tensor:
        """The update of one param of a device backend: its `_fused` kernel where it applies,
        else the tensor ops."""
        fused = self._fused(lr, value, grad, state)
        if fused is None:
            p, g = self._decay(lr, value, grad, TensorOps)
            fused = self._update(lr, p, g, state, TensorOps)
        return fused

    def _numpy_one(self, lr: float, value: Tensor, grad: np.ndarray, state: State
                   ) -> np.ndarray:
        """The NumPy update of one param (`value` its inner tensor), its state's arrays reused
        in place; the new values."""
        arrays = {k: v._prim if isinstance(v, Tensor) else v for k, v in state.items()}
        new = self._numpy_update(lr, value._prim, grad, arrays)
        for key, item in arrays.items():
            old = state.get(key)
            if not isinstance(item, np.ndarray):
                state[key] = item
            elif not isinstance(old, Tensor) or old._prim is not item:
                state[key] = value._wrap(item)
        return new

    def _numpy_update(self, lr: float, param: np.ndarray, grad: np.ndarray,
                      arrays: dict[str, Any]) -> np.ndarray:
        """Decay and update with `NumpyOps` on arrays (`arrays`: the state, arrays and
        counters, updated)."""
        p, g = self._decay(lr, param, grad, NumpyOps)
        new: np.ndarray = self._update(lr, p, g, arrays, NumpyOps)
        return new

    def _decay(self, lr: float, param: Buf, grad: Buf, ops: type[TensorOps]) -> tuple[Buf, Buf]:
        """(param, grad) after weight decay: L2 added to the gradient (override to decouple)."""
        decay = self.config.weight_decay
        return (param, ops.add_into(grad, ops.mul(param, decay))) if decay else (param, grad)

    def _init_state(self, param: Tensor) -> State:
        """The state of a param before its first update (none by default)."""
        return {}

    def _fused_steps(self, lr: float, members: list[tuple[Tensor, Tensor, State]],
                     owners: list[Param] | None = None) -> list[Tensor | None]:
        """The updates of several params (value, gradient, state) at once where the backend
        runs them together (a multi-tensor kernel: `adam_steps`), updating those states in
        place, and the values too where nothing but their `owners` (the Params, when given)
        holds them; None for each param left to `_fused` / the tensor ops. All None by
        default."""
        return [None] * len(members)

    def _fused(self, lr: float, param: Tensor, grad: Tensor, state: State) -> Tensor | None:
        """The whole update (decay included) as one device kernel where the backend has one
        (`burn.backends.cube.optim_kernels`), updating `state` in place; None (state untouched)
        to run the tensor ops instead. None by default."""
        return None

    @abstractmethod
    def _update(self, lr: float, param: Buf, grad: Buf, state: State, ops: type[TensorOps]
                ) -> Buf:
        """The new values of `param`, computed with `ops` (inner tensors, or numpy arrays with
        `NumpyOps`); updates `state` (whose buffers `NumpyOps` may overwrite). `param` and
        `grad` are read only."""

    def _param_state(self, path: str, param: Param, value: Tensor) -> State:
        """The state of `param`, from a loaded state dict (by path) or fresh."""
        self._paths[param.id] = path
        state = self._state.get(param.id)
        if state is None:
            saved = self._loaded.pop(path, None)
            state = self._init_state(value) if saved is None else _restore(saved, path, value)
            self._state[param.id] = state
        return state

    # --- save / load ---
    def state_dict(self) -> dict[str, Any]:
        """The state, keyed by parameter path, as numpy arrays and numbers.

        Returns:
            `{"optimizer": class name, "params": {path: {name: array or number}}}`.
        """
        params = {path: dict(saved) for path, saved in self._loaded.items()}
        for pid, state in self._state.items():
            params[self._paths[pid]] = {
                k: np.array(v.to_numpy()) if isinstance(v, Tensor) else v
                for k, v in state.items()}
        return {"optimizer": type(self).__name__, "params": params}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Replace the state by `state_dict` (from `state_dict()`); each entry is attached to the
        param with the same path at the next `step`.

        Raises:
            ValueError: when `state_dict` comes from another optimizer class.
        """
        if state_dict.get("optimizer") != type(self).__name__:
            raise ValueError(f"load_state_dict: state of {state_dict.get('optimizer')!r}, "
                             f"not {type(self).__name__!r}")
        self._state.clear()
        self._paths.clear()
        self._loaded = {path: dict(saved) for path, saved in state_dict["params"].items()}


def _set(param: Param, new: Tensor) -> None:
    """Give trainable `param` the values `new`, its update (a tensor on its inner device, of
    its shape and dtype): `Param.set_` without the checks and wrappers, on an autodiff device
    a fresh gradient leaf."""
    bk: Any = param._bk  # an AutodiffBackend has float_from_inner and float_require_grad
    param._prim = bk.float_require_grad(bk.float_from_inner(new._prim)) if bk.is_autodiff \
        else new._prim


def _restore(saved: State, path: str, value: Tensor) -> State:
    """Saved state with arrays made tensors on `value`'s device, checked against its shape;
    float arrays take the param's dtype (state saved from a param of another float dtype,
    cast as torch casts it on load)."""
    state = {}
    for key, item in saved.items():
        if isinstance(item, np.ndarray):
            if item.shape != value.shape:
                raise ShapeError("load_state_dict", "saved state does not fit the param",
                                 path=path, key=key, saved=item.shape, param=value.shape)
            item = tensor(item, device=value.device)
            if item.dtype.is_float and item.dtype is not value.dtype:
                item = item.cast(value.dtype)
        state[key] = item
    return state
