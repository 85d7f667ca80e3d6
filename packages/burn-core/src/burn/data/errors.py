"""Errors raised by the data loader."""

from __future__ import annotations

from collections.abc import Sequence

from burn.errors import BurnError

_SHOWN_INDICES = 8


class DataLoaderError(BurnError, RuntimeError):
    """A batch could not be produced: the dataset or the batcher raised, or a worker died.

    The original exception is chained as ``__cause__`` (for process workers it carries the
    worker's traceback).

    Attributes:
        batch: position of the failed batch in the epoch.
        indices: the dataset indices of that batch.
    """

    def __init__(self, batch: int, indices: Sequence[int], cause: BaseException) -> None:
        self.batch = batch
        self.indices = list(indices)
        shown = self.indices[:_SHOWN_INDICES]
        more = ", ..." if len(self.indices) > _SHOWN_INDICES else ""
        super().__init__(
            "DataLoader",
            f"batch {batch} failed: {type(cause).__name__}: {cause}",
            indices="[" + ", ".join(map(str, shown)) + more + "]",
        )


class DataLoaderTimeoutError(DataLoaderError, TimeoutError):
    """A batch's worker gave no result within the loader's ``timeout``; the workers were
    stopped (process workers are terminated; a thread cannot be, it finishes on its own).

    Attributes:
        worker: the worker that held the batch (thread name, or process ids of the pool).
        timeout: the timeout in seconds.
    """

    def __init__(self, batch: int, indices: Sequence[int], worker: str, timeout: float) -> None:
        self.worker = worker
        self.timeout = timeout
        super().__init__(batch, indices, TimeoutError(
            f"no result from worker {worker} after {timeout} s"))
