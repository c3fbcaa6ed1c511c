"""Trained agents as MLflow models: one ``pyfunc`` interface for every arm, served over HTTP by MLflow.

:func:`log_policy` logs an arm's model file as an MLflow ``pyfunc`` model, from
code (``pyfunc_entry.py``, which holds the model's class): MLflow runs that file to load it, so nothing
is unpickled: the weights are the arm's own file (a torch archive read with
``weights_only=True``, or Flax msgpack parameters with the network's config).
``mlflow.pyfunc.load_model(uri).predict(obs)`` takes a batch of grid
observations, ``(n, H * W)`` int16, and returns a DataFrame with the greedy
``action`` and the five Q-values (``q_stay`` ... ``q_up``), the actions those of
the arm's own ``act``. ``mlflow models serve -m models:/doors-<arm>@champion``
answers the same over HTTP.
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

from .arms import get_arm
from .metrics import TrainResult

MODEL_PATH = "model"
"""Where a run's pyfunc model lives (``runs:/<run id>/model``)."""
MODEL_FILE = "model_file"
"""The pyfunc model's artifact key of the arm's own model file."""
Q_COLUMNS = tuple(f"q_{name}" for name in core.ACTION_NAMES)
ENTRY = pathlib.Path(__file__).with_name("pyfunc_entry.py")
"""The file MLflow runs to build the model (models from code)."""
CHAMPION = "champion"
"""The registry alias of each arm's best model of a comparison."""


def registered_name(arm: Any) -> str:
    """The registered model of an arm: ``doors-<arm>``."""
    return f"doors-{arm.name}"


def register_champion(arm: Any, model_uri: str) -> int:
    """Registers ``model_uri`` as a new version of ``doors-<arm>`` and points its ``champion`` alias at it."""
    import mlflow

    client = mlflow.MlflowClient()
    # MLflow 3 keeps a run's models apart from its artifacts: register the logged model itself (models:/m-<id>),
    # which a runs:/ URI resolves to, instead of letting the registry warn that the run has no such artifact.
    source = mlflow.models.get_model_info(model_uri).model_uri
    # The registry prints "Successfully registered model ..." and "Created version ..." itself; the caller says
    # in one line which version the champion is.
    with (
        warnings.catch_warnings(),
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        warnings.simplefilter("ignore")
        version = mlflow.register_model(source, registered_name(arm))
    client.set_registered_model_alias(registered_name(arm), CHAMPION, version.version)
    return int(version.version)


def signature(num_cells: int) -> Any:
    """Input ``(n, H * W)`` int16 grids; output the action and the Q-values, per row."""
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, Schema, TensorSpec

    inputs = Schema([TensorSpec(np.dtype(core.OBS_DTYPE), (-1, num_cells))])
    outputs = Schema([ColSpec("long", "action"), *(ColSpec("float", name) for name in Q_COLUMNS)])
    return ModelSignature(inputs=inputs, outputs=outputs)


def example_observations(params: Any, count: int = 2) -> np.ndarray:
    """``count`` start observations of the layout (the input example)."""
    from .evaluation import all_start_states

    return np.asarray(core.observation(params, all_start_states(params)))[:count]


def log_policy(result: TrainResult, seed_index: int = 0) -> str:
    """Logs one seed's trained agent of ``result`` to the active run as the pyfunc model ``model``.

    Returns the model's URI (``runs:/<run id>/model``). torch arms also keep their
    native flavour (``torch-model``).
    """
    import mlflow.pyfunc

    arm = get_arm(result.arm)
    params = result.config.params
    with tempfile.TemporaryDirectory() as folder:
        path = arm.save(result, pathlib.Path(folder) / "model.bin", seed_index=seed_index)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            info = mlflow.pyfunc.log_model(
                name=MODEL_PATH,
                python_model=str(ENTRY),
                artifacts={MODEL_FILE: str(path)},
                signature=signature(params.num_cells),
                input_example=example_observations(params),
                pip_requirements=[f"doors-gym=={doors_gym.__version__}", *arm.requirements],
            )
    if arm.framework == "torch":
        from mlflow import pytorch as mlflow_pytorch

        from .dqn_torch import GridQNetwork

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # pt2 (torch.export) traces forward on the example; the batch size stays dynamic.
            mlflow_pytorch.log_model(
                GridQNetwork(result.model.network),
                name="torch-model",
                input_example=example_observations(params),
                serialization_format="pt2",
                pip_requirements=[f"doors-gym=={doors_gym.__version__}", "torch"],
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
