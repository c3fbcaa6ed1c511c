"""One table of level_trial.py runs, from the logs they wrote with ``--log`` (a JSON header line, then a line per
evaluation): level, arm, seeds solved, each seed's env steps and seconds to solved, how far the run got and why
it stopped, greedy success at its last evaluation, env steps/s. A run cut short (a wall limit) is read as far as
its log goes: a log that does not end with level_trial.py's closing line stopped at a wall limit (or a kill).

A seed is solved where its first solved streak spans the run's hold-out window (where a run of that seed alone,
stopping when solved, would have stopped: ``doors_gym_baselines.metrics.first_window``).

    python benchmarks/trial_table.py OUT/*.jsonl
"""

from __future__ import annotations

import argparse
import json
import pathlib
from typing import Any

HEADER = (
    "| row | level | arm | seeds solved | env steps to solved (each seed) | s to solved (each seed) "
    "| env steps reached | stopped by | greedy success | env steps/s |"
)


def first_solved(rows: list[dict[str, Any]], seed: int, hold_out_steps: int) -> dict[str, Any] | None:
    """The row that starts ``seed``'s first solved streak spanning ``hold_out_steps`` env steps, or None."""
    start = None
    for row in rows:
        if not row["per_seed"][seed]["solved"]:
            start = None
            continue
        start = start or row
        if row["step"] - start["step"] >= hold_out_steps:
            return start
    return None


def table_row(path: pathlib.Path) -> str:
    """The table's row of one run's log."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not lines:
        raise ValueError(f"{path} is empty: expected a header line written by level_trial.py --log")
    header, *rows = lines
    finished = bool(rows) and rows[-1].get("finished", False)  # the run ended by itself (not at a wall limit)
    rows = rows[:-1] if finished else rows
    seeds = header["seeds"]
    if not rows:
        return f"| {path.stem} | {header['level']} | {header['arm']} | 0/{seeds} | | | 0 | wall limit | | |"
    solved = [first_solved(rows, seed, header["hold_out_steps"]) for seed in range(seeds)]
    solved = [row for row in solved if row is not None]
    last = rows[-1]
    if len(solved) == seeds:
        stopped = "solved"
    elif finished or last["step"] >= header["total_steps"]:  # (logs from before the closing line: the budget reached)
        stopped = "budget"
    else:
        stopped = "wall limit"
    rate = last["step"] * seeds / last["seconds"]
    steps = " ".join(f"{row['step']:,}" for row in solved)
    seconds = " ".join(f"{row['seconds']:.0f}" for row in solved)
    return (
        f"| {path.stem} | {header['level']} | {header['arm']} | {len(solved)}/{seeds} | {steps} | {seconds} "
        f"| {last['step']:,} | {stopped} | {last['greedy_success_rate']:.3f} | {rate:,.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+", type=pathlib.Path, help="level_trial.py --log files, in the table's order")
    args = parser.parse_args()
    print(HEADER)
    print("|---|---|---|---:|---|---|---:|---|---:|---:|")
    for path in args.logs:
        print(table_row(path))


if __name__ == "__main__":
    main()
