"""The tuning search space, sampled in well-conditioned coordinates (RL Zoo's manner), and the objective's score."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from .config import Hyperparameters
from .metrics import HistoryRow


def suggest_hyperparameters(trial: Any, base: Hyperparameters) -> Hyperparameters:
    """Samples the search space into ``base``, in well-conditioned coordinates.

    Log learning rate, ``1 - gamma`` on a log scale, powers of two for batch,
    buffer and widths, log target update period and learning starts, and the
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


UNSTABILISED = {"double_dqn": False, "tau": 1.0, "lr_end_fraction": 1.0, "max_grad_norm": 0.0}
"""The stabilisers' sampled values that leave plain DQN (for studies that began before they were searched)."""


def hyperparameters_from_params(params: dict[str, Any], base: Hyperparameters) -> Hyperparameters:
    """The hyperparameters a trial with these sampled ``params`` trained (e.g. a study's ``best_params``)."""
    import optuna

    return suggest_hyperparameters(optuna.trial.FixedTrial({**UNSTABILISED, **params}), base)


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
