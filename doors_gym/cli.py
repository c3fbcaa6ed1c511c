"""``doors-gym``: play the env, render episodes to video, print the oracle's figures, and the plugged-in commands.

The env package knows only its own commands. Other installed packages add
theirs through the entry-point group :data:`COMMANDS_GROUP` (the DQN baselines
of this distribution add ``train``, ``enjoy``, ``tune`` and ``compare``): each
entry point is a function ``add_commands(commands, layout)`` that adds
subparsers to ``commands`` (with ``layout``, the shared layout flags, as a
parent where they apply) and sets ``handler`` on each, called with the parsed
arguments.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import Any

import numpy as np

from doors_gym import __version__, core, pixels, rendering
from doors_gym.extras import MissingExtra, NoDisplay, import_pygame, require_display
from doors_gym.levels import LEVEL_NAMES, get_level
from doors_gym.oracle import DEFAULT_LAYOUTS

ENV_CHOICES = ("Doors-v0", "DoorsJax-v0")
POLICIES = ("random", "oracle")
KEYS_HELP = "arrows or WASD move, space stays, Esc or closing the window quits"
COMMANDS_GROUP = "doors_gym.commands"
"""Entry-point group through which other packages add ``doors-gym`` subcommands."""
DEFAULT_FPS = 8


def positive_int(text: str) -> int:
    """An argparse type: an integer ``>= 1``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is out of range: expected an integer >= 1")
    return value


def layout_parser() -> argparse.ArgumentParser:
    """The layout flags every command that builds an env takes, as a parent parser."""
    parser = argparse.ArgumentParser(add_help=False)
    group = parser.add_argument_group("layout")
    group.add_argument(
        "--grid-size",
        type=int,
        nargs=2,
        metavar=("H", "W"),
        default=list(core.DEFAULT_GRID_SIZE),
        help=f"grid height and width, H >= 3, W >= 1, H * W <= {core.MAX_CELLS} (default: 15 15)",
    )
    group.add_argument("--n-doors", type=int, default=None, help="number of doors, 1..W (default: 3)")
    group.add_argument(
        "--door-cols", type=int, nargs="+", default=None, metavar="C", help="explicit door columns in [0, W)"
    )
    group.add_argument(
        "--max-episode-steps",
        type=int,
        default=core.DEFAULT_MAX_EPISODE_STEPS,
        help="time limit per episode, or -1 for none (default: %(default)s)",
    )
    return parser


def layout_keywords(args: argparse.Namespace) -> dict[str, Any]:
    """The env keywords of the layout flags (and of :func:`level_parser`'s, where the command has them)."""
    keywords = {
        "grid_size": tuple(args.grid_size),
        "n_doors": args.n_doors,
        "door_cols": args.door_cols,
        "max_episode_steps": args.max_episode_steps,
    }
    if not hasattr(args, "level"):
        return keywords
    keywords.update({"n_walls": args.n_walls, "doors": args.doors})
    if args.level is not None:
        keywords = _level_keywords(args, keywords)
    if keywords["max_episode_steps"] is None:
        keywords["max_episode_steps"] = core.default_time_limit(keywords["grid_size"], keywords["n_walls"] or 1)
    return {name: value for name, value in keywords.items() if value is not None}


def _level_keywords(args: argparse.Namespace, keywords: dict[str, Any]) -> dict[str, Any]:
    """``--level``'s layout, or ``ValueError`` naming a layout flag given beside it."""
    level = get_level(args.level)
    level.check_alone(keywords)
    return {**keywords, **level.keywords}


def level_parser() -> argparse.ArgumentParser:
    """``--level``, ``--n-walls`` and ``--doors``, for the env's own commands (a parent parser beside
    :func:`layout_parser`); with them ``--max-episode-steps`` defaults to the layout's ``(n_walls + 1) * (H + W)``."""
    parser = argparse.ArgumentParser(add_help=False)
    group = parser.add_argument_group("levels")
    group.add_argument(
        "--level",
        choices=LEVEL_NAMES,
        default=None,
        help="a registered level (SPEC.md): its grid, walls, doors and time limit; instead of the layout flags",
    )
    group.add_argument("--n-walls", type=int, default=None, help="number of walls, H >= 2 * n_walls + 1 (default: 1)")
    group.add_argument(
        "--doors",
        choices=core.DOOR_MODES,
        default=None,
        help="fixed: the gaps at --door-cols in every wall; random: drawn per episode (default: fixed)",
    )
    return parser


def takes_levels(command: argparse.ArgumentParser) -> None:
    """Lets ``command`` (a parser with the layout, level and viewer flags) default its time limit to the
    layout's and its cell size to one that fits the grid in :data:`doors_gym.pixels.DEFAULT_FRAME_PIXELS`.

    It changes the flags' actions, which argparse shares with every parser built on the same parent: give
    ``command`` a :func:`layout_parser` of its own.
    """
    helps = {
        "max_episode_steps": "time limit per episode, or -1 for none (default: the layout's, (n_walls + 1) * (H + W))",
        "cell_pixels": "pixels per cell (default: {}, fewer where a frame would be wider than "
        f"{pixels.DEFAULT_FRAME_PIXELS} pixels)",
    }
    largest = command.get_default("cell_pixels")
    for action in command._actions:
        if action.dest in helps:
            action.help = helps[action.dest].format(largest)
    command.set_defaults(max_episode_steps=None, cell_pixels=None, largest_cell_pixels=largest)


def viewer_arguments(parser: argparse.ArgumentParser, cell_pixels: int, fps: int = DEFAULT_FPS) -> None:
    """``--fps`` and ``--cell-pixels``, for every command that shows or records frames."""
    parser.add_argument("--fps", type=positive_int, default=fps, help="frames per second (default: %(default)s)")
    parser.add_argument(
        "--cell-pixels", type=positive_int, default=cell_pixels, help="pixels per cell (default: %(default)s)"
    )


def cell_pixels(args: argparse.Namespace, grid_size: tuple[int, int]) -> int:
    """``--cell-pixels``, or the command's default for the grid (:func:`doors_gym.pixels.default_cell_pixels`)."""
    if args.cell_pixels is not None:
        return args.cell_pixels
    return pixels.default_cell_pixels(grid_size, args.largest_cell_pixels)


def episodes_arguments(parser: argparse.ArgumentParser, episodes: int, out_required: bool) -> None:
    """``--episodes``, ``--out`` and the viewer flags, for every command that plays episodes to watch."""
    parser.add_argument(
        "--episodes", type=positive_int, default=episodes, help="number of episodes (default: %(default)s)"
    )
    where = "the output file" if out_required else "write the episodes to this file instead of a window"
    parser.add_argument("--out", type=pathlib.Path, required=out_required, default=None, help=f"{where}: .mp4 or .gif")
    viewer_arguments(parser, cell_pixels=24)


def env_command_parents() -> list[argparse.ArgumentParser]:
    """The parents of a command that builds an env: layout, level, ``--env`` and ``--seed`` flags.

    New parsers for each command: argparse shares a parent's actions with its children, and
    :func:`takes_levels` changes them.
    """
    env = argparse.ArgumentParser(add_help=False)
    env.add_argument(
        "--env", choices=ENV_CHOICES, default="Doors-v0", help="which implementation (default: %(default)s)"
    )
    env.add_argument("--seed", type=int, default=0, help="seed of the first episode (default: %(default)s)")
    return [layout_parser(), level_parser(), env]


def build_parser() -> argparse.ArgumentParser:
    """The ``doors-gym`` argument parser: the env commands and every plugged-in command."""
    layout = layout_parser()
    parser = argparse.ArgumentParser(
        prog="doors-gym",
        description=(
            "The Doors gridworld: cross a wall through one of its doors to reach the goal. "
            "Play it, record episodes to video, or print the optimal policy's figures."
        ),
        epilog="Examples:\n  doors-gym play\n  doors-gym render --policy oracle --episodes 3 --out episode.mp4\n"
        "  doors-gym oracle --level 31x31\n  doors-gym oracle --grid-size 9 21 --n-doors 4",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    play = commands.add_parser(
        "play",
        parents=env_command_parents(),
        help="play with the keyboard in a window",
        description=f"Play Doors in a pygame window: {KEYS_HELP}. Each key press is one step.",
    )
    viewer_arguments(play, cell_pixels=32, fps=30)
    takes_levels(play)
    play.set_defaults(handler=run_play)

    render = commands.add_parser(
        "render",
        parents=env_command_parents(),
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
    episodes_arguments(render, episodes=1, out_required=True)
    takes_levels(render)
    render.set_defaults(handler=run_render)

    add_oracle_command(commands)

    for add_commands in plugged_in_commands():
        add_commands(commands, layout)
    remember_subparsers(commands)
    return parser


def add_oracle_command(commands: Any) -> None:
    """The ``oracle`` subcommand: the layout and level flags (parsers of its own, as its time limit defaults to the
    layout's), ``--level all``, ``--layouts`` and ``--seed``."""
    oracle = commands.add_parser(
        "oracle",
        parents=[layout_parser(), level_parser()],
        help="print the shortest-path policy's figures at a level or on a layout",
        description="The shortest-path oracle's figures: mean per-step reward (0.776 on Doors-v0), longest shortest "
        "path and success, exact over every start/goal pair where the doors are fixed, estimated over sampled "
        "layouts with a 95 %% confidence interval where they are random. --level picks a registered level "
        "(--level all prints the table of every level); the layout flags describe any other layout.",
    )
    for action in oracle._actions:
        if action.dest == "level":  # the env commands' --level (a parser of its own), and "all"
            action.choices = (*LEVEL_NAMES, "all")
            action.help = "a registered level, or all of them as a table (default: the layout of the flags)"
    oracle.add_argument(
        "--layouts",
        type=positive_int,
        default=DEFAULT_LAYOUTS,
        help="layouts drawn where the doors are random (default: %(default)s)",
    )
    oracle.add_argument("--seed", type=int, default=0, help="seed of the layouts drawn (default: %(default)s)")
    oracle.set_defaults(handler=run_oracle, max_episode_steps=None)


def remember_subparsers(commands: Any) -> None:
    """Each subparser knows itself, so that errors print the subcommand's usage."""
    for subparser in commands.choices.values():
        subparser.set_defaults(parser=subparser)


def plugged_in_commands() -> list[Callable[[Any, argparse.ArgumentParser], None]]:
    """The ``add_commands`` functions of the :data:`COMMANDS_GROUP` entry points, by name."""
    return [entry.load() for entry in sorted(metadata.entry_points(group=COMMANDS_GROUP), key=lambda e: e.name)]


def _make_env(args: argparse.Namespace, render_mode: str, **extra: Any) -> Any:
    import gymnasium as gym

    import doors_gym  # noqa: F401  (registers the ids)

    keywords = layout_keywords(args)
    return gym.make(
        args.env, render_mode=render_mode, cell_pixels=cell_pixels(args, keywords["grid_size"]), **keywords, **extra
    )


def run_render(args: argparse.Namespace) -> int:
    """``doors-gym render``: record episodes to a video file."""
    from doors_gym.oracle import OraclePolicy

    if args.out.suffix.lower() not in rendering.VIDEO_SUFFIXES:
        raise ValueError(f"--out {str(args.out)!r} has suffix {args.out.suffix!r}: expected .mp4 or .gif")
    env = _make_env(args, "rgb_array")
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
    pygame = import_pygame("doors-gym play")
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
    """``doors-gym play``: one step per key press in a window (display only: no audio, no console noise)."""
    keys = keys_to_action()
    pygame = import_pygame("doors-gym play")
    require_display("play")
    env = _make_env(args, "rgb_array")
    window = rendering.HumanWindow("Doors - play", args.fps)
    print(f"Doors: {KEYS_HELP}.")
    env.reset(seed=args.seed)
    try:
        while window.show(env.render(), poll=False):
            events = window.poll()
            if events is None:
                break
            for event in events:
                if event.type != pygame.KEYDOWN:
                    continue
                if event.key == pygame.K_ESCAPE:
                    return 0
                action = keys.get((event.key,))
                if action is None:
                    continue
                _, _, terminated, truncated, _ = env.step(action)
                if terminated or truncated:
                    print("goal reached!" if terminated else "out of time", "- a new episode starts")
                    env.reset()
    finally:
        window.close()
        env.close()
    return 0


def run_oracle(args: argparse.Namespace) -> int:
    """``doors-gym oracle``: the optimum's figures at a level, at every level, or on the layout of the flags."""
    from doors_gym.levels import LEVELS, get_level

    if args.level is not None:
        given = layout_keywords(argparse.Namespace(**{**vars(args), "level": None}))
        defaults = layout_keywords(argparse.Namespace(**{**vars(args.parser.parse_args([])), "level": None}))
        changed = [f"--{name.replace('_', '-')}" for name in given if given[name] != defaults.get(name)]
        if changed:
            raise ValueError(f"level={args.level!r} comes with its own layout: leave out {' '.join(changed)}")
    if args.level == "all":
        print(oracle_table(LEVELS, args.layouts, args.seed))
        return 0
    if args.level is not None:
        level = get_level(args.level)
        print(f"level {level.name} ({level.env_id}, {level.jax_env_id}):", end=" ")
    from doors_gym.spaces import make_params

    params = make_params(**layout_keywords(args), default_limit=core.DEFAULT_TIME_LIMIT)
    print_oracle(params, args.layouts, args.seed)
    return 0


def layout_line(params: core.DoorsParams) -> str:
    """One line naming a layout: grid, walls, doors, time limit."""
    doors = f"doors at columns {list(params.door_cols)}" if params.door_cols is not None else "doors drawn per episode"
    walls = f"{params.n_walls} wall" + ("s" if params.n_walls > 1 else "")
    return (
        f"layout {params.grid_size}, {walls} of {params.n_doors} doors, {doors}, limit {params.max_episode_steps} steps"
    )


def print_oracle(params: core.DoorsParams, layouts: int, seed: int) -> None:
    """Prints the oracle's figures on one layout (exact, played in the env) or one level (sampled layouts)."""
    from doors_gym import oracle

    print(layout_line(params))
    pairs = params.width * params.width
    if not params.random_doors:
        played = oracle.evaluate_oracle(params)
        print(
            f"oracle over {pairs} start/goal pairs: success {played.success_rate:.3f}, "
            f"mean per-step reward {played.mean_step_reward:.4f}, longest path {played.longest_path} steps, "
            f"mean return {np.mean(played.returns):.3f}"
        )
        figures = oracle.level_figures(params) if played.success.all() else None
    else:
        figures = oracle.level_figures(params, layouts, seed)
        low, high = figures.mean_step_reward_ci
        print(
            f"oracle over {layouts} layouts drawn with seed {seed} (numpy default_rng), all {pairs} start/goal pairs "
            f"of each: success {figures.success_rate:.3f}, mean per-step reward {figures.mean_step_reward:.4f} "
            f"(95 % CI {low:.4f} to {high:.4f}), longest path {figures.longest_path} steps in the sample"
        )
        exact = oracle.enumerated_figures(params)
        if exact is not None:
            print(
                f"exact over all {exact.layouts} layouts: mean per-step reward {exact.mean_step_reward:.4f}, "
                f"longest path {exact.longest_path} steps"
            )
    if figures is not None:
        print(
            f"solved (SPEC): greedy success >= {oracle.SOLVED_SUCCESS:.0%} and rolling reward >= "
            f"{figures.solved_rolling_reward:.3f} ({oracle.SOLVED_REWARD_SHARE:.1%} of the optimum)"
        )


def oracle_table(levels: Sequence[Any], layouts: int, seed: int) -> str:
    """The oracle's figures at every level as a Markdown table."""
    from doors_gym import oracle

    rows = [
        "| level | ids | grid | walls x doors | doors | limit | mean step reward (95 % CI) | longest path | success "
        "| layouts | solved: rolling reward >= |",
        "|---|---|---|---:|---|---:|---|---:|---:|---|---:|",
    ]
    for level in levels:
        params = level.params()
        figures = oracle.level_figures(params, layouts, seed)
        low, high = figures.mean_step_reward_ci
        reward = f"{figures.mean_step_reward:.4f}" + ("" if figures.exact else f" ({low:.4f} to {high:.4f})")
        drawn = "1 (exact, all pairs)" if figures.exact else f"{figures.layouts} drawn, seed {figures.seed}"
        exact = None if figures.exact else oracle.enumerated_figures(params)
        if exact is not None:
            drawn += f"; all {exact.layouts}: {exact.mean_step_reward:.4f}, longest {exact.longest_path}"
        rows.append(
            f"| {level.name} | `{level.env_id}`, `{level.jax_env_id}` | {params.height} x {params.width} "
            f"| {params.n_walls} x {params.n_doors} | {params.doors} | {params.max_episode_steps} | {reward} "
            f"| {figures.longest_path} | {figures.success_rate:.3f} | {drawn} | {figures.solved_rolling_reward:.3f} |"
        )
    return "\n".join(rows)


def flag_names(message: str) -> str:
    """Keyword errors (``n_doors=0``) as flag errors (``--n-doors 0``), for the command line."""
    return re.sub(r"\b([a-z][a-z_]*)=", lambda match: f"--{match.group(1).replace('_', '-')} ", message)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``doors-gym`` console script and ``python -m doors_gym``."""
    return run(build_parser(), argv)


def run(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> int:
    """Parses ``argv`` and runs the chosen subcommand's ``handler``.

    A bad value exits 2 with the subcommand's usage and the flag named; a
    missing optional stack or display exits 1 with one line saying what to do.
    """
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except ValueError as error:
        args.parser.error(flag_names(str(error)))
    except (MissingExtra, NoDisplay) as error:
        print(f"doors-gym {args.command}: {error}", file=sys.stderr)
        return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
