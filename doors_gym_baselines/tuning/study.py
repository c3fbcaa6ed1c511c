"""The Optuna study of a tuning worker: its storage, its creation (workers may race to it), its first trial and
its Hyperband rungs, its MLflow parent run, and the runs of trials whose process died.

The study lives in an RDB storage opened with ``load_if_exists=True``, so a
killed study resumes and several workers share it. A trial that was running
when its process died is failed by Optuna's heartbeat once ``grace_period``
seconds have passed without a beat, and queued again with its hyperparameters
(Optuna's ``RetryFailedTrialCallback``, up to :data:`MAX_RETRY` times);
:func:`mark_killed_runs` then marks its MLflow run ``KILLED``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
from doors_gym.levels import STUDY

from .. import tracking
from ..config import Hyperparameters
from .scores import DEFAULT_OBJECTIVE, OBJECTIVES
from .space import SPACE, Space, params_for

DEFAULT_STORAGE = "sqlite:///optuna.db"
HEARTBEAT_INTERVAL = 10
GRACE_PERIOD = 60
MAX_RETRY = 2
"""How often a trial failed by the heartbeat (its worker died) is queued again with its hyperparameters."""
FINISHED = ("COMPLETE", "PRUNED")
"""The trial states ``--n-trials`` counts."""


class StorageUnreachable(ValueError):
    """The study's storage cannot be opened: a bad URL, a missing database or driver, no connection."""


def open_storage(url: str, heartbeat_interval: int = HEARTBEAT_INTERVAL, grace_period: int = GRACE_PERIOD) -> Any:
    """An ``optuna.storages.RDBStorage`` at ``url`` with a heartbeat.

    Raises :class:`StorageUnreachable` (a ``ValueError``, so the command line reports it as a bad flag) when
    the database cannot be reached or the URL is not one SQLAlchemy opens; a missing driver's ``ValueError``
    names the package to install. Other errors are raised as they are.
    """
    import optuna
    import sqlalchemy.exc

    tracking.check_driver("storage", url)
    engine_kwargs = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {}

    def create() -> Any:
        with warnings.catch_warnings(), tracking.sqlite_lock(url):
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.storages.RDBStorage(
                url,
                engine_kwargs=engine_kwargs,
                heartbeat_interval=heartbeat_interval,
                grace_period=grace_period,
                **retry_callback(optuna),
            )

    try:
        return tracking.retry_creation_race(create)  # workers started together race to create the schema
    except (sqlalchemy.exc.SQLAlchemyError, ImportError, OSError) as error:  # the URL, the driver, the network
        raise StorageUnreachable(
            f"storage={tracking.display_url(url)!r} is unreachable: {type(error).__name__}: "
            f"{tracking.first_line(error)}; "
            "expected an SQLAlchemy URL such as sqlite:///optuna.db or postgresql+psycopg2://user@host/db"
        ) from error


def retry_callback(optuna: Any) -> dict[str, Any]:
    """The storage's keyword that queues a trial again when the heartbeat fails it (Optuna 4.9 renamed both)."""
    if hasattr(optuna.storages, "RetryHeartbeatStaleTrialCallback"):
        return {
            "heartbeat_stale_trial_callback": optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=MAX_RETRY)
        }
    return {"failed_trial_callback": optuna.storages.RetryFailedTrialCallback(max_retry=MAX_RETRY)}


def create_study(
    arm_name: str,
    storage: Any,
    study_name: str,
    seed: int,
    worker: int,
    total_steps: int,
    eval_every: int,
    objective: str = DEFAULT_OBJECTIVE,
    constant_liar: bool = False,
) -> Any:
    """Creates or loads the study; the sampler's seed also depends on the trials so far and ``worker``.

    ``constant_liar``: TPE treats the running trials as scored the worst so far, so trials asked together
    differ (``--trials-per-program`` above 1).

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
        pruner=make_pruner(total_steps, eval_every),
    )
    study.sampler = make_sampler(seed, len(study.trials), worker, constant_liar)
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


def make_sampler(seed: int, trials: int, worker: int, constant_liar: bool = False) -> Any:
    """The study's TPE sampler, seeded by ``seed``, the number of ``trials`` so far and the ``worker`` index."""
    import optuna

    sampler_seed = int(np.random.SeedSequence([seed, trials, worker]).generate_state(1)[0])
    return optuna.samplers.TPESampler(
        seed=sampler_seed, n_startup_trials=5, **({"constant_liar": True} if constant_liar else {})
    )


def make_pruner(total_steps: int, eval_every: int) -> Any:
    """The study's Hyperband pruner: rungs from :func:`first_rung` up to the whole budget, a third kept at each."""
    import optuna

    return optuna.pruners.HyperbandPruner(
        min_resource=first_rung(total_steps, eval_every), max_resource=total_steps, reduction_factor=3
    )


def first_rung(total_steps: int, eval_every: int) -> int:
    """Hyperband's first rung: an eighth of the budget, at least one evaluation in.

    Before that every trial is unsolved and still exploring, and comparing
    them is mostly noise (a first rung at the first 10k-step evaluation of a
    200k budget pruned most trials before any could learn).
    """
    return max(1, min(total_steps, max(eval_every, total_steps // 8)))


def start_study(
    study: Any,
    start_from: str | None,
    base: Hyperparameters,
    worker: int = 0,
    space: Space = SPACE,
    level: str = STUDY,
) -> None:
    """Queues the preset ``start_from``'s hyperparameters (read at ``level``) as a new study's first trial (a
    known-good point).

    Only worker 0 does, and only in a study with no trial yet; ``None`` or ``""`` starts at random.
    """
    if not start_from or worker != 0 or study.trials:
        return
    from ..presets import preset_at

    preset = preset_at(start_from, study.user_attrs.get("arm", ""), level)
    hyperparameters = dataclasses.replace(base, **preset.hyperparameters)
    study.enqueue_trial(params_for(hyperparameters, space), user_attrs={"start_from": start_from})


def finished_states() -> tuple[Any, ...]:
    """The Optuna trial states of :data:`FINISHED`."""
    import optuna

    return tuple(getattr(optuna.trial.TrialState, state) for state in FINISHED)


def finished_trials(study: Any) -> list[Any]:
    """The study's complete and pruned trials (what ``--n-trials`` counts)."""
    return study.get_trials(deepcopy=False, states=finished_states())


def trials_left(study: Any, n_trials: int) -> int:
    """How many more trials may be asked for the study to end with ``n_trials`` finished ones: ``n_trials`` less
    the finished and the running ones, whoever runs them (another worker's lanes included). A queued trial is not
    counted: asking it makes it a running one."""
    import optuna

    running = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
    return n_trials - len(finished_trials(study)) - len(running)


class StopAtCount:
    """An Optuna callback that stops ``Study.optimize`` once the study's finished and running trials (every
    worker's) reach ``n_trials``; Optuna's ``MaxTrialsCallback`` counts the finished ones only, so each other worker's
    running trial would become one trial too many."""

    def __init__(self, n_trials: int) -> None:
        self.n_trials = n_trials

    def __call__(self, study: Any, trial: Any) -> None:
        if trials_left(study, self.n_trials) <= 0:
            study.stop()


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


@contextlib.contextmanager
def optuna_quiet() -> Iterator[None]:
    """Optuna's per-trial INFO lines off (they print the search coordinates); the command prints each trial."""
    import optuna

    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(verbosity)
