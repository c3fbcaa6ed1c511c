"""``doors-gym ladder``: every arm at every level of the Doors suite, time to solved against the level.

One :func:`~doors_gym_baselines.experiments.compare.compare` per level (``compare --level NAME``, each with its own
MLflow parent run and its own folder ``<out>/<level>/``, so a killed ladder resumes from the runs it
finished), with the level's shared preset: the same network, hyperparameters and budget for every arm
(like for like). Then one table and one plot across the levels (:func:`ladder_rows`, :func:`write_ladder`):
per row of the comparisons (an arm, or the fully jitted arm's seeds trained in one run, a line of its own)
and level, the IQM time to solved with its 95 % CI (unsolved seeds count as infinite; a row with no solved
seed is drawn as such), the seeds solved, the fraction of the oracle's step reward the greedy policy
reached, env steps per second and milliseconds per update.

``--quick`` trains one seed per level on :data:`QUICK_STEPS` env steps (a smoke run of the whole ladder,
about 10 minutes on 2 cores; its levels past the study's are not expected to be solved).
"""

from __future__ import annotations

import csv
import dataclasses
import math
import pathlib
from collections.abc import Sequence
from typing import Any, ClassVar

from doors_gym.levels import LEVEL_NAMES

from ..arms import ARMS
from ..config import RunSettings, check_at_least, check_choice, check_folder, field
from ..config.options import RunsOptions
from ..config.seeds import LADDER_FIRST_SEED
from ..levels import TrainingLevel
from ..presets import SHARED
from . import compare as comparison  # looked up when a level runs (a test's stand-in for compare reaches it)
from .compare import DEFAULT_ARMS, FIRST_SEED, CompareOptions, checkpoints, load_cached, missing_jobs
from .compare import plan as plan_comparison
from .executors import Executor

DEFAULT_EXPERIMENT = "doors-gym-ladder"
QUICK_STEPS = 20_000
"""Env steps per seed and level of ``--quick``."""


@dataclasses.dataclass(frozen=True)
class LadderOptions(RunsOptions):
    """Settings of one ladder (the ``doors-gym ladder`` flags)."""

    EXPERIMENT: ClassVar[str] = DEFAULT_EXPERIMENT
    OUT: ClassVar[str] = "out/ladder"
    MODELS: ClassVar[bool] = False

    arms: tuple[str, ...] = field(DEFAULT_ARMS, f"arms to train, among {', '.join(ARMS)}")
    levels: tuple[str, ...] = field(LEVEL_NAMES, f"levels to climb, among {', '.join(LEVEL_NAMES)}")
    seeds: int = field(3, "seeds per arm and level")
    first_seed: int = field(
        LADDER_FIRST_SEED,
        f"first seed (choices are made below {FIRST_SEED}; the level presets' former choices saw "
        f"{FIRST_SEED}-{LADDER_FIRST_SEED - 1}, so {LADDER_FIRST_SEED} and up)",
    )
    quick: bool = field(False, f"one seed per level, {QUICK_STEPS} env steps each (a smoke run of the ladder)")
    checkpoint_dir: str | None = field(
        None,
        "folder of the resumable runs' checkpoints (flax-scan's), a level's under <checkpoint-dir>/<level>, one "
        "every worker reaches at the same path (a shared filesystem) so that a run retried on another host goes on "
        "from its last segment (default: each level's <out>/<level>/runs); made absolute here",
    )
    report_only: bool = field(
        False,
        "train nothing: write the table and the plot from the runs finished under --out (a row counts the seeds "
        "that finished; an arm with none at a level is left out of it)",
    )
    plan: bool = field(
        False,
        "train nothing: print the runs the ladder would train (those not finished under --out), each with its "
        "expected wall time from the ladder's committed table (the 2-core CPU it was measured on), and the total",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.plan and self.report_only:
            raise ValueError("plan=True and report_only=True do not go together: give one of --plan, --report-only")
        if not self.levels:
            raise ValueError(f"levels=() is empty: expected one or more of {list(LEVEL_NAMES)}")
        for level in self.levels:
            check_choice("levels", level, LEVEL_NAMES)
        check_at_least("seeds", self.seeds, 1)
        if self.checkpoint_dir is not None:
            check_folder("checkpoint_dir", self.checkpoint_dir)

    def level_options(self, level: str) -> CompareOptions:
        """The comparison at ``level``: the ladder's arms and seeds, the level's shared preset, its own folder."""
        budget = {"total_steps": QUICK_STEPS, "eval_every": QUICK_STEPS // 2} if self.quick else {}
        return CompareOptions(
            arms=self.arms,
            preset=SHARED,
            seeds=1 if self.quick else self.seeds,
            first_seed=self.first_seed,
            out=str(pathlib.Path(self.out) / level),
            checkpoint_dir=None if self.checkpoint_dir is None else str(pathlib.Path(self.checkpoint_dir) / level),
            tracking_uri=self.tracking_uri,
            experiment=self.experiment,
            models=self.models,
            fresh=self.fresh,
            level=level,
            **budget,
        )


def plan(options: LadderOptions) -> list[CompareOptions]:
    """The ladder's comparisons, one per level, in SPEC's order of the levels."""
    return [options.level_options(level) for level in LEVEL_NAMES if level in options.levels]


@dataclasses.dataclass(frozen=True)
class LadderRow:
    """One row of the comparisons (an arm, or seeds trained in one run) at one level."""

    level: str
    key: str
    label: str
    seeds: int
    solved: int
    seconds_to_solved_iqm: float
    seconds_to_solved_low: float
    seconds_to_solved_high: float
    steps_to_solved_iqm: float
    steps_to_solved_low: float
    steps_to_solved_high: float
    greedy_step_reward: float
    oracle_step_reward: float
    env_steps_per_second: float
    ms_per_update: float
    wall_seconds_total: float

    @property
    def oracle_fraction(self) -> float:
        """The greedy step reward (IQM over seeds) as a fraction of the oracle's at the level."""
        return self.greedy_step_reward / self.oracle_step_reward


def ladder_rows(level: str, rows: Sequence[Any], oracle: dict[str, float]) -> list[LadderRow]:
    """The ladder's rows of one level's comparison (its ``reporting.Summary`` rows and oracle row)."""
    out = []
    for row in rows:
        interval, steps = row.intervals["seconds_to_solved"], row.intervals["steps_to_solved"]
        out.append(
            LadderRow(
                level=level,
                key=row.key,
                label=row.label,
                seeds=row.seeds,
                solved=row.solved_ever,
                seconds_to_solved_iqm=interval.iqm,
                seconds_to_solved_low=interval.low,
                seconds_to_solved_high=interval.high,
                steps_to_solved_iqm=steps.iqm,
                steps_to_solved_low=steps.low,
                steps_to_solved_high=steps.high,
                greedy_step_reward=row.intervals["greedy_step_reward"].iqm,
                oracle_step_reward=oracle["greedy_step_reward"],
                env_steps_per_second=row.env_steps_per_second,
                ms_per_update=row.ms_per_update,
                wall_seconds_total=row.wall_seconds_total,
            )
        )
    return out


def markdown(rows: Sequence[LadderRow]) -> str:
    """The ladder's table (Markdown): one line per row and level."""
    lines = [
        "| level | arm | solved | s to solved, IQM [95 % CI] | env steps to solved, IQM [95 % CI] "
        "| greedy / oracle step reward | env steps/s | ms per update | wall s (all seeds) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        seconds = _interval(
            row.solved, row.seconds_to_solved_iqm, row.seconds_to_solved_low, row.seconds_to_solved_high, ".1f"
        )
        steps = _interval(
            row.solved, row.steps_to_solved_iqm / 1e3, row.steps_to_solved_low / 1e3, row.steps_to_solved_high / 1e3,
            ",.0f", "k",
        )
        lines.append(
            f"| {row.level} | {row.label} | {row.solved}/{row.seeds} | {seconds} | {steps} | {row.oracle_fraction:.0%} "
            f"| {row.env_steps_per_second:,.0f} | {row.ms_per_update:.2f} | {row.wall_seconds_total:.0f} |"
        )
    return "\n".join(lines)


def _interval(solved: int, iqm: float, low: float, high: float, spec: str, unit: str = "") -> str:
    """``IQM [low, high]``, an infinite value as ∞ (seeds not solved count as never), or ``unsolved`` where no
    seed was."""
    if not solved:
        return "unsolved"
    shown = [f"{value:{spec}}{unit}" if math.isfinite(value) else "∞" for value in (iqm, low, high)]
    return f"{shown[0]} [{shown[1]}, {shown[2]}]"


def write_csv(rows: Sequence[LadderRow], path: pathlib.Path) -> None:
    """``ladder.csv``: every field of every row, and the oracle fraction."""
    names = [spec.name for spec in dataclasses.fields(LadderRow)] + ["oracle_fraction"]
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=names)
        writer.writeheader()
        for row in rows:
            writer.writerow({**dataclasses.asdict(row), "oracle_fraction": row.oracle_fraction})


def plot(rows: Sequence[LadderRow], levels: Sequence[str], path: pathlib.Path) -> None:
    """``ladder.png``: wall time and env steps to solved (IQM, 95 % CI; a cross at the top where unsolved), env
    steps per second and ms per update against the level, one line per row, log axes."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(19, 4.5))
    axes = figure.subplots(1, 4)
    keys = list(dict.fromkeys(row.key for row in rows))
    positions = {level: index for index, level in enumerate(levels)}
    ceilings = (
        max([row.wall_seconds_total for row in rows] + [1.0]),
        max([row.steps_to_solved_high for row in rows if math.isfinite(row.steps_to_solved_high)] + [1.0]) * 2,
    )
    for index, key in enumerate(keys):
        mine = [row for row in rows if row.key == key]
        nudge = 0.08 * (index - (len(keys) - 1) / 2)  # unsolved crosses side by side, not on top of each other
        x = [positions[row.level] for row in mine]
        color = None
        for axis, name, ceiling in zip(axes, ("seconds_to_solved", "steps_to_solved"), ceilings):
            solved = [row for row in mine if math.isfinite(getattr(row, f"{name}_iqm"))]
            solved_x = [positions[row.level] for row in solved]
            solved_y = [getattr(row, f"{name}_iqm") for row in solved]
            line = axis.plot(solved_x, solved_y, "o-", label=mine[0].label, color=color)[0]
            color = line.get_color()
            low = [y - getattr(row, f"{name}_low") for row, y in zip(solved, solved_y)]
            high = [_finite(getattr(row, f"{name}_high"), ceiling) - y for row, y in zip(solved, solved_y)]
            axis.errorbar(solved_x, solved_y, yerr=[low, high], fmt="none", color=color, capsize=3)
            unsolved = [positions[row.level] for row in mine if not math.isfinite(getattr(row, f"{name}_iqm"))]
            axis.plot([x + nudge for x in unsolved], [ceiling] * len(unsolved), "x", color=color, markersize=9)
        axes[2].plot(x, [row.env_steps_per_second for row in mine], "o-", color=color)
        axes[3].plot(x, [row.ms_per_update for row in mine], "o-", color=color)
    titles = (
        "wall s to solved, IQM (x: ∞, seeds unsolved in the budget)",
        "env steps to solved, IQM (x: ∞)",
        "env steps per second",
        "ms per update",
    )
    for axis, title in zip(axes, titles):
        axis.set_yscale("log")
        axis.set_xticks(range(len(levels)), levels)
        axis.set_title(title)
        axis.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def _finite(value: float, fallback: float) -> float:
    return value if math.isfinite(value) else fallback


@dataclasses.dataclass
class LadderOutcome:
    """What :func:`ladder` returns: the rows, the table and the files it wrote."""

    rows: list[LadderRow]
    table: str
    paths: dict[str, pathlib.Path]


def ladder(options: LadderOptions, run: RunSettings | None = None, executor: Executor | None = None) -> LadderOutcome:
    """Climbs the ladder: one comparison per level (resumed from ``<out>/<level>/runs``; its runs made by
    ``executor``, default one after another here), then the table and the plot across the levels under ``out``."""
    rows: list[LadderRow] = []
    rungs = [(level_options, level_options.training_level(run)) for level_options in plan(options)]
    if options.plan:
        print_plan(rungs, run)
        return LadderOutcome([], "", {})
    if executor is not None and not options.report_only:  # a cluster's workers start on every level's runs at once
        levels = [plan_comparison(level_options, run, level) for level_options, level in rungs]
        if options.fresh:  # before anything is sent: no run may go on from a killed run's checkpoint
            executor.clear([path for level in levels for path in checkpoints(level)])
        executor.submit_ahead([job for level in levels for *_, job in missing_jobs(level)])
    for index, (level_options, level) in enumerate(rungs, 1):
        print(f"== level {level.name} ({level.env_id} and its JAX twin), level {index} of {len(rungs)}", flush=True)
        if options.report_only:
            summaries, oracle = finished(level_options, run, level)
        else:
            outcome = comparison.compare(level_options, run, executor, level)
            summaries, oracle = outcome.rows, outcome.oracle
        rows.extend(ladder_rows(level_options.level, summaries, oracle))
    return write_ladder(rows, [level.level for level in plan(options)], pathlib.Path(options.out))


EXPECTED = pathlib.Path(__file__).with_name("ladder_expected.csv")
"""Each ladder row's wall seconds per run as the ladder's committed table measured them (written by
``benchmarks/ladder_current.py``): what ``--plan`` expects a run to take."""


def expected_seconds(path: pathlib.Path = EXPECTED) -> dict[tuple[str, str], float]:
    """``{(level, row key): wall seconds per run}`` of the committed table."""
    with path.open(newline="") as handle:
        return {(row["level"], row["key"]): float(row["seconds_per_run"]) for row in csv.DictReader(handle)}


def print_plan(rungs: Sequence[tuple[CompareOptions, TrainingLevel]], run: RunSettings | None = None) -> float:
    """Prints the runs each rung would train (not finished under its ``out``) with their expected wall seconds
    (:func:`expected_seconds`; ``?`` where the committed table has no row), then the totals; returns the expected
    seconds of the runs whose row it has."""
    from ..harness.progress import describe_seconds

    expected, total, unknown, count = expected_seconds(), 0.0, 0, 0
    for level_options, level in rungs:
        planned = plan_comparison(level_options, run, level)
        missing = missing_jobs(planned)
        print(f"== level {level.name}: {len(missing)} run{'s' * (len(missing) != 1)} to train", flush=True)
        for planned_row, _, job in missing:
            seconds = expected.get((level.name, planned_row.row.key))
            count += 1
            if seconds is None:
                unknown += 1
            else:
                total += seconds
            print(f"  {job.label}: {'?' if seconds is None else describe_seconds(seconds)}", flush=True)
    known = f"{count - unknown} of {count} runs" if unknown else f"all {count} runs"
    print(f"expected: {describe_seconds(total)} for {known}, one after another on the 2-core CPU", flush=True)
    return total


def finished(
    options: CompareOptions, run: RunSettings | None = None, level: TrainingLevel | None = None
) -> tuple[list[Any], dict[str, float]]:
    """The summary rows of a level's comparison (at ``level``, default the options') from its finished runs only
    (made with the same settings), and the oracle's row at the level. A row keeps the seeds that finished (its
    ``seeds`` says how many); a row with none is left out; both are named."""
    from .. import reporting

    planned = plan_comparison(options, run, level)
    results = []
    for row in planned.rows:
        made = [each for each in map(load_cached, row.runs) if each is not None]
        if len(made) < len(row.runs):
            count = f"{len(made)} of {len(row.runs)} runs" if made else "not run"
            print(f"  {row.row.key}: {count} at this level with these settings", flush=True)
        if made:
            results.append(dataclasses.replace(row.row, seeds=tuple(seed for each in made for seed in each.seeds)))
    return reporting.summarise_all(results), reporting.oracle_row(planned.base.params)


def write_ladder(rows: list[LadderRow], levels: Sequence[str], out: pathlib.Path) -> LadderOutcome:
    """Writes ``ladder.md``, ``ladder.csv`` and ``ladder.png`` under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    table = markdown(rows)
    paths = {"table": out / "ladder.md", "csv": out / "ladder.csv", "plot": out / "ladder.png"}
    paths["table"].write_text(table + "\n")
    write_csv(rows, paths["csv"])
    plot(rows, levels, paths["plot"])
    return LadderOutcome(rows, table, paths)
