"""The baselines' ``doors-gym`` commands: ``train``, ``enjoy``, ``tune`` and ``compare``.

They are plugged into ``doors-gym`` through the ``doors_gym.commands``
entry-point group (:func:`add_commands`), so the env package never imports the
baselines; the baselines only look down, at the env package's layout flags and
error handling. Every command takes the same ``--arm`` names (those of
:data:`doors_gym_baselines.arms.ARMS`) and the same layout flags as ``play``,
``render`` and ``oracle``; the other flags are generated from the dataclasses
of :mod:`.config`, :mod:`.tuning` and :mod:`.compare` (see :mod:`.flags`).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import pathlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

from doors_gym import cli as doors_cli
from doors_gym.levels import STUDY

from . import runtime
from .arms import ARMS, get_arm
from .config import HYPERPARAMETER_NAMES, LAYOUT_NAMES, Config, Hyperparameters, RunSettings, field_names, flags
from .experiments.compare import CompareOptions
from .experiments.executors import ExecutorOptions, RunsFailed, open_executor
from .levels import TrainingLevel
from .presets import RUN_FIELDS, PresetOptions
from .serving.enjoy import LARGEST_CELL_PIXELS
from .tracking import TrackOptions, track_training
from .tuning import TRIAL_RUN_FIELDS_OFF_THE_CLI, TUNING_RUN, TuneOptions

TRAIN_DESCRIPTION = (
    "Train one DQN arm and print its figures. Every hyperparameter and run setting is a flag; "
    "the arm names the framework and the env it trains against."
)


def add_enjoy_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``enjoy`` flags: the model file, the episodes and how to watch them."""
    parser.add_argument(
        "model", help="a model file of `doors-gym train --save`, or an MLflow model: runs:/ID/model, models:/NAME@ALIAS"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the first episode (default: %(default)s)")
    parser.add_argument(
        "--arm",
        choices=tuple(ARMS),
        default=None,
        help="read MODEL as this arm's file (default: told by its content)",
    )
    parser.add_argument(
        "--tracking-uri",
        default=None,
        help="where a runs:/ or models:/ MODEL is (default: $MLFLOW_TRACKING_URI or sqlite:///mlflow.db)",
    )
    doors_cli.episodes_arguments(parser, episodes=3, out_required=False)
    for action in parser._actions:
        if action.dest == "cell_pixels":
            action.help = f"pixels per cell (default: {LARGEST_CELL_PIXELS}, fewer where the model's grid would not fit)"
    parser.set_defaults(handler=run_enjoy, cell_pixels=None)


def add_tune_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``tune`` flags: the arm, the study's settings and every trial's run settings."""
    parser.add_argument("--arm", required=True, choices=tuple(ARMS), help="which arm to tune")
    flags.add_arguments(parser.add_argument_group("study"), TuneOptions, TuneOptions.shown_defaults())
    flags.add_arguments(
        parser.add_argument_group("every trial"),
        RunSettings,
        TUNING_RUN,
        exclude=TRIAL_RUN_FIELDS_OFF_THE_CLI,
        from_preset=TUNING_BUDGET,
    )
    parser.set_defaults(handler=run_tune)


TUNING_BUDGET = ("total_steps", "eval_every", "hold_out_steps")
"""A trial's budget: tuning's own at the study's level, the level's shared preset's at another, unless typed."""


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``compare`` flags: the comparison's settings and the machinery of every run."""
    flags.add_arguments(parser.add_argument_group("comparison"), CompareOptions, CompareOptions.shown_defaults())
    add_machinery_arguments(parser)
    parser.set_defaults(handler=run_compare)


def add_machinery_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``compare`` and ``ladder`` on how every run trains: where (the executor) and with what."""
    flags.add_arguments(parser.add_argument_group("executor"), ExecutorOptions)
    flags.add_arguments(
        parser.add_argument_group("machinery"), RunSettings, include=("vectorization", "device", "quiet")
    )


def add_ladder_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``ladder`` flags: the ladder's settings and the machinery of every run."""
    from .experiments.ladder import LadderOptions

    flags.add_arguments(parser.add_argument_group("ladder"), LadderOptions, LadderOptions.shown_defaults())
    add_machinery_arguments(parser)
    parser.set_defaults(handler=run_ladder)


COMMANDS = {
    "train": (
        "train one DQN arm and print its figures",
        TRAIN_DESCRIPTION,
        "levels",
        lambda p: add_train_arguments(p, tuple(ARMS)),
    ),
    "enjoy": (
        "watch a trained model's greedy episodes (window, .mp4 or .gif)",
        "Load a model written by `doors-gym train --save` (any arm; the file's content says which) and play greedy "
        "episodes in a window, or write them to a video.",
        None,
        add_enjoy_arguments,
    ),
    "tune": (
        "tune a DQN arm with Optuna (TPE + Hyperband), tracked in MLflow",
        "Run (or resume, or join as another worker) an Optuna study over one arm's hyperparameters. Storage: a local "
        "SQLite file unless --storage names another SQLAlchemy URL (PostgreSQL for workers on several machines). With "
        "--executor dask the trials train on the Dask cluster compare uses, asked and logged by this command. "
        "Every trial is a nested MLflow run under the study's parent run. At a level (--level), the study starts "
        "from the level's shared preset and budget (a library arm: from its own tuned preset, with that budget).",
        "levels",
        add_tune_arguments,
    ),
    "compare": (
        "train every arm over several seeds and print the study's Table 2, reproduced",
        "Train each arm over several seeds, evaluate greedily and write a table (Markdown and CSV) and learning "
        "curves, beside the oracle and the study's published figures; everything goes to MLflow. A killed "
        "comparison resumes from its finished runs.",
        "layout",
        add_compare_arguments,
    ),
    "ladder": (
        "train every arm at every level of the Doors suite: time to solved against the level",
        "Run `compare --level NAME` at each level (the level's shared preset, each arm at its backend's id of the "
        "level), then write a table and a plot across the levels: time to solved (IQM, 95 % CI), env steps per "
        "second and ms per update. Each level is its own MLflow parent run; a killed ladder resumes.",
        None,
        add_ladder_arguments,
    ),
}
"""Each command's help line, description, which env flags it takes (``"levels"``: the layout flags and
``--level``, ``--n-walls``, ``--doors``; ``"layout"``: the layout flags, its own ``--level`` being an option of
the command; ``None``: none), and its flags."""

TIME_LIMIT_HELP = "time limit per episode (default: the layout's, (n_walls + 1) * (H + W); a level's own)"


def env_parents(kind: str | None) -> list[argparse.ArgumentParser]:
    """The parent parsers of a command's env flags (new ones per command: argparse shares a parent's actions).

    The time limit defaults to the layout's (a level's own), as in ``play`` and ``render``."""
    if kind is None:
        return []
    layout = doors_cli.layout_parser()
    for action in layout._actions:
        if action.dest == "max_episode_steps":
            action.default, action.help = None, TIME_LIMIT_HELP
    return [layout, doors_cli.level_parser()] if kind == "levels" else [layout]


def add_commands(commands: Any, layout: argparse.ArgumentParser) -> None:
    """Adds ``train``, ``enjoy``, ``tune``, ``compare`` and ``ladder`` to the ``doors-gym`` subparsers (nothing
    else: each command makes its process-wide settings when it runs, see :mod:`.runtime`). ``layout``, the env
    package's layout flags, is not shared: each command builds its own (:func:`env_parents`)."""
    del layout
    for name, (help_line, description, env_flags, add_arguments) in COMMANDS.items():
        parser = commands.add_parser(name, parents=env_parents(env_flags), help=help_line, description=description)
        add_arguments(parser)


def level_from_arguments(args: argparse.Namespace, unset: str | None = None) -> TrainingLevel:
    """The level a command trains at, from its parsed flags: the one place the command line resolves ``--level``.

    ``args.level`` names it, with no layout flag beside it, unless it is ``unset``, the command's default
    (``None`` for the level flags of ``train`` and ``tune``, where even the study's level typed is checked;
    compare's own ``--level`` defaults to the study's) or absent (a parser with the layout flags alone): then it
    is the study's level at the layout flags' layout.

    Raises:
        ValueError: naming a layout flag or the time limit given beside a level.
    """
    given = getattr(args, "level", unset)
    name = None if given == unset else given
    return TrainingLevel.from_flags(name, {flag: getattr(args, flag, None) for flag in LAYOUT_NAMES})


def add_train_arguments(parser: argparse.ArgumentParser, arms: tuple[str, ...]) -> None:
    """The ``train`` flags: ``--arm`` among ``arms``, hyperparameters, run settings, ``--save``."""
    parser.add_argument("--arm", choices=arms, default=arms[0], help="which arm to train (default: %(default)s)")
    flags.add_arguments(parser.add_argument_group("preset"), PresetOptions)
    flags.add_arguments(
        parser.add_argument_group("hyperparameters (each flag overrides the preset)"),
        Hyperparameters,
        from_preset=HYPERPARAMETER_NAMES,
    )
    flags.add_arguments(parser.add_argument_group("run"), RunSettings, from_preset=RUN_FIELDS)
    parser.add_argument(
        "--save", type=pathlib.Path, default=None, help="write the trained model to this file (its folder is created)"
    )
    flags.add_arguments(parser.add_argument_group("tracking"), TrackOptions, TrackOptions.shown_defaults())
    parser.set_defaults(handler=run_train)


def config_from_arguments(args: argparse.Namespace) -> Config:
    """The validated config of parsed ``train`` flags, for ``args.arm``: its preset at the flags' level
    (:func:`level_from_arguments`), then the flags typed.

    Raises:
        ValueError: naming a hyperparameter flag that is not one of the arm's hyperparameters.
    """
    arm = get_arm(args.arm)
    spec = PresetOptions(**flags.values_from(PresetOptions, args)).preset
    level = level_from_arguments(args)
    preset = level.preset(spec, arm.name)
    run = RunSettings(**flags.values_from(RunSettings, args, exclude=(*RUN_FIELDS, *LAYOUT_NAMES)), **level.settings)
    hyperparameters = flags.values_from(Hyperparameters, args)
    own = field_names(arm.hyperparameters)
    for name, value in hyperparameters.items():
        if name not in own:
            raise ValueError(
                f"--{name.replace('_', '-')} {value!r} is not a hyperparameter of the {arm.name} arm ({arm.package}): "
                f"it has {', '.join(own)}"
            )
    typed = {**hyperparameters, **flags.values_from(RunSettings, args, include=RUN_FIELDS)}
    config = preset.config(run, arm.hyperparameters)
    return arm.configure(config.replace(**typed) if typed else config)


def in_command(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``handler`` run inside :func:`doors_gym_baselines.runtime.command`: a command's process-wide settings
    are made when it runs, never when the parser is built."""

    @functools.wraps(handler)
    def run(args: argparse.Namespace) -> int:
        with runtime.command():
            try:
                return handler(args)
            except RunsFailed as error:
                print(f"doors-gym {args.command}: {error}", file=sys.stderr)
                return 1

    return run


@in_command
def run_train(args: argparse.Namespace) -> int:
    """``doors-gym train``: one arm, in-process; the save path is checked before training starts."""
    arm = get_arm(args.arm)
    config = config_from_arguments(args)
    if args.save is not None:
        check_writable(args.save)
    track = TrackOptions(**flags.values_from(TrackOptions, args))
    if track.track:
        result = track_training(arm, config, track)
    else:
        result = arm.train(config)
    print(json.dumps(result.summary(), indent=2))
    if track.track:
        print(f"tracked as MLflow run {result.facts['run_id']}: the model is {result.facts['model_uri']}")
    if args.save is not None:
        path = arm.save(result, args.save)
        print(f"saved the model to {path}")
    return 0


def check_writable(path: pathlib.Path) -> None:
    """Creates ``path``'s folder and checks a file can be written there; ``ValueError`` naming ``--save`` if not."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        existed = path.exists()
        with path.open("ab"):
            pass
        if not existed:
            path.unlink()
    except OSError as error:
        raise ValueError(f"save={str(path)!r} cannot be written: {error.strerror or error}") from None


@in_command
def run_enjoy(args: argparse.Namespace) -> int:
    """``doors-gym enjoy``: greedy episodes of a saved model."""
    from .serving.enjoy import describe, enjoy

    arm = None if args.arm is None else get_arm(args.arm)
    figures = enjoy(
        args.model, args.episodes, args.out, args.seed, args.fps, args.cell_pixels, args.tracking_uri, arm=arm
    )
    print(describe(figures, args.episodes, args.out))
    return 0


@in_command
def run_tune(args: argparse.Namespace) -> int:
    """``doors-gym tune``: one worker of an Optuna study."""
    from .tuning import describe, tune

    level = level_from_arguments(args)
    options = TuneOptions(arm=args.arm, level=level.name, **flags.values_from(TuneOptions, args))
    budget = {name: getattr(TUNING_RUN, name) for name in TUNING_BUDGET}
    if level.name != STUDY:
        budget.update({name: value for name, value in level.shared_preset.run.items() if name in TUNING_BUDGET})
    typed = flags.values_from(RunSettings, args, exclude=(*TRIAL_RUN_FIELDS_OFF_THE_CLI, *LAYOUT_NAMES))
    run = dataclasses.replace(TUNING_RUN, **{**budget, **typed}, **level.settings)
    study = tune(options, run)
    print(describe(study, options))
    return 0


@in_command
def run_compare(args: argparse.Namespace) -> int:
    """``doors-gym compare``: every arm over several seeds, the table and the plot."""
    from .experiments.compare import compare

    options = CompareOptions(**flags.values_from(CompareOptions, args))
    # The budget flags are the comparison's overrides of its preset; the run settings are the layout and machinery.
    budget = [spec.name for spec in dataclasses.fields(CompareOptions)]
    machinery = flags.values_from(RunSettings, args, exclude=(*budget, *LAYOUT_NAMES))
    level = level_from_arguments(args, unset=STUDY)
    with open_executor(ExecutorOptions(**flags.values_from(ExecutorOptions, args))) as executor:
        outcome = compare(options, level.at(RunSettings(**machinery)), executor, level)
    print(describe_outcome(outcome, options))
    return 0


@in_command
def run_ladder(args: argparse.Namespace) -> int:
    """``doors-gym ladder``: a comparison per level, then the ladder's table and plot."""
    from .experiments.ladder import LadderOptions, ladder

    options = LadderOptions(**flags.values_from(LadderOptions, args))
    machinery = flags.values_from(RunSettings, args, include=("vectorization", "device", "quiet"))
    with open_executor(ExecutorOptions(**flags.values_from(ExecutorOptions, args))) as executor:
        outcome = ladder(options, RunSettings(**machinery), executor)
    if not options.plan:
        print("\n" + outcome.table + "\n\nfiles: " + ", ".join(str(path) for path in outcome.paths.values()))
    return 0


def describe_outcome(outcome: Any, options: CompareOptions) -> str:
    """What ``compare`` prints at its end: the compact table, then where the files and the runs went."""
    from .reporting import terminal_table
    from .tracking import display_url, tracking_uri, ui_command

    paths = list(outcome.paths.values())
    folder = paths[0].parent if paths else pathlib.Path(options.out)
    uri = tracking_uri(options.tracking_uri)
    return "\n".join(
        [
            "",
            terminal_table(outcome.rows, outcome.oracle),
            "",
            f"files in {folder}/ (compare.md has the full tables):",
            f"  {', '.join(path.name for path in paths)}",
            f"MLflow: experiment {options.experiment!r}, run {options.run_name} with a nested run per training, in",
            f"  {display_url(uri)}",
            "open it:",
            f"  {ui_command(uri, outcome.experiment_id)}",
        ]
    )


def build_parser() -> argparse.ArgumentParser:
    """A ``doors-gym`` parser with the baselines' commands only (for ``python -m`` of a baselines module)."""
    parser = argparse.ArgumentParser(prog="doors-gym")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_commands(commands, doors_cli.layout_parser())
    doors_cli.remember_subparsers(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m doors_gym_baselines``: the baselines' ``doors-gym`` commands."""
    return doors_cli.run(build_parser(), sys.argv[1:] if argv is None else argv)
