"""One arm at one level: the learning curve of a candidate preset (how the level presets were chosen).

Trains ``--arm`` at ``--level`` with ``--preset``'s hyperparameters (default: the level's shared preset,
``shared.yml``'s with ``hyperparams/level-<level>.yml`` on top; a preset named as ``doors-gym train --level``
reads it: a library arm's own with the level's budget) and ``--set
NAME=VALUE`` on top (values read as YAML: ``--set hidden_sizes=[256,256] --set gamma=0.98``), without stopping
when solved, and prints each evaluation as it comes (so a probe cut short still shows its curve): env steps,
wall seconds, greedy success, greedy step reward, rolling reward, solved (the level's bar). ``--seeds N`` trains
seeds ``--seed`` to ``--seed + N - 1`` together in one run (arms that train seeds together, as ``flax-scan``)
and prints each seed's success and rolling reward.

    python benchmarks/level_trial.py --arm flax-numpy --level Random --steps 1000000 --eval-every 50000 \
        --preset shared --set hidden_sizes=[256,256] --set gamma=0.95
    python benchmarks/level_trial.py --arm flax-scan --level 3Walls --steps 8000000 --eval-every 250000 --seeds 3

``--checkpoint FILE`` (``flax-scan``) makes a long probe resumable: run the same command again after a kill and it
goes on from its last segment, its ``--log`` read back and continued.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib

import yaml

from doors_gym.levels import LEVEL_NAMES
from doors_gym_baselines.arms import ARMS, get_arm
from doors_gym_baselines.levels import TrainingLevel
from doors_gym_baselines.harness.metrics import HistoryRow, solved_reward
from doors_gym_baselines.presets import SHARED


class LivePrinter:
    """A :class:`~doors_gym_baselines.harness.Reporter` that prints each evaluation's row as it is made.

    ``resume``: the run goes on from a checkpoint, so the log is read back rather than rewritten: its rows are
    printed again and kept, and a row the resumed run makes again (from its last segment) replaces the old one.
    """

    def __init__(self, seeds: int, log: str | None = None, header: dict | None = None, resume: bool = False) -> None:
        self.seeds = seeds
        self.last_step = -1
        self.path = None if log is None else pathlib.Path(log)
        self.lines = [header or {}]
        if resume and self.path is not None and self.path.exists():
            read = [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines() if line.strip()]
            self.lines += [line for line in read[1:] if "step" in line]  # its rows, not a finished run's end
        per_seed = " | success by seed | rolling by seed" if seeds > 1 else ""
        print(f"| env steps | wall s | greedy success | greedy step reward | rolling reward | solved{per_seed} |")
        print("|---:|---:|---:|---:|---:|---|" + ("---|---|" if seeds > 1 else ""), flush=True)
        for figures in self.lines[1:]:
            self.print_row(figures)
        self.write()

    def write(self, end: dict | None = None) -> None:
        """Writes the log whole (header, rows and ``end``): a run stopped at a wall limit keeps its curve."""
        if self.path is not None:
            lines = self.lines + ([end] if end else [])
            partial = self.path.with_name(self.path.name + ".partial")
            partial.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
            os.replace(partial, self.path)  # whole or not at all: a kill while writing keeps the last log

    def print_row(self, figures: dict) -> None:
        """One evaluation's row of the printed table."""
        line = (
            f"| {figures['step']} | {figures['seconds']:.1f} | {figures['greedy_success_rate']:.3f} "
            f"| {figures['greedy_step_reward']:.3f} | {figures['rolling_reward']:.3f} | {figures['solved']}"
        )
        if self.seeds > 1:
            line += " | " + " ".join(f"{seed['greedy_success_rate']:.3f}" for seed in figures["per_seed"])
            line += " | " + " ".join(f"{seed['rolling_reward']:.3f}" for seed in figures["per_seed"])
        print(line + " |", flush=True)

    def observe(self, row: HistoryRow) -> float:
        self.last_step = int(row.step)
        seeds = [
            {"seed": seed.seed, "greedy_success_rate": seed.greedy_success_rate,
             "rolling_reward": seed.rolling_reward, "solved": seed.solved}
            for seed in row.per_seed
        ]
        figures = {
            "step": int(row.step), "seconds": row.seconds, "sps": row.sps,
            "greedy_success_rate": row.greedy_success_rate, "greedy_step_reward": row.greedy_step_reward,
            "rolling_reward": row.rolling_reward, "solved": row.solved, "per_seed": seeds,
            # the learner's side, to read a collapse by (the TD loss, exploration, training episodes' length)
            "loss": row.loss, "epsilon": row.epsilon, "train_episode_length": row.train_episode_length,
        }
        self.print_row(figures)
        self.lines = [line for line in self.lines if line.get("step", -1) < figures["step"]] + [figures]
        self.write()
        return row.greedy_step_reward

    def close(self, env_steps: int, wall_seconds: float) -> None:
        """Ends the log with the run's end: a log without it was cut short (a wall limit, a kill)."""
        self.write({"finished": True, "env_steps": env_steps, "wall_seconds": wall_seconds})

    def report(self, value: float, step: int) -> None:
        pass

    def should_prune(self) -> bool:
        return False


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arm", choices=tuple(ARMS), default="flax-numpy")
    parser.add_argument("--level", choices=LEVEL_NAMES, default="Random")
    parser.add_argument(
        "--preset", default=None,
        help="the hyperparameters the changes go on top of, a name or file, read at the level as train --level reads "
        "it (default: shared, the level's shared preset)",
    )
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--eval-every", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=1, help="seeds trained together in one run (from --seed)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument(
        "--stop-when-solved", action="store_true",
        help="stop once every seed is solved through the preset's hold-out window (as compare does)",
    )
    parser.add_argument(
        "--log", default=None,
        help="write each evaluation here as a JSON line as it comes (after a header line), with the TD loss, epsilon "
        "and training episodes' length beside the printed figures",
    )
    parser.add_argument(
        "--save", default=None, help="write the first seed's trained model here (doors-gym enjoy reads it)"
    )
    parser.add_argument(
        "--checkpoint", default=None,
        help="save the run's state here as it goes (a segment's end, once a minute) and, started again, go on "
        "from it (flax-scan): the log is then read back and continued, not rewritten",
    )
    return parser


def main() -> None:
    args = make_parser().parse_args()
    changes = {}
    for item in args.set:
        name, _, value = item.partition("=")
        parsed = yaml.safe_load(value)
        changes[name] = tuple(parsed) if isinstance(parsed, list) else parsed
    arm = get_arm(args.arm)
    level = TrainingLevel.named(args.level)
    preset = level.preset(args.preset or SHARED, arm.name)
    config = preset.config(None, arm.hyperparameters)
    layout = level.settings
    config = config.replace(
        total_steps=args.steps, eval_every=args.eval_every, seed=args.seed, num_seeds=args.seeds, quiet=True,
        stop_when_solved=args.stop_when_solved, checkpoint=args.checkpoint, **layout, **changes,
    )
    resume = args.checkpoint is not None and pathlib.Path(args.checkpoint).exists()
    print(
        f"{arm.name} at {args.level}, seeds {args.seed}-{args.seed + args.seeds - 1}, preset {preset.name}, "
        f"changes {changes}; bar {solved_reward(config.params)}",
        flush=True,
    )
    header = {
        "arm": arm.name, "level": args.level, "seed": args.seed, "seeds": args.seeds, "preset": preset.name,
        "changes": changes, "bar": solved_reward(config.params), "total_steps": args.steps,
        "hold_out_steps": config.run.hold_out_steps, "stop_when_solved": args.stop_when_solved,
    }
    printer = LivePrinter(args.seeds, args.log, header, resume=resume)
    result = arm.train(config, printer)
    if result.history and int(result.history[-1].step) != printer.last_step:  # the final evaluation, not reported
        printer.observe(result.history[-1])
    printer.close(int(result.env_steps), float(result.wall_seconds))
    print(f"env steps per second {result.env_steps / result.wall_seconds:,.0f}")
    if args.save:
        print(f"model: {arm.save(result, args.save)}")


if __name__ == "__main__":
    main()
