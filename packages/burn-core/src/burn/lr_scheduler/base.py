"""`LrScheduler`: the base of learning-rate schedulers."""

from __future__ import annotations

from abc import ABC, abstractmethod


class LrScheduler(ABC):
    """Base of lr schedulers, as Burn's `LrScheduler`: each `step()` returns the lr of the next
    iteration, starting with iteration 0 (torch's lr before any `scheduler.step()`):

        lr = scheduler.step()
        optim.step(lr, model, grads)

    Subclasses are dataclasses of their hyperparameters and give the lr of any iteration in
    closed form (`lr_at`); the only state is the iteration counter.
    """

    _iteration: int = 0

    @abstractmethod
    def lr_at(self, iteration: int) -> float:
        """The lr of `iteration` (0 for the first)."""

    def step(self) -> float:
        """The lr of the next iteration; advances the counter.

        Returns:
            The learning rate to use now.
        """
        lr = self.lr_at(self._iteration)
        self._iteration += 1
        return lr

    def state_dict(self) -> dict[str, int]:
        """The state: `{"iteration": steps taken}`."""
        return {"iteration": self._iteration}

    def load_state_dict(self, state: dict[str, int]) -> None:
        """Resume from `state_dict()`'s result."""
        self._iteration = int(state["iteration"])


def require_positive(op: str, **values: float) -> None:
    """Raise ValueError naming `op` and the first of `values` that is not > 0."""
    for name, value in values.items():
        if value <= 0:
            raise ValueError(f"{op}: {name} must be > 0, got {value}")
