"""`AsyncPolicy`: one inference server thread batches the requests of many actor threads into
single forward passes of an inner policy (after Burn's `AsyncPolicy` autobatching)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from burn.errors import ValueRangeError
from burn_rl.policy import Policy


@dataclass
class _Request:
    kind: str  # "forward" or "action"
    observation: np.ndarray
    deterministic: bool
    result: Future[np.ndarray]


class AsyncPolicy:
    """A thread-safe `Policy` that batches requests: a pass runs once `min(active actors,
    max_batch_size)` requests are waiting, so it never waits for actors that are not running.

    Actors register with `actor()` (a context manager) or `add_actors` / `remove_actors`; a
    request from an unregistered caller counts as one actor for its own pass. A request is
    answered with the rows of the batch it contributed. An error of the inner policy is raised
    in every caller of that pass.

    Args:
        inner: the policy doing the forward passes (called from the server thread only).
        max_batch_size: requests gathered per pass at most.
    """

    def __init__(self, inner: Policy, max_batch_size: int = 8) -> None:
        if max_batch_size < 1:
            raise ValueRangeError("AsyncPolicy", "max_batch_size must be >= 1",
                                  max_batch_size=max_batch_size)
        self.inner = inner
        self.max_batch_size = max_batch_size
        self.batch_sizes: list[int] = []  # requests served by each pass, in order
        self._queue: queue.SimpleQueue[_Request | int | None] = queue.SimpleQueue()
        self._actors = 0
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name="AsyncPolicy", daemon=True)
        self._thread.start()

    # --- the Policy interface (any thread) ---
    def forward(self, observation: np.ndarray) -> np.ndarray:
        return self._request("forward", observation, False)

    def action(self, observation: np.ndarray, deterministic: bool = False) -> np.ndarray:
        return self._request("action", observation, deterministic)

    def _request(self, kind: str, observation: np.ndarray, deterministic: bool) -> np.ndarray:
        if self._closed:
            raise RuntimeError("AsyncPolicy: closed")
        future: Future[np.ndarray] = Future()
        self._queue.put(_Request(kind, np.asarray(observation), deterministic, future))
        return future.result()

    # --- actors ---
    def add_actors(self, n: int = 1) -> None:
        """`n` more actor threads will send requests."""
        self._queue.put(n)

    def remove_actors(self, n: int = 1) -> None:
        """`n` actor threads stopped sending requests (waiting requests may now be served)."""
        self._queue.put(-n)

    @contextmanager
    def actor(self) -> Iterator[AsyncPolicy]:
        """Registers the calling thread as an actor for the duration of the block."""
        self.add_actors(1)
        try:
            yield self
        finally:
            self.remove_actors(1)

    def close(self) -> None:
        """Stop the server thread (after serving what is waiting)."""
        if not self._closed:
            self._closed = True
            self._queue.put(None)
            self._thread.join()

    # --- the server thread ---
    def _serve(self) -> None:
        pending: dict[tuple[str, bool], list[_Request]] = {}
        while True:
            message = self._queue.get()
            if message is None:
                for requests in pending.values():
                    self._run(requests)
                return
            if isinstance(message, int):
                self._actors = max(0, self._actors + message)
            else:
                key = (message.kind, message.deterministic)
                pending.setdefault(key, []).append(message)
            bound = max(1, min(self._actors, self.max_batch_size))
            waiting = sum(len(r) for r in pending.values())
            if waiting >= bound:
                for key in list(pending):
                    self._run(pending.pop(key))

    def _run(self, requests: list[_Request]) -> None:
        """One pass over the concatenated observations; each caller gets its rows."""
        self.batch_sizes.append(len(requests))
        sizes = [len(r.observation) for r in requests]
        try:
            batch = np.concatenate([r.observation for r in requests])
            first = requests[0]
            out = (self.inner.forward(batch) if first.kind == "forward"
                   else self.inner.action(batch, first.deterministic))
            parts = np.split(out, np.cumsum(sizes)[:-1])
        except BaseException as error:  # handed to the callers, never lost in this thread
            for r in requests:
                r.result.set_exception(error)
            return
        for r, part in zip(requests, parts, strict=True):
            r.result.set_result(part)
