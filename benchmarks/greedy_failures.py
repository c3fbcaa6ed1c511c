"""Where a trained model's greedy episodes fail: the cell each failing episode ends on and what it repeats there.

    python benchmarks/level_trial.py --arm flax-scan --level 31x31 ... --save /tmp/model.msgpack
    python benchmarks/greedy_failures.py /tmp/model.msgpack --episodes 300
    python benchmarks/greedy_failures.py /tmp/model.msgpack --episodes 400 --first-seed 20000 --values

Plays ``--episodes`` greedy episodes of the model's level from seeded starts (seeds ``--first-seed`` on, 10000 by
default: not the evaluation's) and prints, for each that does not reach the goal, the last cell, the goal's column
and the actions of its last 50 steps; then the failures grouped: stuck pushing into the top edge on the goal's row,
pacing between two cells, or another loop. With ``--values`` it also prints, at each failing episode's last cell,
the network's Q-values beside the values the learner is trained towards: the training's return (the env's reward
less the config's step cost, discounted by its gamma) of each action followed by the oracle's shortest path, a lower
bound of the optimal values; then the same comparison at the starts of the episodes that reach the goal.
"""

from __future__ import annotations

import argparse
import collections

import gymnasium as gym
import numpy as np

from doors_gym import core
from doors_gym.core import ACTION_NAMES, AGENT, GOAL, NUM_ACTIONS
from doors_gym.oracle import optimal_action, state_distances
from doors_gym_baselines.config import level_of
from doors_gym_baselines.serving import load_model

TAIL = 50
"""The last steps of a failing episode that say what it repeats."""


def play(model, env: gym.Env, seed: int) -> tuple[bool, list[tuple[int, tuple[int, int]]], int]:
    """One greedy episode: whether it reached the goal, its (action, cell) steps and the goal's column (the env's
    state is the episode's last)."""
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


def oracle_values(params: core.DoorsParams, state: core.DoorsState, gamma: float, cost: float) -> np.ndarray:
    """Each action's training return from ``state`` (reward less ``cost``, discounted by ``gamma``) when the oracle
    plays on after it: ``(NUM_ACTIONS,)``."""
    distances = state_distances(params, state)
    values = np.zeros(NUM_ACTIONS)
    for first in range(NUM_ACTIONS):
        here, total, discount, action = state, 0.0, 1.0, first
        while not core.terminated(here):
            after = core.transition(params, here, action)
            total += discount * (float(core.reward(core.state_distance(here), core.state_distance(after))) - cost)
            here, discount = after, discount * gamma
            action = int(optimal_action(distances, here.agent_row, here.agent_col, here.goal_row, here.goal_col))
        values[first] = total
    return values


def value_errors(model, params: core.DoorsParams, states: list[core.DoorsState], gamma: float, cost: float):
    """At each of ``states``: the network's Q-values, :func:`oracle_values`, the network's mean error over the
    actions, the spread of the oracle's values over the actions (best less worst), the spread of the network's errors
    (largest less smallest) and the regret of its greedy action (the oracle's best value less its)."""
    rows = []
    for state in states:
        want = oracle_values(params, state, gamma, cost)
        got = model.q_values(core.observation(params, state)[None])[0]
        error = got - want
        rows.append((got, want, error.mean(), np.ptp(want), np.ptp(error), want.max() - want[np.argmax(got)]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a model file (doors-gym train --save, level_trial.py --save)")
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--first-seed", type=int, default=10_000, help="the first episode's seed (default: 10000)")
    parser.add_argument(
        "--values", action="store_true", help="compare the network's Q-values with the oracle's returns (see above)"
    )
    args = parser.parse_args()
    _, model, config = load_model(args.model)
    level = level_of(config.params)
    if level is None:
        raise SystemExit(f"{args.model} was trained on a layout that is no registered level")
    env = gym.make(level.env_id, max_episode_steps=config.run.max_episode_steps)
    params, hyper = env.unwrapped.params, config.hyperparameters
    level = level.name
    groups: collections.Counter[str] = collections.Counter()
    ends, starts = [], []
    for seed in range(args.first_seed, args.first_seed + args.episodes):
        if args.values:
            env.reset(seed=seed)
            start = env.unwrapped.state
        reached, steps, goal_column = play(model, env, seed)
        if reached:
            if args.values:
                starts.append(start)
            continue
        groups[kind(steps)] += 1
        actions = collections.Counter(ACTION_NAMES[action] for action, _ in steps[-TAIL:])
        print(f"seed {seed}: ends on {steps[-1][1]}, goal column {goal_column}, last {TAIL} actions {dict(actions)}")
        if args.values:
            end = env.unwrapped.state
            ends.append(end)
            (got, want, *_), = value_errors(model, params, [end], hyper.gamma, hyper.step_cost)
            print(f"    at {(int(end.agent_row), int(end.agent_col))}: {'network Q':>10} {'oracle return':>14}  "
                  f"(gamma {hyper.gamma:g}, step cost {hyper.step_cost:g})")
            for action, name in enumerate(ACTION_NAMES):
                print(f"    {name:>12} {got[action]:10.2f} {want[action]:14.2f}")
    failed = sum(groups.values())
    print(f"\n{failed} of {args.episodes} greedy episodes failed at {level}:")
    for name, count in groups.most_common():
        print(f"  {count:4d}  {name}")
    if args.values:
        for name, states in (("failing episodes' last cells", ends), ("reaching episodes' starts", starts)):
            if not states:
                continue
            rows = value_errors(model, params, states, hyper.gamma, hyper.step_cost)
            _, _, mean_error, spread, error_spread, regret = (np.array(column) for column in zip(*rows))
            print(
                f"{name} ({len(states)}), medians: the network's values less the oracle's {np.median(mean_error):.2f} "
                f"({mean_error.min():.2f} to {mean_error.max():.2f}); the oracle's values spread over the actions "
                f"{np.median(spread):.3f}, the network's errors {np.median(error_spread):.3f}; the greedy action's "
                f"regret {np.median(regret):.3f} (at most {regret.max():.3f})"
            )


if __name__ == "__main__":
    main()
