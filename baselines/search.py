"""The tuning search space, sampled in well-conditioned coordinates (RL Zoo's manner), and the objectives' scores.

Two objectives, each a score of a learning curve (its rows so far while a
trial trains, which is what Hyperband compares at its rungs, and its whole
curve at the end):

- ``time-to-solved`` (the default, minimised): wall seconds since the run
  started, compile included, to the evaluation from which the agent is solved
  and stays solved through the hold-out window to the end of the trial. An
  unsolved trial scores its budget (its wall seconds, projected to the whole
  budget while it trains) plus a penalty that grows with how far it is from
  solved, so that unsolved trials still rank among themselves;
- ``learning-curve`` (maximised): the mean greedy per-step reward over the
  evaluations, the normalised area under the greedy learning curve.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from .config import Hyperparameters, RunSettings
from .metrics import SOLVED_ROLLING_REWARD, SOLVED_SUCCESS, HistoryRow, solved_since


@dataclasses.dataclass(frozen=True)
class Range:
    """One coordinate of the search space: its name in a study's params, and its range or choices."""

    name: str
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    integer: bool = False
    choices: tuple[Any, ...] = ()

    def suggest(self, trial: Any) -> Any:
        """The trial's value (an Optuna ``Trial``, or a ``FixedTrial`` that reads a study's params back)."""
        if self.choices:
            return trial.suggest_categorical(self.name, list(self.choices))
        suggest = trial.suggest_int if self.integer else trial.suggest_float
        return suggest(self.name, self.low, self.high, log=self.log)

    def nearest(self, value: Any) -> Any:
        """The value of the space nearest ``value``: clipped into the range (rounded for integers), or the
        nearest choice."""
        if self.choices:
            if all(isinstance(choice, (int, float)) and not isinstance(choice, bool) for choice in self.choices):
                return min(self.choices, key=lambda choice: abs(choice - value))
            return value
        clipped = float(np.clip(value, self.low, self.high))
        return int(round(clipped)) if self.integer else clipped


SPACE = (
    Range("one_minus_gamma", 0.005, 0.2, log=True),
    Range("depth", 1, 3, integer=True),
    Range("log2_width", 5, 8, integer=True),
    Range("learning_rate", 3e-5, 1e-2, log=True),
    Range("optimizer", choices=("adam", "sgd")),
    Range("log2_batch_size", 5, 8, integer=True),
    Range("log2_num_envs", 3, 6, integer=True),
    Range("log2_buffer_size", 13, 17, integer=True),
    Range("train_frequency", 1, 4, integer=True),
    Range("target_update", 25, 1000, log=True, integer=True),
    Range("learning_starts", 500, 10_000, log=True, integer=True),
    Range("exploration_fraction", 0.05, 0.5),
    Range("double_dqn", choices=(False, True)),
    Range("tau", 0.01, 1.0, log=True),
    Range("lr_end_fraction", 0.0, 1.0),
    Range("max_grad_norm", choices=(0.0, 0.5, 1.0, 10.0)),
)
"""The search space in well-conditioned coordinates (RL Zoo's manner), in the order a trial samples it: log
learning rate, ``1 - gamma`` on a log scale, powers of two for batch, buffer, width and parallel envs, log
target-update period and learning starts, and the stabilisers (Double DQN, log Polyak ``tau``, learning-rate
decay, gradient clipping), which the same config fields give every framework."""


def from_coordinates(params: dict[str, Any], base: Hyperparameters) -> Hyperparameters:
    """The hyperparameters at a point of :data:`SPACE` (``base`` for the fields the space does not set)."""
    return dataclasses.replace(
        base,
        learning_rate=params["learning_rate"],
        optimizer=params["optimizer"],
        gamma=round(1.0 - params["one_minus_gamma"], 6),
        batch_size=2 ** params["log2_batch_size"],
        num_envs=2 ** params["log2_num_envs"],
        buffer_size=2 ** params["log2_buffer_size"],
        train_frequency=params["train_frequency"],
        target_update=params["target_update"],
        learning_starts=params["learning_starts"],
        exploration_fraction=params["exploration_fraction"],
        hidden_sizes=(2 ** params["log2_width"],) * params["depth"],
        double_dqn=params["double_dqn"],
        tau=params["tau"],
        lr_end_fraction=params["lr_end_fraction"],
        max_grad_norm=params["max_grad_norm"],
    )


def to_coordinates(hyperparameters: Hyperparameters) -> dict[str, Any]:
    """The coordinates of ``hyperparameters`` (the inverse of :func:`from_coordinates`, before rounding into
    the space); ``ValueError`` if the hidden layers differ in width (the space has one width)."""
    widths = set(hyperparameters.hidden_sizes)
    if len(widths) != 1:
        raise ValueError(
            f"hidden_sizes={hyperparameters.hidden_sizes!r} differ in width: the search space has one width"
        )
    return {
        "one_minus_gamma": 1.0 - hyperparameters.gamma,
        "depth": len(hyperparameters.hidden_sizes),
        "log2_width": float(np.log2(widths.pop())),
        "learning_rate": hyperparameters.learning_rate,
        "optimizer": hyperparameters.optimizer,
        "log2_batch_size": float(np.log2(hyperparameters.batch_size)),
        "log2_num_envs": float(np.log2(hyperparameters.num_envs)),
        "log2_buffer_size": float(np.log2(hyperparameters.buffer_size)),
        "train_frequency": hyperparameters.train_frequency,
        "target_update": hyperparameters.target_update,
        "learning_starts": hyperparameters.learning_starts,
        "exploration_fraction": hyperparameters.exploration_fraction,
        "double_dqn": hyperparameters.double_dqn,
        "tau": hyperparameters.tau,
        "lr_end_fraction": hyperparameters.lr_end_fraction,
        "max_grad_norm": hyperparameters.max_grad_norm,
    }


def suggest_hyperparameters(trial: Any, base: Hyperparameters) -> Hyperparameters:
    """Samples :data:`SPACE` into ``base``. Works with an ``optuna.trial.FixedTrial`` too, which turns a
    study's params back into hyperparameters."""
    return from_coordinates({coordinate.name: coordinate.suggest(trial) for coordinate in SPACE}, base)


def params_for(hyperparameters: Hyperparameters) -> dict[str, Any]:
    """The point of :data:`SPACE` nearest ``hyperparameters`` (sizes to the nearest power of two, values
    into the ranges); ``ValueError`` if the hidden layers differ in width."""
    coordinates = to_coordinates(hyperparameters)
    return {coordinate.name: coordinate.nearest(coordinates[coordinate.name]) for coordinate in SPACE}


def hyperparameters_from_params(params: dict[str, Any], base: Hyperparameters) -> Hyperparameters:
    """The hyperparameters a trial with these sampled ``params`` trained (e.g. a study's ``best_params``)."""
    import optuna

    return suggest_hyperparameters(optuna.trial.FixedTrial(params), base)


def learning_score(history: Sequence[HistoryRow]) -> float:
    """The tuning objective: mean greedy per-step reward over the evaluations so far.

    With evaluations every ``eval_every`` steps this is the normalised area
    under the greedy learning curve: it rewards reaching the optimum (0.776 on
    the default layout) and reaching it early, where the final figure alone
    ties every run that ends solved.
    """
    if not history:
        raise ValueError("history is empty: expected at least one evaluation")
    return float(np.mean([row.greedy_step_reward for row in history]))


OBJECTIVES = {"time-to-solved": "minimize", "learning-curve": "maximize"}
"""Each tuning objective and the direction its study optimises."""
DEFAULT_OBJECTIVE = "time-to-solved"
OBJECTIVE_UNITS = {"time-to-solved": "s to solved", "learning-curve": "mean greedy step reward"}
"""What each objective's score counts, for people."""
PENALTY_SECONDS = 300.0
"""What an unsolved trial scores beyond its budget (times 1 to 2, by how far it is from solved)."""


def shortfall(row: HistoryRow) -> float:
    """How far an evaluation is from solved, in ``[0, 1]``: the mean of the greedy success and rolling reward gaps.

    Each gap is relative to its threshold and 0 once the threshold is met; a
    rolling reward not measured yet (no finished episode) is the whole gap.
    """
    success_gap = max(0.0, SOLVED_SUCCESS - row.greedy_success_rate) / SOLVED_SUCCESS
    rolling = row.rolling_reward
    rolling_gap = (
        1.0 if not np.isfinite(rolling) else min(1.0, max(0.0, SOLVED_ROLLING_REWARD - rolling) / SOLVED_ROLLING_REWARD)
    )
    return 0.5 * (min(1.0, success_gap) + rolling_gap)


def time_to_solved_score(
    history: Sequence[HistoryRow], run: RunSettings, final: bool, penalty_seconds: float = PENALTY_SECONDS
) -> float:
    """The ``time-to-solved`` objective of a curve (see the module's docs); lower is better.

    Args:
        history: the evaluations so far (``final``: the whole run, its last row the final evaluation).
        run: the trial's run settings (its budget and hold-out window).
        final: the trial has ended: the hold-out window must be met; else the
            score is the running estimate Hyperband compares (a current solved
            streak counts from its start, an unsolved run is projected to the budget).
        penalty_seconds: the unsolved penalty's scale.
    """
    if not history:
        raise ValueError("history is empty: expected at least one evaluation")
    start = solved_since(history, run.hold_out_steps if final else 0)
    if start is not None:
        return float(start.seconds)
    last = history[-1]
    budget = last.seconds if final else last.seconds * run.total_steps / max(1, last.step)
    return float(budget + penalty_seconds * (1.0 + shortfall(last)))


def objective_score(
    objective: str,
    history: Sequence[HistoryRow],
    run: RunSettings,
    final: bool,
    penalty_seconds: float = PENALTY_SECONDS,
) -> float:
    """The score of ``objective`` (one of :data:`OBJECTIVES`) for a curve; see :func:`time_to_solved_score`."""
    if objective == "time-to-solved":
        return time_to_solved_score(history, run, final, penalty_seconds)
    if objective == "learning-curve":
        return learning_score(history)
    raise ValueError(f"objective={objective!r} is not supported: expected one of {list(OBJECTIVES)}")


def describe_score(objective: str, score: float, solved: bool | None = None) -> str:
    """A score with its unit; an unsolved time-to-solved score says that it is the budget plus the penalty."""
    if objective == "time-to-solved":
        if solved is False:
            return f"{score:.1f} s (not solved: its wall time plus the penalty)"
        return f"{score:.1f} {OBJECTIVE_UNITS[objective]}"
    return f"{score:.3f} {OBJECTIVE_UNITS[objective]}"
