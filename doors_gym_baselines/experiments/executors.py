"""Where a comparison's runs train: one after another in this process (``local``), or spread over a Dask cluster
(``dask``: a ``LocalCluster`` of ``--workers`` processes, or the scheduler at ``--address``).

Either way a run is a :class:`Job` (an arm's name and config, keyed by the resume cache's key) that
:func:`train_job` turns into a :class:`Trained` (the run's result without its model object, each seed's figures,
and the best seed's model file as bytes) wherever it runs. Only the driver writes MLflow and the resume cache
(:mod:`~doors_gym_baselines.experiments.compare` records each :class:`Trained` as it arrives), so a task that Dask retries on
another worker after its first one died is logged once, and a SQLite store is never written by two processes.

Dask's workers are spawned processes (never forks: JAX and forks do not mix); a task whose worker dies is
rescheduled on another (Dask's ``distributed.scheduler.allowed-failures``), and the driver says so (:class:`Retries`)
and tags the run's MLflow record; a task that raises is not retried: the others finish and :class:`RunsFailed`
names it. Each worker's threads are pinned to its share of the cores: a local cluster's in its environment from its
start (:func:`~doors_gym_baselines.runtime.worker_environment`), the workers at an address by the plugin the driver
registers there (:class:`~doors_gym_baselines.experiments.worker_threads.WorkerThreads`). A local cluster's workers share one
JAX compilation cache for the command's life (a program one worker compiled, another loads: in one process, as ``local`` trains,
JAX compiles each program once anyway). Dask is the ``dask`` extra; nothing here imports it
unless ``--executor dask`` is asked for.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import pathlib
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from doors_gym.extras import require

from ..config import check_at_least, check_choice, field, first_line

LOCAL, DASK = "local", "dask"
EXECUTORS = (LOCAL, DASK)
LOCAL_WORKER = "local"
"""The worker name of a run trained in the driver's own process."""


@dataclasses.dataclass(frozen=True)
class ExecutorOptions:
    """Where the runs train (the ``--executor`` flags of ``compare`` and ``ladder``)."""

    executor: str = field(
        LOCAL,
        "where the runs train: local (one after another in this process) or dask (spread over a Dask cluster; "
        "the dask extra)",
        choices=EXECUTORS,
    )
    workers: int | None = field(
        None, "dask: worker processes of the local cluster, each with its share of the cores (default: one per core)"
    )
    address: str | None = field(
        None,
        "dask: the address of a running scheduler to send the runs to (tcp://HOST:8786) instead of a local cluster",
    )

    def __post_init__(self) -> None:
        check_choice("executor", self.executor, EXECUTORS)
        if self.workers is not None:
            check_at_least("workers", self.workers, 1)
        if self.executor == LOCAL:
            for name in ("workers", "address"):
                if getattr(self, name) is not None:
                    raise ValueError(
                        f"{name}={getattr(self, name)!r} needs executor='dask': executor='local' trains in this process"
                    )
        if self.address is not None and self.workers is not None:
            raise ValueError(
                f"workers={self.workers} does not go with address={self.address!r}: the cluster at an address has the "
                "workers started there (dask worker ADDRESS --nworkers N --nthreads 1)"
            )
        if self.address is not None and "://" not in self.address:
            raise ValueError(f"address={self.address!r} is not a scheduler address: expected tcp://HOST:PORT")


@dataclasses.dataclass(frozen=True)
class Job:
    """One run to train: what the driver sends a worker (small, picklable)."""

    key: str
    """The resume cache's key of the run (:func:`job_key`): Dask's task key."""
    arm: Any
    """The arm's name where it is installed (every worker finds it), else the arm object itself (one added in
    this process, from a notebook: a Dask worker gets it pickled by value where its module is not installed)."""
    config: Any
    models: bool
    """Whether the best seed's model file comes back (``--models``)."""
    label: str
    """The run as progress lines and errors name it: ``<arm> seed <n>``."""


def job_key(cache: pathlib.Path, config: dict[str, Any], models: bool) -> str:
    """A run's task key: its cache file's name and a digest of everything that makes it this driver's run and no
    other's: the driver's host, the cache file's absolute path (its ``--out``), the whole config (the checkpoint's
    path included) and whether its model comes back. Two drivers with the same settings on one scheduler, in other
    folders or on other hosts, never share a task."""
    body = [socket.gethostname(), os.path.abspath(cache), config, models]
    digest = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return f"{cache.stem}-{digest}"


@dataclasses.dataclass
class Trained:
    """What a worker sends back: the result (its ``model`` left out), each seed's figures, the best seed's
    index and model file (bytes; None without models), when training started, and which host and worker ran it."""

    result: Any
    figures: list[Any]
    model_seed: int | None
    model_file: bytes | None
    started: float
    host: str
    worker: str
    lost_on: tuple[str, ...] = ()
    """The workers (addresses) that died while running it before this one finished it: set by the driver."""


def train_job(job: Job) -> Trained:
    """Trains ``job`` wherever it runs (this process, or a Dask worker) and packs what the driver records."""
    from ..arms import get_arm
    from ..reporting import best_seed, seed_runs

    host, worker = socket.gethostname(), worker_name()
    arm = get_arm(job.arm) if isinstance(job.arm, str) else job.arm
    started = time.time()
    result = arm.train(job.config)
    figures = seed_runs(result, job.config.seeds, host=host, worker=worker)
    model_seed = best_seed(figures) if job.models else None
    model_file = None
    if model_seed is not None:
        with tempfile.TemporaryDirectory() as folder:
            model_file = arm.save(result, pathlib.Path(folder) / "model.bin", seed_index=model_seed).read_bytes()
    result.model = None  # the model object stays here: its file travels
    return Trained(result, figures, model_seed, model_file, started, host, worker)


def worker_name() -> str:
    """The Dask worker this runs on (its name), or :data:`LOCAL_WORKER` outside one."""
    try:
        from distributed import get_worker
    except ImportError:
        return LOCAL_WORKER
    try:
        return str(get_worker().name)
    except ValueError:  # not inside a worker
        return LOCAL_WORKER


@dataclasses.dataclass(frozen=True)
class Failure:
    """A run that raised: its job and the error's first line."""

    job: Job
    error: str


def failed(job: Job, error: BaseException) -> Failure:
    """The :class:`Failure` of ``job``, said in a progress line as it happens."""
    failure = Failure(job, f"{type(error).__name__}: {first_line(error)}")
    print(f"  {job.label}: FAILED ({failure.error})", flush=True)
    return failure


class RunsFailed(RuntimeError):
    """Some runs raised; the others finished (and are cached, so a rerun trains only these)."""

    def __init__(self, failures: Sequence[Failure]) -> None:
        self.failures = tuple(failures)
        lines = [f"  {failure.job.label}: {failure.error}" for failure in self.failures]
        count = len(self.failures)
        super().__init__(f"{count} run{'s' if count > 1 else ''} failed (the others finished):\n" + "\n".join(lines))


Done = Callable[[Job, Trained], None]
"""What the driver does with each finished run (logs it to MLflow, caches it, prints a line)."""


RETRIED_TAG = "doors_gym.retried_after"
"""The tag of a run's MLflow record that Dask trained again after its worker died: the dead workers' addresses."""


@dataclasses.dataclass
class Retries:
    """The driver's account of the runs whose worker died under them, from the scheduler's ``remove-worker`` events
    (topic ``all``), by task key."""

    labels: dict[str, str] = dataclasses.field(default_factory=dict)
    """The label of each task this driver sent, by key (another driver's tasks are not ours to tell)."""
    lost: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    """The addresses of the workers that died while running each task, by key, in order."""

    def worker_removed(self, event: tuple[float, dict[str, Any]]) -> None:
        """Notes a scheduler event (``(time, message)``); a worker removed while it ran our runs is said in a line
        for each of them as it happens."""
        _, message = event
        if not isinstance(message, dict) or message.get("action") != "remove-worker":
            return
        address = str(message.get("worker"))
        how = "left" if message.get("expected") else "died"
        for key in message.get("processing-tasks", ()):
            if key in self.labels:
                self.lost.setdefault(key, []).append(address)
                held = f"worker {address} {how} holding it (running or queued there)"
                print(f"  {self.labels[key]}: {held}; Dask runs it again", flush=True)

    def finished(self, key: str, trained: Trained) -> Trained:
        """``trained`` with the workers that died under its task before (:attr:`Trained.lost_on`)."""
        self.labels.pop(key, None)
        return dataclasses.replace(trained, lost_on=tuple(self.lost.pop(key, ())))


def unlink(paths: Sequence[str]) -> None:
    """Removes the files at ``paths`` that exist."""
    for path in paths:
        pathlib.Path(path).unlink(missing_ok=True)


class LocalExecutor:
    """Trains the jobs one after another in this process (``--executor local``, the default)."""

    name = LOCAL

    def submit_ahead(self, jobs: Sequence[Job]) -> None:
        """Nothing to do ahead: the runs train when :meth:`run` gets them."""

    def submitted(self, key: str) -> bool:
        """Whether the run of ``key`` was sent ahead (never: nothing trains before :meth:`run`)."""
        return False

    def clear(self, paths: Sequence[str]) -> None:
        """Removes the files at ``paths`` (stale checkpoints of a ``--fresh`` command)."""
        unlink(paths)

    def run(self, jobs: Sequence[Job], done: Done) -> list[Failure]:
        failures = []
        for index, job in enumerate(jobs, 1):
            print(f"  {job.label}: training, run {index} of {len(jobs)}", flush=True)
            try:
                trained = train_job(job)
            except Exception as error:  # noqa: BLE001 - the other runs still train; the failure is named at the end
                failures.append(failed(job, error))
                continue
            done(job, trained)
        return failures

    def close(self) -> None:
        """Nothing to stop."""


class DaskExecutor:
    """Sends the jobs to a Dask cluster (``--executor dask``): a ``LocalCluster`` of ``workers`` processes started
    on first use, or the scheduler at ``address``; records each run as it finishes, in whatever order."""

    name = DASK

    def __init__(self, workers: int | None = None, address: str | None = None) -> None:
        require("distributed", "--executor dask")
        self.workers = workers
        self.address = address
        self._client: Any = None
        self._cluster: Any = None
        self._ahead: dict[str, Any] = {}
        self._cache: str | None = None
        self.retries = Retries()

    def client(self) -> Any:
        """The Dask client, connected on first use (starting the local cluster if there is no address)."""
        if self._client is None:
            import dask
            from distributed import Client, LocalCluster

            from ..runtime import JAX_CACHE_VARIABLE, available_cores, worker_environment

            if self.address is None:
                count = self.workers or available_cores()
                share = max(1, available_cores() // count)
                environment = worker_environment(share)
                if not os.environ.get(JAX_CACHE_VARIABLE):  # the workers compile each program once between them
                    self._cache = tempfile.mkdtemp(prefix="doors-gym-jax-cache-")
                    environment[JAX_CACHE_VARIABLE] = self._cache
                with dask.config.set({SPAWN_ENVIRONMENT: spawn_environment()}):
                    self._cluster = LocalCluster(
                        n_workers=count,
                        threads_per_worker=1,
                        processes=True,
                        dashboard_address=None,
                        silence_logs=40,  # logging.ERROR: a run retried after its worker died is told by the driver
                        env=environment,
                    )
                self._client = Client(self._cluster)
            else:
                from .worker_threads import WorkerThreads

                self._client = Client(self.address)
                # The workers there were started by whoever started them: their threads are held here.
                self._client.register_plugin(WorkerThreads())
            self._client.subscribe_topic("all", self.retries.worker_removed)
        return self._client

    def submit(self, job: Job) -> Any:
        """``job`` sent to the cluster: its future."""
        client = self.client()
        self.retries.labels[job.key] = job.label
        return client.submit(train_job, job, key=job.key, pure=False)

    def submitted(self, key: str) -> bool:
        """Whether the run of ``key`` was sent ahead (:meth:`submit_ahead`) and may be training now."""
        return key in self._ahead

    def clear(self, paths: Sequence[str]) -> None:
        """Removes the files at ``paths`` here and on every worker (a worker's own disk holds what it wrote where
        the folder is not shared)."""
        if paths:
            unlink(paths)
            self.client().run(unlink, list(paths))

    def submit_ahead(self, jobs: Sequence[Job]) -> None:
        """Sends ``jobs`` to the cluster now, so that its workers stay busy while the driver records what came
        before (a ladder sends every level's runs at its start); :meth:`run` then waits for them."""
        for job in jobs:
            if job.key not in self._ahead:
                self._ahead[job.key] = self.submit(job)

    def run(self, jobs: Sequence[Job], done: Done) -> list[Failure]:
        if not jobs:
            return []
        from distributed import as_completed

        client = self.client()
        futures = {}
        for job in jobs:
            future = self._ahead.pop(job.key, None)
            futures[self.submit(job) if future is None else future] = job
        failures = []
        try:
            for future in as_completed(futures):
                job = futures[future]
                if future.status == "error":
                    failures.append(failed(job, future.exception()))
                    continue
                done(job, self.retries.finished(job.key, future.result()))
        finally:
            client.cancel(list(futures))  # nothing left running after Ctrl-C or an error of the driver's own
        return failures

    def close(self) -> None:
        """Disconnects; stops the local cluster's workers if this executor started them."""
        self._ahead.clear()
        if self._client is not None:
            self._client.unsubscribe_topic("all")  # the scheduler would tell a closed client of its own leaving
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()
        if self._cache is not None:
            shutil.rmtree(self._cache, ignore_errors=True)
        self._client = self._cluster = self._cache = None


SPAWN_ENVIRONMENT = "distributed.nanny.pre-spawn-environ"
"""Dask's setting of the environment its nanny gives a worker process before it starts."""


def spawn_environment() -> dict[str, Any]:
    """Dask's pre-spawn environment without ``MALLOC_TRIM_THRESHOLD_``.

    Dask sets it (to 64 KiB) so that workers hand freed memory back to the system; any fixed trim threshold also
    switches off glibc's dynamic mmap threshold, so every allocation above 128 KiB is mapped and unmapped afresh.
    The runs allocate such arrays every step at the larger levels (a 63 x 63 level's observations): a quick
    ladder's runs took 2.6-2.8x their local time in a worker with it, the same time without it
    (``benchmarks/results/executors/``).
    """
    import dask

    environment = dict(dask.config.get(SPAWN_ENVIRONMENT))
    environment.pop("MALLOC_TRIM_THRESHOLD_", None)
    return environment


Executor = LocalExecutor | DaskExecutor


@contextlib.contextmanager
def open_executor(options: ExecutorOptions | None = None) -> Iterator[Executor]:
    """The executor ``options`` asks for (default: local), closed (its local cluster stopped) when the block ends,
    Ctrl-C included."""
    options = options or ExecutorOptions()
    executor: Executor = (
        LocalExecutor() if options.executor == LOCAL else DaskExecutor(options.workers, options.address)
    )
    try:
        yield executor
    finally:
        executor.close()


def describe(executor: Executor) -> str:
    """One line for a command's start: where its runs train."""
    if isinstance(executor, LocalExecutor):
        return "runs train here, one after another"
    if executor.address is not None:
        return f"runs train on the Dask cluster at {executor.address}"
    return f"runs train on a local Dask cluster of {executor.workers or os.cpu_count()} workers"
