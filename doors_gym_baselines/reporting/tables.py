"""A comparison's tables: Markdown (``compare.md``), the terminal's, and the CSVs.

- ``compare.md`` and ``compare.csv``: per arm, the interquartile mean over
  seeds with its 95 % bootstrap interval of the time to a solved agent
  (unsolved seeds counted as never), the greedy success rate and per-step
  reward and the rolling reward (the study's figure: mean per-step reward of
  the last 2000 training episodes), the seeds solved at the end, the speed-up
  over torch x Doors-v0 in time to solved, the training wall time; means and
  standard deviations in the CSV; the oracle's row and the study's published row;
- ``compare_seeds.csv``: one row per arm and seed.
"""

from __future__ import annotations

import csv
import math
import os
import pathlib
import platform
import textwrap
from collections.abc import Sequence

from doors_gym.levels import STUDY

from ..arms import REFERENCE_ARM
from ..config import Config, level_of
from ..harness.evaluation import describe_evaluation
from ..harness.metrics import PHASES, SOLVED_SUCCESS, solved_reward
from .records import FIGURES, INTERVAL_FIGURES, ArmRuns, Summary, published_arms


def machine_line() -> str:
    """The machine a comparison ran on, in one line of its Markdown."""
    return f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}."


def markdown_table(rows: list[Summary], oracle: dict[str, float], config: Config, machine: str) -> str:
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
    published = published_table(rows) if is_study_layout(config) else []
    settings = (
        f"Figures: interquartile mean over seeds [95 % percentile bootstrap CI]; greedy figures over "
        f"{describe_evaluation(config.params)}, rolling reward over the last {config.run.rolling_episodes} "
        f"training episodes. Solved: greedy success >= {SOLVED_SUCCESS * 100:g} % and rolling reward >= "
        f"{solved_reward(config.params)}. s to solved: wall seconds, compile included, to the evaluation from which a seed "
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


def is_study_layout(config: Config) -> bool:
    """The run's layout is the study's (``Doors-v0``): the only level the study's Table 2 speaks of."""
    level = level_of(config.params)
    return level is not None and level.name == STUDY


def published_table(rows: Sequence[Summary]) -> list[str]:
    """The study's Table 2 beside our rows of the same stacks (Markdown lines, a blank one first)."""
    lines = [
        "",
        "The study's Table 2 (published; one seed each, tuned with 40 Optuna trials, on an RTX 5060 Ti GPU):",
        "",
        "| study arm | rolling reward | wall time | speed-up | ours, same stack: rolling reward "
        "| ours: wall s per seed |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    ours = {row.key: row for row in rows}
    reference_seconds = REFERENCE_ARM.study.wall_seconds
    for arm in published_arms():
        mine = ours.get(arm.name)
        lines.append(
            f"| {arm.study.label} | {arm.study.rolling_reward:.2f} | {arm.study.wall_seconds / 60:.1f} min "
            f"| {reference_seconds / arm.study.wall_seconds:.1f}x "
            f"| {format(mine.rolling_reward, '.3f') if mine else '-'} "
            f"| {format(mine.wall_seconds, '.1f') if mine else '-'} |"
        )
    return lines


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
    headers = (
        "solved",
        "s to\nsolved",
        "speed-up",
        "greedy\nsuccess",
        "rolling\nreward",
        "s per\nseed",
        "ms per\nupdate",
        "env\nsteps/s",
    )
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
            "-" if math.isnan(figures["rolling_reward"].iqm) else f"{figures['rolling_reward'].iqm:.3f}",
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
    *(f"{key}_{stat}" for key in ("seconds_to_solved", "steps_to_solved", *INTERVAL_FIGURES) for stat in ("iqm", "ci_low", "ci_high")),
    "budget",
    "speedup_vs_torch_numpy",
    "speedup_to_solved",
    "ms_per_update",
    "env_steps_per_second",
    *(f"seconds_{name}" for name in PHASES),
)


def write_csv(rows: list[Summary], oracle: dict[str, float], path: pathlib.Path, published: bool = True) -> None:
    """``compare.csv``: a row per arm, the oracle's, and (``published``) the study's published rows."""
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
        for arm in published_arms() if published else ():
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
    columns = (
        "arm", "key", "seed", "wall_seconds", "seconds_to_solved", "env_steps", "updates", *FIGURES, "host", "worker"
    )
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for runs in results:
            for seed in runs.seeds:
                figures = {key: getattr(seed, key) for key in columns[2:]}
                writer.writerow({"arm": runs.arm.name, "key": runs.key, **figures})


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
