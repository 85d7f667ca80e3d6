"""Replay buffers, prioritised sampling and n-step transitions."""

from __future__ import annotations

import numpy as np
import pytest

import burn
from burn_rl.buffer import (
    NStepAccumulator,
    PrioritizedReplayBuffer,
    ReplayBuffer,
    Transition,
)
from burn_rl.errors import BufferNotReadyError, ObservationShapeError

DEVICE = burn.Device("numpy")


def _steps(start: int, n: int) -> Transition:
    ids = np.arange(start, start + n)
    return Transition(np.stack([ids, -ids], 1).astype(np.float32), ids % 3,
                      ids.astype(np.float32), np.stack([ids + 1, -ids], 1).astype(np.float32),
                      np.full(n, 0.99, np.float32))


def test_ring_overwrites_oldest_and_samples_tensors() -> None:
    buffer = ReplayBuffer(5, (2,), seed=0)
    buffer.add(_steps(0, 3))
    slots = buffer.add(_steps(3, 4))  # wraps: items 5, 6 overwrite 0, 1
    np.testing.assert_array_equal(slots, [3, 4, 0, 1])
    assert len(buffer) == 5
    batch = buffer.sample(5, DEVICE)
    assert batch.observation.shape == (5, 2) and batch.observation.dtype == burn.float32
    assert batch.action.shape == (5,) and batch.action.dtype == burn.int64
    assert batch.reward.shape == (5,) and batch.discount.dtype == burn.float32
    assert batch.next_observation.device == DEVICE
    ids = np.asarray(batch.reward.to_numpy()).astype(int)
    assert set(ids) <= {2, 3, 4, 5, 6}
    # every field of a sampled row comes from the same transition
    np.testing.assert_array_equal(np.asarray(batch.observation.to_numpy())[:, 0], ids)
    np.testing.assert_array_equal(np.asarray(batch.next_observation.to_numpy())[:, 0], ids + 1)
    np.testing.assert_array_equal(np.asarray(batch.action.to_numpy()), ids % 3)


def test_sampling_before_a_batch_and_bad_shapes_raise() -> None:
    buffer = ReplayBuffer(10, (2,))
    buffer.add(_steps(0, 3))
    with pytest.raises(BufferNotReadyError, match=r"batch_size=4, stored=3"):
        buffer.sample(4)
    bad = Transition(np.zeros((2, 3), np.float32), np.zeros(2, np.int64), np.zeros(2),
                     np.zeros((2, 3), np.float32), np.zeros(2))
    with pytest.raises(ObservationShapeError, match=r"observation.*got=\(2, 3\)"):
        buffer.add(bad)


def test_state_dict_round_trip_continues_identically() -> None:
    buffer = PrioritizedReplayBuffer(8, (2,), seed=3)
    buffer.add(_steps(0, 6))
    batch = buffer.sample(4)
    buffer.update_priorities(batch.index, np.arange(4.0))
    copy = PrioritizedReplayBuffer(8, (2,), seed=99)
    copy.load_state_dict(buffer.state_dict())
    a, b = buffer.sample(5), copy.sample(5)
    np.testing.assert_array_equal(a.index, b.index)
    np.testing.assert_allclose(a.weight.to_numpy(), b.weight.to_numpy())


def test_prioritized_sampling_is_proportional_with_is_weights() -> None:
    buffer = PrioritizedReplayBuffer(4, (2,), alpha=1.0, beta=0.5, epsilon=0.0, seed=0)
    buffer.add(_steps(0, 4))
    td = np.array([1.0, 2.0, 3.0, 4.0])
    buffer.update_priorities(np.arange(4), td)
    counts = np.zeros(4)
    for _ in range(2500):
        counts += np.bincount(buffer.sample(4).index, minlength=4)
    probability = td / td.sum()
    # 10000 draws: the frequencies are within 0.02 of p (a > 5 sigma miss)
    np.testing.assert_allclose(counts / counts.sum(), probability, atol=0.02)
    batch = buffer.sample(4)
    weight = (4 * probability[batch.index]) ** -0.5
    assert batch.weight.shape == (4,) and batch.weight.dtype == burn.float32
    np.testing.assert_allclose(batch.weight.to_numpy(), weight / weight.max(), rtol=1e-6)


def test_new_transitions_get_the_highest_priority() -> None:
    buffer = PrioritizedReplayBuffer(4, (2,), alpha=1.0, epsilon=0.0)
    buffer.add(_steps(0, 2))
    buffer.update_priorities(np.array([0, 1]), np.array([0.5, 3.0]))
    buffer.add(_steps(2, 1))
    np.testing.assert_allclose(buffer.tree[np.arange(3)], [0.5, 3.0, 3.0])


def test_n_step_returns_by_hand() -> None:
    gamma = 0.5
    acc = NStepAccumulator(3, gamma, num_envs=1)
    obs = [np.array([[float(t)]], np.float32) for t in range(6)]
    rewards = [1.0, 2.0, 4.0, 8.0, 16.0]
    terminated = [False, False, False, False, True]
    out = []
    for t in range(5):
        tr = acc.push(obs[t], np.array([t]), np.array([rewards[t]]), obs[t + 1],
                      np.array([terminated[t]]), np.array([False]))
        if tr is not None:
            out.append(tr)
    got = Transition(*(np.concatenate([getattr(o, f) for o in out]) for f in
                       ("observation", "action", "reward", "next_observation", "discount")))
    # t=0: 1 + 0.5*2 + 0.25*4 = 3, bootstraps from s3 with gamma^3; t=1: 2 + 2 + 2 = 6 from s4;
    # the episode ends at t=4 (terminal): t=2: 4 + 4 + 4 = 12, t=3: 8 + 8 = 16, t=4: 16, no
    # bootstrap.
    np.testing.assert_array_equal(got.action, [0, 1, 2, 3, 4])
    np.testing.assert_allclose(got.reward, [3.0, 6.0, 12.0, 16.0, 16.0])
    np.testing.assert_allclose(got.discount, [0.125, 0.125, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(got.next_observation[:, 0], [3, 4, 5, 5, 5])


def test_n_step_truncation_bootstraps() -> None:
    acc = NStepAccumulator(3, 0.5, num_envs=1)
    o = np.zeros((1, 1), np.float32)
    assert acc.push(o, np.array([0]), np.array([1.0]), o + 1, np.array([False]),
                    np.array([False])) is None
    tr = acc.push(o + 1, np.array([1]), np.array([2.0]), o + 2, np.array([False]),
                  np.array([True]))
    assert tr is not None
    np.testing.assert_allclose(tr.reward, [2.0, 2.0])
    np.testing.assert_allclose(tr.discount, [0.25, 0.5])
