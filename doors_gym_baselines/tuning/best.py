"""A study's best: its best trials confirmed on more tuning seeds, and the winner written as a preset file."""

from __future__ import annotations

import dataclasses
import math
import pathlib
from typing import Any

import numpy as np

from .. import tracking
from ..arm import ArmProtocol
from ..arms import get_arm
from ..config import Config, make_config
from ..harness import NonFiniteLoss
from .objective import log_score
from .options import TuneOptions
from .space import SPACES, algorithm_of, hyperparameters_from_params, space_of
from .study import finished_trials

CONFIRM_PREFIX = "confirm."
"""Study attribute ``confirm.<trial>``: that trial's seeds and scores when re-trained (see :func:`confirm_best`)."""
SEED_PREFIX = "confirm-seed."
"""Study attribute ``confirm-seed.<trial>.<seed>``: one confirmation seed's score, kept as soon as it is known."""


def confirm_best(study: Any, arm_name: str, base: Config, options: TuneOptions) -> dict[str, Any] | None:
    """Re-trains the ``confirm_top`` best complete trials on ``confirm_seeds`` more tuning seeds; returns the best.

    A single trial's score is one seed's, and the best of many is partly luck:
    each candidate's hyperparameters train the next tuning seeds after its own,
    and the candidate with the best mean score over all its seeds (its trial's
    included) wins. Each candidate's seeds and scores are kept as a study
    attribute as soon as they are known, so a killed confirmation resumes; each
    training is a nested MLflow run tagged ``doors_gym.role=confirm``. A
    training that fails (a non-finite loss) scores the worst possible.
    """
    import optuna

    arm = get_arm(arm_name)
    maximise = study.direction == optuna.study.StudyDirection.MAXIMIZE
    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    ranked = sorted(complete, key=lambda trial: trial.value, reverse=maximise)[: options.confirm_top]
    candidates = []
    for trial in ranked:
        key = f"{CONFIRM_PREFIX}{trial.number}"
        found = study.user_attrs.get(key)
        if found is None:
            found = confirm_trial(study, trial, arm, base, options, worst=-math.inf if maximise else math.inf)
            study.set_user_attr(key, found)
        candidates.append({**found, "mean": float(np.mean(found["scores"]))})
    if not candidates:
        return None
    return (max if maximise else min)(candidates, key=lambda candidate: candidate["mean"])


def confirm_trial(
    study: Any, trial: Any, arm: ArmProtocol, base: Config, options: TuneOptions, worst: float
) -> dict[str, Any]:
    """Trains ``trial``'s hyperparameters on the ``confirm_seeds`` tuning seeds after its own, each in a nested
    MLflow run; returns its trial number, seeds and scores (its own first, unless it trained as a lane of a program
    of several trials: the preset is chosen on single runs), ``worst`` for a failed training.

    Each seed's score is kept as the study attribute ``confirm-seed.<trial>.<seed>`` as soon as it is known, so a
    confirmation killed between two seeds resumes on the next seed: nothing finished is trained twice.
    """
    first = base.run.seed
    own = int(trial.user_attrs.get("seed", first))
    seeds = [first + (own - first + 1 + j) % options.tuning_seeds for j in range(options.confirm_seeds)]
    space = space_of(arm, base.params, algorithm_of(base.hyperparameters))
    hyperparameters = hyperparameters_from_params(trial.params, base.hyperparameters, space)
    scores = []
    for seed in seeds:
        key = f"{SEED_PREFIX}{trial.number}.{seed}"
        score = study.user_attrs.get(key)
        if score is None:
            config = make_config(hyperparameters, dataclasses.replace(base.run, seed=seed))
            score = confirm_seed(study, key, trial.number, arm, config, options, worst)
        scores.append(float(score))
    if trial.user_attrs.get("lanes", 1) > 1:  # a lane's score is its clock in a program, not a run's: left out
        return {"trial": trial.number, "seeds": seeds, "scores": scores}
    return {"trial": trial.number, "seeds": [own, *seeds], "scores": [float(trial.value), *scores]}


def confirm_seed(
    study: Any, key: str, number: int, arm: ArmProtocol, config: Config, options: TuneOptions, worst: float
) -> float:
    """One seed of a confirmation in a nested MLflow run ``confirm-<trial>-seed<seed>``; its score, kept in the study
    as ``key`` before the run ends. A killed earlier attempt's unfinished run of that name is deleted first."""
    import mlflow

    name = f"confirm-{number}-seed{config.run.seed}"
    delete_unfinished_runs(name)
    tags = {"doors_gym.role": "confirm", "optuna.trial": str(number)}
    with tracking.tracked_run(arm, config, name, nested=True, **tags) as tracked:
        try:
            result = tracked.train()
        except NonFiniteLoss:
            score = worst
            mlflow.set_tag("confirm.failed", "non-finite loss")
        else:
            score = log_score(options.objective, result, config.run, options.penalty_seconds)
        study.set_user_attr(key, score)
    return score


def delete_unfinished_runs(name: str) -> int:
    """Deletes the active experiment's runs named ``name`` that did not finish (a killed attempt's); how many."""
    import mlflow

    active = mlflow.active_run()
    if active is None:
        return 0
    client = mlflow.MlflowClient()
    query = f"tags.`mlflow.runName` = '{name}' and tags.`mlflow.parentRunId` = '{active.info.run_id}'"
    runs = client.search_runs([active.info.experiment_id], query, max_results=100)
    unfinished = [run for run in runs if run.info.status != "FINISHED"]
    for run in unfinished:
        client.delete_run(run.info.run_id)
    return len(unfinished)


def write_best_preset(study: Any, base: Config, path: str, confirmed: dict[str, Any] | None = None) -> pathlib.Path:
    """Writes the study's best trial (or the ``confirmed`` winner of :func:`confirm_best`) as a preset file
    (:mod:`doors_gym_baselines.presets`); returns its path."""
    from ..presets import write_preset

    try:
        best = study.best_trial
    except ValueError:
        raise ValueError(f"study {study.study_name!r} has no complete trial yet: no preset to write") from None
    if confirmed is not None:
        best = study.trials[confirmed["trial"]]
    algorithm = algorithm_of(base.hyperparameters)
    if "arm" in study.user_attrs:
        space = space_of(get_arm(study.user_attrs["arm"]), base.params, algorithm)
    else:  # a study from before the arm was kept: the algorithm's space, without exploration
        space = SPACES[algorithm][0]
    hyperparameters = hyperparameters_from_params(best.params, base.hyperparameters, space)
    origin = {
        "study": study.study_name,
        "objective": study.user_attrs["objective"],
        "trial": best.number,
        "score": round(float(best.value), 4),
        "seed": best.user_attrs.get("seed"),
        "finished_trials": len(finished_trials(study)),
    }
    if confirmed is not None:
        origin["confirmed"] = {
            "seeds": confirmed["seeds"],
            "scores": [round(score, 3) for score in confirmed["scores"]],
            "mean": round(confirmed["mean"], 3),
        }
    return write_preset(path, hyperparameters, base.run, origin)
