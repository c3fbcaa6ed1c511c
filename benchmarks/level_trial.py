"""One arm, one seed, at one level: the learning curve of a candidate preset (how the level presets were chosen).

Trains ``--arm`` at ``--level`` with ``shared.yml``'s hyperparameters and ``--set NAME=VALUE`` on top (values
read as YAML: ``--set hidden_sizes=[256,256] --set gamma=0.95``), without stopping when solved, and prints
each evaluation: env steps, wall seconds, greedy success, greedy step reward, rolling reward, solved (the
level's bar).

    python benchmarks/level_trial.py --arm flax-numpy --level Random --steps 1000000 --eval-every 50000 \
        --set hidden_sizes=[256,256] --set gamma=0.95
"""

from __future__ import annotations

import argparse

import yaml

from doors_gym.levels import LEVEL_NAMES, get_level
from doors_gym_baselines.arms import ARMS, get_arm
from doors_gym_baselines.config import level_run
from doors_gym_baselines.metrics import solved_reward
from doors_gym_baselines.presets import SHARED, load_preset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arm", choices=tuple(ARMS), default="flax-numpy")
    parser.add_argument("--level", choices=LEVEL_NAMES, default="Random")
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--eval-every", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args()
    changes = {}
    for item in args.set:
        name, _, value = item.partition("=")
        parsed = yaml.safe_load(value)
        changes[name] = tuple(parsed) if isinstance(parsed, list) else parsed
    arm = get_arm(args.arm)
    config = load_preset(SHARED, arm.name).config(None)
    layout = level_run(get_level(args.level))
    config = config.replace(
        total_steps=args.steps, eval_every=args.eval_every, seed=args.seed, quiet=True, stop_when_solved=False,
        **layout, **changes,
    )
    print(f"{arm.name} at {args.level}, seed {args.seed}, changes {changes}; bar {solved_reward(config.params)}")
    result = arm.train(config)
    print("| env steps | wall s | greedy success | greedy step reward | rolling reward | solved |")
    print("|---:|---:|---:|---:|---:|---|")
    for row in result.history:
        print(
            f"| {row.step} | {row.seconds:.1f} | {row.greedy_success_rate:.3f} | {row.greedy_step_reward:.3f} "
            f"| {row.rolling_reward:.3f} | {row.solved} |"
        )
    print(f"env steps per second {result.env_steps / result.wall_seconds:,.0f}")


if __name__ == "__main__":
    main()
