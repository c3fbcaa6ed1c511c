"""A comparison's plots: the learning curves against wall-clock time (``learning_curves.png``) and where each
arm's time per seed goes (``time_breakdown.png``), each arm in its own colour."""

from __future__ import annotations

import math
import pathlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..arm import Arm
from ..arms import ARMS
from ..harness.metrics import PHASES
from .records import ArmRuns, Summary, published_arms


def arm_color(arm: Arm) -> Any:
    """The arm's colour in every plot (its curves, its study's star, its bars): tab10 by its place in the registry.

    By registry order, not by place in a plot, so an arm keeps its colour whichever arms a comparison runs.
    """
    import matplotlib

    return matplotlib.colormaps["tab10"](list(ARMS).index(arm.name) % 10)


def log_seconds_axis(axis: Any) -> None:
    """A log-scale seconds axis with plain labels at 1-2-5 steps and no minor labels (they overlapped); an axis
    with no point (a rolling reward where no training episode ended) says so and stays linear."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    low = axis.dataLim.intervalx[0]
    if not (math.isfinite(low) and low > 0):
        axis.text(0.5, 0.5, "no point: no training episode ended", transform=axis.transAxes, ha="center")
        return
    axis.set_xscale("log")
    axis.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.xaxis.set_minor_formatter(NullFormatter())


def plot_curves(
    results: Sequence[ArmRuns], oracle: dict[str, float], path: pathlib.Path, published: bool = True
) -> None:
    """Rolling and greedy per-step reward against wall-clock seconds: mean over seeds, min-max band; with
    ``published``, the study's figures as stars."""
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
    for arm in published_arms() if published else ():
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
    figure.suptitle("Learning curves on Doors: mean over seeds, band = min to max")
    figure.tight_layout()
    figure.savefig(path, dpi=120)


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
