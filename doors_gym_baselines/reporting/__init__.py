"""What ``compare`` shows: per-seed records, statistics over seeds, tables, CSVs and plots.

- :mod:`~doors_gym_baselines.reporting.records`: each seed's figures, each
  arm's seeds, their summary over seeds, the oracle's row;
- :mod:`~doors_gym_baselines.reporting.statistics`: the interquartile mean
  over seeds with its bootstrap interval;
- :mod:`~doors_gym_baselines.reporting.tables`: ``compare.md``, the terminal's
  table, ``compare.csv`` and ``compare_seeds.csv``;
- :mod:`~doors_gym_baselines.reporting.plots`: ``learning_curves.png`` and
  ``time_breakdown.png``.

A tuning study's plots live with tuning (:mod:`doors_gym_baselines.tuning.plots`).
"""

from __future__ import annotations

import pathlib
from collections.abc import Sequence

from .plots import arm_color, plot_breakdown, plot_curves
from .records import (
    FIGURES,
    INTERVAL_FIGURES,
    ArmRuns,
    CurvePoint,
    SeedRun,
    Spread,
    Summary,
    describe_budget,
    oracle_row,
    best_seed,
    published_arms,
    seed_runs,
    summarise,
    summarise_all,
)
from .tables import (
    CSV_COLUMNS,
    TERMINAL_WIDTH,
    breakdown_table,
    is_study_layout,
    machine_line,
    markdown_table,
    terminal_table,
    write_csv,
    write_seed_csv,
)

__all__ = [
    "CSV_COLUMNS",
    "FIGURES",
    "INTERVAL_FIGURES",
    "TERMINAL_WIDTH",
    "ArmRuns",
    "CurvePoint",
    "SeedRun",
    "Spread",
    "Summary",
    "arm_color",
    "best_seed",
    "breakdown_table",
    "describe_budget",
    "is_study_layout",
    "machine_line",
    "markdown_table",
    "oracle_row",
    "plot_breakdown",
    "plot_curves",
    "published_arms",
    "seed_runs",
    "summarise",
    "summarise_all",
    "terminal_table",
    "write_all",
    "write_csv",
    "write_seed_csv",
]


def write_all(
    out: pathlib.Path,
    table: str,
    rows: list[Summary],
    oracle: dict[str, float],
    results: Sequence[ArmRuns],
    published: bool = True,
) -> dict[str, pathlib.Path]:
    """Writes the table, both CSVs and the plot under ``out``; returns their paths by kind. ``published``: the
    study's figures join the CSV and the plot (only where the layout is the study's, which they speak of)."""
    paths = {
        "markdown": out / "compare.md",
        "csv": out / "compare.csv",
        "seeds_csv": out / "compare_seeds.csv",
        "plot": out / "learning_curves.png",
        "breakdown": out / "time_breakdown.png",
    }
    paths["markdown"].write_text(table)
    write_csv(rows, oracle, paths["csv"], published)
    write_seed_csv(results, paths["seeds_csv"])
    plot_curves(results, oracle, paths["plot"], published)
    plot_breakdown(rows, paths["breakdown"])
    return paths
