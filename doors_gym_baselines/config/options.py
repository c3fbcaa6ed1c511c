"""The options several commands share, declared once.

:class:`TrackingOptions` (``train --track``, ``tune``, ``compare``, ``ladder``): the MLflow store and experiment
a command tracks its runs in. :class:`RunsOptions` (``compare``, ``ladder``): the folder a command that trains
many runs keeps them in, whether it logs their models, whether it retrains the finished ones. What differs
between the commands, the experiment, the folder and whether models are logged by default, is a class constant
of each command's options (``EXPERIMENT``, ``OUT``, ``MODELS``), taken where the option is not given.
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any, ClassVar

from .fields import field

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
"""Where runs are tracked unless told (``--tracking-uri``, ``$MLFLOW_TRACKING_URI``)."""


@dataclasses.dataclass(frozen=True)
class TrackingOptions:
    """Where a command tracks its runs in MLflow: the store, and the experiment (the command's ``EXPERIMENT``
    unless given)."""

    EXPERIMENT: ClassVar[str] = "doors-gym"
    tracking_uri: str | None = field(
        None, f"MLflow tracking URI (default: $MLFLOW_TRACKING_URI or {DEFAULT_TRACKING_URI})"
    )
    experiment: str = field("", "MLflow experiment")

    def __post_init__(self) -> None:
        if not self.experiment:
            object.__setattr__(self, "experiment", self.EXPERIMENT)

    @classmethod
    def shown_defaults(cls) -> Any:
        """The defaults the command's flags show, each field's with the command's constants in place of the empty
        ones, read without building (and so validating) an instance, which may need an arm's framework."""
        values = {spec.name: spec.default for spec in dataclasses.fields(cls)}
        return types.SimpleNamespace(**{**values, **cls._constants()})

    @classmethod
    def _constants(cls) -> dict[str, Any]:
        return {"experiment": cls.EXPERIMENT}


@dataclasses.dataclass(frozen=True)
class RunsOptions(TrackingOptions):
    """Where a command that trains many runs keeps them (its ``OUT`` unless given), whether it logs their models
    to MLflow (its ``MODELS`` unless told) and whether it retrains the runs it finished before."""

    OUT: ClassVar[str] = "out"
    MODELS: ClassVar[bool] = True
    out: str = field("", "folder for the command's tables and plots and its finished runs")
    models: bool | None = field(None, "log the trained models to MLflow")
    fresh: bool = field(False, "retrain every run instead of reusing finished ones")

    @classmethod
    def _constants(cls) -> dict[str, Any]:
        return {**super()._constants(), "out": cls.OUT, "models": cls.MODELS}

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.out:
            object.__setattr__(self, "out", self.OUT)
        if self.models is None:
            object.__setattr__(self, "models", self.MODELS)
