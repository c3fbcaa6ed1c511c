"""The time-to-solved objective, the hold-out window, and the statistics over seeds (no training)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from doors_gym_baselines.config import DQNConfig, RunSettings
from doors_gym_baselines.harness.evaluation import Evaluation
from doors_gym_baselines.harness import EvaluationSchedule
from doors_gym_baselines.harness.metrics import (
    HistoryRow,
    SeedFigures,
    seconds_to_first_window,
    seconds_to_solved,
    solved_since,
)
from doors_gym_baselines.reporting import statistics
from doors_gym_baselines.tuning import scores

SOLVED = (1.0, 0.8)
UNSOLVED = (0.5, 0.3)


def curve(*points: tuple[int, float, tuple[float, float]]) -> list[HistoryRow]:
    """Rows ``(step, seconds, (greedy success, rolling reward))`` of one seed."""
    rows = []
    for step, seconds, (success, rolling) in points:
        seed = SeedFigures(0, success, 0.7, 0.9, rolling)
        rows.append(HistoryRow(step, seconds, 1.0, 0.1, 0.0, success, 0.7, 0.9, rolling, *[math.nan] * 4, (seed,)))
    return rows


def test_solved_since_is_the_start_of_the_last_unbroken_solved_streak() -> None:
    rows = curve((10, 1.0, SOLVED), (20, 2.0, UNSOLVED), (30, 3.0, SOLVED), (40, 4.0, SOLVED), (50, 5.0, SOLVED))
    assert solved_since(rows).step == 30 and seconds_to_solved(rows) == 3.0
    assert seconds_to_solved(rows, hold_out_steps=20) == 3.0  # solved from 30 through 50
    assert math.isnan(seconds_to_solved(rows, hold_out_steps=21))  # the window is not met
    assert math.isnan(seconds_to_solved(rows[:2]))  # lost again: not solved at the end
    assert seconds_to_solved(rows, seed=0) == 3.0


def test_a_seed_trained_with_others_is_solved_where_its_own_run_would_have_stopped() -> None:
    rows = curve((10, 1.0, SOLVED), (20, 2.0, SOLVED), (30, 3.0, UNSOLVED), (40, 4.0, SOLVED), (50, 5.0, SOLVED))
    assert seconds_to_first_window(rows, 10, seed=0) == 1.0  # solved at 10 through 20, whatever came after
    assert seconds_to_first_window(rows, 0, seed=0) == 1.0
    assert math.isnan(seconds_to_first_window(rows, 20, seed=0))  # never solved for 20 steps on end
    assert seconds_to_solved(rows, 10) == 4.0  # solved to the end: only from 40


def test_each_seed_reports_its_env_steps_to_solved_beside_its_seconds() -> None:
    from types import SimpleNamespace

    from doors_gym_baselines.reporting import seed_runs
    from doors_gym_baselines.harness.metrics import Timings

    alone = curve((10, 1.0, UNSOLVED), (20, 2.5, SOLVED), (30, 3.0, SOLVED))
    config = DQNConfig.of(total_steps=30, eval_every=10, hold_out_steps=10)
    result = SimpleNamespace(history=alone, config=config, wall_seconds=3.0, timings=Timings(), updates=6, env_steps=30)
    (seed,) = seed_runs(result, [7])
    assert (seed.seconds_to_solved, seed.steps_to_solved) == (2.5, 20.0)
    # Two seeds in one run: the second solved from step 10 and held; its seconds are shared by the two seeds.
    held = SeedFigures(1, *SOLVED[:1], 0.7, 0.9, SOLVED[1])
    together = [dataclasses.replace(row, per_seed=(row.per_seed[0], held)) for row in alone]
    first, second = seed_runs(SimpleNamespace(**{**result.__dict__, "history": together}), [7, 8])
    assert (second.seconds_to_solved, second.steps_to_solved) == (0.5, 10.0)
    assert (first.seconds_to_solved, first.steps_to_solved) == (1.25, 20.0)
    unsolved = seed_runs(SimpleNamespace(**{**result.__dict__, "history": alone[:1]}), [7])[0]
    assert math.isnan(unsolved.seconds_to_solved) and math.isnan(unsolved.steps_to_solved)


def test_time_to_solved_score_counts_compile_time_and_penalises_unsolved_runs() -> None:
    run = RunSettings(total_steps=100, eval_every=10, hold_out_steps=20)
    solved = curve((10, 4.0, UNSOLVED), (20, 5.0, SOLVED), (30, 6.0, SOLVED), (40, 7.0, SOLVED))
    assert scores.time_to_solved_score(solved, run, final=True) == 5.0
    # At the end a streak shorter than the hold-out window is unsolved: the budget (its wall time) plus the penalty,
    # 1 to 2 times, by the shortfall (here 0: it is solved, only too briefly).
    short = solved[:3]
    assert scores.time_to_solved_score(short, run, final=True, penalty_seconds=100) == pytest.approx(6.0 + 100)
    # While training, a current streak counts from its start, and an unsolved run is projected to the budget.
    assert scores.time_to_solved_score(short, run, final=False) == 5.0
    unsolved = scores.time_to_solved_score(solved[:1], run, final=False, penalty_seconds=100)
    gap = 0.5 * ((0.99 - 0.5) / 0.99 + (0.75 - 0.3) / 0.75)
    assert unsolved == pytest.approx(4.0 * 100 / 10 + 100 * (1 + gap))
    # The further from solved, the worse the score at the same time.
    worse = curve((10, 4.0, (0.1, -0.2)))
    assert scores.time_to_solved_score(worse, run, final=False) > scores.time_to_solved_score(solved[:1], run, False)
    with pytest.raises(ValueError, match="history is empty"):
        scores.time_to_solved_score([], run, final=True)
    with pytest.raises(ValueError, match="objective='reward' is not supported"):
        scores.objective_score("reward", solved, run, final=True)
    assert scores.OBJECTIVES == {"time-to-solved": "minimize", "learning-curve": "maximize"}


def test_a_run_that_stops_when_solved_stops_after_the_hold_out_window() -> None:
    figures = {10: UNSOLVED, 20: SOLVED, 30: UNSOLVED, 40: SOLVED, 50: SOLVED, 60: SOLVED, 70: SOLVED}
    config = DQNConfig.of(total_steps=100, eval_every=10, hold_out_steps=20, stop_when_solved=True, num_envs=1)
    history: list[HistoryRow] = []
    calls = []

    def evaluate(step: int) -> tuple[Evaluation, HistoryRow]:
        calls.append(step)
        return Evaluation(1.0, 0.7, 0.9, 10.0, 225), curve((step, float(step), figures[step]))[0]

    schedule = EvaluationSchedule(evaluate, history, None, config)
    stopped_at = next(step for step in range(10, 100, 10) if schedule.should_stop(step, more_to_come=True))
    assert stopped_at == 60  # solved at 40, 50 and 60: 20 steps of hold-out
    # The final evaluation is the one it stopped at, not a second one.
    _, final = schedule.final(60)
    assert final.step == 60 and calls == [10, 20, 30, 40, 50, 60]
    assert [row.step for row in history] == [10, 20, 30, 40, 50]


def test_iqm_interval_counts_unsolved_seeds_and_brackets_the_iqm() -> None:
    from scipy.stats import trim_mean

    values = [3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0]
    interval = statistics.iqm_interval(values)
    assert interval.iqm == pytest.approx(trim_mean(values, 0.25)) and interval.low < interval.iqm < interval.high
    assert statistics.iqm_interval(values) == interval  # seeded: the same figures give the same interval
    # Two unsolved seeds of ten are trimmed, but widen the interval to infinity; three make the IQM infinite.
    two = statistics.iqm_interval([*values[:8], math.inf, math.inf])
    assert math.isfinite(two.iqm) and two.high == math.inf
    assert statistics.iqm_interval([*values[:7], math.inf, math.inf, math.inf]).iqm == math.inf
    assert statistics.iqm_interval([2.0]) == statistics.Interval(2.0, 2.0, 2.0)
    assert format(two, ".1f").endswith(", ∞]")
    with pytest.raises(ValueError, match="no NaN"):
        statistics.iqm_interval([1.0, math.nan])
    assert statistics.iqm(np.arange(8.0)) == pytest.approx(3.5)


def test_a_figure_no_seed_has_is_left_out_and_shown_as_a_dash():
    """A run where no training episode ended (63x63 on a short budget) has no rolling reward: its seeds are left
    out of that figure's IQM, a row with none shows "-", and the curves' plot says so instead of failing."""
    from matplotlib.figure import Figure

    from doors_gym_baselines.reporting.plots import log_seconds_axis
    from doors_gym_baselines.reporting.records import figure_interval

    assert figure_interval([0.5, math.nan, 0.7]) == statistics.iqm_interval([0.5, 0.7])
    empty = figure_interval([math.nan, math.nan])
    assert math.isnan(empty.iqm) and f"{empty:.3f}" == "-"
    with pytest.raises(ValueError, match="no NaN"):
        statistics.iqm_interval([0.5, math.nan])  # the time to solved still refuses one: unsolved is inf there
    axis = Figure().subplots()
    axis.axhline(0.5)
    log_seconds_axis(axis)
    assert axis.get_xscale() == "linear" and "no training episode ended" in axis.texts[0].get_text()
    axis.plot([1.0, 10.0], [0.1, 0.2])
    log_seconds_axis(axis)
    assert axis.get_xscale() == "log"
