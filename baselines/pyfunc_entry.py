"""The MLflow model of every doors-gym arm, built from code: MLflow runs this file to load a model.

See :mod:`doors_gym_baselines.serving`. Loading it unpickles nothing: the
weights are read from the arm's own model file, an artifact of the model.
"""

import mlflow

from doors_gym_baselines.serving import DoorsPolicy

mlflow.models.set_model(DoorsPolicy())
