"""What a training is, by concern: an arm's hyperparameters apart from the run settings every run shares.

- :mod:`.fields`: the option helpers, :func:`field` (a field with its help line) and the ``check_*`` validators;
- :mod:`.hyperparameters`: DQN's :class:`Hyperparameters`, what presets and tuning set;
- :mod:`.run`: the :class:`RunSettings`, what to run and how (task, budget, seeds, evaluation, machinery);
- :mod:`.training`: :class:`Config`, the pair (:class:`DQNConfig` for DQN), and :func:`make_config`;
- :mod:`.layouts`: the registered level a layout is, and the env id a backend steps there;
- :mod:`.options`: the options several commands share (MLflow tracking, the runs' folder);
- :mod:`.schedules`: the exploration, exploring-starts and learning-rate schedules;
- :mod:`.flags`: the command-line flags generated from the fields; :mod:`.ranges`: search-space coordinates.

The names of the first five are importable from here, as they were from the one module this package was.
"""

from .fields import (
    check_at_least,
    check_choice,
    check_choices,
    check_folder,
    check_fraction,
    field,
    field_names,
    first_line,
)
from .hyperparameters import ALGORITHMS, HYPERPARAMETER_NAMES, LAYER_NORM_EPSILON, LOSSES, OPTIMIZERS, Hyperparameters
from .layouts import level_env_id, level_of
from .run import (
    DOOR_MODES,
    ENV_IDS,
    LAYOUT_NAMES,
    RUN_FIELDS_OFF_THE_OUTCOME,
    RUN_NAMES,
    VECTORIZATIONS,
    RunSettings,
)
from .training import Config, DQNConfig, describe_hyperparameters, make_config

__all__ = [
    "ALGORITHMS",
    "DOOR_MODES",
    "ENV_IDS",
    "HYPERPARAMETER_NAMES",
    "LAYER_NORM_EPSILON",
    "LAYOUT_NAMES",
    "LOSSES",
    "OPTIMIZERS",
    "RUN_FIELDS_OFF_THE_OUTCOME",
    "RUN_NAMES",
    "VECTORIZATIONS",
    "Config",
    "DQNConfig",
    "Hyperparameters",
    "RunSettings",
    "check_at_least",
    "check_choice",
    "check_choices",
    "check_folder",
    "check_fraction",
    "describe_hyperparameters",
    "field",
    "field_names",
    "first_line",
    "level_env_id",
    "level_of",
    "make_config",
]
