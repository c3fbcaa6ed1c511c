"""A comparison's records: each seed's figures, each arm's seeds, and their summary over seeds.

A figure over seeds is the interquartile mean with its 95 % bootstrap interval
(:mod:`doors_gym_baselines.reporting.statistics`), and its mean and standard
deviation; the time to a solved agent counts unsolved seeds as never.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from doors_gym.core import DoorsParams

from ..arm import Arm
from ..arms import ARMS, REFERENCE_ARM
from ..config import Config
from ..harness.evaluation import evaluate_greedy
from ..harness.metrics import PHASES, SOLVED_ROLLING_REWARD, TrainResult, first_window, is_solved, solved_since
from .statistics import Interval, iqm_interval

FIGURES = ("rolling_reward", "greedy_success_rate", "greedy_normalised_return", "greedy_step_reward")
"""The final figures every seed reports, summarised over seeds."""
INTERVAL_FIGURES = ("greedy_success_rate", "greedy_step_reward", "rolling_reward")
"""The final figures reported as IQM with a bootstrap CI (beside the time to solved)."""


@dataclasses.dataclass(frozen=True)
class CurvePoint:
    """One point of a seed's learning curve against wall-clock time."""

    seconds: float
    step: int
    rolling_reward: float
    greedy_step_reward: float


@dataclasses.dataclass(frozen=True)
class SeedRun:
    """One seed's figures in a comparison: final figures, wall time, time to solved, curve."""

    seed: int
    wall_seconds: float
    seconds_to_solved: float
    """Wall seconds (compile included) to the evaluation from which the seed stayed solved through the hold-out
    window to the end of its run (NaN if it did not; see :func:`~doors_gym_baselines.harness.metrics.seconds_to_solved`)."""
    rolling_reward: float
    greedy_success_rate: float
    greedy_normalised_return: float
    greedy_step_reward: float
    curve: tuple[CurvePoint, ...] = ()
    phases: dict[str, float] = dataclasses.field(default_factory=dict)
    """Seconds of each phase of the run (see :class:`~doors_gym_baselines.harness.metrics.Timings`), this seed's share."""
    updates: int = 0
    """Gradient updates of this seed."""
    env_steps: int = 0
    """Env steps of this seed."""
    solved_reward: float = SOLVED_ROLLING_REWARD
    """The rolling reward of "Solved" at the run's layout (``metrics.solved_reward``)."""
    steps_to_solved: float = math.nan
    """This seed's env steps at the evaluation of :attr:`seconds_to_solved` (NaN if unsolved)."""
    host: str = ""
    """The machine that trained it (its host name; "" in caches written before runs were spread)."""
    worker: str = ""
    """The process that trained it: ``local`` (the command's own) or a Dask worker's name."""

    @property
    def solved(self) -> bool:
        """Solved at the end of training."""
        return is_solved(self.greedy_success_rate, self.rolling_reward, self.solved_reward)

    def to_dict(self) -> dict[str, Any]:
        """Plain types, for the resume cache."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> SeedRun:
        """Inverse of :meth:`to_dict`."""
        curve = tuple(CurvePoint(**point) for point in values.get("curve", ()))
        return cls(**{**values, "curve": curve})


def seed_runs(result: TrainResult, seeds: Sequence[int], host: str = "", worker: str = "") -> list[SeedRun]:
    """Each seed's figures and curve (trained by ``host``'s ``worker``); seeds trained together share the wall
    clock, split evenly.

    So does their time to solved: a seed's is the run's clock when it was
    solved (through the hold-out window) divided by the seeds of the run.
    """
    runs = []
    for index, seed in enumerate(seeds):
        curve = tuple(
            CurvePoint(
                seconds=row.seconds,
                step=row.step,
                rolling_reward=row.per_seed[index].rolling_reward,
                greedy_step_reward=row.per_seed[index].greedy_step_reward,
            )
            for row in result.history
        )
        hold_out = result.config.run.hold_out_steps
        if len(seeds) == 1:
            solved_row = solved_since(result.history, hold_out, seed=index)
        else:  # where its own run would have stopped (the run goes on until every seed is solved)
            solved_row = first_window(result.history, hold_out, index)
        solved_at = math.nan if solved_row is None else solved_row.seconds / len(seeds)
        final = result.history[-1].per_seed[index]
        runs.append(
            SeedRun(
                seed=seed,
                wall_seconds=result.wall_seconds / len(seeds),
                seconds_to_solved=solved_at,
                steps_to_solved=math.nan if solved_row is None else float(solved_row.step),
                rolling_reward=final.rolling_reward,
                greedy_success_rate=final.greedy_success_rate,
                greedy_normalised_return=final.greedy_normalised_return,
                greedy_step_reward=final.greedy_step_reward,
                curve=curve,
                phases={name: value / len(seeds) for name, value in result.timings.as_dict().items()},
                updates=result.updates // len(seeds),
                env_steps=result.env_steps // len(seeds),
                solved_reward=final.solved_reward,
                host=host,
                worker=worker,
            )
        )
    return runs


def best_seed(runs: Sequence[SeedRun]) -> int:
    """The index of the best seed: solved first, then greedy per-step reward, then rolling reward."""
    scores = [(run.solved, run.greedy_step_reward, run.rolling_reward) for run in runs]
    return max(range(len(runs)), key=scores.__getitem__)


@dataclasses.dataclass(frozen=True)
class ArmRuns:
    """Every seed of one arm in a comparison, and where its hyperparameters came from.

    ``seeds_in_one_run`` is 0 when each seed trained in a run of its own (every arm's row), else the
    number of seeds one run trained together (a row of its own, its figures per seed).
    """

    arm: Arm
    hyperparameters: str
    config: Config
    seeds: tuple[SeedRun, ...]
    seeds_in_one_run: int = 0

    @property
    def key(self) -> str:
        """The row's name in CSVs and MLflow metrics: the arm's, with ``-together`` for seeds in one run."""
        return f"{self.arm.name}-together" if self.seeds_in_one_run else self.arm.name

    @property
    def label(self) -> str:
        """The row's label in tables and plots."""
        if self.seeds_in_one_run:
            return f"{self.arm.label}, {self.seeds_in_one_run} seeds in one run (per seed)"
        return self.arm.label

    @property
    def short_label(self) -> str:
        """The row's name in the terminal table."""
        return f"{self.arm.name} x{self.seeds_in_one_run}" if self.seeds_in_one_run else self.arm.name


@dataclasses.dataclass(frozen=True)
class Spread:
    """Mean and sample standard deviation over seeds (0 for one seed)."""

    mean: float
    std: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        array = np.asarray(values, dtype=float)
        return cls(float(array.mean()), float(array.std(ddof=1)) if len(array) > 1 else 0.0)

    def __format__(self, spec: str) -> str:
        return f"{format(self.mean, spec)} ± {format(self.std, spec)}"


@dataclasses.dataclass(frozen=True)
class Summary:
    """One arm's row of the comparison table."""

    arm: str
    label: str
    hyperparameters: str
    seeds: int
    key: str
    """The row's name in CSVs and MLflow metrics (see :attr:`ArmRuns.key`)."""
    short_label: str
    seeds_in_one_run: int
    solved: int
    """Seeds solved at the end."""
    solved_ever: int
    """Seeds with a time to solved."""
    wall_seconds_total: float
    wall_seconds: Spread
    seconds_to_solved_mean: float
    """Mean time to solved over the seeds that have one."""
    intervals: dict[str, Interval]
    """IQM and 95 % CI over seeds of the time to solved (unsolved: inf) and of :data:`INTERVAL_FIGURES`."""
    budget: str
    """The run's budget and stopping rule, in words."""
    rolling_reward: Spread
    greedy_success_rate: Spread
    greedy_normalised_return: Spread
    greedy_step_reward: Spread
    phases: dict[str, float] = dataclasses.field(default_factory=dict)
    """Mean seconds per seed of each phase."""
    ms_per_update: float = math.nan
    """Milliseconds of the update phase per gradient update."""
    env_steps_per_second: float = math.nan
    """Env steps per second of wall time, over every seed."""
    speedup_vs_torch_numpy: float | None = None
    """The reference arm's total wall time over this arm's."""
    speedup_to_solved: float | None = None
    """The reference arm's IQM time to solved over this arm's."""

    def csv_row(self) -> dict[str, Any]:
        """The row of ``compare.csv``."""
        names = ("arm", "key", "label", "hyperparameters", "budget", "seeds", "seeds_in_one_run", "solved")
        row = {name: getattr(self, name) for name in names}
        row.update(solved_ever=self.solved_ever, wall_seconds_total=self.wall_seconds_total)
        for name in ("wall_seconds", *FIGURES):
            spread = getattr(self, name)
            row[f"{name}_mean"], row[f"{name}_std"] = spread.mean, spread.std
        row["seconds_to_solved_mean"] = self.seconds_to_solved_mean
        row["speedup_vs_torch_numpy"] = self.speedup_vs_torch_numpy
        row["speedup_to_solved"] = self.speedup_to_solved
        for name, interval in self.intervals.items():
            row[f"{name}_iqm"], row[f"{name}_ci_low"], row[f"{name}_ci_high"] = (
                interval.iqm,
                interval.low,
                interval.high,
            )
        row["ms_per_update"] = self.ms_per_update
        row["env_steps_per_second"] = self.env_steps_per_second
        row.update({f"seconds_{name}": self.phases.get(name, math.nan) for name in PHASES})
        return row


def figure_interval(values: Sequence[float]) -> Interval:
    """:func:`iqm_interval` over the seeds that have the figure: a NaN (a rolling reward where no training
    episode ended within the budget) is left out on purpose, and a figure no seed has is NaN throughout."""
    present = [value for value in values if not math.isnan(value)]
    return iqm_interval(present) if present else Interval(math.nan, math.nan, math.nan)


def summarise(runs: ArmRuns) -> Summary:
    """IQM with CI, mean and standard deviation over seeds of every figure, and the totals."""
    seeds = runs.seeds
    all_times = np.array([seed.seconds_to_solved for seed in seeds], dtype=float)
    solved_times = all_times[np.isfinite(all_times)]
    all_steps = np.array([seed.steps_to_solved for seed in seeds], dtype=float)
    intervals = {
        "seconds_to_solved": iqm_interval(np.where(np.isnan(all_times), math.inf, all_times)),
        "steps_to_solved": iqm_interval(np.where(np.isnan(all_steps), math.inf, all_steps)),
    }
    intervals.update({name: figure_interval([getattr(seed, name) for seed in seeds]) for name in INTERVAL_FIGURES})
    wall = sum(seed.wall_seconds for seed in seeds)
    return Summary(
        arm=runs.arm.name,
        label=runs.label,
        hyperparameters=runs.hyperparameters,
        seeds=len(seeds),
        key=runs.key,
        short_label=runs.short_label,
        seeds_in_one_run=runs.seeds_in_one_run,
        solved=sum(seed.solved for seed in seeds),
        solved_ever=int(solved_times.size),
        wall_seconds_total=float(sum(seed.wall_seconds for seed in seeds)),
        wall_seconds=Spread.of([seed.wall_seconds for seed in seeds]),
        seconds_to_solved_mean=float(solved_times.mean()) if solved_times.size else math.nan,
        intervals=intervals,
        budget=describe_budget(runs.config),
        phases={name: float(np.mean([seed.phases.get(name, math.nan) for seed in seeds])) for name in PHASES},
        ms_per_update=ms_per_update(seeds),
        env_steps_per_second=sum(seed.env_steps for seed in seeds) / wall if wall > 0 else math.nan,
        **{name: Spread.of([getattr(seed, name) for seed in seeds]) for name in FIGURES},
    )


def ms_per_update(seeds: Sequence[SeedRun]) -> float:
    """Milliseconds of update phase per gradient update, over every seed; NaN where no update was timed apart."""
    updates = sum(seed.updates for seed in seeds)
    seconds = sum(seed.phases.get("update", 0.0) for seed in seeds)
    return 1e3 * seconds / updates if updates and seconds > 0 else math.nan


def describe_budget(config: Config) -> str:
    """A run's budget and stopping rule in words."""
    run = config.run
    words = f"{run.total_steps / 1000:g}k steps, eval every {run.eval_every / 1000:g}k"
    if run.stop_when_solved:
        words += f", stops when solved for {run.hold_out_steps / 1000:g}k"
    elif run.hold_out_steps:
        words += f", hold-out {run.hold_out_steps / 1000:g}k"
    return words


def summarise_all(results: Sequence[ArmRuns]) -> list[Summary]:
    """Every arm's summary, with its speed-ups over the reference arm (wall time, and IQM time to solved)."""
    rows = [summarise(runs) for runs in results]
    reference = next((row for row in rows if row.key == REFERENCE_ARM.name), None)

    def to_solved(row: Summary) -> float | None:
        if reference is None:
            return None
        ours, theirs = row.intervals["seconds_to_solved"].iqm, reference.intervals["seconds_to_solved"].iqm
        return theirs / ours if math.isfinite(ours) and math.isfinite(theirs) else None

    return [
        dataclasses.replace(
            row,
            speedup_vs_torch_numpy=reference.wall_seconds_total / row.wall_seconds_total if reference else None,
            speedup_to_solved=to_solved(row),
        )
        for row in rows
    ]


def oracle_row(params: DoorsParams) -> dict[str, float]:
    """The shortest-path policy's figures on the same greedy evaluation."""
    from doors_gym.oracle import OraclePolicy

    evaluation = evaluate_greedy(OraclePolicy(params), params)
    return {
        "rolling_reward": evaluation.mean_step_reward,
        "greedy_success_rate": evaluation.success_rate,
        "greedy_normalised_return": evaluation.normalised_return,
        "greedy_step_reward": evaluation.mean_step_reward,
    }


def published_arms() -> list[Arm]:
    """The arms whose study published figures (the study's Table 2), in registry order."""
    return [arm for arm in ARMS.values() if arm.study is not None]
