"""`GradientsAccumulator`: sum gradients over several backward passes before one step."""

from __future__ import annotations

from burn.autodiff import Gradients
from burn.optim.grads import GradientsParams, Params, to_grads_params


class GradientsAccumulator:
    """Sums per-param gradients over several backward passes, as Burn's `GradientsAccumulator`.

    Example:
        acc = GradientsAccumulator()
        for batch in batches:
            acc.accumulate(model, loss_fn(model, batch).backward())
        optim.step(lr, model, acc.grads())
    """

    def __init__(self) -> None:
        self._sum = GradientsParams()

    def accumulate(self, params: Params, grads: Gradients | GradientsParams) -> None:
        """Add `grads` (of the params of `params`) to the running sum.

        Args:
            params: the module (or its params) the gradients belong to.
            grads: a backward result or per-param gradients.
        """
        for pid, grad in to_grads_params(grads, params).items():
            total = self._sum.get(pid)
            self._sum[pid] = grad if total is None else total + grad

    def grads(self) -> GradientsParams:
        """The summed gradients; the accumulator starts again from zero.

        Returns:
            The sum of every gradient accumulated since the last call.
        """
        out, self._sum = self._sum, GradientsParams()
        return out
