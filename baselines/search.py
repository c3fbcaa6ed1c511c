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


def suggest_hyperparameters(trial: Any, base: Hyperparameters) -> Hyperparameters:
    """Samples the search space into ``base``, in well-conditioned coordinates.

    Log learning rate, ``1 - gamma`` on a log scale, powers of two for batch,
    buffer, widths and parallel envs, log target update period and learning starts, and the
    stabilisers (Double DQN, log Polyak ``tau``, learning-rate decay, gradient
    clipping), which the same config fields give every framework. Works with
    an ``optuna.trial.FixedTrial`` too, which turns a study's best params back
    into hyperparameters.
    """
    one_minus_gamma = trial.suggest_float("one_minus_gamma", 0.005, 0.2, log=True)
    depth = trial.suggest_int("depth", 1, 3)
    width = 2 ** trial.suggest_int("log2_width", 5, 8)
    return dataclasses.replace(
        base,
        learning_rate=trial.suggest_float("learning_rate", 3e-5, 1e-2, log=True),
        optimizer=trial.suggest_categorical("optimizer", ["adam", "sgd"]),
        gamma=round(1.0 - one_minus_gamma, 6),
        batch_size=2 ** trial.suggest_int("log2_batch_size", 5, 8),
        num_envs=2 ** trial.suggest_int("log2_num_envs", 3, 6),
        buffer_size=2 ** trial.suggest_int("log2_buffer_size", 13, 17),
        train_frequency=trial.suggest_int("train_frequency", 1, 4),
        target_update=trial.suggest_int("target_update", 25, 1000, log=True),
        learning_starts=trial.suggest_int("learning_starts", 500, 10_000, log=True),
        exploration_fraction=trial.suggest_float("exploration_fraction", 0.05, 0.5),
        hidden_sizes=(width,) * depth,
        double_dqn=trial.suggest_categorical("double_dqn", [False, True]),
        tau=trial.suggest_float("tau", 0.01, 1.0, log=True),
        lr_end_fraction=trial.suggest_float("lr_end_fraction", 0.0, 1.0),
        max_grad_norm=trial.suggest_categorical("max_grad_norm", [0.0, 0.5, 1.0, 10.0]),
    )


LATER_PARAMS = {"double_dqn": False, "tau": 1.0, "lr_end_fraction": 1.0, "max_grad_norm": 0.0, "log2_num_envs": 4}
"""The values of params added to the search space later, as studies that began before them trained: the
stabilisers off (plain DQN) and 16 envs."""


def params_for(hyperparameters: Hyperparameters) -> dict[str, Any]:
    """The search-space point nearest ``hyperparameters`` (the inverse of :func:`suggest_hyperparameters`).

    Sizes go to the nearest power of two and values into the space's ranges;
    ``ValueError`` if the hidden layers differ in width (the space has one width).
    """
    widths = set(hyperparameters.hidden_sizes)
    if len(widths) != 1:
        raise ValueError(
            f"hidden_sizes={hyperparameters.hidden_sizes!r} differ in width: the search space has one width"
        )

    def log2(value: int, low: int, high: int) -> int:
        return int(np.clip(round(np.log2(value)), low, high))

    def within(value: float, low: float, high: float) -> float:
        return float(np.clip(value, low, high))

    return {
        "one_minus_gamma": within(1.0 - hyperparameters.gamma, 0.005, 0.2),
        "depth": int(np.clip(len(hyperparameters.hidden_sizes), 1, 3)),
        "log2_width": log2(widths.pop(), 5, 8),
        "learning_rate": within(hyperparameters.learning_rate, 3e-5, 1e-2),
        "optimizer": hyperparameters.optimizer,
        "log2_batch_size": log2(hyperparameters.batch_size, 5, 8),
        "log2_num_envs": log2(hyperparameters.num_envs, 3, 6),
        "log2_buffer_size": log2(hyperparameters.buffer_size, 13, 17),
        "train_frequency": int(np.clip(hyperparameters.train_frequency, 1, 4)),
        "target_update": int(np.clip(hyperparameters.target_update, 25, 1000)),
        "learning_starts": int(np.clip(hyperparameters.learning_starts, 500, 10_000)),
        "exploration_fraction": within(hyperparameters.exploration_fraction, 0.05, 0.5),
        "double_dqn": hyperparameters.double_dqn,
        "tau": within(hyperparameters.tau, 0.01, 1.0),
        "lr_end_fraction": hyperparameters.lr_end_fraction,
        "max_grad_norm": min((0.0, 0.5, 1.0, 10.0), key=lambda norm: abs(norm - hyperparameters.max_grad_norm)),
    }


def hyperparameters_from_params(params: dict[str, Any], base: Hyperparameters) -> Hyperparameters:
    """The hyperparameters a trial with these sampled ``params`` trained (e.g. a study's ``best_params``)."""
    import optuna

    return suggest_hyperparameters(optuna.trial.FixedTrial({**LATER_PARAMS, **params}), base)


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
