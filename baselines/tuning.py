"""Optuna studies over the DQN arms, tracked in MLflow (``doors-gym tune``).

One study per arm and objective (``dqn-<arm>-<objective>``), sampled by a
seeded ``TPESampler`` and pruned by a ``HyperbandPruner`` on the objective's
running score at the greedy evaluations the arm reports while it trains
in-process. The default objective is the time to a solved agent (minimised;
see :mod:`doors_gym_baselines.search`): every trial stops once it has been
solved through the hold-out window, and trains one of the tuning seeds
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
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import pathlib
import re
import socket
import sys
import textwrap
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from . import report, tracking
from .arms import ARMS, get_arm
from .config import DQNConfig, Hyperparameters, RunSettings, check_at_least, field
from .harness import NonFiniteLoss
from .metrics import HistoryRow, seconds_to_solved
from .presets import TO_SOLVED
from .search import (
    DEFAULT_OBJECTIVE,
    describe_score,
    OBJECTIVES,
    PENALTY_SECONDS,
    hyperparameters_from_params,
    objective_score,
    suggest_hyperparameters,
)

DEFAULT_STORAGE = "sqlite:///optuna.db"
DEFAULT_EXPERIMENT = "doors-gym-tune"
TUNING_SEED = 0
"""First training seed of the tuning trials; ``compare`` trains on other seeds (100 and up)."""
TUNING_SEEDS = 10
"""Trial ``n`` trains seed ``TUNING_SEED + n % TUNING_SEEDS``: the tuning seeds 0-9 in turn."""
HEARTBEAT_INTERVAL = 10
GRACE_PERIOD = 60
STUDY_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
FINISHED = ("COMPLETE", "PRUNED")


TUNING_RUN = RunSettings(
    total_steps=TO_SOLVED["total_steps"],
    eval_every=TO_SOLVED["eval_every"],
    hold_out_steps=TO_SOLVED["hold_out_steps"],
    seed=TUNING_SEED,
    quiet=True,
)
"""The run settings of every trial unless told otherwise (``doors-gym tune`` flags)."""
TRIAL_RUN_FIELDS_OFF_THE_CLI = ("num_seeds", "stop_when_solved", "quiet", "profile", "devices")
"""Run settings a trial fixes: one seed, when to stop (the objective's), no progress bar."""


class TrackedTrial:
    """An Optuna trial seen through MLflow: ``train`` reports to it as to a plain trial.

    Every evaluation is logged to the active (nested) run with ``step=`` env
    steps, and the value reported to the pruner is the objective's running
    score (:func:`~doors_gym_baselines.search.objective_score`), the
    objective's own figure, so Hyperband compares like with like.
    """

    def __init__(
        self,
        trial: Any,
        objective: str = DEFAULT_OBJECTIVE,
        run: RunSettings | None = None,
        penalty_seconds: float = PENALTY_SECONDS,
    ) -> None:
        self.trial = trial
        self.objective = objective
        self.run = run or TUNING_RUN
        self.penalty_seconds = penalty_seconds
        self.history: list[HistoryRow] = []

    def observe(self, row: HistoryRow) -> float:
        tracking.log_history_row(row)
        self.history.append(row)
        return objective_score(
            self.objective, self.history, self.run, final=False, penalty_seconds=self.penalty_seconds
        )

    def report(self, value: float, step: int) -> None:
        self.trial.report(value, step)

    def should_prune(self) -> bool:
        return self.trial.should_prune()


def open_storage(url: str, heartbeat_interval: int = HEARTBEAT_INTERVAL, grace_period: int = GRACE_PERIOD) -> Any:
    """An ``optuna.storages.RDBStorage`` at ``url`` with a heartbeat; ``ValueError`` if unreachable."""
    import optuna

    tracking.check_driver("storage", url)
    engine_kwargs = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {}

    def create() -> Any:
        with warnings.catch_warnings(), tracking.sqlite_lock(url):
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.storages.RDBStorage(
                url, engine_kwargs=engine_kwargs, heartbeat_interval=heartbeat_interval, grace_period=grace_period
            )

    try:
        return tracking.retry_creation_race(create)  # workers started together race to create the schema
    except Exception as error:  # noqa: BLE001 - driver, network and path errors all mean "unreachable"
        raise ValueError(
            f"storage={tracking.display_url(url)!r} is unreachable: {type(error).__name__}: "
            f"{tracking.first_line(error)}; "
            "expected an SQLAlchemy URL such as sqlite:///optuna.db or postgresql+psycopg2://user@host/db"
        ) from error


def create_study(
    arm_name: str,
    storage: Any,
    study_name: str,
    seed: int,
    worker: int,
    total_steps: int,
    eval_every: int,
    objective: str = DEFAULT_OBJECTIVE,
) -> Any:
    """Creates or loads the study; the sampler's seed also depends on the trials so far and ``worker``.

    A resumed or second worker with the seed of the first would replay its
    first samples; mixing in the number of existing trials and the worker
    index keeps a single run reproducible and workers apart. A study made for
    another arm or objective is an error, not a mix.
    """
    import optuna

    study = optuna.create_study(
        study_name=study_name,
        storage=storage,
        direction=OBJECTIVES[objective],
        load_if_exists=True,
        pruner=optuna.pruners.HyperbandPruner(
            min_resource=first_rung(total_steps, eval_every), max_resource=total_steps, reduction_factor=3
        ),
    )
    sampler_seed = int(np.random.SeedSequence([seed, len(study.trials), worker]).generate_state(1)[0])
    study.sampler = optuna.samplers.TPESampler(seed=sampler_seed, n_startup_trials=5)
    if "arm" not in study.user_attrs:
        study.set_user_attr("arm", arm_name)
    elif study.user_attrs["arm"] != arm_name:
        raise ValueError(
            f"study_name={study_name!r} belongs to arm {study.user_attrs['arm']!r}, not {arm_name!r}: "
            "expected a new --study-name for another arm"
        )
    found = study.user_attrs.get("objective", objective)
    if found != objective or study.direction.name.lower() != OBJECTIVES[objective]:
        raise ValueError(
            f"study_name={study_name!r} tunes the {found!r} objective ({study.direction.name.lower()}), "
            f"not {objective!r}: expected --objective {found} or a new --study-name"
        )
    if "objective" not in study.user_attrs:
        study.set_user_attr("objective", objective)
    return study


def first_rung(total_steps: int, eval_every: int) -> int:
    """Hyperband's first rung: an eighth of the budget, at least one evaluation in.

    Before that every trial is unsolved and still exploring, and comparing
    them is mostly noise (a first rung at the first 10k-step evaluation of a
    200k budget pruned most trials before any could learn).
    """
    return max(1, min(total_steps, max(eval_every, total_steps // 8)))


def start_study(study: Any, start_from: str | None, base: Hyperparameters, worker: int = 0) -> None:
    """Queues the preset ``start_from``'s hyperparameters as a new study's first trial (a known-good point).

    Only worker 0 does, and only in a study with no trial yet; ``None`` or ``""`` starts at random.
    """
    if not start_from or worker != 0 or study.trials:
        return
    from .presets import load_preset
    from .search import params_for

    preset = load_preset(start_from, study.user_attrs.get("arm", ""))
    hyperparameters = dataclasses.replace(base, **preset.hyperparameters)
    study.enqueue_trial(params_for(hyperparameters), user_attrs={"start_from": start_from})


def finished_trials(study: Any) -> list[Any]:
    """The study's complete and pruned trials (what ``--n-trials`` counts)."""
    return study.get_trials(deepcopy=False, states=_finished_states())


def parent_run_id(experiment_id: str, study_name: str, tags: dict[str, str], params: dict[str, str]) -> str:
    """The study's MLflow parent run, created on first use and shared by every worker and restart.

    Two workers starting together may both create one; each then keeps the
    earliest (start time, then run id) and the loser deletes its own.
    """
    import mlflow

    client = mlflow.MlflowClient()
    query = f"tags.`doors_gym.study` = '{study_name}' and tags.`doors_gym.role` = 'study'"

    def existing() -> list[Any]:
        runs = client.search_runs([experiment_id], query, max_results=50)
        return sorted(runs, key=lambda run: (run.info.start_time, run.info.run_id))

    runs = existing()
    if runs:
        return runs[0].info.run_id
    created = client.create_run(
        experiment_id, run_name=study_name, tags={**tags, "doors_gym.study": study_name, "doors_gym.role": "study"}
    )
    for key, value in params.items():
        client.log_param(created.info.run_id, key, value)
    winner = existing()[0].info.run_id
    if winner != created.info.run_id:
        client.delete_run(created.info.run_id)
    return winner


def mark_killed_runs(study: Any) -> int:
    """Marks the MLflow runs of failed trials (their process died) ``KILLED``; returns how many."""
    import mlflow
    import optuna

    client = mlflow.MlflowClient()
    count = 0
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.FAIL,)):
        run_id = trial.user_attrs.get("mlflow_run_id")
        if not run_id:
            continue
        try:
            if client.get_run(run_id).info.status == "RUNNING":
                client.set_terminated(run_id, status="KILLED")
                count += 1
        except mlflow.exceptions.MlflowException:
            continue
    return count


def log_score(objective: str, result: Any, run: RunSettings, penalty_seconds: float) -> float:
    """The objective's score of a finished training, logged to the active run as ``score``."""
    import mlflow

    score = objective_score(objective, result.history, run, True, penalty_seconds)
    mlflow.log_metric("score", score, step=int(result.history[-1].step))
    return score


def make_objective(
    arm_name: str,
    base: DQNConfig,
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
    arm.module()  # a missing framework fails before the first trial, naming its extra

    def objective(trial: optuna.Trial) -> float:
        seed = base.run.seed + trial.number % tuning_seeds
        config = DQNConfig(
            suggest_hyperparameters(trial, base.hyperparameters), dataclasses.replace(base.run, seed=seed)
        )
        tags = tracking.run_tags(
            arm,
            **{
                "optuna.study": trial.study.study_name,
                "optuna.trial": str(trial.number),
                "host": socket.gethostname(),
                "worker": str(worker),
            },
        )
        run = mlflow.start_run(run_name=f"trial-{trial.number}", nested=True, tags=tags)
        trial.set_user_attr("mlflow_run_id", run.info.run_id)
        trial.set_user_attr("worker", worker)
        trial.set_user_attr("seed", seed)
        mlflow.log_params(tracking.config_params(config))
        mlflow.log_params({f"search.{key}": str(value) for key, value in trial.params.items()})
        tracked = TrackedTrial(trial, objective_name, config.run, penalty_seconds)
        status = "FAILED"
        try:
            result = arm.train(config, tracked)
            tracking.log_history_row(result.history[-1])
            tracking.log_result(result, log_history=False)
            score = log_score(objective_name, result, config.run, penalty_seconds)
            to_solved = seconds_to_solved(result.history, config.run.hold_out_steps)
            trial.set_user_attr("wall_seconds", round(result.wall_seconds, 2))
            trial.set_user_attr("seconds_to_solved", None if math.isnan(to_solved) else round(to_solved, 2))
            trial.set_user_attr("solved", bool(result.solved))
            if log_models:
                tracking.log_model(result)
            status = "FINISHED"
            mlflow.set_tag("optuna.state", "COMPLETE")
            return score
        except optuna.TrialPruned as pruned:
            mlflow.set_tag("optuna.state", "PRUNED")
            mlflow.set_tag("optuna.pruned_reason", str(pruned))
            status = "FINISHED"
            raise
        except KeyboardInterrupt:
            status = "KILLED"  # Ctrl-C: the study resumes later, like after any other kill
            raise
        finally:
            mlflow.end_run(status=status)

    return objective


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
            from .presets import NAMES

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


def tune(options: TuneOptions, run: RunSettings = TUNING_RUN, base: Hyperparameters | None = None) -> Any:
    """Runs one worker of the study until it has ``n_trials`` finished trials (or ``timeout``); returns the study.

    Args:
        options: the study, storage and tracking settings.
        run: every trial's run settings (``run.seed`` also seeds the sampler).
        base: the hyperparameters the search space does not set.
    """
    import optuna

    arm = get_arm(options.arm)
    run = check_trial_run(run, options.objective)
    base_config = arm.configure(DQNConfig(base or Hyperparameters(), run))
    storage = open_storage(options.storage, options.heartbeat_interval, options.grace_period)
    study_name = options.resolved_study_name
    with optuna_quiet():
        study = create_study(
            arm.name, storage, study_name, run.seed, options.worker, run.total_steps, run.eval_every, options.objective
        )
    if options.verbose:
        found = len(finished_trials(study))
        print(
            f"study {study_name} in {tracking.display_url(options.storage)}: "
            + (f"resuming with {found} finished trials" if study.trials else "new"),
            flush=True,
        )
    start_study(study, options.start_from, base_config.hyperparameters, options.worker)
    with tracking.quiet_mlflow():
        import mlflow

        experiment_id = tracking.connect(options.tracking_uri, options.experiment)
        with tracking.sqlite_lock(tracking.tracking_uri(options.tracking_uri)):
            parent = parent_run_id(
                experiment_id,
                study_name,
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
        mark_killed_runs(study)
        remaining = options.n_trials - len(finished_trials(study))
        with mlflow.start_run(run_id=parent):
            mlflow.set_tag(tracking.PROCESS_TAG, tracking.this_process())  # this worker holds it open now
            if remaining > 0:
                objective = make_objective(
                    arm.name,
                    base_config,
                    options.models,
                    options.worker,
                    options.objective,
                    options.tuning_seeds,
                    options.penalty_seconds,
                )
                callbacks = [optuna.study.MaxTrialsCallback(options.n_trials, states=_finished_states())]
                if options.verbose:
                    callbacks.append(TrialPrinter(options.objective, base_config.hyperparameters))
                with optuna_quiet():
                    study.optimize(
                        objective, n_trials=remaining, timeout=options.timeout, callbacks=callbacks, gc_after_trial=True
                    )
            mark_killed_runs(study)
            report.log_study_plots(study)
            chosen = None
            if options.confirm_top:
                chosen = confirm_best(study, arm.name, base_config, options)
    if options.preset_out:
        write_best_preset(study, base_config, options.preset_out, chosen)
    if options.summary_out:
        report.write_study_summary(study, options.summary_out)
    return study


CONFIRM_PREFIX = "confirm."
"""Study attribute ``confirm.<trial>``: that trial's seeds and scores when re-trained (see :func:`confirm_best`)."""


def confirm_best(study: Any, arm_name: str, base: DQNConfig, options: TuneOptions) -> dict[str, Any] | None:
    """Re-trains the ``confirm_top`` best complete trials on ``confirm_seeds`` more tuning seeds; returns the best.

    A single trial's score is one seed's, and the best of many is partly luck:
    each candidate's hyperparameters train the next tuning seeds after its own,
    and the candidate with the best mean score over all its seeds (its trial's
    included) wins. Each candidate's seeds and scores are kept as a study
    attribute as soon as they are known, so a killed confirmation resumes; each
    training is a nested MLflow run tagged ``doors_gym.role=confirm``. A
    training that fails (a non-finite loss) scores the worst possible.
    """
    import mlflow
    import optuna

    arm = get_arm(arm_name)
    maximise = study.direction == optuna.study.StudyDirection.MAXIMIZE
    worst = -math.inf if maximise else math.inf
    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    ranked = sorted(complete, key=lambda trial: trial.value, reverse=maximise)[: options.confirm_top]
    first = base.run.seed
    candidates = []
    for trial in ranked:
        key = f"{CONFIRM_PREFIX}{trial.number}"
        found = study.user_attrs.get(key)
        if found is None:
            own = int(trial.user_attrs.get("seed", first))
            seeds = [first + (own - first + 1 + j) % options.tuning_seeds for j in range(options.confirm_seeds)]
            hyperparameters = hyperparameters_from_params(trial.params, base.hyperparameters)
            scores = []
            for seed in seeds:
                config = DQNConfig(hyperparameters, dataclasses.replace(base.run, seed=seed))
                tags = tracking.run_tags(arm, **{"doors_gym.role": "confirm", "optuna.trial": str(trial.number)})
                with mlflow.start_run(run_name=f"confirm-{trial.number}-seed{seed}", nested=True, tags=tags):
                    mlflow.log_params(tracking.config_params(config))
                    try:
                        result = arm.train(config)
                    except NonFiniteLoss:
                        scores.append(worst)
                        mlflow.set_tag("confirm.failed", "non-finite loss")
                        continue
                    tracking.log_result(result)
                    scores.append(log_score(options.objective, result, config.run, options.penalty_seconds))
            found = {"trial": trial.number, "seeds": [own, *seeds], "scores": [float(trial.value), *scores]}
            study.set_user_attr(key, found)
        candidates.append({**found, "mean": float(np.mean(found["scores"]))})
    if not candidates:
        return None
    return (max if maximise else min)(candidates, key=lambda candidate: candidate["mean"])


def write_best_preset(study: Any, base: DQNConfig, path: str, confirmed: dict[str, Any] | None = None) -> pathlib.Path:
    """Writes the study's best trial (or the ``confirmed`` winner of :func:`confirm_best`) as a preset file
    (:mod:`doors_gym_baselines.presets`); returns its path."""
    from .presets import write_preset

    try:
        best = study.best_trial
    except ValueError:
        raise ValueError(f"study {study.study_name!r} has no complete trial yet: no preset to write") from None
    if confirmed is not None:
        best = study.trials[confirmed["trial"]]
    hyperparameters = hyperparameters_from_params(best.params, base.hyperparameters)
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


def _finished_states() -> tuple[Any, ...]:
    import optuna

    return tuple(getattr(optuna.trial.TrialState, state) for state in FINISHED)


@contextlib.contextmanager
def optuna_quiet() -> Iterator[None]:
    """Optuna's per-trial INFO lines off (they print the search coordinates); :class:`TrialPrinter` says it instead."""
    import optuna

    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(verbosity)


class TrialPrinter:
    """An Optuna callback: each finished trial in two lines, its score with its unit and its hyperparameters."""

    def __init__(self, objective: str, base: Hyperparameters) -> None:
        self.objective = objective
        self.base = base

    def __call__(self, study: Any, trial: Any) -> None:
        print(describe_trial(study, trial, self.objective, self.base), flush=True)


def describe_trial(study: Any, trial: Any, objective: str, base: Hyperparameters) -> str:
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
    hyperparameters = hyperparameters_from_params(trial.params, base).describe() if trial.params else "-"
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
        lines.append(indented(hyperparameters_from_params(best.params, base).describe()))
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
    from .cli import main as cli_main

    return cli_main(["tune", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
