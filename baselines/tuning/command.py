"""``doors-gym tune``: one worker of an Optuna study over a DQN arm, tracked in MLflow.

One study per arm and objective (``dqn-<arm>-<objective>``), sampled by a
seeded ``TPESampler`` and pruned by a ``HyperbandPruner`` on the objective's
running score at the greedy evaluations the arm reports while it trains
in-process (:mod:`doors_gym_baselines.tuning.objective`). The study's storage,
its resuming and its workers are :mod:`doors_gym_baselines.tuning.study`'s;
confirming its best trials and writing the preset,
:mod:`doors_gym_baselines.tuning.best`'s. This module holds the command: its
options, the order of the steps, and what it prints.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import re
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

from .. import tracking
from ..arms import ARMS, Arm, get_arm
from ..config import DQNConfig, Hyperparameters, RunSettings, check_at_least, field
from ..reporting.study import log_study_plots, write_study_summary
from .best import confirm_best, write_best_preset
from .objective import TUNING_RUN, TUNING_SEEDS, check_trial_run, make_objective
from .scores import DEFAULT_OBJECTIVE, OBJECTIVES, PENALTY_SECONDS, describe_score
from .space import SPACE, Space, hyperparameters_from_params, space_of
from .study import (
    DEFAULT_STORAGE,
    GRACE_PERIOD,
    HEARTBEAT_INTERVAL,
    create_study,
    finished_states,
    finished_trials,
    mark_killed_runs,
    open_storage,
    optuna_quiet,
    parent_run_id,
    start_study,
)

DEFAULT_EXPERIMENT = "doors-gym-tune"
STUDY_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


@dataclasses.dataclass(frozen=True)
class TuneOptions:
    """Settings of one tuning worker: the study, its storage and its tracking (the ``doors-gym tune`` flags).

    The trials' own run settings (budget, evaluation cadence, seed, layout) are a
    :class:`~doors_gym_baselines.config.RunSettings`; ``--seed`` also seeds the sampler.
    """

    arm: str = field("flax-scan", "which arm to tune", choices=tuple(ARMS), cli=False)
    objective: str = field(
        DEFAULT_OBJECTIVE,
        "what the study optimises: seconds to a solved agent (minimised) or the area under the greedy learning curve",
        choices=tuple(OBJECTIVES),
    )
    n_trials: int = field(40, "finished (complete or pruned) trials the study should end with")
    timeout: float | None = field(None, "stop starting trials after this many seconds")
    worker: int = field(0, "this worker's index when several share a study (keeps their samplers apart)")
    storage: str = field(
        DEFAULT_STORAGE, "Optuna RDB storage, any SQLAlchemy URL (PostgreSQL for workers on many hosts)"
    )
    study_name: str | None = field(None, "the study (default: dqn-<arm>-<objective>)")
    tuning_seeds: int = field(TUNING_SEEDS, "trial n trains seed --seed + n % tuning_seeds (the tuning seeds in turn)")
    penalty_seconds: float = field(
        PENALTY_SECONDS, "time-to-solved: an unsolved trial scores its wall seconds plus 1 to 2 times this"
    )
    start_from: str | None = field(
        "quick", "a preset (name or file) whose hyperparameters a new study tries first, a known-good point ('': none)"
    )
    confirm_top: int = field(
        0, "re-train the best N complete trials on --confirm-seeds more tuning seeds; the preset is the best on average"
    )
    confirm_seeds: int = field(3, "tuning seeds each confirmed trial trains besides its own")
    preset_out: str | None = field(None, "write the best trial as a preset file here (YAML; see compare --preset)")
    summary_out: str | None = field(
        None, "write the study's summary to this folder: best trial, importances, history and importance plots"
    )
    tracking_uri: str | None = field(
        None, f"MLflow tracking URI (default: $MLFLOW_TRACKING_URI or {tracking.DEFAULT_TRACKING_URI})"
    )
    experiment: str = field(DEFAULT_EXPERIMENT, "MLflow experiment")
    models: bool = field(True, "log each trial's trained model to MLflow")
    verbose: bool = field(True, "print each finished trial: its score and hyperparameters")
    heartbeat_interval: int = field(HEARTBEAT_INTERVAL, "seconds between a running trial's heartbeats")
    grace_period: int = field(
        GRACE_PERIOD, "seconds without a heartbeat after which a running trial counts as failed (its worker died)"
    )

    def __post_init__(self) -> None:
        get_arm(self.arm)
        for name in ("n_trials", "heartbeat_interval", "grace_period", "tuning_seeds"):
            check_at_least(name, getattr(self, name), 1)
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective={self.objective!r} is not supported: expected one of {list(OBJECTIVES)}")
        penalty = self.penalty_seconds
        if isinstance(penalty, bool) or not (
            isinstance(penalty, (int, float)) and math.isfinite(penalty) and penalty >= 0
        ):
            raise ValueError(f"penalty_seconds={penalty!r} is out of range: expected a finite number >= 0")
        check_at_least("worker", self.worker, 0)
        if self.start_from:
            from ..presets import NAMES

            if self.start_from not in NAMES and not pathlib.Path(self.start_from).is_file():
                raise ValueError(f"start_from={self.start_from!r} is neither one of {list(NAMES)} nor a file")
        check_at_least("confirm_top", self.confirm_top, 0)
        check_at_least("confirm_seeds", self.confirm_seeds, 1)
        if self.timeout is not None and not (math.isfinite(self.timeout) and self.timeout > 0):
            raise ValueError(f"timeout={self.timeout!r} is out of range: expected a number of seconds > 0")
        if not STUDY_NAME_PATTERN.match(self.resolved_study_name):
            raise ValueError(
                f"study_name={self.resolved_study_name!r} is invalid: "
                "expected 1-128 letters, digits, '_', '.', ':', '-'"
            )

    @property
    def resolved_study_name(self) -> str:
        return self.study_name or f"dqn-{self.arm}-{self.objective}"


def tune(options: TuneOptions, run: RunSettings = TUNING_RUN, base: Hyperparameters | None = None) -> Any:
    """Runs one worker of the study until it has ``n_trials`` finished trials (or ``timeout``); returns the study.

    Args:
        options: the study, storage and tracking settings.
        run: every trial's run settings (``run.seed`` also seeds the sampler).
        base: the hyperparameters the search space does not set.
    """
    arm = get_arm(options.arm)
    run = check_trial_run(run, options.objective)
    base_config = arm.configure(DQNConfig(base or Hyperparameters(), run))
    study = open_study(options, arm.name, run, base_config.hyperparameters)
    with tracking.quiet_mlflow():
        import mlflow

        parent = study_parent_run(options, arm, run)
        mark_killed_runs(study)
        remaining = options.n_trials - len(finished_trials(study))
        with mlflow.start_run(run_id=parent):
            mlflow.set_tag(tracking.PROCESS_TAG, tracking.this_process())  # this worker holds it open now
            if remaining > 0:
                run_trials(study, arm.name, base_config, options, remaining)
            mark_killed_runs(study)
            log_study_plots(study)
            chosen = None
            if options.confirm_top:
                chosen = confirm_best(study, arm.name, base_config, options)
    if options.preset_out:
        write_best_preset(study, base_config, options.preset_out, chosen)
    if options.summary_out:
        write_study_summary(study, options.summary_out)
    return study


def open_study(options: TuneOptions, arm_name: str, run: RunSettings, base: Hyperparameters) -> Any:
    """Creates or resumes the study in its storage (saying which when ``verbose``) and queues its start point."""
    storage = open_storage(options.storage, options.heartbeat_interval, options.grace_period)
    study_name = options.resolved_study_name
    with optuna_quiet():
        study = create_study(
            arm_name, storage, study_name, run.seed, options.worker, run.total_steps, run.eval_every, options.objective
        )
    if options.verbose:
        found = len(finished_trials(study))
        print(
            f"study {study_name} in {tracking.display_url(options.storage)}: "
            + (f"resuming with {found} finished trials" if study.trials else "new"),
            flush=True,
        )
    start_study(study, options.start_from, base, options.worker, space_of(get_arm(options.arm)))
    return study


def study_parent_run(options: TuneOptions, arm: Arm, run: RunSettings) -> str:
    """Connects to MLflow and returns the id of the study's parent run (see
    :func:`~doors_gym_baselines.tuning.study.parent_run_id`), its params the study's settings."""
    experiment_id = tracking.connect(options.tracking_uri, options.experiment)
    with tracking.sqlite_lock(tracking.tracking_uri(options.tracking_uri)):
        return parent_run_id(
            experiment_id,
            options.resolved_study_name,
            tracking.run_tags(arm),
            {
                "arm": arm.name,
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


def run_trials(study: Any, arm_name: str, base: DQNConfig, options: TuneOptions, remaining: int) -> None:
    """Runs up to ``remaining`` trials, stopping once the study has ``n_trials`` finished ones (or at ``timeout``)."""
    import optuna

    objective = make_objective(
        arm_name,
        base,
        options.models,
        options.worker,
        options.objective,
        options.tuning_seeds,
        options.penalty_seconds,
    )
    callbacks = [optuna.study.MaxTrialsCallback(options.n_trials, states=finished_states())]
    if options.verbose:
        callbacks.append(TrialPrinter(options.objective, base.hyperparameters, space_of(get_arm(options.arm))))
    with optuna_quiet():
        study.optimize(objective, n_trials=remaining, timeout=options.timeout, callbacks=callbacks, gc_after_trial=True)


class TrialPrinter:
    """An Optuna callback: each finished trial in two lines, its score with its unit and its hyperparameters."""

    def __init__(self, objective: str, base: Hyperparameters, space: Space = SPACE) -> None:
        self.objective = objective
        self.base = base
        self.space = space

    def __call__(self, study: Any, trial: Any) -> None:
        print(describe_trial(study, trial, self.objective, self.base, self.space), flush=True)


def describe_trial(study: Any, trial: Any, objective: str, base: Hyperparameters, space: Space = SPACE) -> str:
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
    hyperparameters = hyperparameters_from_params(trial.params, base, space).describe() if trial.params else "-"
    return f"trial {trial.number} (seed {seed}): {outcome}; {best_text}\n{indented(hyperparameters)}"


def indented(text: str) -> str:
    """``text`` indented under the line before, wrapped to the width of a terminal's output (100 columns)."""
    return textwrap.fill(text, width=100, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)


def describe(study: Any, options: TuneOptions) -> str:
    """What a tuning worker prints at its end: the outcome, where the study and its runs are, what to run next."""
    finished = finished_trials(study)
    states = [trial.state.name for trial in finished]
    lines = [
        f"study {study.study_name} in {tracking.display_url(options.storage)}: {len(finished)} finished trials "
        f"({states.count('COMPLETE')} complete, {states.count('PRUNED')} pruned)"
    ]
    base = Hyperparameters()
    try:
        best = study.best_trial
    except ValueError:
        best = None
        lines.append("no trial completed yet")
    if best is not None:
        score = describe_score(options.objective, best.value, best.user_attrs.get("solved"))
        lines.append(f"best: trial {best.number} (seed {best.user_attrs.get('seed', '?')}), {score}")
        lines.append(
            indented(hyperparameters_from_params(best.params, base, space_of(get_arm(options.arm))).describe())
        )
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
    lines.append(f"next: {command} --n-trials {options.n_trials + 10}")
    lines.append("  resumes the study for 10 more trials")
    if best is not None:
        preset = options.preset_out or f"{options.arm}.yml"
        if not options.preset_out:
            lines.append(f"  {command} --n-trials {options.n_trials} --preset-out {preset}")
            lines.append("  writes its best trial as a preset (no more training); then")
        train = f"doors-gym train --arm {options.arm} --preset {preset}"
        lines.append(f"  doors-gym compare --preset {preset}  or  {train}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m doors_gym_baselines.tuning``: the same as ``doors-gym tune``."""
    from ..cli import main as cli_main

    return cli_main(["tune", *(sys.argv[1:] if argv is None else argv)])
