"""AsyncPolicy: requests of actor threads batched into single passes."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from burn_rl.async_policy import AsyncPolicy


class Doubler:
    """A policy whose output is the observation times 2 (so each caller can check its rows)."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def forward(self, observation: np.ndarray) -> np.ndarray:
        self.calls.append(len(observation))
        return observation * 2

    def action(self, observation: np.ndarray, deterministic: bool = False) -> np.ndarray:
        if np.any(observation < 0):
            raise ValueError("negative observation")
        self.calls.append(len(observation))
        return observation[:, 0].astype(np.int64) + (100 if deterministic else 0)


def _run_actors(policy: AsyncPolicy, values: list[float], *, deterministic: bool = False,
                register: bool = True) -> list[object]:
    results: list[object] = [None] * len(values)

    def actor(i: int) -> None:
        obs = np.array([[values[i], values[i]]], np.float32)
        try:
            if register:
                results[i] = policy.forward(obs) if i % 2 else policy.action(obs, deterministic)
            else:
                results[i] = policy.action(obs, deterministic)
        except Exception as error:  # checked by the test
            results[i] = error

    threads = [threading.Thread(target=actor, args=(i,)) for i in range(len(values))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
        assert not t.is_alive(), "an actor is still waiting: deadlock"
    return results


def test_requests_of_all_actors_form_one_batch() -> None:
    inner = Doubler()
    policy = AsyncPolicy(inner, max_batch_size=8)
    policy.add_actors(4)
    results = _run_actors(policy, [1.0, 2.0, 3.0, 4.0])
    # two kinds of request (action, forward) arrive together: one pass per kind
    assert sorted(inner.calls) == [2, 2]
    assert policy.batch_sizes == [2, 2]
    for i, value in enumerate([1.0, 2.0, 3.0, 4.0]):
        got = np.asarray(results[i])
        if i % 2:
            assert got.shape == (1, 2) and got.dtype == np.float32
            np.testing.assert_array_equal(got, [[2 * value, 2 * value]])
        else:
            assert got.shape == (1,) and got.dtype == np.int64
            np.testing.assert_array_equal(got, [int(value)])
    policy.close()


def test_batch_size_bound_splits_passes() -> None:
    inner = Doubler()
    policy = AsyncPolicy(inner, max_batch_size=3)
    policy.add_actors(6)
    _run_actors(policy, [1.0] * 6, register=False)
    assert sum(inner.calls) == 6 and max(inner.calls) <= 3
    policy.close()


def test_fewer_actors_than_the_batch_size_never_deadlock() -> None:
    inner = Doubler()
    policy = AsyncPolicy(inner, max_batch_size=16)
    policy.add_actors(3)
    results = _run_actors(policy, [5.0, 6.0, 7.0], register=False, deterministic=True)
    assert inner.calls == [3]
    assert [int(np.asarray(r)[0]) for r in results] == [105, 106, 107]
    policy.close()


def test_an_actor_leaving_releases_waiting_requests() -> None:
    inner = Doubler()
    policy = AsyncPolicy(inner, max_batch_size=16)
    policy.add_actors(3)
    results: list[object] = [None, None]
    asked = threading.Barrier(3)

    def actor(i: int) -> None:
        asked.wait()
        results[i] = policy.action(np.array([[float(i + 1)]]))

    threads = [threading.Thread(target=actor, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    asked.wait()
    policy.remove_actors(1)  # the third actor stops: the two waiting requests are served
    for t in threads:
        t.join(timeout=30)
        assert not t.is_alive(), "an actor is still waiting: deadlock"
    assert inner.calls == [2]
    assert [int(np.asarray(r)[0]) for r in results] == [1, 2]
    policy.close()


def test_unregistered_caller_is_served_alone() -> None:
    inner = Doubler()
    policy = AsyncPolicy(inner, max_batch_size=4)
    np.testing.assert_array_equal(policy.action(np.array([[3.0]]), True), [103])
    with policy.actor():
        np.testing.assert_array_equal(policy.forward(np.array([[1.0], [2.0]])), [[2.0], [4.0]])
    assert inner.calls == [1, 2]
    policy.close()


def test_inner_errors_reach_every_caller_of_the_pass() -> None:
    policy = AsyncPolicy(Doubler(), max_batch_size=2)
    policy.add_actors(2)
    results = _run_actors(policy, [-1.0, 1.0], register=False)
    assert all(isinstance(r, ValueError) and "negative" in str(r) for r in results)
    policy.close()
    with pytest.raises(RuntimeError, match="closed"):
        policy.action(np.zeros((1, 1)))
