"""DQN training on CartPole-v1: environment steps per second of burn-rl's `DqnAgent` against a
PyTorch implementation of the same agent (CleanRL's dqn.py: 4-120-84-2 ReLU network, Adam
2.5e-4, batch 128, one gradient step every 10 environment steps, target copied every 500),
measured in the same run, interleaved, at 1 and 2 threads (each in its own process, so numpy's
BLAS and torch get the thread count before they start).

One timed call is one training cadence: 10 environment steps (epsilon 0.05, so most steps run a
greedy forward pass) and one gradient step, with the replay buffer already past learning_starts.
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from burn_bench.threads import rerun_with_threads, run_each

ENV_ID = "CartPole-v1"
HIDDEN = (120, 84)
LR, GAMMA, BATCH, BUFFER = 2.5e-4, 0.99, 128, 10_000
TRAIN_FREQUENCY, TARGET_UPDATE, EPSILON, WARMUP = 10, 500, 0.05, 1_000


def torch_cadence_fn() -> Callable[[], None]:
    """A closure running one training cadence of the PyTorch DQN."""
    import gymnasium as gym
    import torch

    torch.manual_seed(0)
    env = gym.make_vec(ENV_ID, 1, vectorization_mode="sync",
                       vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP})
    sizes = [4, *HIDDEN, 2]
    layers: list[torch.nn.Module] = []
    for a, b in zip(sizes, sizes[1:], strict=False):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    q = torch.nn.Sequential(*layers[:-1])
    target = copy.deepcopy(q)
    optimizer = torch.optim.Adam(q.parameters(), lr=LR)
    rng = np.random.default_rng(0)
    store: dict[str, np.ndarray] = {
        "obs": np.zeros((BUFFER, 4), np.float32), "next": np.zeros((BUFFER, 4), np.float32),
             "action": np.zeros(BUFFER, np.int64), "reward": np.zeros(BUFFER, np.float32),
             "discount": np.zeros(BUFFER, np.float32)}
    state: dict[str, Any] = {"obs": env.reset(seed=0)[0], "steps": 0}

    def env_step() -> None:
        obs = state["obs"]
        if rng.random() < EPSILON:
            action = rng.integers(0, 2, 1)
        else:
            with torch.no_grad():
                action = q(torch.from_numpy(obs)).numpy().argmax(1)
        next_obs, reward, terminated, _, info = env.step(action)
        real_next = info["final_obs"][0] if info.get("_final_obs", [False])[0] else next_obs[0]
        slot = state["steps"] % BUFFER
        store["obs"][slot], store["next"][slot] = obs[0], real_next
        store["action"][slot], store["reward"][slot] = action[0], reward[0]
        store["discount"][slot] = GAMMA * (1.0 - terminated[0])
        state["obs"], state["steps"] = next_obs, state["steps"] + 1

    def gradient_step() -> None:
        index = rng.integers(0, min(state["steps"], BUFFER), BATCH)
        obs, nxt = torch.from_numpy(store["obs"][index]), torch.from_numpy(store["next"][index])
        with torch.no_grad():
            online_next = q(nxt).argmax(1, keepdim=True)
            value = target(nxt).gather(1, online_next).squeeze(1)
            y = (torch.from_numpy(store["reward"][index])
                 + torch.from_numpy(store["discount"][index]) * value)
        taken = q(obs).gather(1, torch.from_numpy(store["action"][index]).unsqueeze(1)).squeeze(1)
        loss = torch.nn.functional.huber_loss(taken, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    for _ in range(WARMUP):
        env_step()

    def cadence() -> None:
        for _ in range(TRAIN_FREQUENCY):
            env_step()
            if state["steps"] % TARGET_UPDATE == 0:
                target.load_state_dict(q.state_dict())
        gradient_step()

    return cadence


def burn_cadence_fn() -> Callable[[], None]:
    """A closure running one training cadence of burn-rl's DqnAgent (numpy+autodiff)."""
    import burn_rl

    config = burn_rl.DqnConfig(hidden=HIDDEN, learning_rate=LR, gamma=GAMMA, batch_size=BATCH,
                               buffer_size=BUFFER, learning_starts=WARMUP,
                               train_frequency=TRAIN_FREQUENCY,
                               target_update_interval=TARGET_UPDATE,
                               exploration=burn_rl.LinearSchedule(EPSILON, EPSILON, 1))
    agent = burn_rl.DqnAgent(burn_rl.make(ENV_ID, validate=True), config, "numpy", seed=0)
    state: dict[str, Any] = {"obs": agent.env.reset(seed=0)}
    for _ in range(WARMUP - 1):
        state["obs"] = agent.train_step(state["obs"])[0].observation

    def cadence() -> None:
        for _ in range(TRAIN_FREQUENCY):
            state["obs"] = agent.train_step(state["obs"])[0].observation

    return cadence


def measure(threads: int) -> str:
    """The report of one thread count (run in a process started with that many threads)."""
    import torch

    from burn_bench.timing import Candidate, measure_interleaved

    torch.set_num_threads(threads)
    results = measure_interleaved([
        Candidate("torch DQN cadence", torch_cadence_fn()),
        Candidate("burn-rl DqnAgent cadence", burn_cadence_fn(), vs="torch DQN cadence"),
    ], min_time=0.5, rounds=5)
    torch_s, burn_s = (r.seconds for r in results)
    lines = [f"## DQN training on {ENV_ID}, {threads} thread(s): 10 env steps + 1 gradient step",
             f"{'candidate':<28}{'per cadence':>14}{'env steps/s':>14}   speed ratio"]
    for r in results:
        ratio = f"{torch_s / burn_s:.2f}x vs torch" if r.vs else ""
        lines.append(f"{r.name:<28}{r.seconds * 1e3:>11.2f} ms{TRAIN_FREQUENCY / r.seconds:>14.0f}"
                     f"   {ratio}")
    return "\n".join(lines)


def run() -> str:
    """Measure at 1 and 2 threads, each in a fresh process; return both reports."""
    return run_each("burn_bench.dqn", [], "dqn-step bench")


def main(argv: list[str] | None = None) -> None:
    """`python -m burn_bench.dqn --threads N`: one thread count's report, in this process
    where its thread variables are N, else in a child with them set
    (`threads.rerun_with_threads`)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, required=True)
    threads = parser.parse_args(argv).threads
    if rerun_with_threads("burn_bench.dqn", argv, threads):
        return
    print(measure(threads))


if __name__ == "__main__":
    main()
