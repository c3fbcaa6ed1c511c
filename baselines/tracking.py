"""MLflow tracking shared by ``tune`` and ``compare``: where runs go, what every run carries, models.

The tracking URI is ``--tracking-uri`` if given, else ``$MLFLOW_TRACKING_URI``,
else a SQLite store ``mlflow.db`` in the working directory (artifacts under
``./mlruns``), which is MLflow's own local default and what ``mlflow ui``
opens. Nothing needs a server.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import pathlib
import subprocess
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import numpy as np

import doors_gym

from .common import TrainResult

# MLflow's usage telemetry would try the network on every run; nothing here may.
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

T = TypeVar("T")

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
HISTORY_METRICS = (
    "greedy_success_rate",
    "greedy_step_reward",
    "greedy_normalised_return",
    "rolling_reward",
    "train_success_rate",
    "train_normalised_return",
    "train_episode_return",
    "train_episode_length",
    "loss",
    "epsilon",
    "sps",
    "seconds",
)
"""History-row figures logged as MLflow metrics, with ``step=`` the env step of the row."""


def tracking_uri(cli_value: str | None = None) -> str:
    """``cli_value``, else ``$MLFLOW_TRACKING_URI``, else :data:`DEFAULT_TRACKING_URI`."""
    return cli_value or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI


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
    if fcntl is None or not url.startswith("sqlite:///") or url.startswith("sqlite:///:memory:"):
        yield
        return
    database = pathlib.Path(url[len("sqlite:///") :].split("?")[0])
    if not database.parent.is_dir():
        yield  # the store reports the bad path itself
        return
    with open(f"{database}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def connect(uri: str | None, experiment: str) -> str:
    """Points MLflow at ``uri`` and the experiment ``experiment`` (created if missing); returns its id.

    Raises ``ValueError`` naming the URI when the store cannot be reached.
    Creation tolerates a concurrent worker creating the same experiment.
    """
    import mlflow

    uri = tracking_uri(uri)
    mlflow.set_tracking_uri(uri)
    try:
        with sqlite_lock(uri):
            return _experiment_id(mlflow, experiment)
    except Exception as error:  # noqa: BLE001 - any store failure becomes one clear message
        raise ValueError(f"tracking_uri={uri!r} is unreachable: {type(error).__name__}: {first_line(error)}") from error


def _experiment_id(mlflow: Any, experiment: str) -> str:
    client = mlflow.MlflowClient()

    def find_or_create() -> str:
        found = client.get_experiment_by_name(experiment)
        return found.experiment_id if found is not None else client.create_experiment(experiment)

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


def first_line(error: BaseException) -> str:
    """The first line of ``error``'s message (driver errors run to pages)."""
    return (str(error).strip().splitlines() or [""])[0]


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


def run_tags(arm: str, env_id: str, **extra: str) -> dict[str, str]:
    """The tags every run carries: arm, framework, env id, package version and git commit."""
    framework = "torch" if arm.startswith("torch") else "flax"
    return {
        "arm": arm,
        "framework": framework,
        "env_id": env_id,
        "doors_gym.version": doors_gym.__version__,
        "git_commit": git_commit(),
        **extra,
    }


def finite_metrics(figures: Mapping[str, Any], keys: tuple[str, ...] = HISTORY_METRICS) -> dict[str, float]:
    """The finite numbers among ``figures[keys]`` (MLflow has no use for NaN before the first episode)."""
    out = {}
    for key in keys:
        value = figures.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out[key] = float(value)
    return out


def log_history_row(figures: Mapping[str, Any], prefix: str = "") -> None:
    """Logs one history row to the active run with ``step=`` its env step."""
    import mlflow

    metrics = {prefix + key: value for key, value in finite_metrics(figures).items()}
    if metrics:
        mlflow.log_metrics(metrics, step=int(figures["step"]))


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
    # Steps are env steps of one seed, as in the history (a vmapped run's env_steps counts every seed).
    mlflow.log_metrics(finals, step=int(result.history[-1]["step"]))


def config_params(config: Any) -> dict[str, str]:
    """A config dataclass as MLflow params (strings; lists as JSON)."""
    return {
        key: json.dumps(value) if isinstance(value, list) else str(value) for key, value in config.to_dict().items()
    }


def log_model(result: TrainResult) -> str:
    """Logs the trained model of ``result`` to the active run; returns its artifact path.

    torch: ``mlflow.pytorch.log_model`` (load it back with
    ``mlflow.pytorch.load_model(f"runs:/{run_id}/model")``). Flax: the params
    in ``dqn_flax.save_model``'s msgpack format as ``model/model.msgpack``
    (load it back with :func:`load_flax_model`).
    """
    import mlflow

    if result.arm == "torch":
        import mlflow.pytorch

        from doors_gym import core

        from .common import all_start_states

        params = result.config.params
        example = np.asarray(core.observation(params, all_start_states(params)))[:2]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # pt2 (torch.export) traces forward on the example; the batch size stays dynamic.
            mlflow.pytorch.log_model(
                result.model,
                name="model",
                input_example=example,
                serialization_format="pt2",
                pip_requirements=[f"doors-gym=={doors_gym.__version__}", "torch"],
            )
        return "model"
    from . import dqn_flax, dqn_flax_scan

    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "model.msgpack"
        (dqn_flax_scan if result.arm == "flax-scan" else dqn_flax).save_model(result, str(path))
        mlflow.log_artifact(str(path), artifact_path="model")
    return "model/model.msgpack"


def load_flax_model(run_id: str) -> tuple[Any, Any, Any]:
    """``(QNetwork, params, DQNConfig)`` of a Flax run's ``model/model.msgpack`` artifact."""
    import mlflow

    from . import dqn_flax

    with tempfile.TemporaryDirectory() as folder:
        path = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="model/model.msgpack", dst_path=folder)
        return dqn_flax.load_model(path)


@contextlib.contextmanager
def quiet_mlflow() -> Iterator[None]:
    """Keeps MLflow's and Alembic's INFO chatter (database migrations, run URLs) off the console."""
    import logging

    loggers = [logging.getLogger(name) for name in ("mlflow", "alembic")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
