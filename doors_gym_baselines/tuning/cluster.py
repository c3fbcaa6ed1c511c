"""``doors-gym tune --executor dask``: a study's trials trained on the Dask cluster ``compare`` and ``ladder`` use.

The command is the driver. It alone asks trials of the study (TPE with its constant liar, every worker's trials
in view, :func:`~.lanes.ask_program`) and submits each program of ``--trials-per-program`` trials (one trial for
an arm that trains one run per trial) as a Dask task, as many at once as the cluster has worker threads. A task
trains its program on a worker, reporting each evaluation to its trials in the study's storage, so that Hyperband
prunes on every worker's curves, and sends back each trial's rows (:class:`ProgramTrained`); the driver then logs
each trial's nested MLflow run and tells the study how it ended. Only the driver writes MLflow; the workers write
the Optuna storage (intermediate values), which every worker must reach: a SQLite file on one host, a database
server (PostgreSQL) across hosts.

Exactly ``--n-trials`` trials finish: the driver asks no more than the study's finished and running trials leave
(:func:`~.study.trials_left`). Its trials beat from a thread of the driver's from their asking to their end
(:class:`~.lanes.Heartbeat`), through the compile, the training and a wait in the scheduler's queue. A task whose
worker dies is run again by Dask on another worker with the same trials (the driver says so, as ``compare`` does);
a killed driver's trials stop beating and are failed and queued again with their hyperparameters when the study
resumes.
"""

from __future__ import annotations

import dataclasses
import functools
import socket
import time
import warnings
from typing import Any

from .. import tracking
from ..arm import ArmProtocol
from ..arms import get_arm
from ..config import Config
from ..experiments.executors import RETRIED_TAG, DaskExecutor, ExecutorOptions, Retries, open_executor, worker_name
from ..harness.metrics import HistoryRow
from .lanes import Heartbeat, LaneTrials, ask_program, describe_program, fail_stale, finish_program
from .objective import TrackedTrial, log_score, record_result, trial_status, trial_tags
from .options import TuneOptions
from .scores import describe_trial
from .space import Space
from .study import finished_trials, make_pruner, open_storage, trials_left


@dataclasses.dataclass(frozen=True)
class ProgramTask:
    """One program of trials to train on a worker (small, picklable): where its study lives and what it trains."""

    storage: str
    """The study's storage URL (a SQLite file's path made absolute on the driver)."""
    study_name: str
    trial_ids: tuple[int, ...]
    """The storage's ids of the program's trials, asked by the driver."""
    configs: tuple[Config, ...]
    options: TuneOptions
    label: str
    """The program as the driver's lines name it: ``trials 4-7``."""


@dataclasses.dataclass
class ProgramTrained:
    """What a worker sends back: each trial's rows, how each lane ended (``pruned``, ``failed``, ``solved``; a lane
    not named trained to the end), the program's result without its model (``None`` when a single trial was
    pruned), when training started and where it ran."""

    histories: list[list[HistoryRow]]
    outcome: dict[int, str]
    result: Any
    started: float
    host: str
    worker: str
    lost_on: tuple[str, ...] = ()
    """The workers (addresses) that died while running it before this one finished it: set by the driver."""


def absolute_storage(url: str) -> str:
    """``url`` with a SQLite file's relative path made absolute here (a worker's folder is not the driver's)."""
    database = tracking.sqlite_path(url)
    return url if database is None else f"sqlite:///{database.resolve()}"


@functools.lru_cache(maxsize=4)
def worker_study(storage: str, study_name: str, total_steps: int, eval_every: int) -> Any:
    """The study as a worker reports to it: loaded once a process, with the study's pruner (Hyperband decides in
    the worker, on every trial's curve in the storage); it asks nothing."""
    import optuna

    return optuna.load_study(
        study_name=study_name,
        storage=open_storage(storage),
        sampler=optuna.samplers.RandomSampler(),
        pruner=make_pruner(total_steps, eval_every),
    )


def train_program(task: ProgramTask) -> ProgramTrained:
    """Trains ``task``'s trials wherever it runs (a Dask worker): as the lanes of one program with
    ``--trials-per-program`` above 1, else as one run; each evaluation is reported to its trial in the storage."""
    import optuna

    options, run = task.options, task.configs[0].run
    study = worker_study(task.storage, task.study_name, run.total_steps, run.eval_every)
    trials = [optuna.trial.Trial(study, trial_id) for trial_id in task.trial_ids]
    arm = get_arm(options.arm)
    host, worker, started = socket.gethostname(), worker_name(), time.time()
    with warnings.catch_warnings():
        # a task Dask runs again (its first worker died) reports the steps its first try reported: Optuna keeps those
        warnings.filterwarnings("ignore", "The reported value is ignored because", UserWarning)
        return train_trials(arm, trials, task, host, worker, started)


def train_trials(
    arm: ArmProtocol, trials: list[Any], task: ProgramTask, host: str, worker: str, started: float
) -> ProgramTrained:
    """Trains ``trials`` (:func:`train_program`'s work, once its study and trials are found)."""
    import optuna

    options, run = task.options, task.configs[0].run
    if options.lanes > 1:
        lanes = LaneTrials(list(zip(trials, task.configs)), options, arm, parent=None)
        result = arm.train(task.configs[0], lanes)
        result.model = None  # the model object stays here
        return ProgramTrained(lanes.histories, lanes.outcome, result, started, host, worker)
    curve = TrackedTrial(trials[0], options.objective, run, options.penalty_seconds, log_rows=False)
    try:
        result = arm.train(task.configs[0], curve)
    except optuna.TrialPruned:
        return ProgramTrained([curve.history], {0: "pruned"}, None, started, host, worker)
    result.model = None
    return ProgramTrained([result.history], {}, result, started, host, worker)


@dataclasses.dataclass
class Program:
    """A program in flight: its trials as the driver asked them, with their configs, and its task's label."""

    asked: list[tuple[Any, Config]]
    label: str


def run_on_cluster(
    study: Any, arm: ArmProtocol, base: Config, options: TuneOptions, space: Space, parent: str
) -> None:
    """Drives the study on the Dask cluster ``options`` names until it has ``n_trials`` finished trials (or
    ``timeout`` passed: no program starts after it, the running ones finish). A task that raises fails its trials
    and the command, after the other tasks are cancelled."""
    from distributed import wait

    executor_options = ExecutorOptions(options.executor, options.workers, options.address)
    storage = absolute_storage(options.storage)
    in_flight: dict[Any, Program] = {}
    live = lambda: [trial for program in in_flight.values() for trial, _ in program.asked]  # noqa: E731
    started = time.perf_counter()
    with open_executor(executor_options) as executor, Heartbeat(study, live, options.heartbeat_interval):
        assert isinstance(executor, DaskExecutor)
        client = executor.client()
        if options.verbose:
            print(f"tune: trials train on {describe_cluster(executor, client)}", flush=True)
        try:
            while True:
                timed_out = options.timeout is not None and time.perf_counter() - started > options.timeout
                fail_stale(study)
                while not timed_out and len(in_flight) < slots(client):
                    left = trials_left(study, options.n_trials)
                    if left <= 0:
                        break
                    count = min(left, options.lanes)
                    asked = ask_program(study, count, base, space, options.tuning_seeds, options.worker)
                    program = Program(asked, f"trials {', '.join(str(trial.number) for trial, _ in asked)}")
                    in_flight[submit(executor, client, program, storage, options)] = program
                if not in_flight:
                    if timed_out or len(finished_trials(study)) >= options.n_trials:
                        break
                    time.sleep(options.heartbeat_interval)  # another process's trials run: wait for them
                    continue
                done, _ = wait(list(in_flight), return_when="FIRST_COMPLETED")
                for future in done:
                    program = in_flight.pop(future)
                    if future.status == "error":
                        fail_programs(study, [program])
                        raise future.exception()
                    record_program(study, arm, options, parent, program, executor.retries, future)
        finally:
            client.cancel(list(in_flight))
            fail_programs(study, list(in_flight.values()))


def submit(executor: DaskExecutor, client: Any, program: Program, storage: str, options: TuneOptions) -> Any:
    """Sends ``program`` to the cluster as a task of its own (its key names the study and its trials)."""
    trials = [trial for trial, _ in program.asked]
    task = ProgramTask(
        storage, options.resolved_study_name, tuple(trial._trial_id for trial in trials),
        tuple(config for _, config in program.asked), options, program.label,
    )  # fmt: skip
    key = f"tune-{options.resolved_study_name}-{trials[0]._trial_id}"
    executor.retries.labels[key] = f"{options.resolved_study_name} {program.label}"
    return client.submit(train_program, task, key=key, pure=False)


def slots(client: Any) -> int:
    """How many programs the cluster trains at once: its worker threads (at least one, while workers join)."""
    return max(1, sum(client.nthreads().values()))


def record_program(
    study: Any, arm: ArmProtocol, options: TuneOptions, parent: str, program: Program, retries: Retries, future: Any
) -> None:
    """Logs a finished program's trials as nested MLflow runs under ``parent`` (the driver's only) and tells the
    study how each ended."""
    trained = retries.finished(future.key, future.result())
    tags = {"host": trained.host, "dask_worker": trained.worker}
    if trained.lost_on:
        tags[RETRIED_TAG] = " ".join(trained.lost_on)
    if options.lanes > 1:
        lanes = LaneTrials(program.asked, options, arm, parent=None)
        lanes.create_runs(arm, parent, trained.started, **tags)
        for index, history in enumerate(trained.histories):
            for row in history:
                lanes.add_row(index, row)
        lanes.outcome, lanes.stopped_lanes = dict(trained.outcome), set(trained.outcome)
        finish_program(study, lanes, trained.result)
        if options.verbose:
            print(describe_program(lanes, trained.result), flush=True)
        return
    record_trial(study, arm, options, program.asked[0], trained, tags)


def record_trial(
    study: Any, arm: ArmProtocol, options: TuneOptions, asked: tuple[Any, Config], trained: ProgramTrained,
    tags: dict[str, str],
) -> None:
    """A single trial trained on a worker: its nested run (backdated to its start), its curve, finals and score,
    and the study told (complete with its score, or pruned)."""
    import mlflow
    import optuna

    from .space import algorithm_of, space_of

    trial, config = asked
    run_tags = {**trial_tags(trial, options.worker), **tags}
    with tracking.tracked_run(
        arm, config, f"trial-{trial.number}", True, trial_status, started=trained.started, **run_tags
    ) as tracked:
        trial.set_user_attr("mlflow_run_id", tracked.run_id)
        trial.set_user_attr("worker", options.worker)
        trial.set_user_attr("seed", config.run.seed)
        mlflow.log_params({f"search.{key}": str(value) for key, value in trial.params.items()})
        if trained.result is None:
            for row in trained.histories[0]:
                tracking.log_history_row(row)
            mlflow.set_tag("optuna.state", "PRUNED")
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        else:
            tracking.log_result(trained.result)
            score = log_score(options.objective, trained.result, config.run, options.penalty_seconds)
            record_result(trial, trained.result, config.run)
            mlflow.set_tag("optuna.state", "COMPLETE")
            study.tell(trial, score)
    if options.verbose:
        frozen = study._storage.get_trial(trial._trial_id)
        space = space_of(arm, config.params, algorithm_of(config.hyperparameters))
        print(describe_trial(study, frozen, options.objective, config.hyperparameters, space))


def fail_programs(study: Any, programs: list[Program]) -> None:
    """Fails the trials of ``programs`` that are still running (a task that raised, Ctrl-C): never counted."""
    import optuna

    for program in programs:
        for trial, _ in program.asked:
            if study._storage.get_trial(trial._trial_id).state == optuna.trial.TrialState.RUNNING:
                study.tell(trial, state=optuna.trial.TrialState.FAIL)


def describe_cluster(executor: DaskExecutor, client: Any) -> str:
    """Where the trials train, in words: the scheduler's address and its workers."""
    where = f"the Dask cluster at {executor.address}" if executor.address else "a local Dask cluster"
    return f"{where} ({len(client.nthreads())} workers, {slots(client)} threads)"
