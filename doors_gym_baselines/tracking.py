"""MLflow tracking shared by ``train``, ``tune`` and ``compare``: where runs go, what every run carries, the one
tracked run a training happens in (:func:`tracked_run`).

The tracking URI is ``--tracking-uri`` if given, else ``$MLFLOW_TRACKING_URI``,
else a SQLite store ``mlflow.db`` in the working directory (artifacts under
``./mlruns``), which is MLflow's own local default and what ``mlflow ui``
opens. Nothing needs a server.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.util
import json
import math
import os
import pathlib
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, TypeVar


import doors_gym

from .arm import ArmProtocol, env_label_at
from .config import field, first_line
from .config.options import DEFAULT_TRACKING_URI, TrackingOptions
from .harness.metrics import HistoryRow, TrainResult
from .runtime import mlflow_environment
from .serving import log_model

T = TypeVar("T")

EXPERIMENT_TAGS = {"mlflow.experimentKind": "custom_model_development"}
"""What every experiment says of itself: MLflow 3's UI then opens it on its runs, not on the GenAI overview."""


@dataclasses.dataclass(frozen=True)
class TrackOptions(TrackingOptions):
    """Whether and where ``doors-gym train`` tracks its run (the ``--track`` flags)."""

    EXPERIMENT: ClassVar[str] = "doors-gym-train"
    track: bool = field(False, "track the run in MLflow: its params, learning curve, timings and model")


def tracking_uri(cli_value: str | None = None) -> str:
    """``cli_value``, else ``$MLFLOW_TRACKING_URI``, else :data:`DEFAULT_TRACKING_URI`."""
    return cli_value or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI


UI_ADDRESS = "http://127.0.0.1:5000"
"""Where :func:`ui_command`'s MLflow UI listens: this machine only."""


def ui_command(uri: str, experiment_id: str | None = None) -> str:
    """Two lines: the command that opens MLflow's UI on the store at ``uri``, bound to this machine, and the
    page of the experiment's runs (MLflow 3's UI opens on its GenAI views unless asked for model training)."""
    page = f"{UI_ADDRESS}/#/experiments" + (f"/{experiment_id}" if experiment_id else "")
    command = f"mlflow ui --backend-store-uri {uri} --host 127.0.0.1 --port 5000"
    return f"{command}\n  then {page}?workflowType=machine_learning"


def sqlite_path(url: str) -> pathlib.Path | None:
    """The database file of a ``sqlite:///`` URL (None for other URLs and in-memory databases)."""
    if not url.startswith("sqlite:///") or url.startswith("sqlite:///:memory:"):
        return None
    return pathlib.Path(url[len("sqlite:///") :].split("?")[0])


def artifact_location(url: str) -> str | None:
    """Where a new experiment keeps its artifacts: ``mlruns/`` beside a SQLite store, the server's choice otherwise.

    MLflow's own default for a SQLite store is ``./mlruns`` in the working
    directory, wherever the database is; beside the database, a store and its
    artifacts stay together (for the default store both are the same place).
    """
    database = sqlite_path(url)
    return None if database is None else (database.resolve().parent / "mlruns").as_uri()


@contextlib.contextmanager
def sqlite_lock(url: str) -> Iterator[None]:
    """Serialises processes that open the same SQLite database (a lock file beside it).

    Two workers started together would otherwise both create (migrate) the
    schema of a new MLflow or Optuna database and one of them fails. Other URLs
    (servers) handle concurrency themselves; without ``fcntl`` this is a no-op.
    """
    try:
        import fcntl
    except ImportError:  # Windows
        fcntl = None
    database = sqlite_path(url)
    if fcntl is None or database is None:
        yield
        return
    if not database.parent.is_dir():
        yield  # the store reports the bad path itself
        return
    with open(f"{database}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


DRIVER_PACKAGES = {
    **{name: (name, name) for name in ("pg8000", "asyncpg", "pyodbc", "pymssql", "oracledb")},
    "psycopg2": ("psycopg2", "psycopg2-binary"),
    "psycopg": ("psycopg", "psycopg[binary]"),
    "mysqldb": ("MySQLdb", "mysqlclient"),
    "pymysql": ("pymysql", "PyMySQL"),
    "mysqlconnector": ("mysql.connector", "mysql-connector-python"),
    "mariadbconnector": ("mariadb", "mariadb"),
    "cx_oracle": ("cx_Oracle", "cx-Oracle"),
}
"""SQLAlchemy's driver names and ``(module, package to pip install)`` of each database driver (the first ones named
alike all three ways)."""


def check_driver(name: str, url: str) -> None:
    """``ValueError`` naming the package to install when the database driver of ``url`` is missing.

    SQLAlchemy reports a missing driver as a bare ``ModuleNotFoundError`` and Optuna as "Please install
    appropriate one"; this names the pip package instead. URLs that are not SQLAlchemy's (``file:``,
    ``http://``) and unknown drivers are left to the store.
    """
    try:
        from sqlalchemy.engine import make_url

        driver = make_url(url).get_driver_name()
    except Exception:  # noqa: BLE001 - not an SQLAlchemy URL, or a dialect SQLAlchemy does not know
        return
    module, package = DRIVER_PACKAGES.get(driver, (None, None))
    if module is None:
        return
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the parent of a dotted module is missing too
        found = False
    if not found:
        raise ValueError(
            f"{name}={display_url(url)!r} needs the database driver {driver!r}, which is not installed: "
            f"pip install {package!r}"
        )


def display_url(url: str) -> str:
    """``url`` with any password hidden (for messages, logs and MLflow params)."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - a URL SQLAlchemy cannot parse is shown as given
        return url


class TrackingUnreachable(ValueError):
    """The MLflow store cannot be opened: a bad URI, a missing database or driver, no connection, no access."""


def connect(uri: str | None, experiment: str) -> str:
    """Points MLflow at ``uri`` and the experiment ``experiment`` (created if missing); returns its id.

    Raises :class:`TrackingUnreachable` (a ``ValueError``) naming the URI when the store cannot be reached;
    other errors are raised as they are.
    Creation tolerates a concurrent worker creating the same experiment.
    """
    import mlflow

    uri = tracking_uri(uri)
    check_driver("tracking_uri", uri)
    mlflow.set_tracking_uri(uri)
    import sqlalchemy

    try:
        with sqlite_lock(uri):
            experiment_id = _experiment_id(mlflow, experiment)
    except (mlflow.exceptions.MlflowException, sqlalchemy.exc.SQLAlchemyError, ImportError, OSError) as error:
        raise TrackingUnreachable(
            f"tracking_uri={uri!r} is unreachable: {type(error).__name__}: {first_line(error)}"
        ) from error
    ended = end_dead_runs(experiment_id)
    if ended:
        print(f"MLflow: {len(ended)} run(s) left RUNNING by a killed process, now KILLED: {', '.join(ended)}")
    return experiment_id


def _experiment_id(mlflow: Any, experiment: str) -> str:
    client = mlflow.MlflowClient()

    def find_or_create() -> str:
        found = client.get_experiment_by_name(experiment)
        if found is None:
            location = artifact_location(mlflow.get_tracking_uri())
            return client.create_experiment(experiment, artifact_location=location, tags=EXPERIMENT_TAGS)
        for key, value in EXPERIMENT_TAGS.items():
            if found.tags.get(key) != value:
                client.set_experiment_tag(found.experiment_id, key, value)
        return found.experiment_id

    experiment_id = retry_creation_race(find_or_create)
    mlflow.set_experiment(experiment_id=experiment_id)
    return experiment_id


def is_creation_race(error: BaseException) -> bool:
    """Whether ``error`` is a concurrent worker creating the same tables or rows (worth a retry)."""
    text = str(error).lower()
    return any(sign in text for sign in ("unique", "already exists", "locked", "duplicate"))


def retry_creation_race(create: Callable[[], T], attempts: int = 6) -> T:
    """``create()``, tried again (with a growing pause) while it loses a creation race to another worker."""
    for attempt in range(attempts - 1):
        try:
            return create()
        except Exception as error:  # noqa: BLE001 - only races are retried; anything else is raised
            if not is_creation_race(error):
                raise
            time.sleep(0.5 * (attempt + 1))
    return create()


@functools.cache
def git_commit() -> str:
    """The commit of the checkout the package runs from, ``unknown`` for an installed wheel."""
    root = pathlib.Path(doors_gym.__file__).resolve().parents[1]
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def run_tags(arm: ArmProtocol, params: Any = None, **extra: str) -> dict[str, str]:
    """The tags every run of an arm carries: arm, framework, what it steps (at the level of ``params``, a
    ``DoorsParams``, where given: :func:`~.arm.env_label_at`), the package that provides the arm (with its version),
    doors-gym's version, git commit and the process that runs it (see :func:`end_dead_runs`)."""
    return {
        "arm": arm.name,
        "framework": arm.framework,
        "env_id": arm.env_label if params is None else env_label_at(arm, params),
        "package": arm.package,
        "doors_gym.version": doors_gym.__version__,
        "git_commit": git_commit(),
        PROCESS_TAG: this_process(),
        **extra,
    }


PROCESS_TAG = "doors_gym.process"
"""The tag naming the process a run belongs to: ``host:pid:start``."""


def this_process() -> str:
    """This process as :data:`PROCESS_TAG` names it: host, process id and start time (where /proc has one)."""
    return f"{socket.gethostname()}:{os.getpid()}:{_start_time(os.getpid())}"


def _start_time(pid: int) -> str:
    """When process ``pid`` started, in clock ticks since boot (from /proc; "" where there is none)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def process_alive(tag: str) -> bool | None:
    """Whether the process a :data:`PROCESS_TAG` names still runs; None for another host's (unknown here)."""
    host, pid_text, start = tag.rsplit(":", 2)
    if host != socket.gethostname() or not pid_text.isdigit():
        return None
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process with that id
        pass
    return not start or _start_time(int(pid_text)) == start  # a reused process id is another process


def end_dead_runs(experiment_id: str) -> list[str]:
    """Marks ``KILLED`` the experiment's runs left ``RUNNING`` by a process of this host that died (``kill -9``,
    a crash, a closed terminal); returns their names.

    Every command calls it when it connects, so a resumed study, comparison or training cleans what the
    killed one left. Runs of other hosts are left to their own host (and a study's to Optuna's heartbeat).
    """
    import mlflow

    client = mlflow.MlflowClient()
    ended = []
    for run in client.search_runs([experiment_id], "attributes.status = 'RUNNING'", max_results=1000):
        tag = run.data.tags.get(PROCESS_TAG)
        if tag and process_alive(tag) is False:
            client.set_terminated(run.info.run_id, status="KILLED")
            ended.append(run.info.run_name)
    return ended


def log_history_row(row: HistoryRow, prefix: str = "") -> None:
    """Logs one learning-curve row to the active run with ``step=`` its env step (NaN left out)."""
    import mlflow

    metrics = {prefix + key: value for key, value in row.metrics().items()}
    if metrics:
        mlflow.log_metrics(metrics, step=int(row.step))


def log_result(result: TrainResult, *, log_history: bool = True) -> None:
    """Logs a finished run: its history (unless already logged live) and final figures as ``final_*``."""
    import mlflow

    if log_history:
        for row in result.history:
            log_history_row(row)
    summary = result.summary()
    finals = {
        f"final_{key}": float(value)
        for key, value in summary.items()
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    }
    finals["final_solved"] = float(result.solved)
    finals.update({f"seconds_{name}": value for name, value in result.timings.as_dict().items()})
    if math.isfinite(result.ms_per_update):
        finals["ms_per_update"] = result.ms_per_update
    # Steps are env steps of one seed, as in the history (a vmapped run's env_steps counts every seed).
    mlflow.log_metrics(finals, step=int(result.history[-1].step))
    mlflow.set_tags({f"fact.{key}": str(value) for key, value in result.facts.items()})
    mlflow.set_tag("timings.method", result.timings.method)


def run_name(arm: ArmProtocol, seeds: Sequence[int]) -> str:
    """An MLflow run's name that says what it holds: ``<arm>-seed<n>``, or ``<arm>-seeds<first>-<last>``."""
    return f"{arm.name}-seed{seeds[0]}" if len(seeds) == 1 else f"{arm.name}-seeds{seeds[0]}-{seeds[-1]}"


ModelLogger = Callable[[TrainResult, int], str]
"""Logs seed index ``i``'s model of a result to the active run and returns its URI (:func:`.serving.log_model`)."""


def log_seed_runs(
    result: TrainResult,
    arm: ArmProtocol,
    seeds: Sequence[int],
    model_seed: int | None,
    log_one: ModelLogger = log_model,
) -> str | None:
    """One nested run per seed of a run that trained several (``<arm>-seed<n>``): its curve and final figures.

    The model of seed index ``model_seed`` (if not None) is logged in its seed's run by ``log_one``; returns its URI.
    """
    import mlflow

    model_uri = None
    for index, seed in enumerate(seeds):
        tags = run_tags(arm, result.config.params, seeds=str(seed))
        with mlflow.start_run(run_name=run_name(arm, [seed]), nested=True, tags=tags):
            for row in result.history:
                figures = dataclasses.asdict(row.per_seed[index])
                figures.pop("seed")
                mlflow.log_metrics(
                    {key: value for key, value in figures.items() if math.isfinite(value)}, step=int(row.step)
                )
            final = result.history[-1].per_seed[index]
            mlflow.log_metric("final_solved", float(final.solved), step=int(result.history[-1].step))
            if index == model_seed:
                model_uri = log_one(result, index)
    return model_uri


def config_params(config: Any) -> dict[str, str]:
    """A config's fields as MLflow params by name (strings; tuples as JSON lists)."""
    return {
        key: json.dumps(list(value)) if isinstance(value, tuple) else str(value) for key, value in config.flat().items()
    }


class TrackedRun:
    """The MLflow run of one training of an arm (see :func:`tracked_run`): trains in it and logs what it made."""

    def __init__(self, arm: ArmProtocol, config: Any, run: Any) -> None:
        self.arm = arm
        self.config = config
        self.run = run
        self.model_uri: str | None = None

    @property
    def run_id(self) -> str:
        return self.run.info.run_id

    def train(self, trial: Any = None, logged_live: bool = False) -> TrainResult:
        """Trains the arm with the run's config, reporting to ``trial``, and logs the result: its curve (its last
        row only when ``trial`` logged the others as they came, ``logged_live``), final figures and timings."""
        result = self.arm.train(self.config, trial)
        if logged_live:
            log_history_row(result.history[-1])  # the final evaluation, taken after training, never reported
        log_result(result, log_history=not logged_live)
        return result

    def log_models(
        self, result: TrainResult, model_seed: int | None = 0, log_one: ModelLogger = log_model
    ) -> str | None:
        """Logs seed index ``model_seed``'s model (``None``: no model) with ``log_one``; a run of several seeds
        gets a nested run per seed, the model in its seed's. Returns the model's URI (kept as :attr:`model_uri`)."""
        seeds = self.config.seeds
        if len(seeds) > 1:
            self.model_uri = log_seed_runs(result, self.arm, seeds, model_seed, log_one)
        elif model_seed is not None:
            self.model_uri = log_one(result, model_seed)
        return self.model_uri


def ended_status(error: BaseException) -> str:
    """The status of a run ended by ``error``: ``KILLED`` for Ctrl-C, ``FAILED`` otherwise."""
    return "KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED"


@contextlib.contextmanager
def tracked_run(
    arm: ArmProtocol,
    config: Any,
    name: str | None = None,
    nested: bool = False,
    status_of: Callable[[BaseException], str] = ended_status,
    started: float | None = None,
    **tags: str,
) -> Iterator[TrackedRun]:
    """An MLflow run of one training of ``arm`` with ``config``, what ``train``, ``tune`` and ``compare`` all train in.

    The run is named for its seeds (or ``name``), tagged with :func:`run_tags` (its seeds and ``tags``), and holds
    the config as params; ``started`` (seconds since the epoch) backdates its start to when a training recorded
    after the fact began (a comparison's runs, wherever they trained). It ends ``FINISHED``, or with
    ``status_of(error)`` when ``error`` ends the block (``FAILED``; ``KILLED`` for Ctrl-C), so a killed process's
    run is never left ``RUNNING``.
    """
    import mlflow

    seeds = config.seeds
    tags = run_tags(arm, config.params, **{"seeds": ",".join(map(str, seeds)), **tags})
    if started is None or not nested or mlflow.active_run() is None:
        run = mlflow.start_run(run_name=name or run_name(arm, seeds), nested=nested, tags=tags)
    else:
        run = start_backdated_run(name or run_name(arm, seeds), tags, started)
    status = "FINISHED"
    try:
        mlflow.log_params(config_params(config))
        yield TrackedRun(arm, config, run)
    except BaseException as error:
        status = status_of(error)
        raise
    finally:
        mlflow.end_run(status=status)


def start_backdated_run(name: str, tags: dict[str, str], started: float) -> Any:
    """A run nested in the active one, created with its start at ``started`` and made active."""
    import mlflow
    from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

    parent = mlflow.active_run()
    tags = {**tags, MLFLOW_PARENT_RUN_ID: parent.info.run_id}
    client = mlflow.MlflowClient()
    created = client.create_run(parent.info.experiment_id, start_time=int(started * 1000), tags=tags, run_name=name)
    return mlflow.start_run(run_id=created.info.run_id, nested=True)


def track_training(arm: ArmProtocol, config: Any, options: TrackOptions) -> TrainResult:
    """``doors-gym train --track``: trains in a tracked run (params, tags, curve, finals, timings, model).

    The result gains ``run_id`` and ``model_uri`` in its facts.
    """
    with quiet_mlflow():
        connect(options.tracking_uri, options.experiment)
        with tracked_run(arm, config) as tracked:
            result = tracked.train()
            tracked.log_models(result, model_seed=0)
    result.facts.update(run_id=tracked.run_id, model_uri=tracked.model_uri)
    return result


@contextlib.contextmanager
def quiet_mlflow() -> Iterator[None]:
    """MLflow for the block without telemetry or download progress bars (:func:`.runtime.mlflow_environment`)
    and without its and Alembic's INFO chatter (database migrations, run URLs) on the console.

    MLflow is imported here, inside its environment (its telemetry starts at import) and before its loggers
    are quieted (its import configures them).
    """
    import logging

    with mlflow_environment():
        import mlflow  # noqa: F401

        # MLflow's modules log through loggers of their own names, some with levels of their own.
        names = {"mlflow", "alembic", *(name for name in logging.root.manager.loggerDict if name.startswith("mlflow."))}
        loggers = [logging.getLogger(name) for name in sorted(names)]
        levels = [logger.level for logger in loggers]
        for logger in loggers:
            logger.setLevel(logging.WARNING)
        try:
            yield
        finally:
            for logger, level in zip(loggers, levels):
                logger.setLevel(level)
