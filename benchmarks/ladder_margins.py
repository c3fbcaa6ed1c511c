"""Margins of solved runs: after a run's first solved evaluation, how many of its later evaluations were not solved,
and how low its greedy success and rolling reward went, read from the logs of ``doors-gym compare`` / ``ladder`` /
``train`` runs (the evaluation lines a run writes to a log as it goes, :meth:`Progress.evaluated`).

    python benchmarks/ladder_margins.py benchmarks/results/ladder/rerun/pqn-256/logs/*-63x63-1*.log

One run a log (a log of several runs, one after another, reads as one); a row per log, named by its file; then how
many runs held: solved at every evaluation after their first solved one.
A run that stops when solved shows the evaluations from its first solve to its stop (its hold-out window and the
dips in it); a probe run to its budget shows them to the end. In a run of several seeds the log's figures are means
over the seeds and "solved" is every seed's (``benchmarks/trial_table.py --margins`` reads each seed of a probe).
"""

from __future__ import annotations

import argparse
import pathlib

from doors_gym_baselines.harness.progress import LoggedEvaluation, read_evaluations

HEADER = (
    "| run | evaluations | first solved at (env steps) | evaluations after it | not solved after it "
    "| lowest greedy success after it | lowest rolling reward after it (bar) |"
)
RULE = "|---|---:|---:|---:|---:|---:|---:|"


def margin(evaluations: list[LoggedEvaluation]) -> tuple[int | None, list[LoggedEvaluation]]:
    """The index of the first solved evaluation (None if the run never was) and the evaluations after it."""
    first = next((index for index, row in enumerate(evaluations) if row.solved), None)
    return first, [] if first is None else evaluations[first + 1 :]


def held(evaluations: list[LoggedEvaluation]) -> bool:
    """Solved at some evaluation and at every one after it."""
    first, after = margin(evaluations)
    return first is not None and all(row.solved for row in after)


def table_row(name: str, evaluations: list[LoggedEvaluation]) -> str:
    """The table's row of one run."""
    first, after = margin(evaluations)
    if first is None:
        return f"| {name} | {len(evaluations)} | not solved | | | | |"
    dips = sum(not row.solved for row in after)
    greedy = f"{min(row.greedy_success_rate for row in after):.3f}" if after else ""
    rolling = (
        f"{min(row.rolling_reward for row in after):.4f} ({evaluations[first].solved_reward:.4f})" if after else ""
    )
    return (
        f"| {name} | {len(evaluations)} | {evaluations[first].step:,} | {len(after)} | {dips} | {greedy} | {rolling} |"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+", type=pathlib.Path, help="logs of runs (their evaluation lines)")
    args = parser.parse_args(argv)
    runs = []
    for path in args.logs:
        evaluations = read_evaluations(path.read_text(encoding="utf-8").splitlines())
        if not evaluations:
            parser.error(f"{path} has no evaluation lines: expected the log of a compare, ladder or train run")
        runs.append((path.stem, evaluations))
    print(HEADER)
    print(RULE)
    for name, evaluations in runs:
        print(table_row(name, evaluations))
    solved = sum(margin(evaluations)[0] is not None for _, evaluations in runs)
    kept = sum(held(evaluations) for _, evaluations in runs)
    print(f"\nheld from the first solve: {kept} of {solved} solved runs ({len(runs)} runs)")


if __name__ == "__main__":
    main()
