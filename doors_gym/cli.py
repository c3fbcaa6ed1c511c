"""``doors-gym``: play the env, render episodes to video, print the oracle's figures."""

from __future__ import annotations

import argparse
import pathlib
import re
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from doors_gym import __version__, core, rendering

ENV_CHOICES = ("Doors-v0", "DoorsJax-v0")
POLICIES = ("random", "oracle")
KEYS_HELP = "arrows or WASD move, space stays, Esc or closing the window quits"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is out of range: expected an integer >= 1")
    return value


def _layout_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(add_help=False)
    group = parser.add_argument_group("environment")
    group.add_argument(
        "--env", choices=ENV_CHOICES, default="Doors-v0", help="which implementation (default: %(default)s)"
    )
    group.add_argument(
        "--grid-size",
        type=int,
        nargs=2,
        metavar=("H", "W"),
        default=list(core.DEFAULT_GRID_SIZE),
        help="grid height and width, H >= 3, W >= 1 (default: 15 15)",
    )
    group.add_argument("--n-doors", type=int, default=None, help="number of doors, 1..W (default: 3)")
    group.add_argument(
        "--door-cols", type=int, nargs="+", default=None, metavar="C", help="explicit door columns in [0, W)"
    )
    group.add_argument(
        "--max-episode-steps",
        type=_positive_int,
        default=core.DEFAULT_MAX_EPISODE_STEPS,
        help="time limit per episode (default: %(default)s)",
    )
    group.add_argument("--seed", type=int, default=0, help="seed of the first episode (default: %(default)s)")
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The ``doors-gym`` argument parser."""
    layout = _layout_parser()
    parser = argparse.ArgumentParser(
        prog="doors-gym",
        description=(
            "The Doors gridworld: cross a wall through one of its doors to reach the goal. "
            "Play it, record episodes to video, or print the optimal policy's figures."
        ),
        epilog="Examples:\n  doors-gym play\n  doors-gym render --policy oracle --episodes 3 --out episode.mp4\n"
        "  doors-gym oracle --grid-size 9 21 --n-doors 4",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    play = commands.add_parser(
        "play",
        parents=[layout],
        help="play with the keyboard in a window",
        description=f"Play Doors in a pygame window: {KEYS_HELP}. Each key press is one step.",
    )
    play.add_argument("--cell-pixels", type=_positive_int, default=32, help="pixels per cell (default: %(default)s)")

    render = commands.add_parser(
        "render",
        parents=[layout],
        help="record episodes of a policy to an .mp4 or .gif",
        description="Run a policy for some episodes and write every frame to a video file "
        "(OpenCV, no other video stack).",
    )
    render.add_argument(
        "--policy",
        choices=POLICIES,
        default="oracle",
        help="who acts: random actions or the shortest-path oracle (default: %(default)s)",
    )
    render.add_argument("--episodes", type=_positive_int, default=1, help="number of episodes (default: %(default)s)")
    render.add_argument("--out", type=pathlib.Path, required=True, help="output file, .mp4 or .gif")
    render.add_argument("--fps", type=_positive_int, default=8, help="frames per second (default: %(default)s)")
    render.add_argument("--cell-pixels", type=_positive_int, default=24, help="pixels per cell (default: %(default)s)")

    baselines = _baselines_module("common")
    if baselines is not None:
        train = commands.add_parser(
            "train",
            help="train a DQN arm (torch, flax or flax-scan) on Doors-v0 or DoorsJax-v0",
            description="Train one DQN arm and print its figures. Every hyperparameter is a flag; "
            "--env is short for --env-id.",
        )
        train.add_argument("--arm", choices=ARMS, default="torch", help="which implementation (default: %(default)s)")
        baselines.add_config_arguments(train)
        train.add_argument("--save", default=None, help="write the trained model to this file (.pt for torch)")
        enjoy = commands.add_parser(
            "enjoy",
            help="watch a trained model's greedy episodes (window, .mp4 or .gif)",
            description="Load a model written by `doors-gym train --save` and play greedy episodes.",
        )
        enjoy.add_argument("model", help="a .pt (torch) or .msgpack (Flax) file")
        enjoy.add_argument(
            "--episodes", type=_positive_int, default=3, help="number of episodes (default: %(default)s)"
        )
        enjoy.add_argument("--out", type=pathlib.Path, default=None, help="write .mp4 or .gif instead of a window")
        enjoy.add_argument("--seed", type=int, default=0, help="seed of the first episode (default: %(default)s)")
        tune = commands.add_parser(
            "tune",
            help="tune a DQN arm with Optuna (TPE + Hyperband), tracked in MLflow",
            description="Run (or resume, or join as another worker) an Optuna study over one arm's hyperparameters. "
            "Storage: a local SQLite file unless --storage names another SQLAlchemy URL (PostgreSQL for workers on "
            "several machines). Every trial is a nested MLflow run under the study's parent run.",
        )
        _baselines_module("tuning").add_arguments(tune)
        compare = commands.add_parser(
            "compare",
            help="train every arm over several seeds and print the study's Table 2, reproduced",
            description="Train each arm over several seeds, evaluate greedily and write a table (Markdown and CSV) "
            "and learning curves, beside the oracle and the study's published figures; everything goes to MLflow. "
            "A killed comparison resumes from its finished runs.",
        )
        _baselines_module("compare").add_arguments(compare)

    commands.add_parser(
        "oracle",
        parents=[layout],
        help="print the shortest-path policy's figures over every start/goal pair",
        description="Evaluate the shortest-path oracle from every start/goal pair: success rate, mean per-step reward "
        "(0.776 on the default layout) and the longest path.",
    )
    return parser


def _env_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    return {"grid_size": tuple(args.grid_size), "n_doors": args.n_doors, "door_cols": args.door_cols}


def _make_env(args: argparse.Namespace, render_mode: str, **extra: Any) -> Any:
    import gymnasium as gym

    import doors_gym  # noqa: F401  (registers the ids)

    return gym.make(
        args.env, max_episode_steps=args.max_episode_steps, render_mode=render_mode, **_env_kwargs(args), **extra
    )


def run_render(args: argparse.Namespace) -> int:
    """``doors-gym render``: record episodes to a video file."""
    from doors_gym.oracle import OraclePolicy

    if args.out.suffix.lower() not in rendering.VIDEO_SUFFIXES:
        raise ValueError(f"--out {str(args.out)!r} has suffix {args.out.suffix!r}: expected .mp4 or .gif")
    env = _make_env(args, "rgb_array", cell_pixels=args.cell_pixels)
    oracle = OraclePolicy(env.unwrapped.params)
    frames = []
    successes = 0
    for episode in range(args.episodes):
        obs, _ = env.reset(seed=args.seed + episode)
        frames.append(env.render())
        total, steps, terminated, truncated = 0.0, 0, False, False
        while not (terminated or truncated):
            action = oracle(obs) if args.policy == "oracle" else int(env.action_space.sample())
            obs, reward, terminated, truncated, _ = env.step(action)
            frames.append(env.render())
            total += reward
            steps += 1
        successes += bool(terminated)
        print(
            f"episode {episode}: return {total:.3f} in {steps} steps, "
            + ("reached the goal" if terminated else "truncated")
        )
    env.close()
    path = rendering.write_video(frames, args.out, fps=args.fps)
    print(
        f"wrote {len(frames)} frames of {args.episodes} episode(s) to {path} "
        f"({successes}/{args.episodes} reached the goal)"
    )
    return 0


def keys_to_action() -> dict[tuple[int, ...], int]:
    """The keyboard map of ``play``: arrows and WASD move, space stays."""
    import pygame

    return {
        (pygame.K_RIGHT,): core.RIGHT,
        (ord("d"),): core.RIGHT,
        (pygame.K_DOWN,): core.DOWN,
        (ord("s"),): core.DOWN,
        (pygame.K_LEFT,): core.LEFT,
        (ord("a"),): core.LEFT,
        (pygame.K_UP,): core.UP,
        (ord("w"),): core.UP,
        (pygame.K_SPACE,): core.STAY,
    }


def run_play(args: argparse.Namespace) -> int:
    """``doors-gym play``: keyboard control through ``gymnasium.utils.play``."""
    from gymnasium.utils.play import play

    env = _make_env(args, "rgb_array", cell_pixels=args.cell_pixels)
    print(f"Doors: {KEYS_HELP}.")

    def report(
        obs_t: Any, obs_tp1: Any, action: int, reward: float, terminated: bool, truncated: bool, info: dict
    ) -> None:
        if terminated or truncated:
            print("goal reached!" if terminated else "out of time", "- a new episode starts")

    # play() resets with its seed after every episode: seed once here so episodes differ.
    env.reset(seed=args.seed)
    play(env, keys_to_action=keys_to_action(), noop=core.STAY, wait_on_player=True, callback=report, fps=30)
    return 0


def run_oracle(args: argparse.Namespace) -> int:
    """``doors-gym oracle``: the optimum's figures for a layout."""
    from doors_gym.oracle import evaluate_oracle

    params = core.DoorsParams(max_episode_steps=args.max_episode_steps, **_env_kwargs(args))
    figures = evaluate_oracle(params)
    pairs = params.width * params.width
    print(
        f"layout {params.grid_size}, doors at columns {list(params.door_cols)}, limit {params.max_episode_steps} steps"
    )
    print(
        f"oracle over {pairs} start/goal pairs: success {figures.success_rate:.3f}, "
        f"mean per-step reward {figures.mean_step_reward:.4f}, longest path {figures.longest_path} steps, "
        f"mean return {np.mean(figures.returns):.3f}"
    )
    return 0


ARMS = ("torch", "flax", "flax-scan")
ARM_MODULES = {"torch": "dqn_torch", "flax": "dqn_flax", "flax-scan": "dqn_flax_scan"}


def _baselines_module(name: str) -> Any:
    """A module of the DQN baselines: installed as ``doors_gym_baselines``, or ``baselines`` in a clone."""
    import importlib

    for package in ("doors_gym_baselines", "baselines"):
        try:
            return importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError as error:
            if error.name not in (package, f"{package}.{name}"):
                raise
    return None


def run_train(args: argparse.Namespace) -> int:
    """``doors-gym train``: one DQN arm, in-process."""
    import json

    config = _baselines_module("common").config_from_arguments(args)
    arm = _baselines_module(ARM_MODULES[args.arm])
    result = arm.train(config)
    print(json.dumps(result.summary(), indent=2))
    if args.save:
        arm.save_model(result, args.save)
        print(f"saved the model to {args.save}")
    return 0


def run_tune(args: argparse.Namespace) -> int:
    """``doors-gym tune``: one worker of an Optuna study."""
    tuning = _baselines_module("tuning")
    study = tuning.tune(tuning.options_from_arguments(args))
    print(tuning.describe(study))
    return 0


def run_compare(args: argparse.Namespace) -> int:
    """``doors-gym compare``: every arm over several seeds, the table and the plot."""
    compare = _baselines_module("compare")
    outcome = compare.compare(compare.options_from_arguments(args))
    print(outcome["table"])
    print("wrote " + ", ".join(str(path) for path in outcome["paths"].values()))
    return 0


def run_enjoy(args: argparse.Namespace) -> int:
    """``doors-gym enjoy``: greedy episodes of a saved model."""
    enjoy = _baselines_module("enjoy")
    print(enjoy.describe(enjoy.enjoy(args.model, args.episodes, args.out, args.seed), args.episodes, args.out))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``doors-gym`` console script and ``python -m doors_gym``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handlers = {
        "render": run_render,
        "play": run_play,
        "oracle": run_oracle,
        "train": run_train,
        "enjoy": run_enjoy,
        "tune": run_tune,
        "compare": run_compare,
    }
    try:
        return handlers[args.command](args)
    except ValueError as error:
        # Errors name keywords ("n_doors=0"); on the command line they are flags ("--n-doors 0").
        message = re.sub(r"\b([a-z][a-z_]*)=", lambda match: f"--{match.group(1).replace('_', '-')} ", str(error))
        parser.error(message)
    return 2


if __name__ == "__main__":
    sys.exit(main())
