"""Typed results: a learning-curve row, one seed's figures, and what ``train`` returns.

The field names of :class:`HistoryRow` are the metric names, defined once here
and used by the arms, tracking (MLflow metric keys), tuning and compare.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import Any

SOLVED_SUCCESS = 0.99
SOLVED_ROLLING_REWARD = 0.75


def is_solved(greedy_success_rate: float, rolling_reward: float, solved_reward: float = SOLVED_ROLLING_REWARD) -> bool:
    """Greedy success >= 99 % and rolling reward >= ``solved_reward`` (the layout's bar, :func:`solved_reward`;
    0.75 on ``Doors-v0``)."""
    return greedy_success_rate >= SOLVED_SUCCESS and rolling_reward >= solved_reward


@functools.lru_cache(maxsize=16)
def solved_reward(params: Any = None) -> float:
    """SPEC's rolling-reward bar of "Solved" for a layout (``DoorsParams``): 0.75 where the doors are fixed
    on one wall (``Doors-v0``'s figure; None means it too), else the oracle's
    ``level_figures(params).solved_rolling_reward`` (96.6 % of its mean step reward; seconds at 63x63, cached)."""
    if params is None or (not params.random_doors and params.n_walls == 1):
        return SOLVED_ROLLING_REWARD
    from doors_gym.oracle import level_figures

    return float(level_figures(params).solved_rolling_reward)


@functools.lru_cache(maxsize=16)
def oracle_step_reward(params: Any) -> float:
    """The oracle's mean step reward at a layout (``DoorsParams``): over every start/goal pair where the doors
    are fixed, else ``level_figures``' estimate over sampled layouts."""
    from doors_gym.oracle import evaluate_oracle, level_figures

    if params.random_doors:
        return float(level_figures(params).mean_step_reward)
    return float(evaluate_oracle(params).mean_step_reward)


@dataclasses.dataclass(frozen=True)
class SeedFigures:
    """One seed's figures at one evaluation (NaN rolling figures before its first finished episode)."""

    seed: int
    greedy_success_rate: float
    greedy_step_reward: float
    greedy_normalised_return: float
    rolling_reward: float
    solved_reward: float = SOLVED_ROLLING_REWARD
    """The rolling reward of "Solved" at the run's layout (:func:`solved_reward`)."""
    seconds: float = math.nan
    """The seed's own clock where it is not the run's (a lane of a program of trials, :mod:`.scan_driver`), else NaN."""

    @property
    def solved(self) -> bool:
        """This seed is solved at this evaluation."""
        return is_solved(self.greedy_success_rate, self.rolling_reward, self.solved_reward)


@dataclasses.dataclass(frozen=True)
class HistoryRow:
    """One point of a learning curve; with several seeds in one run, figures are means over the seeds.

    Attributes:
        step: env steps of one seed when the row was taken.
        seconds: wall-clock seconds since the run started.
        sps: env steps per second, summed over seeds.
        per_seed: each seed's own figures, in seed order.
    """

    step: int
    seconds: float
    sps: float
    epsilon: float
    loss: float
    greedy_success_rate: float
    greedy_step_reward: float
    greedy_normalised_return: float
    rolling_reward: float
    train_success_rate: float
    train_normalised_return: float
    train_episode_return: float
    train_episode_length: float
    per_seed: tuple[SeedFigures, ...] = ()

    def metrics(self) -> dict[str, float]:
        """The finite metrics of the row by name (NaN is left out, e.g. before the first episode)."""
        values = {name: float(getattr(self, name)) for name in METRIC_NAMES}
        return {name: value for name, value in values.items() if math.isfinite(value)}

    @property
    def solved(self) -> bool:
        """Every seed is solved at this evaluation."""
        return bool(self.per_seed) and all(seed.solved for seed in self.per_seed)


def solved_since(history: Sequence[HistoryRow], hold_out_steps: int = 0, seed: int | None = None) -> HistoryRow | None:
    """The first row of the unbroken run of solved evaluations that reaches the last row, or None.

    The run counts only if it spans at least ``hold_out_steps`` env steps: the
    agent was solved and stayed solved through a hold-out window to the end.
    ``seed`` picks one seed's figures of ``per_seed``; None needs every seed solved.
    """
    start = None
    for row in reversed(history):
        if not (row.solved if seed is None else row.per_seed[seed].solved):
            break
        start = row
    if start is None or history[-1].step - start.step < hold_out_steps:
        return None
    return start


def seconds_to_solved(history: Sequence[HistoryRow], hold_out_steps: int = 0, seed: int | None = None) -> float:
    """Wall seconds since the run started (compile included) at :func:`solved_since`'s row; NaN if unsolved."""
    row = solved_since(history, hold_out_steps, seed)
    return math.nan if row is None else row.seconds


def first_window(history: Sequence[HistoryRow], hold_out_steps: int, seed: int) -> HistoryRow | None:
    """The row that starts ``seed``'s first solved streak spanning ``hold_out_steps``, or None.

    Where a run of that seed alone, stopping when solved, would have stopped: the time to solved of a seed
    trained together with others, which keeps training (and may waver) until every seed is solved.
    """
    start = None
    for row in history:
        if not row.per_seed[seed].solved:
            start = None
            continue
        start = start or row
        if row.step - start.step >= hold_out_steps:
            return start
    return None


def seconds_to_first_window(history: Sequence[HistoryRow], hold_out_steps: int, seed: int) -> float:
    """Wall seconds at :func:`first_window`'s row; NaN if none."""
    row = first_window(history, hold_out_steps, seed)
    return math.nan if row is None else row.seconds


METRIC_NAMES = tuple(spec.name for spec in dataclasses.fields(HistoryRow) if spec.name not in ("step", "per_seed"))
"""The learning-curve metrics of every arm (MLflow metric keys, with ``step=`` the row's env step)."""


@dataclasses.dataclass(frozen=True)
class Timings:
    """Where a run's wall time went, in seconds: the phases add up to the wall time.

    Host-loop arms time each phase around its calls (``time.perf_counter``,
    a few calls per vector step); the fully jitted arm, whose phases run inside
    one compiled scan, times the same compiled pieces run apart and splits the
    scan's time in their proportions (``method`` says which).
    """

    env_step: float = 0.0
    action_selection: float = 0.0
    replay_buffer: float = 0.0
    update: float = 0.0
    evaluation: float = 0.0
    compile: float = 0.0
    other: float = 0.0
    method: str = "timed in the loop"

    @property
    def total(self) -> float:
        """The sum of the phases."""
        return sum(getattr(self, name) for name in PHASES)

    def as_dict(self) -> dict[str, float]:
        """Seconds by phase."""
        return {name: getattr(self, name) for name in PHASES}


PHASES = tuple(spec.name for spec in dataclasses.fields(Timings) if spec.name != "method")
"""The phases of a run's wall time, in the order tables and plots show them."""


@dataclasses.dataclass
class TrainResult:
    """What an arm's ``train`` returns.

    Attributes:
        arm: the arm's name (see :mod:`doors_gym_baselines.arms`).
        env_label: what the arm steps: its env id, or the pure functions (``Arm.env_label``).
        evaluation: the final greedy evaluation (means over seeds for several seeds).
        rolling_reward: the final rolling reward (mean over seeds).
        env_steps: env steps over all seeds.
        updates: gradient updates over all seeds.
        history: the learning curve; its last row is the final evaluation.
        model: the trained model: ``model.act(obs)`` gives greedy actions (see the arm's file).
        losses: the loss of every update (the mean over seeds for several seeds).
        timings: where the wall time went (see :class:`Timings`).
        facts: how the run was made: threads, devices, versions (tagged on its MLflow run).
    """

    arm: str
    env_label: str
    config: Any
    evaluation: Any
    rolling_reward: float
    wall_seconds: float
    env_steps: int
    updates: int
    history: list[HistoryRow]
    model: Any = None
    losses: list[float] = dataclasses.field(default_factory=list)
    timings: Timings = dataclasses.field(default_factory=Timings)
    facts: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def ms_per_update(self) -> float:
        """Milliseconds of the update phase per gradient update (per seed-update for several seeds); NaN where the
        updates were not timed apart (the jitted arm without its profile)."""
        return 1e3 * self.timings.update / self.updates if self.updates and self.timings.update > 0 else math.nan

    @property
    def solved(self) -> bool:
        """The final evaluation is solved (on the means over seeds)."""
        return is_solved(self.evaluation.success_rate, self.rolling_reward, solved_reward(self.config.params))

    @property
    def per_seed(self) -> tuple[SeedFigures, ...]:
        """Each seed's final figures."""
        return self.history[-1].per_seed

    def summary(self) -> dict[str, Any]:
        """Flat figures for tables and logs, with the oracle's per-step reward beside the greedy one."""
        return {
            "arm": self.arm,
            "env_id": self.env_label,
            "wall_seconds": round(self.wall_seconds, 2),
            "env_steps": self.env_steps,
            "updates": self.updates,
            "rolling_reward": round(self.rolling_reward, 4),
            "greedy_success_rate": round(self.evaluation.success_rate, 4),
            "greedy_step_reward": round(self.evaluation.mean_step_reward, 4),
            "greedy_normalised_return": round(self.evaluation.normalised_return, 4),
            "oracle_step_reward": round(oracle_step_reward(self.config.params), 4),
            "solved": self.solved,
        }
