"""The tuning objectives: what a learning curve scores, and how a score reads.

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

import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..config import RunSettings, describe_hyperparameters
from ..harness.metrics import SOLVED_ROLLING_REWARD, SOLVED_SUCCESS, HistoryRow, solved_since
from .space import SPACE, Space, hyperparameters_from_params

OBJECTIVES = {"time-to-solved": "minimize", "learning-curve": "maximize"}
"""Each tuning objective and the direction its study optimises."""
DEFAULT_OBJECTIVE = "time-to-solved"
OBJECTIVE_UNITS = {"time-to-solved": "s to solved", "learning-curve": "mean greedy step reward"}
"""What each objective's score counts, for people."""
PENALTY_SECONDS = 300.0
"""What an unsolved trial scores beyond its budget (times 1 to 2, by how far it is from solved)."""


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


def describe_trial(study: Any, trial: Any, objective: str, base: Any, space: Space = SPACE) -> str:
    """A finished trial for people: state, seed, score with its unit, the best so far, its hyperparameters."""
    seed = trial.user_attrs.get("seed", "?")
    state = trial.state.name.lower()
    if state == "complete":
        outcome = describe_score(objective, trial.value, trial.user_attrs.get("solved"))
    elif state == "pruned":
        outcome = f"pruned after {trial.last_step or 0} env steps"
    else:
        outcome = state
    try:
        best = study.best_trial
        best_text = f"best: trial {best.number}, {describe_score(objective, best.value, best.user_attrs.get('solved'))}"
    except ValueError:
        best_text = "no complete trial yet"
    hyperparameters = "-"
    if trial.params:
        hyperparameters = describe_hyperparameters(hyperparameters_from_params(trial.params, base, space))
    return f"trial {trial.number} (seed {seed}): {outcome}; {best_text}\n{indented(hyperparameters)}"


def indented(text: str) -> str:
    """``text`` indented under the line before, wrapped to the width of a terminal's output (100 columns)."""
    return textwrap.fill(text, width=100, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)
