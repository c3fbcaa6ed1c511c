"""What ``compare`` and ``tune`` show: per-seed records, statistics over seeds, tables, CSVs and plots.

- ``compare.md`` and ``compare.csv``: per arm, the interquartile mean over
  seeds with its 95 % bootstrap interval (:mod:`doors_gym_baselines.statistics`)
  of the time to a solved agent (unsolved seeds counted as never), the greedy
  success rate and per-step reward and the rolling reward (the study's figure:
  mean per-step reward of the last 2000 training episodes), the seeds solved
  at the end, the speed-up over torch x Doors-v0 in time to solved, the
  training wall time; means and standard deviations in the CSV; the oracle's
  row and the study's published row;
- ``compare_seeds.csv``: one row per arm and seed;
- ``learning_curves.png``: rolling and greedy reward against wall-clock time;
- ``time_breakdown.png``: where each arm's time per seed goes (env step, action
  selection, replay buffer, update, evaluation, compile, other), as stacked bars;
- a tuning study's Optuna plots, logged to its MLflow parent run.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import os
import pathlib
import platform
import textwrap
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from doors_gym.core import DoorsParams

from .arms import ARMS, REFERENCE_ARM, Arm
from .config import DQNConfig
from .evaluation import evaluate_greedy
from .metrics import PHASES, SOLVED_ROLLING_REWARD, SOLVED_SUCCESS, is_solved
from .statistics import Interval, iqm_interval
from .tracking import retry_creation_race

FIGURES = ("rolling_reward", "greedy_success_rate", "greedy_normalised_return", "greedy_step_reward")
"""The final figures every seed reports, summarised over seeds."""
INTERVAL_FIGURES = ("greedy_success_rate", "greedy_step_reward", "rolling_reward")
"""The final figures reported as IQM with a bootstrap CI (beside the time to solved)."""


@dataclasses.dataclass(frozen=True)
class CurvePoint:
    """One point of a seed's learning curve against wall-clock time."""

    seconds: float
    step: int
    rolling_reward: float
    greedy_step_reward: float


@dataclasses.dataclass(frozen=True)
class SeedRun:
    """One seed's figures in a comparison: final figures, wall time, time to solved, curve."""

    seed: int
    wall_seconds: float
    seconds_to_solved: float
    """Wall seconds (compile included) to the evaluation from which the seed stayed solved through the hold-out
    window to the end of its run (NaN if it did not; see :func:`~doors_gym_baselines.metrics.seconds_to_solved`)."""
    rolling_reward: float
    greedy_success_rate: float
    greedy_normalised_return: float
    greedy_step_reward: float
    curve: tuple[CurvePoint, ...] = ()
    phases: dict[str, float] = dataclasses.field(default_factory=dict)
    """Seconds of each phase of the run (see :class:`~doors_gym_baselines.metrics.Timings`), this seed's share."""
    updates: int = 0
    """Gradient updates of this seed."""
    env_steps: int = 0
    """Env steps of this seed."""

    @property
    def solved(self) -> bool:
        """Solved at the end of training."""
        return is_solved(self.greedy_success_rate, self.rolling_reward)

    def to_dict(self) -> dict[str, Any]:
        """Plain types, for the resume cache."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> SeedRun:
        """Inverse of :meth:`to_dict`."""
        curve = tuple(CurvePoint(**point) for point in values.get("curve", ()))
        return cls(**{**values, "curve": curve})


@dataclasses.dataclass(frozen=True)
class ArmRuns:
    """Every seed of one arm in a comparison, and where its hyperparameters came from.

    ``seeds_in_one_run`` is 0 when each seed trained in a run of its own (every arm's row), else the
    number of seeds one run trained together (a row of its own, its figures per seed).
    """

    arm: Arm
    hyperparameters: str
    config: DQNConfig
    seeds: tuple[SeedRun, ...]
    seeds_in_one_run: int = 0

    @property
    def key(self) -> str:
        """The row's name in CSVs and MLflow metrics: the arm's, with ``-together`` for seeds in one run."""
        return f"{self.arm.name}-together" if self.seeds_in_one_run else self.arm.name

    @property
    def label(self) -> str:
        """The row's label in tables and plots."""
        if self.seeds_in_one_run:
            return f"{self.arm.label}, {self.seeds_in_one_run} seeds in one run (per seed)"
        return self.arm.label

    @property
    def short_label(self) -> str:
        """The row's name in the terminal table."""
        return f"{self.arm.name} x{self.seeds_in_one_run}" if self.seeds_in_one_run else self.arm.name


@dataclasses.dataclass(frozen=True)
class Spread:
    """Mean and sample standard deviation over seeds (0 for one seed)."""

    mean: float
    std: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        array = np.asarray(values, dtype=float)
        return cls(float(array.mean()), float(array.std(ddof=1)) if len(array) > 1 else 0.0)

    def __format__(self, spec: str) -> str:
        return f"{format(self.mean, spec)} ± {format(self.std, spec)}"


@dataclasses.dataclass(frozen=True)
class Summary:
    """One arm's row of the comparison table."""

    arm: str
    label: str
    hyperparameters: str
    seeds: int
    key: str
    """The row's name in CSVs and MLflow metrics (see :attr:`ArmRuns.key`)."""
    short_label: str
    seeds_in_one_run: int
    solved: int
    """Seeds solved at the end."""
    solved_ever: int
    """Seeds with a time to solved."""
    wall_seconds_total: float
    wall_seconds: Spread
    seconds_to_solved_mean: float
    """Mean time to solved over the seeds that have one."""
    intervals: dict[str, Interval]
    """IQM and 95 % CI over seeds of the time to solved (unsolved: inf) and of :data:`INTERVAL_FIGURES`."""
    budget: str
    """The run's budget and stopping rule, in words."""
    rolling_reward: Spread
    greedy_success_rate: Spread
    greedy_normalised_return: Spread
    greedy_step_reward: Spread
    phases: dict[str, float] = dataclasses.field(default_factory=dict)
    """Mean seconds per seed of each phase."""
    ms_per_update: float = math.nan
    """Milliseconds of the update phase per gradient update."""
    env_steps_per_second: float = math.nan
    """Env steps per second of wall time, over every seed."""
    speedup_vs_torch_numpy: float | None = None
    """The reference arm's total wall time over this arm's."""
    speedup_to_solved: float | None = None
    """The reference arm's IQM time to solved over this arm's."""

    def csv_row(self) -> dict[str, Any]:
        """The row of ``compare.csv``."""
        names = ("arm", "key", "label", "hyperparameters", "budget", "seeds", "seeds_in_one_run", "solved")
        row = {name: getattr(self, name) for name in names}
        row.update(solved_ever=self.solved_ever, wall_seconds_total=self.wall_seconds_total)
        for name in ("wall_seconds", *FIGURES):
            spread = getattr(self, name)
            row[f"{name}_mean"], row[f"{name}_std"] = spread.mean, spread.std
        row["seconds_to_solved_mean"] = self.seconds_to_solved_mean
        row["speedup_vs_torch_numpy"] = self.speedup_vs_torch_numpy
        row["speedup_to_solved"] = self.speedup_to_solved
        for name, interval in self.intervals.items():
            row[f"{name}_iqm"], row[f"{name}_ci_low"], row[f"{name}_ci_high"] = (
                interval.iqm,
                interval.low,
                interval.high,
            )
        row["ms_per_update"] = self.ms_per_update
        row["env_steps_per_second"] = self.env_steps_per_second
        row.update({f"seconds_{name}": self.phases.get(name, math.nan) for name in PHASES})
        return row


def summarise(runs: ArmRuns) -> Summary:
    """IQM with CI, mean and standard deviation over seeds of every figure, and the totals."""
    seeds = runs.seeds
    all_times = np.array([seed.seconds_to_solved for seed in seeds], dtype=float)
    solved_times = all_times[np.isfinite(all_times)]
    intervals = {"seconds_to_solved": iqm_interval(np.where(np.isnan(all_times), math.inf, all_times))}
    intervals.update({name: iqm_interval([getattr(seed, name) for seed in seeds]) for name in INTERVAL_FIGURES})
    wall = sum(seed.wall_seconds for seed in seeds)
    return Summary(
        arm=runs.arm.name,
        label=runs.label,
        hyperparameters=runs.hyperparameters,
        seeds=len(seeds),
        key=runs.key,
        short_label=runs.short_label,
        seeds_in_one_run=runs.seeds_in_one_run,
        solved=sum(seed.solved for seed in seeds),
        solved_ever=int(solved_times.size),
        wall_seconds_total=float(sum(seed.wall_seconds for seed in seeds)),
        wall_seconds=Spread.of([seed.wall_seconds for seed in seeds]),
        seconds_to_solved_mean=float(solved_times.mean()) if solved_times.size else math.nan,
        intervals=intervals,
        budget=describe_budget(runs.config),
        phases={name: float(np.mean([seed.phases.get(name, math.nan) for seed in seeds])) for name in PHASES},
        ms_per_update=ms_per_update(seeds),
        env_steps_per_second=sum(seed.env_steps for seed in seeds) / wall if wall > 0 else math.nan,
        **{name: Spread.of([getattr(seed, name) for seed in seeds]) for name in FIGURES},
    )


def ms_per_update(seeds: Sequence[SeedRun]) -> float:
    """Milliseconds of update phase per gradient update, over every seed."""
    updates = sum(seed.updates for seed in seeds)
    seconds = sum(seed.phases.get("update", 0.0) for seed in seeds)
    return 1e3 * seconds / updates if updates else math.nan


def describe_budget(config: DQNConfig) -> str:
    """A run's budget and stopping rule in words."""
    run = config.run
    words = f"{run.total_steps / 1000:g}k steps, eval every {run.eval_every / 1000:g}k"
    if run.stop_when_solved:
        words += f", stops when solved for {run.hold_out_steps / 1000:g}k"
    elif run.hold_out_steps:
        words += f", hold-out {run.hold_out_steps / 1000:g}k"
    return words


def summarise_all(results: Sequence[ArmRuns]) -> list[Summary]:
    """Every arm's summary, with its speed-ups over the reference arm (wall time, and IQM time to solved)."""
    rows = [summarise(runs) for runs in results]
    reference = next((row for row in rows if row.key == REFERENCE_ARM.name), None)

    def to_solved(row: Summary) -> float | None:
        if reference is None:
            return None
        ours, theirs = row.intervals["seconds_to_solved"].iqm, reference.intervals["seconds_to_solved"].iqm
        return theirs / ours if math.isfinite(ours) and math.isfinite(theirs) else None

    return [
        dataclasses.replace(
            row,
            speedup_vs_torch_numpy=reference.wall_seconds_total / row.wall_seconds_total if reference else None,
            speedup_to_solved=to_solved(row),
        )
        for row in rows
    ]


def oracle_row(params: DoorsParams) -> dict[str, float]:
    """The shortest-path policy's figures on the same greedy evaluation."""
    from doors_gym.oracle import OraclePolicy

    evaluation = evaluate_greedy(OraclePolicy(params), params)
    return {
        "rolling_reward": evaluation.mean_step_reward,
        "greedy_success_rate": evaluation.success_rate,
        "greedy_normalised_return": evaluation.normalised_return,
        "greedy_step_reward": evaluation.mean_step_reward,
    }


def machine_line() -> str:
    return f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}."


def _published_arms() -> list[Arm]:
    return [arm for arm in ARMS.values() if arm.study is not None]


def markdown_table(rows: list[Summary], oracle: dict[str, float], config: DQNConfig, machine: str) -> str:
    """The comparison as Markdown: ours (IQM [95 % CI] over seeds), the oracle, the study's published figures."""
    head = (
        "| arm | hyperparameters | budget | solved at the end | s to solved | speed-up to solved "
        "| greedy success | greedy step reward | rolling reward | wall s per seed | env steps/s |"
    )
    lines = [head, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        speedup = "-" if row.speedup_to_solved is None else f"{row.speedup_to_solved:.1f}x"
        figures = row.intervals
        lines.append(
            f"| {row.label} | {row.hyperparameters} | {row.budget} | {row.solved}/{row.seeds} "
            f"| {figures['seconds_to_solved']:.1f} | {speedup} | {figures['greedy_success_rate']:.3f} "
            f"| {figures['greedy_step_reward']:.3f} | {figures['rolling_reward']:.3f} | {row.wall_seconds:.1f} "
            f"| {row.env_steps_per_second:,.0f} |"
        )
    lines.append(
        f"| oracle (shortest paths) | - | - | - | - | - | {oracle['greedy_success_rate']:.3f} "
        f"| {oracle['greedy_step_reward']:.3f} | {oracle['rolling_reward']:.3f} | - | - |"
    )
    published = [
        "",
        "The study's Table 2 (published; one seed each, tuned with 40 Optuna trials, on an RTX 5060 Ti GPU):",
        "",
        "| study arm | rolling reward | wall time | speed-up | ours, same stack: rolling reward "
        "| ours: wall s per seed |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    ours = {row.key: row for row in rows}
    reference_seconds = REFERENCE_ARM.study.wall_seconds
    for arm in _published_arms():
        mine = ours.get(arm.name)
        published.append(
            f"| {arm.study.label} | {arm.study.rolling_reward:.2f} | {arm.study.wall_seconds / 60:.1f} min "
            f"| {reference_seconds / arm.study.wall_seconds:.1f}x "
            f"| {format(mine.rolling_reward, '.3f') if mine else '-'} "
            f"| {format(mine.wall_seconds, '.1f') if mine else '-'} |"
        )
    settings = (
        f"Figures: interquartile mean over seeds [95 % percentile bootstrap CI]; greedy figures over all "
        f"{config.params.width ** 2} start/goal pairs, rolling reward over the last {config.run.rolling_episodes} "
        f"training episodes. Solved: greedy success >= {SOLVED_SUCCESS * 100:g} % and rolling reward >= "
        f"{SOLVED_ROLLING_REWARD}. s to solved: wall seconds, compile included, to the evaluation from which a seed "
        "stayed solved through the hold-out window to the end of its run; a seed that did not counts as ∞ (never), "
        f"not dropped. Speed-up to solved: {REFERENCE_ARM.label}'s IQM over the row's. Wall s per seed: mean ± sd. "
        "Every arm trains one seed per run; a row of seeds trained together in one run (under one vmap) is "
        "that run's figures per seed, other work than the arm's row: its wall time divided by its seeds, and a "
        "seed's time to solved where its own run would have stopped (its first solved evaluation held through "
        "the window; the run goes on until every seed is), divided by the seeds."
    )
    breakdown = [
        "",
        "Where the time goes: mean seconds per seed of each phase (`time_breakdown.png`). JAX dispatches an "
        "update without waiting for it, so in the Flax host loops its computation overlaps the env step and "
        "lands where the host next waits (acting on the new parameters): their update phase is the dispatch "
        "(`benchmarks/update_cost.py` times the updates themselves).",
        "",
        breakdown_table(rows),
    ]
    return "\n".join([*lines, "", settings, "", machine, *published, *breakdown, ""])


TERMINAL_WIDTH = 100
"""Columns of the comparison printed to a terminal (the full Markdown tables stay in the files)."""


def terminal_table(rows: Sequence[Summary], oracle: dict[str, float]) -> str:
    """The comparison for a terminal: one short row per arm and the oracle's, within :data:`TERMINAL_WIDTH`."""
    import io

    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("arm", no_wrap=True)
    headers = ("solved", "s to\nsolved", "speed-up", "greedy\nsuccess", "rolling\nreward", "s per\nseed",
               "ms per\nupdate", "env\nsteps/s")
    for header in headers:
        table.add_column(header, justify="right", no_wrap=True)
    for row in rows:
        figures = row.intervals
        table.add_row(
            row.short_label,
            f"{row.solved}/{row.seeds}",
            f"{figures['seconds_to_solved'].iqm:.1f}".replace("inf", "∞"),
            "-" if row.speedup_to_solved is None else f"{row.speedup_to_solved:.1f}x",
            f"{figures['greedy_success_rate'].iqm:.3f}",
            f"{figures['rolling_reward'].iqm:.3f}",
            f"{row.wall_seconds.mean:.1f}",
            "-" if math.isnan(row.ms_per_update) else f"{row.ms_per_update:.2f}",
            "-" if math.isnan(row.env_steps_per_second) else f"{row.env_steps_per_second / 1000:,.0f}k",
        )
    oracle_figures = (f"{oracle['greedy_success_rate']:.3f}", f"{oracle['rolling_reward']:.3f}")
    table.add_row("oracle", "-", "-", "-", *oracle_figures, "-", "-", "-")
    console = Console(file=io.StringIO(), width=TERMINAL_WIDTH, color_system=None, force_terminal=False)
    console.print(table)
    notes = (
        "IQM over seeds (95 % bootstrap CIs in compare.md); s to solved: wall seconds, compile included, to the "
        f"evaluation from which a seed stayed solved (∞: never); speed-up: {REFERENCE_ARM.name}'s s to solved over "
        "the arm's; s per seed: mean wall time; xN: N seeds trained together in one run, its figures per seed."
    )
    return console.file.getvalue().rstrip() + "\n" + textwrap.fill(notes, width=TERMINAL_WIDTH)


CSV_COLUMNS = (
    "arm",
    "key",
    "label",
    "hyperparameters",
    "seeds",
    "seeds_in_one_run",
    "solved",
    "solved_ever",
    "wall_seconds_total",
    "wall_seconds_mean",
    "wall_seconds_std",
    "seconds_to_solved_mean",
    *(f"{key}_{stat}" for key in FIGURES for stat in ("mean", "std")),
    *(f"{key}_{stat}" for key in ("seconds_to_solved", *INTERVAL_FIGURES) for stat in ("iqm", "ci_low", "ci_high")),
    "budget",
    "speedup_vs_torch_numpy",
    "speedup_to_solved",
    "ms_per_update",
    "env_steps_per_second",
    *(f"seconds_{name}" for name in PHASES),
)


def write_csv(rows: list[Summary], oracle: dict[str, float], path: pathlib.Path) -> None:
    """``compare.csv``: a row per arm, the oracle's, and the study's published rows."""
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for row in rows:
            values = row.csv_row()
            writer.writerow({key: "" if values.get(key) is None else values[key] for key in CSV_COLUMNS})
        writer.writerow(
            {
                "arm": "oracle",
                "key": "oracle",
                "label": "oracle (shortest paths)",
                **{f"{key}_mean": v for key, v in oracle.items()},
            }
        )
        for arm in _published_arms():
            writer.writerow(
                {
                    "arm": f"published:{arm.name}",
                    "key": f"published:{arm.name}",
                    "label": arm.study.label,
                    "seeds": 1,
                    "rolling_reward_mean": arm.study.rolling_reward,
                    "wall_seconds_total": arm.study.wall_seconds,
                    "wall_seconds_mean": arm.study.wall_seconds,
                }
            )


def write_seed_csv(results: Sequence[ArmRuns], path: pathlib.Path) -> None:
    """``compare_seeds.csv``: one row per arm and seed."""
    columns = ("arm", "key", "seed", "wall_seconds", "seconds_to_solved", "env_steps", "updates", *FIGURES)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for runs in results:
            for seed in runs.seeds:
                figures = {key: getattr(seed, key) for key in columns[2:]}
                writer.writerow({"arm": runs.arm.name, "key": runs.key, **figures})


def arm_color(arm: Arm) -> Any:
    """The arm's colour in every plot (its curves, its study's star, its bars): tab10 by its place in the registry.

    By registry order, not by place in a plot, so an arm keeps its colour whichever arms a comparison runs.
    """
    import matplotlib

    return matplotlib.colormaps["tab10"](list(ARMS).index(arm.name) % 10)


def log_seconds_axis(axis: Any) -> None:
    """A log-scale seconds axis with plain labels at 1-2-5 steps and no minor labels (they overlapped)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_xscale("log")
    axis.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.xaxis.set_minor_formatter(NullFormatter())


def plot_curves(results: Sequence[ArmRuns], oracle: dict[str, float], path: pathlib.Path) -> None:
    """Rolling and greedy per-step reward against wall-clock seconds: mean over seeds, min-max band."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(12, 4.5))  # a figure of its own: no pyplot, no backend chosen for the process
    axes = figure.subplots(1, 2, sharey=True)
    for runs in results:
        curves = [seed.curve for seed in runs.seeds]
        length = min(len(curve) for curve in curves)
        seconds = np.mean([[point.seconds for point in curve[:length]] for curve in curves], axis=0)
        for axis, key in zip(axes, ("rolling_reward", "greedy_step_reward")):
            values = np.array([[getattr(point, key) for point in curve[:length]] for curve in curves], dtype=float)
            keep = ~np.isnan(values).all(axis=0)  # points where no seed had finished a training episode yet
            values, point_seconds = values[:, keep], seconds[keep]
            color = arm_color(runs.arm)
            style = "--" if runs.seeds_in_one_run else "-"  # the same arm, seeds together: its colour, dashed
            axis.plot(
                point_seconds,
                np.nanmean(values, axis=0),
                marker="o",
                markersize=3,
                label=runs.label,
                color=color,
                linestyle=style,
            )
            axis.fill_between(
                point_seconds, np.nanmin(values, axis=0), np.nanmax(values, axis=0), alpha=0.2, color=color
            )
    for axis, title in zip(axes, ("rolling reward (last 2000 training episodes)", "greedy per-step reward")):
        axis.axhline(oracle["greedy_step_reward"], color="black", linestyle="--", linewidth=1, label="oracle")
        log_seconds_axis(axis)
        axis.set_xlabel("wall-clock seconds of a training run (log scale)")
        axis.set_title(title)
        axis.grid(alpha=0.3)
    for arm in _published_arms():
        axes[0].scatter(
            arm.study.wall_seconds,
            arm.study.rolling_reward,
            marker="*",
            s=110,
            zorder=3,
            color=arm_color(arm),
            edgecolors="black",
            linewidths=0.5,
            label=f"study: {arm.study.label}",
        )
    axes[0].set_ylabel("mean reward per step")
    axes[0].set_ylim(bottom=-0.1, top=0.85)
    axes[1].legend(fontsize=7, loc="lower right")
    axes[0].legend(fontsize=7, loc="lower right")
    figure.suptitle("DQN on Doors-v0: mean over seeds, band = min to max")
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def write_all(
    out: pathlib.Path, table: str, rows: list[Summary], oracle: dict[str, float], results: Sequence[ArmRuns]
) -> dict[str, pathlib.Path]:
    """Writes the table, both CSVs and the plot under ``out``; returns their paths by kind."""
    paths = {
        "markdown": out / "compare.md",
        "csv": out / "compare.csv",
        "seeds_csv": out / "compare_seeds.csv",
        "plot": out / "learning_curves.png",
        "breakdown": out / "time_breakdown.png",
    }
    paths["markdown"].write_text(table)
    write_csv(rows, oracle, paths["csv"])
    write_seed_csv(results, paths["seeds_csv"])
    plot_curves(results, oracle, paths["plot"])
    plot_breakdown(rows, paths["breakdown"])
    return paths


def breakdown_table(rows: Sequence[Summary]) -> str:
    """Mean seconds per seed of each phase, per arm, and ms per update (Markdown)."""
    lines = [
        "| arm | " + " | ".join(name.replace("_", " ") for name in PHASES) + " | ms per update |",
        "|---|" + "---:|" * (len(PHASES) + 1),
    ]
    for row in rows:
        cells = " | ".join(f"{row.phases.get(name, math.nan):.2f}" for name in PHASES)
        lines.append(f"| {row.label} | {cells} | {row.ms_per_update:.3f} |")
    return "\n".join(lines)


def plot_breakdown(rows: Sequence[Summary], path: pathlib.Path) -> None:
    """Where each arm's wall time per seed goes: one stacked bar per arm."""
    import matplotlib
    from matplotlib.figure import Figure

    figure = Figure(figsize=(11, 0.6 * len(rows) + 2))
    axis = figure.subplots()
    labels = [row.label for row in rows]
    left = np.zeros(len(rows))
    colors = matplotlib.colormaps["Set2"]  # not tab10: that palette is the arms' (their tick labels)
    for index, name in enumerate(PHASES):
        values = np.array([row.phases.get(name, 0.0) for row in rows], dtype=float)
        values = np.nan_to_num(values)
        axis.barh(labels, values, left=left, color=colors(index), label=name.replace("_", " "))
        left += values
    axis.invert_yaxis()
    for label, row in zip(axis.get_yticklabels(), rows):
        label.set_color(arm_color(ARMS[row.arm]))  # the arm's colour of the learning curves
        label.set_fontweight("bold")
    axis.set_xlabel("wall-clock seconds per seed")
    axis.set_title("Where the time goes (flax-scan: its scan's time split as its compiled pieces take it apart)")
    axis.legend(
        ncol=len(PHASES), fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.25 if len(rows) > 2 else -0.4)
    )
    axis.grid(axis="x", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


STUDY_PLOTS = ("optimization_history", "param_importances", "contour")


def log_study_plots(study: Any) -> list[str]:
    """Logs the Optuna plots (HTML and PNG), best params and value on the active (parent) run.

    Returns the artifact paths written. A plot that cannot be drawn yet (too
    few complete trials) is replaced by a ``.txt`` artifact saying why.
    """
    import matplotlib.pyplot as plt  # Optuna's plots draw with pyplot, on whichever backend it picks
    import mlflow
    import optuna
    import optuna.visualization as plotly_plots
    import optuna.visualization.matplotlib as matplotlib_plots

    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    finished = study.get_trials(
        deepcopy=False, states=(optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    )
    written = []
    if complete:
        best = study.best_trial
        tags = {f"best.{key}": str(value) for key, value in best.params.items()}
        tags.update({"best.trial": str(best.number), "best.mlflow_run_id": best.user_attrs.get("mlflow_run_id", "")})

        def summarise() -> None:
            mlflow.log_metrics(
                {"best_value": best.value, "finished_trials": float(len(finished))}, step=len(study.trials)
            )
            mlflow.set_tags(tags)

        # Workers share the parent run: two that set a new tag at once collide in the store (a UNIQUE
        # constraint); the loser's second try finds the tag and updates it.
        retry_creation_race(summarise)
        mlflow.log_dict(
            {"trial": best.number, "value": best.value, "params": best.params, "user_attrs": best.user_attrs},
            "best_params.json",
        )
        written.append("best_params.json")
    contour_params = None
    if len(complete) >= 2:
        try:
            importances = optuna.importance.get_param_importances(study)
            contour_params = list(importances)[:3] if len(importances) >= 2 else None
        except (RuntimeError, ValueError):
            contour_params = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in STUDY_PLOTS:
            kwargs = {"params": contour_params} if name == "contour" and contour_params else {}
            try:
                if name == "contour" and not contour_params:
                    raise ValueError("a contour needs two complete trials and two varying params")
                figure = getattr(plotly_plots, f"plot_{name}")(study, **kwargs)
                mlflow.log_text(figure.to_html(include_plotlyjs=True, full_html=True), f"plots/{name}.html")
                axes = getattr(matplotlib_plots, f"plot_{name}")(study, **kwargs)
                mpl_figure = np.asarray(axes).flat[0].figure
                if name == "contour":  # Optuna places the colour bar itself; tight_layout would cover the plots
                    mpl_figure.set_size_inches(13, 11)
                else:
                    mpl_figure.set_size_inches(11, 6)
                    mpl_figure.tight_layout()
                mlflow.log_figure(mpl_figure, f"plots/{name}.png")
                plt.close(mpl_figure)
                written += [f"plots/{name}.html", f"plots/{name}.png"]
            except (ValueError, RuntimeError, ZeroDivisionError) as error:
                mlflow.log_text(f"{name} not drawn: {error}\n", f"plots/{name}.txt")
                written.append(f"plots/{name}.txt")
    return written


def write_study_summary(study: Any, folder: str | pathlib.Path) -> dict[str, pathlib.Path]:
    """Writes a study's summary under ``folder``: ``summary.md`` and ``summary.json`` (the best trial, the
    counts by state, the parameter importances) and the history and importance plots (PNG); returns the paths."""
    import json

    import matplotlib.pyplot as plt  # Optuna's plots draw with pyplot, on whichever backend it picks
    import optuna
    import optuna.visualization.matplotlib as matplotlib_plots

    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    states = [trial.state.name for trial in study.trials]
    counts = {state: states.count(state) for state in ("COMPLETE", "PRUNED", "FAIL", "RUNNING") if state in states}
    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    try:
        importances = dict(optuna.importance.get_param_importances(study)) if len(complete) >= 2 else {}
    except (RuntimeError, ValueError):
        importances = {}
    best = study.best_trial if complete else None
    summary = {
        "study": study.study_name,
        "arm": study.user_attrs.get("arm"),
        "objective": study.user_attrs["objective"],
        "direction": study.direction.name.lower(),
        "trials": counts,
        "best": (
            None
            if best is None
            else {"trial": best.number, "value": best.value, "params": best.params, "user_attrs": best.user_attrs}
        ),
        "importances": {name: round(value, 4) for name, value in importances.items()},
        "confirmed": sorted(
            (value for key, value in study.user_attrs.items() if key.startswith("confirm.")),
            key=lambda found: float(np.mean(found["scores"])) * (-1 if study.direction.name == "MAXIMIZE" else 1),
        ),
    }
    paths = {"json": folder / "summary.json", "markdown": folder / "summary.md"}
    paths["json"].write_text(json.dumps(summary, indent=1, default=str) + "\n")
    lines = [
        f"# Study `{study.study_name}`",
        "",
        f"Objective: {summary['objective']} ({summary['direction']}); trials: "
        + ", ".join(f"{count} {state.lower()}" for state, count in counts.items())
        + ".",
        "",
    ]
    if best is not None:
        attrs = best.user_attrs
        lines += [
            f"Best trial {best.number}: score {best.value:.3f} (seed {attrs.get('seed', '?')}, "
            f"{attrs.get('seconds_to_solved') or '-'} s to solved, {attrs.get('wall_seconds', '-')} s wall).",
            "",
            "| parameter | best value | importance |",
            "|---|---:|---:|",
            *(
                (
                    f"| {name} | {value:.4g} | {importances.get(name, math.nan):.3f} |"
                    if isinstance(value, float)
                    else f"| {name} | {value} | {importances.get(name, math.nan):.3f} |"
                )
                for name, value in sorted(best.params.items(), key=lambda item: -importances.get(item[0], 0.0))
            ),
            "",
        ]
    if summary["confirmed"]:
        lines += [
            "The best trials re-trained on more tuning seeds (the preset is the first row: the best mean score):",
            "",
            "| trial | seeds | scores | mean |",
            "|---:|---|---|---:|",
            *(
                f"| {found['trial']} | {', '.join(map(str, found['seeds']))} "
                f"| {', '.join(f'{score:.1f}' for score in found['scores'])} | {np.mean(found['scores']):.1f} |"
                for found in summary["confirmed"]
            ),
            "",
        ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("optimization_history", "param_importances"):
            if not complete or (name == "param_importances" and not importances):
                continue
            axes = getattr(matplotlib_plots, f"plot_{name}")(study)
            figure = np.asarray(axes).flat[0].figure
            figure.set_size_inches(10, 5.5)
            figure.tight_layout()
            paths[name] = folder / f"{name}.png"
            figure.savefig(paths[name], dpi=110)
            plt.close(figure)
            lines.append(f"![{name}]({name}.png)")
    paths["markdown"].write_text("\n".join(lines) + "\n")
    return paths
