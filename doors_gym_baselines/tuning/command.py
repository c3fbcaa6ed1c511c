"""``doors-gym tune``: one worker of an Optuna study over an arm's hyperparameters, tracked in MLflow.

One study per arm and objective (``dqn-<arm>-<objective>``), sampled by a
seeded ``TPESampler`` and pruned by a ``HyperbandPruner`` on the objective's
running score at the greedy evaluations the arm reports while it trains
in-process (:mod:`doors_gym_baselines.tuning.objective`). The study's storage,
its resuming and its workers are :mod:`doors_gym_baselines.tuning.study`'s;
confirming its best trials and writing the preset,
:mod:`doors_gym_baselines.tuning.best`'s; its plots, :mod:`doors_gym_baselines.tuning.plots`'. This module
holds the command: the order of the steps, and what it prints (its options: :mod:`.options`).
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
from typing import Any

from doors_gym.levels import STUDY, get_level

from .. import runtime, tracking
from ..arm import ArmProtocol
from ..arms import get_arm
from ..config import Config, RunSettings, describe_hyperparameters, make_config
from ..experiments.executors import DASK, LOCAL
from .best import confirm_best, write_best_preset
from .cluster import run_on_cluster
from .lanes import check_lanes_arm, fail_stale, run_programs
from .objective import TUNING_RUN, check_trial_run, make_objective
from .options import TuneOptions
from .plots import log_study_plots, write_study_summary
from .scores import DEFAULT_OBJECTIVE, describe_score, describe_trial, indented
from .space import SPACE, Space, algorithm_of, hyperparameters_from_params, space_of
from .study import (
    DEFAULT_STORAGE,
    StopAtCount,
    create_study,
    finished_trials,
    mark_killed_runs,
    open_storage,
    optuna_quiet,
    parent_run_id,
    start_study,
    trials_left,
)
from .workers import run_workers

def tune(options: TuneOptions, run: RunSettings = TUNING_RUN, base: Any = None) -> Any:
    """Runs one worker of the study until it has ``n_trials`` finished trials (or ``timeout``); returns the study.

    Args:
        options: the study, storage and tracking settings.
        run: every trial's run settings (``run.seed`` also seeds the sampler).
        base: the hyperparameters the search space does not set (if ``None``: the start point's, see
            :func:`start_point`).
    """
    arm = get_arm(options.arm)
    check_lanes_arm(arm, options.lanes)
    run = check_trial_run(run, options.objective)
    base_config = arm.configure(
        make_config(base or start_point(arm, options.resolved_start_from, options.level), run)
    )
    study = open_study(options, arm.name, run, base_config.hyperparameters)
    with tracking.quiet_mlflow():
        import mlflow

        parent = study_parent_run(options, arm, run)
        mark_killed_runs(study)
        here = options.executor == LOCAL and options.processes == 1  # this process trains the trials itself
        if options.executor == LOCAL and options.processes > 1:
            run_workers(options, run, base_config.hyperparameters, study, tune_worker)
        missing = len(finished_trials(study)) < options.n_trials
        with mlflow.start_run(run_id=parent):
            mlflow.set_tag(tracking.PROCESS_TAG, tracking.this_process())  # this worker holds it open now
            space = space_of(arm, base_config.params, algorithm_of(base_config.hyperparameters))
            if missing and options.executor == DASK:
                run_on_cluster(study, arm, base_config, options, space, parent)
            elif missing and here and options.lanes > 1:
                run_programs(study, arm, base_config, options, space, parent)
            elif missing and here:
                run_trials(study, arm.name, base_config, options)
            mark_killed_runs(study)
            if not options.report:
                return study
            log_study_plots(study)
            chosen = None
            if options.confirm_top:
                chosen = confirm_best(study, arm.name, base_config, options)
    if options.preset_out:
        write_best_preset(study, base_config, options.preset_out, chosen)
    if options.summary_out:
        write_study_summary(study, options.summary_out)
    return study


def tune_worker(options: TuneOptions, run: RunSettings, base: Any) -> None:
    """A worker that ``tune --workers`` started (:mod:`.workers`): the study's trials until it has its count (the plots
    and the preset are the command's)."""
    with runtime.command():
        tune(options, run, base)


def open_study(options: TuneOptions, arm_name: str, run: RunSettings, base: Any) -> Any:
    """Creates or resumes the study in its storage (saying which when ``verbose``) and queues its start point."""
    storage = open_storage(options.storage, options.heartbeat_interval, options.grace_period)
    study_name = options.resolved_study_name
    with optuna_quiet():
        study = create_study(
            arm_name, storage, study_name, run.seed, options.worker, run.total_steps, run.eval_every, options.objective,
            constant_liar=options.lanes > 1 or options.executor == DASK,
        )
    if options.verbose:
        found = len(finished_trials(study))
        print(
            f"study {study_name} in {tracking.display_url(options.storage)}: "
            + (f"resuming with {found} finished trials" if study.trials else "new"),
            flush=True,
        )
    start_study(
        study,
        options.resolved_start_from,
        base,
        options.worker,
        space_of(get_arm(options.arm), run.params, algorithm_of(base)),
        options.level,
    )
    return study


def start_point(arm: ArmProtocol, start_from: str, level: str = STUDY) -> Any:
    """The hyperparameters a study starts from: the arm's defaults with the preset ``start_from``'s at ``level``
    over them (``""``: the defaults). The settings the arm's search space does not set keep these values in every
    trial, so that a study of a library arm started from its like-for-like preset keeps that preset's network and
    input, and a study at a level its shared preset's (its network, its gamma)."""
    defaults = arm.hyperparameters()
    if not start_from:
        return defaults
    from ..presets import preset_at

    return dataclasses.replace(defaults, **preset_at(start_from, arm.name, level).hyperparameters)


def study_parent_run(options: TuneOptions, arm: ArmProtocol, run: RunSettings) -> str:
    """Connects to MLflow and returns the id of the study's parent run (see
    :func:`~doors_gym_baselines.tuning.study.parent_run_id`), its params the study's settings."""
    experiment_id = tracking.connect(options.tracking_uri, options.experiment)
    with tracking.sqlite_lock(tracking.tracking_uri(options.tracking_uri)):
        return parent_run_id(
            experiment_id,
            options.resolved_study_name,
            tracking.run_tags(arm, run.params),
            {
                "arm": arm.name,
                "level": options.level,
                "storage": tracking.display_url(options.storage),
                "objective": options.objective,
                "sampler": "TPESampler",
                "pruner": "HyperbandPruner",
                "n_trials": str(options.n_trials),
                "total_steps": str(run.total_steps),
                "eval_every": str(run.eval_every),
                "hold_out_steps": str(run.hold_out_steps),
                "tuning_seeds": f"{run.seed}-{run.seed + options.tuning_seeds - 1}",
            },
        )


def run_trials(study: Any, arm_name: str, base: Config, options: TuneOptions) -> None:
    """Runs trials until the study's finished and running ones (every worker's) reach ``n_trials`` (or at
    ``timeout``)."""
    objective = make_objective(
        arm_name,
        base,
        options.models,
        options.worker,
        options.objective,
        options.tuning_seeds,
        options.penalty_seconds,
    )
    fail_stale(study)  # a killed process's trial has no heartbeat left: failed, it no longer counts as running
    remaining = trials_left(study, options.n_trials)
    if remaining <= 0:
        return
    callbacks: list[Any] = [StopAtCount(options.n_trials)]
    if options.verbose:
        space = space_of(get_arm(options.arm), base.params, algorithm_of(base.hyperparameters))
        callbacks.append(TrialPrinter(options.objective, base.hyperparameters, space))
    with optuna_quiet():
        study.optimize(objective, n_trials=remaining, timeout=options.timeout, callbacks=callbacks, gc_after_trial=True)


class TrialPrinter:
    """An Optuna callback: each finished trial in two lines, its score with its unit and its hyperparameters."""

    def __init__(self, objective: str, base: Any, space: Space = SPACE) -> None:
        self.objective = objective
        self.base = base
        self.space = space

    def __call__(self, study: Any, trial: Any) -> None:
        print(describe_trial(study, trial, self.objective, self.base, self.space), flush=True)


def describe(study: Any, options: TuneOptions) -> str:
    """What a tuning worker prints at its end: the outcome, where the study and its runs are, what to run next."""
    finished = finished_trials(study)
    states = [trial.state.name for trial in finished]
    lines = [
        f"study {study.study_name} in {tracking.display_url(options.storage)}: {len(finished)} finished trials "
        f"({states.count('COMPLETE')} complete, {states.count('PRUNED')} pruned)"
    ]
    arm = get_arm(options.arm)
    try:
        best = study.best_trial
    except ValueError:
        best = None
        lines.append("no trial completed yet")
    if best is not None:
        score = describe_score(options.objective, best.value, best.user_attrs.get("solved"))
        lines.append(f"best: trial {best.number} (seed {best.user_attrs.get('seed', '?')}), {score}")
        base = start_point(arm, options.resolved_start_from, options.level)  # the study's: its algorithm's space
        params = None if options.level == STUDY else get_level(options.level).params()
        chosen = hyperparameters_from_params(best.params, base, space_of(arm, params, algorithm_of(base)))
        lines.append(indented(describe_hyperparameters(chosen)))
    uri = tracking.tracking_uri(options.tracking_uri)
    lines.append(
        f"MLflow: experiment {options.experiment!r} in {tracking.display_url(uri)}, run {study.study_name} "
        "with a nested run per trial"
    )
    with tracking.quiet_mlflow():
        import mlflow

        found = mlflow.MlflowClient(uri).get_experiment_by_name(options.experiment)
    lines.append(f"  open it: {tracking.ui_command(uri, found.experiment_id if found else None)}")
    command = f"doors-gym tune --arm {options.arm}"
    if options.storage != DEFAULT_STORAGE:
        command += f" --storage {tracking.display_url(options.storage)}"
    if options.study_name:
        command += f" --study-name {options.study_name}"
    if options.objective != DEFAULT_OBJECTIVE:
        command += f" --objective {options.objective}"
    if options.executor == DASK:
        command += " --executor dask" + (f" --address {options.address}" if options.address else "")
    at_level = "" if options.level == STUDY else f" --level {options.level}"
    command += at_level
    lines.append(f"next: {command} --n-trials {options.n_trials + 10}")
    lines.append("  resumes the study for 10 more trials")
    if best is not None:
        lines.extend(next_with_preset(options, command, at_level))
    return "\n".join(lines)


def next_with_preset(options: TuneOptions, command: str, at_level: str) -> list[str]:
    """The lines that say how to write the best trial as a preset and train with it: at a level, as the arm's
    tuned preset there (``compare --level L --tuned`` reads it)."""
    from ..presets import tuned_path

    default = f"{options.arm}.yml" if options.level == STUDY else os.path.relpath(tuned_path(options.arm, options.level))
    preset = options.preset_out or default
    lines = []
    if not options.preset_out:
        lines.append(f"  {command} --n-trials {options.n_trials} --preset-out {preset}")
        lines.append("  writes its best trial as a preset (no more training); then")
    train = f"doors-gym train --arm {options.arm}{at_level} --preset {preset}"
    if options.level != STUDY and pathlib.Path(preset).resolve() == tuned_path(options.arm, options.level).resolve():
        lines.append(f"  doors-gym compare{at_level} --tuned  or  {train}")
    else:
        lines.append(f"  doors-gym compare{at_level} --preset {preset}  or  {train}")
    return lines
