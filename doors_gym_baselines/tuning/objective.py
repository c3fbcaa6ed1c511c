"""A tuning trial: its run settings, its hyperparameters sampled from the space, its training in a nested MLflow
run, and its score.

Trial ``n`` trains seed ``TUNING_SEED + n % TUNING_SEEDS`` in-process and
reports every greedy evaluation to the pruner as the objective's running score
(:class:`TrackedTrial`); its MLflow run holds the config as params, the
sampled coordinates as ``search.*`` params, every evaluation as metrics with
``step=`` env steps, its score and (optionally) the trained model.
"""

from __future__ import annotations

import dataclasses
import math
import socket
from typing import Any

from .. import tracking
from ..arms import get_arm
from ..config import Config, RunSettings, make_config
from ..harness.metrics import HistoryRow, TrainResult, seconds_to_solved
from ..presets import TO_SOLVED
from .scores import DEFAULT_OBJECTIVE, PENALTY_SECONDS, objective_score
from .space import algorithm_of, space_of, suggest_hyperparameters

TUNING_SEED = 0
"""First training seed of the tuning trials; ``compare`` trains on other seeds (100 and up)."""
TUNING_SEEDS = 10
"""Trial ``n`` trains seed ``TUNING_SEED + n % TUNING_SEEDS``: the tuning seeds 0-9 in turn."""

TUNING_RUN = RunSettings(
    total_steps=TO_SOLVED["total_steps"],
    eval_every=TO_SOLVED["eval_every"],
    hold_out_steps=TO_SOLVED["hold_out_steps"],
    seed=TUNING_SEED,
    quiet=True,
)
"""The run settings of every trial unless told otherwise (``doors-gym tune`` flags)."""
TRIAL_RUN_FIELDS_OFF_THE_CLI = ("num_seeds", "stop_when_solved", "quiet", "profile", "devices", "checkpoint")
"""Run settings a trial fixes: one seed, when to stop (the objective's), no progress bar, no checkpoint (a study
resumes by its storage)."""


def check_trial_run(run: RunSettings, objective: str = DEFAULT_OBJECTIVE) -> RunSettings:
    """The run settings of every trial: one seed, no progress bar, no phase profile.

    Hyperband needs ``eval_every <= total_steps``. A time-to-solved trial stops
    once solved through the hold-out window; a learning-curve one trains its
    whole budget.
    """
    if run.eval_every > run.total_steps or run.eval_every < 1:
        raise ValueError(
            f"eval_every={run.eval_every} exceeds total_steps={run.total_steps}: "
            "expected 1 <= eval_every <= total_steps (the pruner's first rung)"
        )
    if objective == "time-to-solved" and run.hold_out_steps > run.total_steps - run.eval_every:
        raise ValueError(
            f"hold_out_steps={run.hold_out_steps} leaves no evaluation to be solved at: "
            f"expected hold_out_steps <= total_steps - eval_every = {run.total_steps - run.eval_every}"
        )
    stop = objective == "time-to-solved"
    return dataclasses.replace(run, num_seeds=1, stop_when_solved=stop, quiet=True, profile=False)


class TrackedTrial:
    """An Optuna trial seen through MLflow: ``train`` reports to it as to a plain trial.

    Every evaluation is logged to the active (nested) run with ``step=`` env
    steps, and the value reported to the pruner is the objective's running
    score (:func:`~doors_gym_baselines.tuning.scores.objective_score`), the
    objective's own figure, so Hyperband compares like with like.
    """

    def __init__(
        self,
        trial: Any,
        objective: str = DEFAULT_OBJECTIVE,
        run: RunSettings | None = None,
        penalty_seconds: float = PENALTY_SECONDS,
        log_rows: bool = True,
    ) -> None:
        self.trial = trial
        self.objective = objective
        self.run = run or TUNING_RUN
        self.penalty_seconds = penalty_seconds
        self.log_rows = log_rows
        """Whether each evaluation is logged to the active MLflow run (not on a Dask worker: the driver logs)."""
        self.history: list[HistoryRow] = []

    def observe(self, row: HistoryRow) -> float:
        if self.log_rows:
            tracking.log_history_row(row)
        self.history.append(row)
        return objective_score(
            self.objective, self.history, self.run, final=False, penalty_seconds=self.penalty_seconds
        )

    def report(self, value: float, step: int) -> None:
        self.trial.report(value, step)

    def should_prune(self) -> bool:
        return self.trial.should_prune()


def log_score(objective: str, result: Any, run: RunSettings, penalty_seconds: float) -> float:
    """The objective's score of a finished training, logged to the active run as ``score``."""
    import mlflow

    score = objective_score(objective, result.history, run, True, penalty_seconds)
    mlflow.log_metric("score", score, step=int(result.history[-1].step))
    return score


def trial_status(error: BaseException) -> str:
    """How a trial's run ends on ``error``: a pruned trial finished (its curve says where), Ctrl-C killed it (the
    study resumes later, like after any other kill), anything else failed it."""
    import optuna

    if isinstance(error, optuna.TrialPruned):
        return "FINISHED"
    return tracking.ended_status(error)


def trial_tags(trial: Any, worker: int) -> dict[str, str]:
    """The tags of a trial's run: its study, its number, the host and the worker."""
    return {
        "optuna.study": trial.study.study_name,
        "optuna.trial": str(trial.number),
        "host": socket.gethostname(),
        "worker": str(worker),
    }


def record_result(trial: Any, result: TrainResult, run: RunSettings) -> None:
    """Keeps a finished training's wall time, time to solved and solved flag on its trial."""
    to_solved = seconds_to_solved(result.history, run.hold_out_steps)
    trial.set_user_attr("wall_seconds", round(result.wall_seconds, 2))
    trial.set_user_attr("seconds_to_solved", None if math.isnan(to_solved) else round(to_solved, 2))
    trial.set_user_attr("solved", bool(result.solved))


def make_objective(
    arm_name: str,
    base: Config,
    log_models: bool = True,
    worker: int = 0,
    objective_name: str = DEFAULT_OBJECTIVE,
    tuning_seeds: int = TUNING_SEEDS,
    penalty_seconds: float = PENALTY_SECONDS,
) -> Any:
    """The objective: sample hyperparameters, train the arm in-process in a nested MLflow run, return its score.

    Trial ``n`` trains seed ``base.run.seed + n % tuning_seeds``.
    """
    import mlflow
    import optuna

    arm = get_arm(arm_name)
    # an arm without a space of its own fails before the first trial
    space = space_of(arm, base.params, algorithm_of(base.hyperparameters))

    def objective(trial: optuna.Trial) -> float:
        seed = base.run.seed + trial.number % tuning_seeds
        hyperparameters = suggest_hyperparameters(trial, base.hyperparameters, space)
        config = make_config(hyperparameters, dataclasses.replace(base.run, seed=seed))
        name = f"trial-{trial.number}"
        with tracking.tracked_run(arm, config, name, True, trial_status, **trial_tags(trial, worker)) as tracked:
            trial.set_user_attr("mlflow_run_id", tracked.run_id)
            trial.set_user_attr("worker", worker)
            trial.set_user_attr("seed", seed)
            mlflow.log_params({f"search.{key}": str(value) for key, value in trial.params.items()})
            try:
                result = tracked.train(TrackedTrial(trial, objective_name, config.run, penalty_seconds), True)
            except optuna.TrialPruned as pruned:
                mlflow.set_tags({"optuna.state": "PRUNED", "optuna.pruned_reason": str(pruned)})
                raise
            score = log_score(objective_name, result, config.run, penalty_seconds)
            record_result(trial, result, config.run)
            tracked.log_models(result, 0 if log_models else None)
            mlflow.set_tag("optuna.state", "COMPLETE")
        return score

    return objective
