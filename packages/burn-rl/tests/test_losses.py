"""DQN and PPO losses against PyTorch implementations on the same batch; GAE by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import burn
from burn_rl.agents.dqn import dqn_loss, dqn_targets
from burn_rl.agents.ppo import ActorCritic, gae, ppo_loss

AD = burn.Device("numpy").autodiff()


def _t(x: np.ndarray, grad: bool = False) -> burn.Tensor:
    t = burn.tensor(x, device=AD)
    return t.require_grad() if grad else t


@pytest.mark.parametrize("double", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_dqn_loss_matches_torch(double: bool, weighted: bool) -> None:
    rng = np.random.default_rng(0)
    n, a = 32, 3
    q = (rng.standard_normal((n, a)) * 2).astype(np.float32)
    nq_t = rng.standard_normal((n, a)).astype(np.float32)
    nq_o = rng.standard_normal((n, a)).astype(np.float32)
    action = rng.integers(0, a, n)
    reward = rng.standard_normal(n).astype(np.float32)
    discount = (0.99 * (rng.random(n) > 0.2)).astype(np.float32)
    weight = rng.random(n).astype(np.float32)

    q_b = _t(q, grad=True)
    target = dqn_targets(_t(nq_t), _t(reward), _t(discount), _t(nq_o) if double else None)
    loss, td = dqn_loss(q_b, _t(action), target, _t(weight) if weighted else None, delta=1.0)
    grad = q_b.grad(loss.backward())

    q_t = torch.from_numpy(q).requires_grad_()
    nt, no = torch.from_numpy(nq_t), torch.from_numpy(nq_o)
    value = nt.gather(1, no.argmax(1, keepdim=True)).squeeze(1) if double else nt.max(1).values
    y = torch.from_numpy(reward) + torch.from_numpy(discount) * value
    taken = q_t.gather(1, torch.from_numpy(action).unsqueeze(1)).squeeze(1)
    per = torch.nn.functional.huber_loss(taken, y, reduction="none", delta=1.0)
    ref = (per * torch.from_numpy(weight)).mean() if weighted else per.mean()
    ref.backward()

    assert loss.shape == () and loss.dtype == burn.float32
    assert td.shape == (n,) and target.shape == (n,)
    assert grad is not None and grad.shape == (n, a)
    np.testing.assert_allclose(target.to_numpy(), y.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss.item(), ref.item(), rtol=1e-5)
    np.testing.assert_allclose(td.to_numpy(), (taken - y).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert q_t.grad is not None
    np.testing.assert_allclose(grad.to_numpy(), q_t.grad.numpy(), rtol=1e-5, atol=1e-7)


def _cleanrl_ppo_loss(newlogprob, oldlogprob, adv, newvalue, oldvalue, returns, entropy,
                      clip, ent_coef, vf_coef, clip_vloss):  # type: ignore[no-untyped-def]
    """CleanRL's ppo.py loss, written in torch."""
    logratio = newlogprob - oldlogprob
    ratio = logratio.exp()
    pg1 = -adv * ratio
    pg2 = -adv * torch.clamp(ratio, 1 - clip, 1 + clip)
    pg_loss = torch.max(pg1, pg2).mean()
    if clip_vloss:
        unclipped = (newvalue - returns) ** 2
        clipped = oldvalue + torch.clamp(newvalue - oldvalue, -clip, clip)
        v_loss = 0.5 * torch.max(unclipped, (clipped - returns) ** 2).mean()
    else:
        v_loss = 0.5 * ((newvalue - returns) ** 2).mean()
    return pg_loss - ent_coef * entropy.mean() + v_loss * vf_coef, ((ratio - 1) - logratio).mean()


@pytest.mark.parametrize("clip_vloss", [True, False])
def test_ppo_loss_matches_torch(clip_vloss: bool) -> None:
    rng = np.random.default_rng(1)
    n = 64
    arrays = {k: rng.standard_normal(n).astype(np.float32) for k in
              ("new_lp", "adv", "new_v", "old_v", "ret", "ent")}
    arrays["old_lp"] = arrays["new_lp"] + (rng.standard_normal(n) * 0.3).astype(np.float32)
    grads_of = ("new_lp", "new_v", "ent")
    b = {k: _t(v, grad=k in grads_of) for k, v in arrays.items()}
    loss, stats = ppo_loss(b["new_lp"], b["old_lp"], b["adv"], b["new_v"], b["old_v"], b["ret"],
                           b["ent"], clip_coef=0.2, clip_vloss=clip_vloss, ent_coef=0.01,
                           vf_coef=0.5)
    grads = loss.backward()
    t = {k: torch.from_numpy(v).requires_grad_(k in grads_of) for k, v in arrays.items()}
    ref, kl = _cleanrl_ppo_loss(t["new_lp"], t["old_lp"], t["adv"], t["new_v"], t["old_v"],
                                t["ret"], t["ent"], 0.2, 0.01, 0.5, clip_vloss)
    ref.backward()
    assert loss.shape == () and loss.dtype == burn.float32
    np.testing.assert_allclose(loss.item(), ref.item(), rtol=1e-5)
    np.testing.assert_allclose(stats["approx_kl"].item(), kl.item(), rtol=1e-4)
    for k in grads_of:
        g = b[k].grad(grads)
        assert g is not None and g.shape == (n,)
        np.testing.assert_allclose(g.to_numpy(), t[k].grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("continuous", [False, True])
def test_actor_critic_log_prob_and_entropy_match_torch(continuous: bool) -> None:
    burn.seed(0, AD)
    model = ActorCritic(3, 2, continuous, (8,), init_log_std=-0.5, device=AD)
    rng = np.random.default_rng(2)
    obs = rng.standard_normal((10, 3)).astype(np.float32)
    action = (rng.standard_normal((10, 2)).astype(np.float32) if continuous
              else rng.integers(0, 2, 10))
    log_prob, entropy, value = model.evaluate(_t(obs), _t(action))
    assert log_prob.shape == (10,) and entropy.shape == (10,) and value.shape == (10,)
    out = torch.from_numpy(np.asarray(model.actor(_t(obs)).detach().to_numpy()))
    if continuous:
        std = torch.full((2,), -0.5).exp()
        dist = torch.distributions.Normal(out, std)
        ref_lp = dist.log_prob(torch.from_numpy(action)).sum(1)
        ref_ent = dist.entropy().sum(1)
    else:
        cat = torch.distributions.Categorical(logits=out)
        ref_lp, ref_ent = cat.log_prob(torch.from_numpy(action)), cat.entropy()
    np.testing.assert_allclose(log_prob.to_numpy(), ref_lp.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(entropy.to_numpy(), ref_ent.numpy(), rtol=1e-5, atol=1e-6)


def test_gae_by_hand() -> None:
    # one environment, 3 steps, the episode ends at step 1; gamma 0.5, lambda 0.5
    rewards = np.array([[1.0], [2.0], [3.0]], np.float32)
    values = np.array([[0.5], [1.0], [2.0]], np.float32)
    dones = np.array([[0.0], [1.0], [0.0]], np.float32)
    last = np.array([4.0], np.float32)
    adv, ret = gae(rewards, values, dones, last, gamma=0.5, lam=0.5)
    # delta2 = 3 + 0.5*4 - 2 = 3; A2 = 3
    # delta1 = 2 - 1 = 1 (episode ends: no bootstrap); A1 = 1
    # delta0 = 1 + 0.5*1 - 0.5 = 1; A0 = 1 + 0.25 * A1 = 1.25
    assert adv.shape == (3, 1) and adv.dtype == np.float32
    np.testing.assert_allclose(adv[:, 0], [1.25, 1.0, 3.0])
    np.testing.assert_allclose(ret[:, 0], [1.75, 2.0, 5.0])
