"""``doors-gym tune --workers N``: N worker processes on one study, started and watched by the command.

Each worker is a process of its own (spawned, never forked: JAX and forks do not mix) that runs
:func:`~doors_gym_baselines.tuning.command.tune_worker` on the study with an index of its own (``--worker`` on), its
threads held to its share of the cores (:func:`~doors_gym_baselines.runtime.worker_environment`). The study's
trial count is shared: no worker asks more than the study's finished and running trials leave of ``--n-trials``
(:func:`~.study.trials_left`), so the workers stop together. A worker that dies (``kill -9``, out of memory) is replaced by a new one with the next
index while the study has fewer finished trials than asked; its running trial is failed by Optuna's heartbeat
after the grace period and queued again (``RetryFailedTrialCallback``), so the study still reaches its count.
The command then makes the study's plots, confirmation and preset itself, once.

Across machines, start ``doors-gym tune --worker I`` on each host against one storage that every host reaches
(PostgreSQL or MySQL); a SQLite file serves the processes of one machine only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..runtime import available_cores, worker_environment
from .study import finished_trials

WATCH_SECONDS = 1.0
"""How often the command looks at its workers."""


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """``values`` in ``os.environ`` for the block (a spawned process starts with the environment of then)."""
    previous = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_workers(options: Any, run: Any, base: Any, study: Any, worker_main: Callable[..., None]) -> None:
    """Starts ``options.processes`` worker processes on the study, each running ``worker_main(options, run, base)``
    with its own options, and watches them until none is left: a worker that died while the study still needs
    trials is replaced (at most twice the workers over the command's life). Ctrl-C stops them all."""
    context = multiprocessing.get_context("spawn")
    share = max(1, available_cores() // options.processes)
    first = options.worker

    def start(index: int) -> Any:
        worker = dataclasses.replace(
            options, worker=first + index, workers=1, report=False, confirm_top=0, preset_out=None, summary_out=None
        )
        with environment(worker_environment(share)):
            process = context.Process(target=worker_main, args=(worker, run, base), name=f"doors-gym-tune-{index}")
            process.start()
        return process

    processes = {index: start(index) for index in range(options.processes)}
    replacements, next_index = 2 * options.processes, options.processes
    try:
        while processes:
            time.sleep(WATCH_SECONDS)
            for index, process in list(processes.items()):
                if process.is_alive():
                    continue
                del processes[index]
                if process.exitcode == 0:
                    continue
                failed = fail_running_trials(study, first + index)
                done = len(finished_trials(study)) >= options.n_trials
                print(
                    f"tune: worker {first + index} died (exit code {process.exitcode}); its running trials "
                    f"{failed or '(none)'} failed and queued again"
                    + (f"; worker {first + next_index} takes its place" if not done and replacements > 0 else ""),
                    flush=True,
                )
                if not done and replacements > 0:
                    processes[next_index] = start(next_index)
                    next_index, replacements = next_index + 1, replacements - 1
    finally:
        for process in processes.values():  # Ctrl-C, or an error of the command's own
            process.terminate()
        for process in processes.values():
            process.join()


def fail_running_trials(study: Any, worker: int) -> list[int]:
    """Fails the study's running trials of a worker that died, as its heartbeat would after the grace period, and
    hands each to the storage's failed-trial callback (queued again); returns their numbers. A worker killed before
    its trial recorded which worker it is leaves that trial to the heartbeat."""
    import optuna

    storage = study._storage  # Optuna's own fail_stale_trials goes through the storage, as this does
    getter = getattr(storage, "get_heartbeat_stale_trial_callback", None) or storage.get_failed_trial_callback
    callback = getter()
    failed = []
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        if trial.user_attrs.get("worker") != worker:
            continue
        if storage.set_trial_state_values(trial._trial_id, state=optuna.trial.TrialState.FAIL):
            failed.append(trial.number)
            if callback is not None:
                callback(study, storage.get_trial(trial._trial_id))
    return failed
