"""``doors-gym ladder --quick`` with ``--executor local`` and ``--executor dask --workers N`` side by side, and the
fault probes of the Dask executor: a worker SIGKILLed mid-run, and the driver SIGKILLed and rerun; or, with
``--scale``, the scale-out per worker (``_scale_out.py``).

    python benchmarks/executors.py --out /tmp/executors                  # both executors, then the two probes
    python benchmarks/executors.py --out /tmp/executors --skip-probes
    python benchmarks/executors.py --scale 1 2                           # the grid at 1 and 2 workers
    python benchmarks/executors.py --scale 1 2 --smoke                   # a tiny grid: the script end to end

Each executor runs the whole quick ladder in a process of its own, into its own folder and MLflow store, one
after the other (never both at once); the table compares their rows (seeds solved, env steps to solved, final
rolling reward), their wall times and the CPU seconds of the command and its processes (a local cluster's workers
included). Run it with nothing else on the machine: the ratio is the figure. The local command's CPU seconds over
the machine's cores bound what any executor can reach on the same work here ("floor"): a ladder whose local run
already keeps more than one core busy cannot be spread below that share of its wall time.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import os
import pathlib
import platform
import resource
import signal
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


def ladder_command(out: pathlib.Path, executor: list[str]) -> list[str]:
    """``doors-gym ladder --quick`` into ``out`` (its own MLflow store there), with ``executor``'s flags."""
    return [sys.executable, "-m", "doors_gym_baselines", "ladder", "--quick", "--out", str(out), "--tracking-uri",
            f"sqlite:///{out.resolve()}/mlflow.db", "--quiet", *executor]  # fmt: skip


def timed_ladder(out: pathlib.Path, executor: list[str]) -> tuple[float, float]:
    """Runs the quick ladder; its wall seconds and the CPU seconds (user and system) of it and its processes."""
    out.mkdir(parents=True, exist_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with (out / "log.txt").open("w") as log:
        subprocess.run(ladder_command(out, executor), check=True, stdout=log, stderr=subprocess.STDOUT, env=ENV)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def seed_rows(out: pathlib.Path) -> dict[tuple[str, str, str], dict[str, str]]:
    """Every level's ``compare_seeds.csv`` rows by (level, row key, seed)."""
    rows = {}
    for path in sorted(out.glob("*/compare_seeds.csv")):
        with path.open() as handle:
            for row in csv.DictReader(handle):
                rows[(path.parent.name, row["key"], row["seed"])] = row
    return rows


def compare_rows(local: pathlib.Path, spread: pathlib.Path) -> list[str]:
    """A Markdown row per (level, row, seed): both executors' solved flag, env steps to solved, rolling reward."""
    mine, theirs = seed_rows(local), seed_rows(spread)
    lines = []
    for key in sorted(mine):
        a, b = mine[key], theirs.get(key, {})
        same = all(a.get(name) == b.get(name) for name in ("steps_to_solved", "rolling_reward", "greedy_success_rate"))
        lines.append(
            f"| {key[0]} | {key[1]} | {a['rolling_reward'][:6]} / {b.get('rolling_reward', '-')[:6]} "
            f"| {a['greedy_success_rate'][:5]} / {b.get('greedy_success_rate', '-')[:5]} "
            f"| {b.get('worker', '-')} | {'identical' if same else 'differs'} |"
        )
    return lines


def runs_by_status(out: pathlib.Path) -> tuple[dict[str, int], dict[str, int]]:
    """The MLflow store under ``out``: the count of nested runs by parent, name and status, and of parent runs by
    name and status."""
    import mlflow

    client = mlflow.MlflowClient(f"sqlite:///{out.resolve()}/mlflow.db")
    experiment = client.get_experiment_by_name("doors-gym-ladder")
    nested: dict[str, int] = {}
    parents: dict[str, int] = {}
    for run in client.search_runs([experiment.experiment_id], max_results=1000):
        parent = run.data.tags.get("mlflow.parentRunId")
        table = nested if parent else parents
        name = f"{run.info.run_name} {run.info.status}"
        name = f"{parent[:8]}/{name}" if parent else name
        table[name] = table.get(name, 0) + 1
    return nested, parents


def kill_midway(out: pathlib.Path, workers: int, seconds: float, driver: bool) -> tuple[int, float, str]:
    """Starts the dask ladder into ``out`` and SIGKILLs, ``seconds`` in, one worker process (``driver`` False: the
    ladder goes on) or the driver with its cluster (then reruns it): the last command's return code, the wall
    seconds from the start to its end (the rerun's included) and the rerun's output."""
    out.mkdir(parents=True, exist_ok=True)
    command = ladder_command(out, ["--executor", "dask", "--workers", str(workers)])
    start = time.perf_counter()
    with (out / "log.txt").open("w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=ENV, start_new_session=True)
        time.sleep(seconds)
        if driver:
            os.killpg(process.pid, signal.SIGKILL)
        else:
            children = subprocess.run(["pgrep", "-g", str(process.pid), "-f", "spawn_main"], capture_output=True,
                                      text=True).stdout.split()  # fmt: skip
            os.kill(int(children[0]), signal.SIGKILL)
        returncode = process.wait()
    if not driver:
        return returncode, time.perf_counter() - start, ""
    done = subprocess.run(command, capture_output=True, text=True, env=ENV)
    (out / "rerun.txt").write_text(done.stdout + done.stderr)
    return done.returncode, time.perf_counter() - start, done.stdout


def fault_probes(out: pathlib.Path, workers: int, local: float) -> list[str]:
    """A worker SIGKILLed 20 s in, and the driver SIGKILLed 60 s in and rerun: their wall time beside the local
    ladder's (``local`` seconds), what the driver said, and how the runs ended in MLflow."""
    lines = []
    for name, seconds, driver in (("killed-worker", 20, False), ("killed-driver", 60, True)):
        returncode, wall, rerun = kill_midway(out / name, workers, seconds, driver)
        nested, parents = runs_by_status(out / name)
        finished = {run.rsplit(" ", 1)[0]: count for run, count in nested.items() if run.endswith(" FINISHED")}
        names = {run.rsplit(" ", 1)[0] for run in nested}
        others = {run: count for run, count in nested.items() if not run.endswith(" FINISHED")}
        what = "driver SIGKILLed 60 s in, then rerun" if driver else "a worker SIGKILLed 20 s in"
        said = [line.strip() for line in (out / name / "log.txt").read_text().splitlines() if "Dask runs it" in line]
        told = f"{rerun.count('reusing')} runs reused by the rerun" if driver else (
            f"the driver said: {' / '.join(f'`{line}`' for line in said) or 'no retry'}")  # fmt: skip
        lines.append(
            f"- {what}: rc {returncode}, {wall:.0f} s in all ({wall / local:.2f}x the local ladder); {told}; nested "
            f"runs {len(names)}, each FINISHED once under its parent: "
            f"{names == set(finished) and set(finished.values()) == {1}}, other records: {others or 'none'}; "
            f"parent runs {parents}"
        )
    return lines


def scale_main(args: argparse.Namespace) -> None:
    """The scale-out table (``--scale``): the grid at each worker count under each executor, written as Markdown."""
    from _scale_out import EXECUTORS, HEADERS, Grid, load_rows, save_rows, scale_out, table_rows
    from _timing import machine_line, write_report

    os.environ["JAX_PLATFORMS"] = "cpu"  # the workers inherit it: the scale-out is the CPU's, on a GPU host too
    grid = Grid(tuple(args.grid_arms), args.grid_level, args.grid_seeds, args.grid_steps, args.grid_preset)
    if args.smoke:
        grid = dataclasses.replace(grid, seeds=1, total_steps=50_000)
    before = [row for path in args.with_rows for row in load_rows(pathlib.Path(path), grid)]
    executors = args.executors or EXECUTORS
    rows = scale_out(grid, args.scale, executors, before)
    if args.save_rows:
        save_rows(pathlib.Path(args.save_rows), grid, rows)
    order = {name: index for index, name in enumerate(EXECUTORS)}
    rows = sorted([*before, *rows], key=lambda row: (row.workers, order[row.executor]))
    single = [row for row in rows if row.workers == 1]
    total = f"; the runs' own seconds total {sum(single[0].run_seconds.values()):.0f} at 1 worker" if single else ""
    smoke = "**Smoke grid: it checks the script end to end; its figures are not the measurement.** "
    smoke = smoke if args.smoke else ""
    intro = (
        f"{smoke}Grid: {', '.join(grid.arms)} x {grid.seeds} seed{'s' if grid.seeds > 1 else ''} (from "
        f"{grid.first_seed}) at {grid.level}, "
        f"the {grid.preset} preset, {grid.total_steps:,} env steps each, no stop once solved{total}. "
        f"JAX on the CPU. {machine_line()}. A row of N workers runs pinned to N cores, each Dask worker and each "
        "`doors-gym train` process with one core's threads, runs started longest first, one JAX compilation cache "
        "per row. Makespan: from opening the executor (a cluster's start included) to the last run's result; floor: "
        "max(longest run, total run seconds / workers, driver CPU seconds), over the runs' own wall seconds in that "
        "row; CPU s: the driver and every process it started; speed-up: the same executor's 1-worker makespan over "
        "this one."
    )
    path = pathlib.Path(args.table or (
        pathlib.Path(args.out) / "scale_out_smoke.md" if args.smoke
        else pathlib.Path(__file__).parent / "results" / "executors" / f"scale_out_{os.cpu_count()}cores.md"
    ))  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    command = " ".join(["python benchmarks/executors.py", *sys.argv[1:]])
    print(write_report(path, command, intro, HEADERS, table_rows(rows)))
    print(f"written to {path}")


def main() -> None:
    from _scale_out import Grid

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out/executors")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--skip-probes", action="store_true")
    scale = parser.add_argument_group("the scale-out per worker (--scale)")
    scale.add_argument("--scale", type=int, nargs="+", metavar="WORKERS",
                       help="train the grid at each of these worker counts (instead of the ladder and the probes)")
    scale.add_argument("--executors", nargs="+", choices=("dask", "processes"),
                       help="which executors (default: both, Dask first at each worker count)")
    grid = Grid()
    scale.add_argument("--grid-arms", nargs="+", default=list(grid.arms), help="arms (default: %(default)s)")
    scale.add_argument("--grid-level", default=grid.level, help="level of every run (default: %(default)s)")
    scale.add_argument("--grid-seeds", type=int, default=grid.seeds, help="seeds per arm, a run each (default: "
                       "%(default)s)")
    scale.add_argument("--grid-steps", type=int, default=grid.total_steps, help="env steps per run, no stop once "
                       "solved (default: %(default)s)")
    scale.add_argument("--grid-preset", default=grid.preset, help="hyperparameters of every run (default: %(default)s)")
    scale.add_argument("--smoke", action="store_true",
                       help="one seed of 50k env steps per arm: checks the script, measures nothing")
    scale.add_argument("--save-rows", metavar="JSON", help="also write this call's rows here (for --with-rows)")
    scale.add_argument("--with-rows", nargs="+", default=[], metavar="JSON",
                       help="rows of the same grid measured by earlier calls (--save-rows), put into this call's "
                       "table: rows measured apart, each on cores of its own")
    scale.add_argument("--table", help="the Markdown file (default: benchmarks/results/executors/"
                                       "scale_out_<cores>cores.md; --smoke: <out>/scale_out_smoke.md)")
    args = parser.parse_args()
    if args.scale:
        scale_main(args)
        return
    out = pathlib.Path(args.out)
    (local, local_cpu) = timed_ladder(out / "local", [])
    (spread, spread_cpu) = timed_ladder(out / "dask", ["--executor", "dask", "--workers", str(args.workers)])
    cores = os.cpu_count() or 1
    lines = [
        f"`doors-gym ladder --quick`, {platform.machine()} with {cores} cores, torch threads 1 per run "
        f"(both), local: the driver's process; dask: a LocalCluster of {args.workers} workers, 1 thread each",
        "",
        "| executor | wall s | ratio | CPU s | cores busy |",
        "|---|---:|---:|---:|---:|",
        f"| local | {local:.0f} | 1.00 | {local_cpu:.0f} | {local_cpu / local:.2f} |",
        f"| dask, {args.workers} workers | {spread:.0f} | {spread / local:.2f} | {spread_cpu:.0f} "
        f"| {spread_cpu / spread:.2f} |",
        "",
        f"Floor on this machine: the local command's CPU seconds over {cores} cores, {local_cpu / cores:.0f} s, "
        f"a ratio of {local_cpu / cores / local:.2f}; the dask command's own, {spread_cpu / cores:.0f} s "
        f"({spread_cpu / cores / local:.2f}).",
        "",
        "| level | row | rolling reward local / dask | greedy success local / dask | dask worker | figures |",
        "|---|---|---|---|---|---|",
        *compare_rows(out / "local", out / "dask"),
    ]
    if not args.skip_probes:
        lines += ["", *fault_probes(out, args.workers, local)]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
