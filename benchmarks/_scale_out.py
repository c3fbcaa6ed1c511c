"""The scale-out per worker (``benchmarks/executors.py --scale WORKERS...``): one grid of runs made by a Dask cluster
of N workers and by N plain processes of ``doors-gym train``, at each N, against the floor no executor can beat.

The grid is a comparison's plan (:func:`doors_gym_baselines.experiments.compare.plan`: arms x seeds at a level,
a preset's hyperparameters) with a fixed budget: no run stops once solved, so a run's length is its budget's. Dask
trains it as ``compare --executor dask`` does (:func:`~doors_gym_baselines.experiments.executors.open_executor`,
:func:`~doors_gym_baselines.experiments.executors.train_job` on each worker); the processes run the same configs as
``doors-gym train`` commands, at most N at a time. Both start their runs longest first (by the seconds the rows
before measured, the first row by the ladder's expected seconds per run), each worker or process on one core: a row
of N workers runs pinned to N cores (its driver, scheduler and workers inherit the pinning), each worker's threads
held to one (:func:`~doors_gym_baselines.runtime.worker_environment`), one JAX compilation cache per row.

A row's makespan runs from opening the executor (a cluster's start included) to its last run's result; its floor is
``max(longest run, total run seconds / workers, driver CPU seconds)`` over the runs' own wall seconds in that row
(each run's ``wall_seconds``, its compile included). ``makespan / floor - 1`` is what the executor adds: start-up,
dispatch, imports, and the gaps of a schedule that could not be balanced.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import json
import os
import pathlib
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence

from doors_gym_baselines.experiments.compare import CompareOptions, missing_jobs, plan
from doors_gym_baselines.experiments.executors import DASK, ExecutorOptions, Job, Trained, job_key, open_executor
from doors_gym_baselines.experiments.ladder import expected_seconds
from doors_gym_baselines.runtime import JAX_CACHE_VARIABLE, worker_environment

PROCESSES = "processes"
EXECUTORS = (DASK, PROCESSES)


@dataclasses.dataclass(frozen=True)
class Grid:
    """The runs of the scale-out: every arm over ``seeds`` seeds at ``level``, ``total_steps`` env steps each."""

    arms: tuple[str, ...] = ("flax-numpy", "flax-scan")
    level: str = "Random"
    seeds: int = 4
    total_steps: int = 1_000_000
    preset: str = "shared"
    first_seed: int = 100

    def options(self, folder: pathlib.Path) -> CompareOptions:
        """The comparison whose plan the grid is: a run per (arm, seed), no seeds trained together, no models."""
        return CompareOptions(
            arms=self.arms, level=self.level, seeds=self.seeds, first_seed=self.first_seed, preset=self.preset,
            total_steps=self.total_steps, together=False, models=False, out=str(folder),
        )  # fmt: skip

    def jobs(self, folder: pathlib.Path) -> list[Job]:
        """Each run of the grid as a job: the plan's config with a fixed budget (no stop once solved), no progress,
        no profile after training and no checkpoint, so that a run's work is its budget's and nothing else."""
        jobs = []
        for _, run, job in missing_jobs(plan(self.options(folder)), {}):
            config = run.config.replace(
                stop_when_solved=False, hold_out_steps=0, profile=False, quiet=True, checkpoint=None
            )
            key = job_key(run.cache, config.to_dict(), False)
            jobs.append(dataclasses.replace(job, key=key, config=config))
        return jobs


def train_command(job: Job, grid: Grid) -> list[str]:
    """The ``doors-gym train`` command of ``job`` (a run of ``grid``): the same config, read by ``train``'s parser."""
    config = job.config.run
    return [
        sys.executable, "-m", "doors_gym_baselines", "train", "--arm", str(job.arm), "--level", grid.level,
        "--preset", grid.preset, "--total-steps", str(config.total_steps), "--eval-every", str(config.eval_every),
        "--seed", str(config.seed), "--no-stop-when-solved", "--hold-out-steps", "0", "--no-profile", "--quiet",
        "--no-track",
    ]  # fmt: skip


def longest_first(jobs: Sequence[Job], seconds: Mapping[str, float]) -> list[Job]:
    """``jobs`` by their expected seconds (``seconds``, by label; 0 where unknown), longest first, ties in their
    order (so that a worker free late gets a short run)."""
    return sorted(jobs, key=lambda job: -seconds.get(job.label, 0.0))


def expected(jobs: Sequence[Job], grid: Grid) -> dict[str, float]:
    """Each job's seconds as the ladder's committed table expects of its arm at the grid's level (a ranking only:
    those runs stop once solved)."""
    table = expected_seconds()
    return {job.label: table.get((grid.level, str(job.arm)), 0.0) for job in jobs}


@dataclasses.dataclass(frozen=True)
class Row:
    """One executor at one worker count: its makespan, each run's wall seconds, and the CPU seconds it took."""

    workers: int
    executor: str
    makespan: float
    run_seconds: dict[str, float]
    """Each run's own wall seconds (``TrainResult.wall_seconds``), by label."""
    driver_seconds: float
    """The driver's CPU seconds over the row (its scheduler and nannies included under Dask)."""
    cpu_seconds: float
    """The CPU seconds of the driver and every process it started, user and system."""

    @property
    def floor(self) -> float:
        """The least makespan any executor could reach with these runs on ``workers`` workers:
        ``max(longest run, total run seconds / workers, driver seconds)``."""
        runs = list(self.run_seconds.values())
        return max(max(runs, default=0.0), sum(runs) / self.workers, self.driver_seconds)

    @property
    def over_floor(self) -> float:
        """Makespan over floor (1 is the best)."""
        return self.makespan / self.floor


def speed_ups(rows: Sequence[Row]) -> list[float | None]:
    """Each row's speed-up over its executor's 1-worker row (the makespans' ratio); None without one."""
    single = {row.executor: row.makespan for row in rows if row.workers == 1}
    return [single[row.executor] / row.makespan if row.executor in single else None for row in rows]


def table_rows(rows: Sequence[Row]) -> list[list[str]]:
    """The Markdown table's cells: workers, executor, runs, makespan s, floor s, makespan/floor, CPU s, speed-up."""
    cells = []
    for row, speed_up in zip(rows, speed_ups(rows)):
        cells.append([
            str(row.workers), row.executor, str(len(row.run_seconds)), f"{row.makespan:.1f}", f"{row.floor:.1f}",
            f"{row.over_floor:.2f}", f"{row.cpu_seconds:.0f}", "-" if speed_up is None else f"{speed_up:.2f}x",
        ])  # fmt: skip
    return cells


HEADERS = ("workers", "executor", "runs", "makespan s", "floor s", "makespan/floor", "CPU s", "speed-up over 1 worker")


@contextlib.contextmanager
def pinned(workers: int) -> Iterator[None]:
    """Every thread of this process (and so every thread and process they start in the block) on ``workers`` of its
    cores; put back after. Each thread has its affinity of its own on Linux: an event loop's thread that a library
    keeps from one row to the next would otherwise spawn the next row's workers on the last row's cores."""
    cores = sorted(os.sched_getaffinity(0))
    set_threads_affinity(cores[:workers])
    try:
        yield
    finally:
        set_threads_affinity(cores)


def set_threads_affinity(cores: Sequence[int]) -> None:
    """Every thread of this process on ``cores`` (a thread that ended meanwhile is skipped)."""
    for thread in os.listdir("/proc/self/task"):
        with contextlib.suppress(ProcessLookupError):
            os.sched_setaffinity(int(thread), cores)


@contextlib.contextmanager
def accounted() -> Iterator[dict[str, float]]:
    """The CPU seconds of this process (``driver``) and of it with the processes it waited for (``cpu``) over the
    block, filled in when it ends."""
    figures: dict[str, float] = {}
    before_self = resource.getrusage(resource.RUSAGE_SELF)
    before_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    yield figures
    after_self = resource.getrusage(resource.RUSAGE_SELF)
    after_children = resource.getrusage(resource.RUSAGE_CHILDREN)

    def spent(after: resource.struct_rusage, before: resource.struct_rusage) -> float:
        return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    figures["driver"] = spent(after_self, before_self)
    figures["cpu"] = figures["driver"] + spent(after_children, before_children)


def run_dask(jobs: Sequence[Job], workers: int) -> Row:
    """``jobs`` on a local Dask cluster of ``workers`` workers (``compare --executor dask --workers N``'s)."""
    seconds: dict[str, float] = {}

    def done(job: Job, trained: Trained) -> None:
        seconds[job.label] = trained.result.wall_seconds

    with accounted() as figures:
        started = time.perf_counter()
        with open_executor(ExecutorOptions(DASK, workers=workers)) as executor:
            failures = executor.run(jobs, done)
            makespan = time.perf_counter() - started
    if failures:
        raise RuntimeError(f"{len(failures)} runs failed under Dask: {[failure.error for failure in failures]}")
    return Row(workers, DASK, makespan, seconds, figures["driver"], figures["cpu"])


def run_processes(jobs: Sequence[Job], workers: int, grid: Grid) -> Row:
    """``jobs`` as ``doors-gym train`` processes, at most ``workers`` at a time, started in ``jobs``' order, each
    with one core's threads and a JAX compilation cache shared by the row (as a local cluster's workers have)."""
    cache = tempfile.mkdtemp(prefix="doors-gym-scale-jax-cache-")
    environment = {**os.environ, **worker_environment(1), JAX_CACHE_VARIABLE: cache}

    def train(job: Job) -> float:
        done = subprocess.run(train_command(job, grid), capture_output=True, text=True, env=environment)
        if done.returncode:
            raise RuntimeError(f"{job.label}: doors-gym train exited {done.returncode}:\n{done.stderr[-2000:]}")
        summary, _ = json.JSONDecoder().raw_decode(done.stdout[done.stdout.index("{") :])
        return float(summary["wall_seconds"])

    try:
        with accounted() as figures:
            started = time.perf_counter()
            with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
                seconds = dict(zip([job.label for job in jobs], pool.map(train, jobs)))
            makespan = time.perf_counter() - started
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return Row(workers, PROCESSES, makespan, seconds, figures["driver"], figures["cpu"])


def scale_out(
    grid: Grid, workers: Sequence[int], executors: Sequence[str] = EXECUTORS, before: Sequence[Row] = ()
) -> list[Row]:
    """The grid at each worker count, with each executor, one row after another; each row's runs longest first by
    the mean seconds the rows before (``before`` first, rows of the same grid measured by an earlier call) measured
    of them. Returns the new rows."""
    cores = len(os.sched_getaffinity(0))
    if max(workers) > cores:
        raise ValueError(f"workers={max(workers)} is more than the {cores} cores this process may run on")
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="doors-gym-scale-") as folder:
        jobs = grid.jobs(pathlib.Path(folder))
        seconds = measured(before) if before else expected(jobs, grid)
        for count in workers:
            for executor in executors:
                order = longest_first(jobs, seconds)
                print(f"{count} worker{'s' if count > 1 else ''}, {executor}: {len(order)} runs, first "
                      f"{order[0].label}", flush=True)  # fmt: skip
                with pinned(count):
                    row = run_dask(order, count) if executor == DASK else run_processes(order, count, grid)
                rows.append(row)
                runs = ", ".join(f"{label} {value:.1f}" for label, value in row.run_seconds.items())
                print(f"  makespan {row.makespan:.1f} s, floor {row.floor:.1f} s, CPU {row.cpu_seconds:.0f} s; "
                      f"runs' own seconds: {runs}", flush=True)  # fmt: skip
                seconds = measured([*before, *rows])
    return rows


def save_rows(path: pathlib.Path, grid: Grid, rows: Sequence[Row]) -> None:
    """``rows`` and the grid they trained as JSON, for a later call's ``load_rows`` (rows measured apart, each on
    cores of its own, put into one table)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"grid": dataclasses.asdict(grid), "rows": [dataclasses.asdict(row) for row in rows]}))


def load_rows(path: pathlib.Path, grid: Grid) -> list[Row]:
    """The rows ``save_rows`` wrote to ``path``; a clear error when they trained another grid than ``grid``."""
    saved = json.loads(path.read_text())
    theirs = {**saved["grid"], "arms": tuple(saved["grid"]["arms"])}
    if theirs != dataclasses.asdict(grid) | {"arms": grid.arms}:
        raise ValueError(f"{path} holds rows of another grid ({theirs}); this call's is {dataclasses.asdict(grid)}")
    return [Row(**row) for row in saved["rows"]]


def measured(rows: Sequence[Row]) -> dict[str, float]:
    """Each run's mean wall seconds over ``rows``, by label."""
    runs: dict[str, list[float]] = {}
    for row in rows:
        for label, value in row.run_seconds.items():
            runs.setdefault(label, []).append(value)
    return {label: sum(values) / len(values) for label, values in runs.items()}
