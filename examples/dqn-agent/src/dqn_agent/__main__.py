"""Train a DQN agent on CartPole-v1 until its greedy policy solves it (mean return >= 475 over
100 evaluation episodes), then save it and its learning curve:
`python -m dqn_agent [--seed N] [--max-steps N] [--artifact-dir DIR]`."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import burn_rl
from burn.record.files import atomic_path
from burn_rl import DqnAgent, DqnConfig, LinearSchedule, evaluate

ENV_ID = "CartPole-v1"
SOLVED = 475.0

#: Stable-Baselines3's tuned CartPole-v1 DQN settings (rl-baselines3-zoo): 256-256 network,
#: lr 2.3e-3, batch 64, 128 gradient steps every 256 environment steps, target copied every
#: 10 steps, epsilon 1 -> 0.04 over the first 8000 steps, gradient norm clipped at 10, plain
#: (not double) DQN.
CONFIG = DqnConfig(hidden=(256, 256), learning_rate=2.3e-3, batch_size=64,
                   buffer_size=100_000, learning_starts=1_000, train_frequency=256,
                   gradient_steps=128, target_update_interval=10, double=False,
                   max_grad_norm=10.0, exploration=LinearSchedule(1.0, 0.04, 8_000))


def run(seed: int, max_steps: int, artifact_dir: Path, eval_every: int = 2_000,
        eval_episodes: int = 100, progress: bool = True) -> dict[str, float | None]:
    """Train, evaluating the greedy policy every `eval_every` steps after exploration ends (10
    episodes; the full `eval_episodes` when those pass), and stop when it is solved.

    Returns:
        The figures: solved (0/1), env_steps, eval_mean, eval_std (None where no full
        evaluation ran), wall_seconds.
    """
    start = time.perf_counter()
    agent = DqnAgent(burn_rl.make(ENV_ID), CONFIG, seed=seed)
    best: dict[str, float | None] = {"eval_mean": None, "eval_std": None}

    def check(agent: DqnAgent, row: dict[str, float]) -> bool:
        if agent.env_steps % eval_every or agent.env_steps < 8_000:
            return False
        if evaluate(agent, ENV_ID, 10, seed=seed + 20_000).mean < SOLVED:
            return False
        result = evaluate(agent, ENV_ID, eval_episodes, seed=seed + 10_000)
        print(f"  eval at {agent.env_steps} steps: {result.mean:.1f} +- {result.std:.1f}",
              flush=True)
        if best["eval_mean"] is None or result.mean > best["eval_mean"]:
            best.update(eval_mean=result.mean, eval_std=result.std)
            agent.save(artifact_dir / "best")
        return result.mean >= SOLVED

    agent.learn(max_steps, log_interval=1_000, artifact_dir=artifact_dir, progress=progress,
                callback=check)
    mean = best["eval_mean"]
    figures = {"solved": float(mean is not None and mean >= SOLVED),
               "env_steps": float(agent.env_steps), "eval_mean": mean,
               "eval_std": best["eval_std"], "wall_seconds": time.perf_counter() - start}
    with atomic_path(artifact_dir / "result.json") as partial:  # (never half-written)
        partial.write_text(json.dumps(figures, indent=2))
    return figures


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; exit status 1 when CartPole is not solved."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-steps", type=int, default=100_000)
    parser.add_argument("--artifact-dir", type=Path, default=Path("artifacts/dqn-agent"),
                        help="logs, learning_curve.png, best/ checkpoint (default: %(default)s)")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    args = parser.parse_args(argv)
    figures = run(args.seed, args.max_steps, args.artifact_dir, progress=not args.quiet)
    mean, std = figures["eval_mean"], figures["eval_std"]
    evaluated = ("no full evaluation (the greedy policy never passed the 10-episode check)"
                 if mean is None or std is None
                 else f"mean return {mean:.1f} +- {std:.1f} over 100 episodes")
    print(f"{'solved' if figures['solved'] else 'NOT solved'} in {figures['env_steps']:.0f} "
          f"environment steps ({figures['wall_seconds']:.0f} s): {evaluated}; "
          f"curve: {args.artifact_dir / 'learning_curve.png'}")
    return 0 if figures["solved"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
