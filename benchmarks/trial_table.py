"""One table of level_trial.py runs, from the logs they wrote with ``--log`` (a JSON header line, then a line per
evaluation): level, arm, seeds solved, each seed's env steps and seconds to solved, how far the run got and why
it stopped, greedy success at its last evaluation, env steps/s. A run cut short (a wall limit) is read as far as
its log goes: a log that does not end with level_trial.py's closing line stopped at a wall limit (or a kill).

A seed is solved where its first solved streak spans the run's hold-out window (where a run of that seed alone,
stopping when solved, would have stopped: :func:`doors_gym_baselines.harness.metrics.first_window`, as compare reads it).

    python benchmarks/trial_table.py OUT/*.jsonl
    python benchmarks/trial_table.py --margins OUT/*.jsonl   # and how each seed held after its first solve

``--margins`` adds two columns for probes run without stopping when solved: each seed's first solved evaluation,
and how many of its evaluations after that one were not solved (the bar's margin: 0 when every later evaluation held).
"""

from __future__ import annotations

import argparse
import json
import pathlib
from types import SimpleNamespace
from typing import Any

from doors_gym_baselines.harness.metrics import first_window

HEADER = (
    "| row | level | arm | seeds solved | env steps to solved (each seed) | s to solved (each seed) "
    "| env steps reached | stopped by | greedy success | env steps/s |"
)


def curve(rows: list[dict[str, Any]]) -> list[SimpleNamespace]:
    """The logged evaluations as the rows :func:`first_window` reads (each seed's solved flag, as logged)."""
    return [
        SimpleNamespace(
            step=row["step"], seconds=row["seconds"], per_seed=[SimpleNamespace(**seed) for seed in row["per_seed"]]
        )
        for row in rows
    ]


MARGIN_HEADER = " first solved at (each seed) | evaluations after it not solved (each seed) |"


def margins(rows: list[dict[str, Any]], seeds: int) -> str:
    """The ``--margins`` columns: each seed's first solved evaluation (``-`` if none) and, of its evaluations after
    that one, how many were not solved."""
    firsts, dips = [], []
    for seed in range(seeds):
        first = next((index for index, row in enumerate(rows) if row["per_seed"][seed]["solved"]), None)
        if first is None:
            firsts.append("-")
            dips.append("-")
            continue
        after = rows[first + 1 :]
        firsts.append(f"{rows[first]['step']:,}")
        dips.append(f"{sum(not row['per_seed'][seed]['solved'] for row in after)} of {len(after)}")
    return f" {' '.join(firsts)} | {', '.join(dips)} |"


def table_row(path: pathlib.Path, with_margins: bool = False) -> str:
    """The table's row of one run's log (``with_margins``: :func:`margins`' columns after it)."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not lines:
        raise ValueError(f"{path} is empty: expected a header line written by level_trial.py --log")
    header, *rows = lines
    finished = bool(rows) and rows[-1].get("finished", False)  # the run ended by itself (not at a wall limit)
    rows = rows[:-1] if finished else rows
    seeds = header["seeds"]
    if not rows:
        empty = " | |" if with_margins else ""
        return f"| {path.stem} | {header['level']} | {header['arm']} | 0/{seeds} | | | 0 | wall limit | | |{empty}"
    solved = [first_window(curve(rows), header["hold_out_steps"], seed) for seed in range(seeds)]
    solved = [row for row in solved if row is not None]
    last = rows[-1]
    if len(solved) == seeds and header.get("stop_when_solved", True):  # a probe run on to its budget says "budget"
        stopped = "solved"
    elif finished or last["step"] >= header["total_steps"]:  # (logs from before the closing line: the budget reached)
        stopped = "budget"
    else:
        stopped = "wall limit"
    rate = last["step"] * seeds / last["seconds"]
    steps = " ".join(f"{row.step:,}" for row in solved)
    seconds = " ".join(f"{row.seconds:.0f}" for row in solved)
    return (
        f"| {path.stem} | {header['level']} | {header['arm']} | {len(solved)}/{seeds} | {steps} | {seconds} "
        f"| {last['step']:,} | {stopped} | {last['greedy_success_rate']:.3f} | {rate:,.0f} |"
    ) + (margins(rows, seeds) if with_margins else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+", type=pathlib.Path, help="level_trial.py --log files, in the table's order")
    parser.add_argument("--margins", action="store_true", help="add each seed's first solve and the dips after it")
    args = parser.parse_args()
    print(HEADER + (MARGIN_HEADER if args.margins else ""))
    print("|---|---|---|---:|---|---|---:|---|---:|---:|" + ("---|---|" if args.margins else ""))
    for path in args.logs:
        print(table_row(path, args.margins))


if __name__ == "__main__":
    main()
