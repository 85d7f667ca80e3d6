"""`GradientsParams`: gradients keyed by Param id, taken out of the autodiff graph."""

from __future__ import annotations

from collections.abc import Iterable

from burn.autodiff import Gradients
from burn.dtype import Kind
from burn.frontend.tensor import Tensor
from burn.nn import Module, Param
from burn.nn.module import first_of_each

#: What optimizers, accumulators and `GradientsParams.from_grads` accept: a module or its params.
Params = Module | Iterable[Param]


def named_params(params: Params) -> list[tuple[str, Param]]:
    """(path, param) pairs: dotted paths for a Module, list positions ("0", "1", ...) otherwise;
    each Param once, at its first path or position (a tied weight is updated once a step).

    Args:
        params: a module, or an iterable of Params.
    Returns:
        The pairs, in a list (an iterable is consumed once).
    """
    if isinstance(params, Module):
        return list(params.named_parameters())
    return first_of_each([(str(i), p) for i, p in enumerate(params)])


class GradientsParams(dict[int, Tensor]):
    """Per-param gradients, as Burn's `GradientsParams`: a dict Param id -> gradient (a Tensor on
    the param's inner device). Accumulate, clip or edit it, then pass it to `Optimizer.step`.
    """

    @classmethod
    def from_grads(cls, grads: Gradients, params: Params) -> GradientsParams:
        """The gradients of the trainable float params of `params` found in `grads`.

        Args:
            grads: the result of `loss.backward()`.
            params: the module (or its params) whose gradients to take.
        Returns:
            A new GradientsParams (params without a gradient are left out).
        Raises:
            AutodiffError: when a param is not on an autodiff device.
        """
        out = cls()
        for _, p in named_params(params):
            grad = param_grad(p, grads)
            if grad is not None:
                out[p.id] = grad
        return out


def param_grad(param: Param, grads: Gradients) -> Tensor | None:
    """The gradient of `param` in `grads` (a tensor on its inner device), or None where it
    has none or is not a trainable float param. Kept in `grads` by the param's id, so the
    same `grads` gives it again after an update made the param's value a new leaf: a second
    `step` with them updates again, as torch's second `step()` with the same `.grad` does.

    Raises:
        AutodiffError: when a trainable float param is not on an autodiff device.
    """
    if not param.trainable or param.kind is not Kind.FLOAT:
        return None
    grad = param.grad(grads)
    if grad is None:
        return grads.by_param.get(param.id)  # type: ignore[no-any-return]
    grads.by_param[param.id] = grad
    return grad


def to_grads_params(grads: Gradients | GradientsParams, params: Params) -> GradientsParams:
    """`grads` itself when already per-param, else `GradientsParams.from_grads(grads, params)`."""
    if isinstance(grads, GradientsParams):
        return grads
    return GradientsParams.from_grads(grads, params)
