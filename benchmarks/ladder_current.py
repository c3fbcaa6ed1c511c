"""The ladder's current rows in one table and one picture, from the committed ladder CSVs.

``doors-gym ladder --report-only`` draws the rows of one output folder; the ladder's rows live in six (``full/``:
every level with the presets of its run, ``rerun/all-arms/``: ``31x31`` and ``63x63`` with the DQN level presets that
first solved them; ``rerun/unseen/``: the jitted arm's rows there with the DQN presets kept on probe seeds, on seeds
no choice saw; ``rerun/lower/``: ``3Walls``, whose preset was first found on ``full/``'s seeds, every arm on seeds
110-112; ``rerun/presets/``: every default arm at ``31x31`` and ``63x63`` with the PQN level presets as first kept
(2 epochs of 1,024-row minibatches a rollout), on those seeds; ``rerun/pqn-256/``: the same with today's presets,
one epoch of 256-row minibatches). A later folder's row replaces an earlier one's for the same level and arm, and a
level the last folder holds keeps that folder's rows alone (a row of a former preset at that level is other work).
Writes ``ladder.md``, ``ladder.csv`` and ``ladder.png`` (``doors_gym_baselines.ladder.write_ladder``) under
``--out``, copies the picture to ``docs/ladder.png`` and writes each row's seconds per run to
``doors_gym_baselines/experiments/ladder_expected.csv``
(what ``doors-gym ladder --plan`` expects a run to take):

    python benchmarks/ladder_current.py
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import pathlib
import shutil

from doors_gym.levels import LEVEL_NAMES
from doors_gym_baselines.experiments.ladder import LadderRow, write_ladder

ROOT = pathlib.Path(__file__).resolve().parents[1]
LADDER = ROOT / "benchmarks" / "results" / "ladder"
FOLDERS = ("full", "rerun/all-arms", "rerun/unseen", "rerun/lower", "rerun/presets", "rerun/pqn-256")
SOURCES = tuple(LADDER / folder / "ladder.csv" for folder in FOLDERS)


def read_rows(path: pathlib.Path) -> list[LadderRow]:
    """The rows of a ``ladder.csv`` (its ``oracle_fraction`` column is derived, so dropped)."""
    names = {spec.name: spec.type for spec in dataclasses.fields(LadderRow)}
    with path.open(newline="") as handle:
        return [
            LadderRow(**{name: value if names[name] == "str" else _number(names[name], value)
                         for name, value in record.items() if name in names})
            for record in csv.DictReader(handle)
        ]


def _number(kind: str, text: str) -> int | float:
    return int(text) if kind == "int" else float(text)


def current(sources: list[pathlib.Path]) -> list[LadderRow]:
    """Each row (a level and an arm's key) from the last source that has it, in the ladder's level order (a level's
    rows in the order of the source that gave it the most rows, the rest after); a level of the last source has its
    rows alone."""
    by_level: dict[str, dict[str, LadderRow]] = {}
    order: dict[str, list[str]] = {}
    for index, source in enumerate(sources):
        keys: dict[str, list[str]] = {}
        rows = read_rows(source)
        if index == len(sources) - 1:  # the current presets' levels: their rows alone
            for level in {row.level for row in rows}:
                by_level[level], order[level] = {}, []
        for row in rows:
            by_level.setdefault(row.level, {})[row.key] = row
            keys.setdefault(row.level, []).append(row.key)
        for level, listed in keys.items():
            if len(listed) > len(order.get(level, [])):
                order[level] = listed
    rows = []
    for level in LEVEL_NAMES:
        found = by_level.get(level, {})
        rank = {key: index for index, key in enumerate(order.get(level, []))}
        rows += sorted(found.values(), key=lambda row: rank.get(row.key, len(rank)))
    return rows


def write_expected(rows: list[LadderRow], path: pathlib.Path) -> None:
    """Each row's wall seconds per run (a row of seeds in one run: that run's), which ``doors-gym ladder --plan``
    reads as what a run is expected to take."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["level", "key", "seconds_per_run"])
        for row in rows:
            runs = 1 if row.key.endswith("-together") else row.seeds
            writer.writerow([row.level, row.key, f"{row.wall_seconds_total / runs:.1f}"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", nargs="+", type=pathlib.Path, default=list(SOURCES), help="ladder.csv files, oldest first")
    parser.add_argument("--out", type=pathlib.Path, default=LADDER / "current")
    parser.add_argument(
        "--expected",
        type=pathlib.Path,
        default=ROOT / "doors_gym_baselines" / "experiments" / "ladder_expected.csv",
        help="each row's seconds per run, for doors-gym ladder --plan",
    )
    parser.add_argument("--docs", type=pathlib.Path, default=ROOT / "docs" / "ladder.png", help="copy of the picture")
    args = parser.parse_args()
    rows = current(args.sources)
    outcome = write_ladder(rows, [level for level in LEVEL_NAMES if any(row.level == level for row in rows)], args.out)
    shutil.copyfile(outcome.paths["plot"], args.docs)
    write_expected(rows, args.expected)
    print(outcome.table)


if __name__ == "__main__":
    main()
