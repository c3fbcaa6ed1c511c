"""Where a trained model's greedy episodes fail: the cell each failing episode ends on and what it repeats there.

    python benchmarks/level_trial.py --arm flax-scan --level 31x31 ... --save /tmp/model.msgpack
    python benchmarks/greedy_failures.py /tmp/model.msgpack --episodes 300

Plays ``--episodes`` greedy episodes of the model's level from seeded starts (seeds 10000 on, not the
evaluation's) and prints, for each that does not reach the goal, the last cell, the goal's column and the actions
of its last 50 steps; then the failures grouped: stuck pushing into the top edge on the goal's row, pacing between
two cells, or another loop.
"""

from __future__ import annotations

import argparse
import collections

import gymnasium as gym
import numpy as np

from doors_gym.core import ACTION_NAMES, AGENT, GOAL
from doors_gym_baselines.config import level_of
from doors_gym_baselines.serving import load_model

TAIL = 50
"""The last steps of a failing episode that say what it repeats."""


def play(model, env: gym.Env, seed: int) -> tuple[bool, list[tuple[int, tuple[int, int]]], int]:
    """One greedy episode: whether it reached the goal, its (action, cell) steps and the goal's column."""
    obs, _ = env.reset(seed=seed)
    height, width = env.unwrapped.params.grid_size
    goal_column = int(np.argwhere(obs.reshape(height, width) == GOAL)[0][1])
    steps, done, terminated = [], False, False
    while not done:
        action = int(model.act(obs[None])[0])
        cell = tuple(int(x) for x in np.argwhere(obs.reshape(height, width) == AGENT)[0])
        steps.append((action, cell))
        obs, _, terminated, truncated, _ = env.step(action)
        done = terminated or truncated
    return terminated, steps, goal_column


def kind(steps: list[tuple[int, tuple[int, int]]]) -> str:
    """What a failing episode repeats at its end."""
    tail = steps[-TAIL:]
    cells = {cell for _, cell in tail}
    actions = collections.Counter(action for action, _ in tail)
    if len(cells) == 1:
        row = next(iter(cells))[0]
        action = ACTION_NAMES[actions.most_common(1)[0][0]]
        return f"stuck on row {'0 (the goal row)' if row == 0 else row}, pressing {action}"
    if len(cells) == 2:
        return "pacing between two cells"
    return f"a loop over {len(cells)} cells"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a model file (doors-gym train --save, level_trial.py --save)")
    parser.add_argument("--episodes", type=int, default=300)
    args = parser.parse_args()
    _, model, config = load_model(args.model)
    level = level_of(config.params)
    if level is None:
        raise SystemExit(f"{args.model} was trained on a layout that is no registered level")
    env = gym.make(level.env_id, max_episode_steps=config.run.max_episode_steps)
    level = level.name
    groups: collections.Counter[str] = collections.Counter()
    for seed in range(10_000, 10_000 + args.episodes):
        reached, steps, goal_column = play(model, env, seed)
        if reached:
            continue
        groups[kind(steps)] += 1
        actions = collections.Counter(ACTION_NAMES[action] for action, _ in steps[-TAIL:])
        print(f"seed {seed}: ends on {steps[-1][1]}, goal column {goal_column}, last {TAIL} actions {dict(actions)}")
    failed = sum(groups.values())
    print(f"\n{failed} of {args.episodes} greedy episodes failed at {level}:")
    for name, count in groups.most_common():
        print(f"  {count:4d}  {name}")


if __name__ == "__main__":
    main()
