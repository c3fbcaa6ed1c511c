"""benchmarks/_scale_out.py's accounting (floor, makespan over floor, speed-up) and its grid: a fixed budget, runs
started longest first, and each run's ``doors-gym train`` command read back by ``train``'s own parser."""

from __future__ import annotations

import pytest
from benchmark_scripts import load_benchmark
from stacks import needs

needs("flax")

from doors_gym_baselines.cli import build_parser, config_from_arguments  # noqa: E402

scale = load_benchmark("_scale_out")


def row(workers: int, executor: str, makespan: float, runs: dict[str, float], driver: float = 1.0):
    return scale.Row(workers, executor, makespan, runs, driver_seconds=driver, cpu_seconds=0.0)


def test_floor_is_the_longest_run_the_mean_share_or_the_driver():
    runs = {"a": 30.0, "b": 10.0, "c": 20.0}
    assert row(1, "dask", 66.0, runs).floor == 60.0  # one worker: every run after another
    assert row(2, "dask", 33.0, runs).floor == 30.0  # the share and the longest run tie
    assert row(4, "dask", 33.0, runs).floor == 30.0  # the longest run bounds more workers
    assert row(4, "dask", 33.0, {"a": 8.0, "b": 8.0, "c": 8.0, "d": 8.0, "e": 8.0}).floor == 10.0  # 40 s over 4
    assert row(4, "dask", 50.0, runs, driver=45.0).floor == 45.0  # a driver busier than any worker
    assert row(2, "dask", 33.0, runs).over_floor == pytest.approx(1.1)


def test_speed_up_is_over_the_same_executors_single_worker():
    rows = [
        row(1, "dask", 100.0, {"a": 1.0}),
        row(1, "processes", 120.0, {"a": 1.0}),
        row(2, "dask", 50.0, {"a": 1.0}),
        row(2, "processes", 80.0, {"a": 1.0}),
        row(4, "other", 10.0, {"a": 1.0}),
    ]
    assert scale.speed_ups(rows) == [1.0, 1.0, 2.0, 1.5, None]
    cells = scale.table_rows(rows)
    assert cells[2] == ["2", "dask", "1", "50.0", "1.0", "50.00", "0", "2.00x"]
    assert cells[4][-1] == "-"
    assert len(cells[0]) == len(scale.HEADERS)


def test_longest_first_keeps_ties_in_order_and_unknown_runs_last():
    jobs = [scale.Job(label, label, None, False, label) for label in ("s1", "n1", "s2", "n2", "new")]
    seconds = {"s1": 20.0, "s2": 20.0, "n1": 45.0, "n2": 50.0}
    assert [job.label for job in scale.longest_first(jobs, seconds)] == ["n2", "n1", "s1", "s2", "new"]


def test_measured_means_each_runs_seconds_over_the_rows():
    rows = [row(1, "dask", 1.0, {"a": 10.0, "b": 4.0}), row(1, "processes", 1.0, {"a": 12.0})]
    assert scale.measured(rows) == {"a": 11.0, "b": 4.0}


def test_rows_saved_by_one_call_come_back_for_the_same_grid_only(tmp_path):
    grid = scale.Grid(arms=("flax-scan", "flax-numpy"), seeds=8, total_steps=200_000)
    rows = [row(1, "dask", 387.2, {"a": 36.8, "b": 25.6}, driver=2.5), row(4, "dask", 125.3, {"a": 42.7})]
    path = tmp_path / "legs" / "dask.json"
    scale.save_rows(path, grid, rows)
    assert scale.load_rows(path, grid) == rows
    with pytest.raises(ValueError, match="another grid"):
        scale.load_rows(path, scale.Grid(arms=("flax-scan", "flax-numpy"), seeds=8, total_steps=100_000))


def test_the_grid_is_a_fixed_budget_started_longest_first(tmp_path):
    grid = scale.Grid(arms=("flax-scan", "flax-numpy"), seeds=2, total_steps=20_000)
    jobs = grid.jobs(tmp_path)
    labels = ["flax-scan seed 100", "flax-scan seed 101", "flax-numpy seed 100", "flax-numpy seed 101"]
    assert [job.label for job in jobs] == [f"{label} at Random" for label in labels]
    assert len({job.key for job in jobs}) == len(jobs)
    for job in jobs:
        run = job.config.run
        assert (run.total_steps, run.stop_when_solved, run.hold_out_steps, run.num_seeds) == (20_000, False, 0, 1)
        assert (run.profile, run.quiet, run.checkpoint, job.models) == (False, True, None, False)
    ordered = scale.longest_first(jobs, scale.expected(jobs, grid))
    assert [str(job.arm) for job in ordered] == ["flax-numpy", "flax-numpy", "flax-scan", "flax-scan"]


def test_each_runs_train_command_is_its_config_read_back_by_train(tmp_path):
    grid = scale.Grid(arms=("flax-scan", "flax-numpy"), seeds=2, total_steps=20_000)
    for job in grid.jobs(tmp_path):
        command = scale.train_command(job, grid)
        assert command[1:4] == ["-m", "doors_gym_baselines", "train"]
        args = build_parser().parse_args(command[3:])
        assert config_from_arguments(args) == job.config
