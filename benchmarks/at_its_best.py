"""Each stack at its best at each level, beside its like-for-like row: the ladder's second table.

Built from results already in the repo, each level's two columns from one benchmark run (the same machine and
conditions, so their ratios are figures):

- ``study``: like for like is ``compare --preset shared`` (``shared.yml``, every arm alike), at its best the arm's
  tuned preset (``compare --preset tuned``); 10 seeds each, run one after the other
  (``benchmarks/results/compare_shared`` and ``compare_tuned``);
- every level with a scale curve (``benchmarks/results/scale/<level>/scale.csv``): like for like is the curve's
  16-env point (the level's shared preset as it is), at its best the arm's fastest point to solved (its number of
  parallel envs and rule); 3 seeds a point.

    python benchmarks/at_its_best.py     # prints the table and writes benchmarks/results/ladder/at_its_best.md
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import pathlib

from doors_gym.levels import LEVEL_NAMES, STUDY
from doors_gym_baselines.arms import get_arm
from doors_gym_baselines.experiments.compare import DEFAULT_ARMS

RESULTS = pathlib.Path(__file__).parent / "results"
REFERENCE = DEFAULT_ARMS[0]
"""The arm each row's speed is held against (eager torch over the NumPy env)."""


@dataclasses.dataclass(frozen=True)
class Row:
    """One arm at one level: like for like and at its best (seconds to solved, IQM over its seeds)."""

    level: str
    arm: str
    like_for_like: float
    best: float
    best_setting: str
    seeds: str
    """Seeds of the best setting."""


def rows_by_key(path: pathlib.Path) -> dict[str, dict[str, str]]:
    """A ``compare.csv``'s rows by their key."""
    with path.open() as handle:
        return {row["key"]: row for row in csv.DictReader(handle)}


def seconds(row: dict[str, str], name: str) -> float:
    """A row's seconds to solved (infinite where no seed solved)."""
    value = float(row[name] or "nan")
    return value if math.isfinite(value) and int(row["solved"] or 0) > 0 else math.inf


def study_rows(results: pathlib.Path) -> list[Row]:
    """``study``: the shared preset against the fastest of each arm's settings there: the shared or its tuned
    preset, and for an arm that trains seeds together, its seeds in one run (seconds per seed)."""
    tables = {name: rows_by_key(results / f"compare_{name}" / "compare.csv") for name in ("shared", "tuned")}
    rows = []
    for arm in DEFAULT_ARMS:
        if arm not in tables["shared"]:
            continue
        candidates = [
            (seconds(table[key], "seconds_to_solved_iqm"), described(name, table[key], key.endswith("-together")))
            for name, table in tables.items()
            for key in (arm, f"{arm}-together")
            if key in table
        ]
        best, setting = min(candidates, key=lambda candidate: candidate[0])
        seeds = tables["shared"][arm]["seeds"]
        rows.append(Row(STUDY, arm, seconds(tables["shared"][arm], "seconds_to_solved_iqm"), best, setting, seeds))
    return rows


def described(name: str, row: dict[str, str], together: bool) -> str:
    """What a ``compare.csv`` row ran: its preset and whether its seeds trained in one run."""
    seeds = f", its {row['seeds']} seeds in one run (per seed)" if together else ""
    return f"`{name}` preset ({row['hyperparameters'].split('(', 1)[-1].rstrip(')')}){seeds}"


def scale_rows(level: str, path: pathlib.Path) -> list[Row]:
    """A level with a scale curve: its 16-env point against each arm's fastest point."""
    with path.open() as handle:
        points = list(csv.DictReader(handle))
    rows = []
    for arm in DEFAULT_ARMS:
        mine = [point for point in points if point["arm"] == arm]
        if not mine:
            continue
        base = min(mine, key=lambda point: int(point["num_envs"]))
        best = min(mine, key=lambda point: seconds(point, "seconds_to_solved"))
        setting = f"{best['num_envs']} envs, updates held {best['rule']}"
        rows.append(
            Row(level, arm, seconds(base, "seconds_to_solved"), seconds(best, "seconds_to_solved"), setting,
                best["seeds"])  # fmt: skip
        )
    return rows


def ratio(numerator: float, denominator: float) -> str:
    """``numerator / denominator`` as ``2.3x``; ``-`` where either is unsolved."""
    if not (math.isfinite(numerator) and math.isfinite(denominator)):
        return "-"
    return f"{numerator / denominator:.1f}x"


def figure(value: float) -> str:
    """Seconds to solved as the table prints them."""
    return f"{value:.1f}" if math.isfinite(value) else "unsolved"


def markdown(rows: list[Row]) -> str:
    """The table: a row per level and arm."""
    lines = [
        "| level | arm | like for like: s to solved | at its best: s to solved | its best | gain | over torch, "
        "like for like | over torch, at its best | seeds |",
        "|---|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    reference = {row.level: row for row in rows if row.arm == REFERENCE}
    for row in rows:
        torch = reference.get(row.level)
        lines.append(
            f"| {row.level} | {get_arm(row.arm).label} | {figure(row.like_for_like)} | {figure(row.best)} "
            f"| {row.best_setting} | {ratio(row.like_for_like, row.best)} "
            f"| {ratio(torch.like_for_like, row.like_for_like) if torch else '-'} "
            f"| {ratio(torch.best, row.best) if torch else '-'} | {row.seeds} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=str(RESULTS))
    parser.add_argument("--out", default=str(RESULTS / "ladder" / "at_its_best.md"))
    args = parser.parse_args()
    results = pathlib.Path(args.results)
    rows = study_rows(results)
    for level in LEVEL_NAMES:
        path = results / "scale" / level / "scale.csv"
        if level != STUDY and path.exists():
            rows += scale_rows(level, path)
    table = markdown(rows)
    pathlib.Path(args.out).write_text(
        "Each stack at its best at each level (`python benchmarks/at_its_best.py`): seconds to solved, IQM over the "
        "seeds; the two columns of a level come from one benchmark run.\n\n" + table + "\n"
    )
    print(table)


if __name__ == "__main__":
    main()
