"""Trained agents' models: read from their files, logged and registered as MLflow models, whatever the arm.

Each arm reads and writes its own model files (``Arm.save``, ``Arm.read``); :func:`load_model` asks the
installed arms which one recognises a file (plug-ins first, by their magic; the built-in arms by their
framework's serialisation), never naming an arm. :func:`log_model` logs an arm's model file as an MLflow
``pyfunc`` model, from code (``pyfunc_entry.py``, which holds the model's class): MLflow runs that file to load it, so nothing
is unpickled: the weights are the arm's own file (a torch archive read with
``weights_only=True``, or Flax msgpack parameters with the network's config).
``mlflow.pyfunc.load_model(uri).predict(obs)`` takes a batch of grid
observations, ``(n, H * W)`` int16, and returns a DataFrame with the greedy
``action`` and the five Q-values (``q_stay`` ... ``q_up``), the actions those of
the arm's own ``act``. ``mlflow models serve -m models:/doors-<arm>@champion``
answers the same over HTTP. An arm whose learner file gives its model in its framework's own form
(``native_model``) also gets that flavour (:data:`NATIVE_FLAVOURS`).

This package holds the MLflow model's file (:mod:`.pyfunc_entry`) and ``doors-gym enjoy`` (:mod:`.enjoy`); its
own names stay at ``doors_gym_baselines.serving``, the module every logged model's copy of that file imports.
"""

from __future__ import annotations

import contextlib
import io
import pathlib
import tempfile
import warnings
from typing import Any

import numpy as np

import doors_gym
from doors_gym import core

from doors_gym.extras import require

from ..arm import FILE_FORMATS, FRAMEWORK_STACKS, ArmProtocol
from ..arms import ARMS, get_arm
from ..config import Config
from ..harness.metrics import TrainResult

MODEL_PATH = "model"
"""Where a run's pyfunc model lives (``runs:/<run id>/model``)."""
MODEL_FILE = "model_file"
"""The pyfunc model's artifact key of the arm's own model file."""
Q_COLUMNS = tuple(f"q_{name}" for name in core.ACTION_NAMES)
ENTRY = pathlib.Path(__file__).with_name("pyfunc_entry.py")
"""The file MLflow runs to build the model (models from code)."""
CHAMPION = "champion"
"""The registry alias of each arm's best model of a comparison."""
NATIVE_PATH = "{framework}-model"
"""Where a run keeps its model in its framework's own MLflow flavour, if the arm gives one (``torch-model``)."""
NATIVE_FLAVOURS = {"torch": ("mlflow.pytorch", {"serialization_format": "pt2"})}
"""The MLflow flavour of each framework's native models, and its options (pt2: ``torch.export`` traces
forward on the input example; the batch size stays dynamic)."""


def registered_name(arm: Any) -> str:
    """The registered model of an arm: ``doors-<arm>``."""
    return f"doors-{arm.name}"


def register_champion(arm: Any, model_uri: str) -> int:
    """Registers ``model_uri`` as a version of ``doors-<arm>`` and points its ``champion`` alias at it; returns
    the version. A model registered already (a resumed comparison's champion) keeps its version: nothing is
    registered twice."""
    import mlflow

    client = mlflow.MlflowClient()
    # MLflow 3 keeps a run's models apart from its artifacts: register the logged model itself (models:/m-<id>),
    # which a runs:/ URI resolves to, instead of letting the registry warn that the run has no such artifact.
    source = mlflow.models.get_model_info(model_uri).model_uri
    name = registered_name(arm)
    found = [version for version in client.search_model_versions(f"name='{name}'") if version.source == source]
    if found:
        version = found[0]
    else:
        # The registry prints "Successfully registered model ..." and "Created version ..." itself; the caller
        # says in one line which version the champion is.
        with (
            warnings.catch_warnings(),
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.redirect_stderr(io.StringIO()),
        ):
            warnings.simplefilter("ignore")
            version = mlflow.register_model(source, name)
    client.set_registered_model_alias(name, CHAMPION, version.version)
    return int(version.version)


def signature(num_cells: int) -> Any:
    """Input ``(n, H * W)`` int16 grids; output the action and the Q-values, per row."""
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, Schema, TensorSpec

    inputs = Schema([TensorSpec(np.dtype(core.OBS_DTYPE), (-1, num_cells))])
    outputs = Schema([ColSpec("long", "action"), *(ColSpec("float", name) for name in Q_COLUMNS)])
    return ModelSignature(inputs=inputs, outputs=outputs)


def example_observations(params: Any, count: int = 2) -> np.ndarray:
    """``count`` start observations of the layout (the input example), with their doors where they are random."""
    from ..harness.evaluation import start_observations

    return start_observations(params, count)


def log_model(result: TrainResult, seed_index: int = 0) -> str:
    """Logs one seed's trained agent of ``result`` to the active run as the pyfunc model ``model``; returns its URI
    (``runs:/<run id>/model``). An arm with a native model also keeps it in its framework's flavour."""
    arm = get_arm(result.arm)
    with tempfile.TemporaryDirectory() as folder:
        path = arm.save(result, pathlib.Path(folder) / "model.bin", seed_index=seed_index)
        return log_model_file(arm, path, result.config.params, native_model(arm, result, seed_index))


def native_model(arm: ArmProtocol, result: TrainResult, seed_index: int = 0) -> Any:
    """One seed's model of ``result`` in ``arm``'s framework's own form, ``None`` where the arm gives none."""
    return getattr(arm, "native_model", lambda *_: None)(result, seed_index)


def log_model_file(arm: ArmProtocol, path: pathlib.Path, params: Any, native: Any = None) -> str:
    """Logs ``arm``'s model file ``path`` (a layout of ``params``) to the active run as the pyfunc model
    ``model``, and ``native`` (the model in its framework's own form, if any) in that flavour; returns the pyfunc
    model's URI. What :func:`log_model` does with a file it wrote, and the driver of a spread comparison with a
    file a worker sent (:mod:`~doors_gym_baselines.experiments.executors`)."""
    import mlflow.pyfunc

    requirement = f"doors-gym=={doors_gym.__version__}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        info = mlflow.pyfunc.log_model(
            name=MODEL_PATH,
            python_model=str(ENTRY),
            artifacts={MODEL_FILE: str(path)},
            signature=signature(params.num_cells),
            input_example=example_observations(params),
            pip_requirements=[requirement, *arm.requirements],
        )
    if native is not None and arm.framework in NATIVE_FLAVOURS:
        flavour, options = NATIVE_FLAVOURS[arm.framework]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            require(flavour, "a native MLflow model").log_model(
                native,
                name=NATIVE_PATH.format(framework=arm.framework),
                input_example=example_observations(params),
                pip_requirements=[requirement, *FRAMEWORK_STACKS.get(arm.framework, ())],
                **options,
            )
    return f"runs:/{info.run_id}/{MODEL_PATH}"  # MLflow 3's own info.model_uri is models:/m-<id>


def download_model_file(uri: str, folder: str | pathlib.Path) -> pathlib.Path:
    """The arm's own model file inside the MLflow model at ``uri`` (``runs:/...``, ``models:/...``), downloaded."""
    import mlflow

    local = pathlib.Path(mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=str(folder)))
    files = sorted(path for path in (local / "artifacts").glob("*") if path.is_file())
    if not files:
        raise ValueError(f"{uri!r} is not a doors-gym MLflow model: it has no artifacts/ model file")
    return files[0]


def load_run_model(run_id: str) -> tuple[Any, Config]:
    """``(model, config)`` of a run's model, whatever the arm; ``model.act(obs)`` acts greedily."""
    with tempfile.TemporaryDirectory() as folder:
        _, model, config = load_model(download_model_file(f"runs:/{run_id}/{MODEL_PATH}", folder))
    return model, config


def reader_of(path: pathlib.Path) -> ArmProtocol:
    """The installed arm that recognises the model file ``path``: another package's first, then this package's
    (arms whose framework or package is missing are skipped); ``ValueError`` if none does."""
    names = sorted(ARMS, key=ARMS.is_builtin)  # plug-ins first; sorted keeps each group's order
    for name in names:
        try:
            arm = ARMS[name]
        except (ImportError, ValueError):  # a missing framework, a broken plug-in: not this file's reader
            continue
        if hasattr(arm, "recognises") and arm.recognises(path):
            return arm
    with path.open("rb") as handle:
        header = handle.read(4)
    for framework, begins in FILE_FORMATS.items():  # a framework's file whose arms could not load: name its extra
        if begins(header):
            for stack in FRAMEWORK_STACKS[framework]:
                require(stack, f"loading a {framework} model")
    raise ValueError(
        f"{str(path)!r} is not a doors-gym model file: no installed arm recognises it (expected a file written by "
        "`doors-gym train --save`: a torch archive, a Flax msgpack file or a plug-in's own format)"
    )


def load_model(path: str | pathlib.Path, arm: ArmProtocol | None = None) -> tuple[ArmProtocol, Any, Config]:
    """``(arm, model, config)`` of a model file of any arm (or of ``arm``'s format), told by its content;
    ``model.act(obs)`` gives greedy actions.

    Raises:
        ValueError: for a missing file, or one that no installed arm recognises.
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise ValueError(f"model file {str(path)!r} does not exist")
    reader = arm or reader_of(path)
    if not hasattr(reader, "read"):  # an arm object without the record's read: its own load
        model, config = reader.load(path)
        return reader, model, config
    name, model, config = reader.read(path)
    return (reader if name == reader.name else get_arm(name)), model, config
