"""Where a trained model's step reward falls short of the oracle's: episodes that miss the goal, or longer paths.

    python benchmarks/level_trial.py --arm flax-scan --level 63x63 ... --save /tmp/model.msgpack
    python benchmarks/policy_gap.py /tmp/model.msgpack --episodes 2000 --epsilon 0 0.001

Plays ``--episodes`` episodes of the model's level from seeded starts (seeds 20000 on, not the evaluation's) for
each ``--epsilon`` (0: greedy; the training's final epsilon: what the rolling reward counts), with the same starts
for every epsilon, and prints the step reward as the rolling reward counts it (total return over total steps), the
oracle's on the same starts (its shortest paths), and the gap split in two: the steps of episodes that miss the
goal (each runs to the time limit) and the extra steps of those that reach it. Epsilon-greedy draws its random
action uniformly among the 5, as the training loops do.
"""

from __future__ import annotations

import argparse
import dataclasses

import gymnasium as gym
import numpy as np

from doors_gym.core import distance
from doors_gym.oracle import optimal_steps
from doors_gym_baselines.config import level_of
from doors_gym_baselines.serving import load_model

FIRST_SEED = 20_000
"""Starts of these episodes: seeds from here on (the evaluation's and greedy_failures.py's are others)."""


def play(
    model, env: gym.Env, seed: int, epsilon: float, rng: np.random.Generator
) -> tuple[float, int, bool, int, float]:
    """One episode: its return, steps, whether it reached the goal, the oracle's steps from its start and the start's
    distance to the goal (the oracle's return)."""
    obs, _ = env.reset(seed=seed)
    state = env.unwrapped.state
    shortest = int(optimal_steps(env.unwrapped.params, state))
    start = float(distance(state.agent_row, state.agent_col, state.goal_row, state.goal_col))
    total, steps, terminated, truncated = 0.0, 0, False, False
    while not (terminated or truncated):
        if epsilon > 0 and rng.random() < epsilon:
            action = int(rng.integers(env.action_space.n))
        else:
            action = int(model.act(obs[None])[0])
        obs, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        steps += 1
    return total, steps, terminated, shortest, start


@dataclasses.dataclass(frozen=True)
class Gap:
    """A policy's episodes against the oracle's on the same starts."""

    epsilon: float
    episodes: int
    missed: int
    """Episodes that did not reach the goal (each ran to the time limit)."""
    step_reward: float
    """Total return over total steps, as the rolling reward counts it."""
    oracle_step_reward: float
    """The oracle's on the same starts: its return is each start's distance, its steps the shortest path's."""
    steps: int
    oracle_steps: int
    missed_steps: int
    """Steps of the missed episodes."""
    extra_steps: int
    """Steps beyond the shortest path in the episodes that reached the goal."""
    longer: float
    """Share of the reached episodes longer than the shortest path."""

    def line(self) -> str:
        return (
            f"epsilon {self.epsilon:g}: success {1 - self.missed / self.episodes:.4f} ({self.missed} missed), "
            f"step reward {self.step_reward:.4f} (oracle {self.oracle_step_reward:.4f}, "
            f"{self.step_reward / self.oracle_step_reward:.1%}), steps {self.steps} against the oracle's "
            f"{self.oracle_steps}: {self.missed_steps} in missed episodes, {self.extra_steps} extra in reached ones "
            f"({self.longer:.1%} of them longer than the shortest)"
        )


def measure(model, env: gym.Env, episodes: int, epsilon: float, seed: int = 0) -> Gap:
    """Plays ``episodes`` from seeds ``FIRST_SEED`` on with ``epsilon``-greedy (draws seeded by ``seed``)."""
    rng = np.random.default_rng(seed)
    rows = np.array([play(model, env, start, epsilon, rng) for start in range(FIRST_SEED, FIRST_SEED + episodes)])
    returns, steps, reached, shortest, starts = rows.T
    reached = reached.astype(bool)
    return Gap(
        epsilon=epsilon,
        episodes=episodes,
        missed=int((~reached).sum()),
        step_reward=float(returns.sum() / steps.sum()),
        oracle_step_reward=float(starts.sum() / shortest.sum()),
        steps=int(steps.sum()),
        oracle_steps=int(shortest.sum()),
        missed_steps=int(steps[~reached].sum()),
        extra_steps=int((steps[reached] - shortest[reached]).sum()),
        longer=float((steps[reached] > shortest[reached]).mean()) if reached.any() else 0.0,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a model file (doors-gym train --save, level_trial.py --save)")
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--epsilon", type=float, nargs="+", default=[0.0])
    parser.add_argument("--seed", type=int, default=0, help="seed of the epsilon draws")
    args = parser.parse_args()
    if args.episodes < 1:
        parser.error(f"--episodes must be at least 1, got {args.episodes}")
    for epsilon in args.epsilon:
        if not 0.0 <= epsilon <= 1.0:
            parser.error(f"--epsilon must be in [0, 1], got {epsilon}")
    _, model, config = load_model(args.model)
    level = level_of(config.params)
    if level is None:
        raise SystemExit(f"{args.model} was trained on a layout that is no registered level")
    env = gym.make(level.env_id, max_episode_steps=config.run.max_episode_steps)
    print(f"{args.model}: {level.name}, {args.episodes} episodes from seed {FIRST_SEED}")
    for epsilon in args.epsilon:
        print(measure(model, env, args.episodes, epsilon, args.seed).line(), flush=True)


if __name__ == "__main__":
    main()
