"""Optuna studies over an arm's hyperparameters, tracked in MLflow (``doors-gym tune``).

One study per arm and objective (``dqn-<arm>-<objective>``), sampled by a
seeded ``TPESampler`` and pruned by a ``HyperbandPruner`` on the objective's
running score at the greedy evaluations the arm reports while it trains
in-process. The default objective is the time to a solved agent (minimised;
see :mod:`doors_gym_baselines.tuning.scores`): every trial stops once it has
been solved through the hold-out window, and trains one of the tuning seeds
(0-9 by default, in turn; ``compare`` reports other seeds).

The study lives in an RDB storage: a local SQLite file by default, opened
with ``load_if_exists=True`` so a killed study resumes, or any SQLAlchemy
URL (``postgresql+psycopg2://user:password@host/db``) so several worker
processes, on one machine or many, share a study: start the same command in
each worker, with its own ``--worker`` index.

``--n-trials`` counts the study's finished (complete or pruned) trials across
restarts and workers. A trial that was running when its process died is
failed by Optuna's heartbeat once ``grace_period`` seconds have passed without
a beat, and its MLflow run is marked ``KILLED``; it is never counted.

MLflow: one parent run per study (tag ``doors_gym.study``), reopened by every
worker and every restart; a nested run per trial with the config as params,
the sampled coordinates as ``search.*`` params, every evaluation as metrics
with ``step=`` env steps, tags (arm, framework, env id, package version, git
commit, trial number) and the trained model; the Optuna plots (optimization
history, param importances, contour) as HTML and PNG and the best params on
the parent.

The package by concern: :mod:`~doors_gym_baselines.tuning.space` (the search
space, one table for sampling and its inverse),
:mod:`~doors_gym_baselines.tuning.scores` (the objectives' scores),
:mod:`~doors_gym_baselines.tuning.study` (storage, creation, start point,
rungs, parent run, killed runs), :mod:`~doors_gym_baselines.tuning.objective`
(a trial), :mod:`~doors_gym_baselines.tuning.plots` (the study's plots and summary),
:mod:`~doors_gym_baselines.tuning.options` (the command's options),
:mod:`~doors_gym_baselines.tuning.best` (confirmation and the
preset) and :mod:`~doors_gym_baselines.tuning.command` (``doors-gym tune``).
"""

from .best import CONFIRM_PREFIX, confirm_best, write_best_preset
from .command import describe, describe_trial, tune
from .objective import (
    TRIAL_RUN_FIELDS_OFF_THE_CLI,
    TUNING_RUN,
    TUNING_SEED,
    TUNING_SEEDS,
    TrackedTrial,
    check_trial_run,
    make_objective,
)
from .options import DEFAULT_EXPERIMENT, TuneOptions
from .plots import log_study_plots, write_study_summary
from .scores import DEFAULT_OBJECTIVE, OBJECTIVES, PENALTY_SECONDS, describe_score, objective_score
from .space import SPACE, hyperparameters_from_params, params_for, suggest_hyperparameters
from .study import (
    DEFAULT_STORAGE,
    StopAtCount,
    StorageUnreachable,
    create_study,
    finished_trials,
    first_rung,
    mark_killed_runs,
    open_storage,
    start_study,
    trials_left,
)

__all__ = [
    "CONFIRM_PREFIX",
    "DEFAULT_EXPERIMENT",
    "DEFAULT_OBJECTIVE",
    "DEFAULT_STORAGE",
    "OBJECTIVES",
    "PENALTY_SECONDS",
    "SPACE",
    "TRIAL_RUN_FIELDS_OFF_THE_CLI",
    "TUNING_RUN",
    "TUNING_SEED",
    "TUNING_SEEDS",
    "StopAtCount",
    "StorageUnreachable",
    "TrackedTrial",
    "TuneOptions",
    "check_trial_run",
    "confirm_best",
    "create_study",
    "describe",
    "describe_score",
    "describe_trial",
    "finished_trials",
    "first_rung",
    "hyperparameters_from_params",
    "log_study_plots",
    "make_objective",
    "mark_killed_runs",
    "objective_score",
    "open_storage",
    "params_for",
    "start_study",
    "suggest_hyperparameters",
    "trials_left",
    "tune",
    "write_best_preset",
    "write_study_summary",
]
