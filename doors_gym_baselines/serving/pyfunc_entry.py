"""The MLflow model of every doors-gym arm, built from code: MLflow runs this file to load a model.

See :mod:`doors_gym_baselines.serving`. Loading it unpickles nothing: the weights are read from the
arm's own model file, an artifact of the model. The model's class lives here, so that only loading a
model imports MLflow's ``pyfunc`` (the rest of the package imports MLflow when it uses it).
"""

from typing import Any

import mlflow
import mlflow.pyfunc
import numpy as np
import pandas as pd

from doors_gym import core
from doors_gym_baselines.serving import MODEL_FILE, Q_COLUMNS, load_model


class DoorsPolicy(mlflow.pyfunc.PythonModel):
    """Greedy actions and Q-values of a trained DQN agent of any arm, from the arm's own model file."""

    # The schema is the explicit :func:`signature`, so MLflow must not read one from predict's type hints: it
    # would warn at class creation and at every log that ``Any`` is none (hence model_input has no hint).
    _skip_type_hint_validation = True

    def load_context(self, context: Any) -> None:
        """Reads the model file (the arm that recognises its content reads it; nothing unpickled)."""
        self.arm, self.model, self.config = load_model(context.artifacts[MODEL_FILE])

    def predict(self, context: Any, model_input, params: dict[str, Any] | None = None) -> pd.DataFrame:  # noqa: ANN001
        """``(n, H * W)`` grids -> a DataFrame of ``action`` and the Q-values ``q_stay`` ... ``q_up``."""
        obs = np.asarray(model_input.values if hasattr(model_input, "values") else model_input)
        obs = obs.reshape(-1, self.config.params.num_cells).astype(core.OBS_DTYPE)
        q_values = np.asarray(self.model.q_values(obs), dtype=np.float32)
        table = {"action": self.arm.act(self.model, obs).astype(np.int64)}
        table.update({name: q_values[:, index] for index, name in enumerate(Q_COLUMNS)})
        return pd.DataFrame(table)


mlflow.models.set_model(DoorsPolicy())
