"""What an arm needs from doors-gym, in one module: the learners of this package and plug-ins import it.

An arm is a record (:class:`Arm`, which provides :class:`ArmProtocol`) naming its ``train``, ``save_model``
and ``load_model``, its own hyperparameters (a frozen dataclass whose fields have defaults and check
themselves, declared with :func:`field`), its search space (:class:`Range`, in the scales :data:`LINEAR`,
:data:`ONE_MINUS`, :data:`POWER_OF_TWO`) and its presets. Its ``train(config, trial, arm)`` gets a
:class:`Config`: ``config.hyperparameters`` its own, ``config.run`` the :class:`RunSettings` every run shares
(task, budget, seeds, evaluation). It evaluates through :class:`EvaluationSchedule` (every ``eval_every``
env steps, reports to ``trial``, the stop when solved), makes each evaluation's row with :func:`history_row`
from :class:`Evaluation` and :class:`TrainingFigures`, and returns :func:`finish`'s :class:`TrainResult`
(:meth:`EvaluationSchedule.finish`: the final evaluation and the time spent evaluating added).
:func:`encode` finds the agent's and the goal's cells of grid observations (:data:`HIDDEN` where a cell is
hidden: the goal under the agent). :func:`torch_threads` and :func:`jax_compilation_cache` apply the run settings
of the same names (``config.run.torch_threads``, ``config.run.jax_cache``) around an arm's training.
"""

from .arm import Arm, ArmProtocol, StudyFigures, arm_for_env
from .config import Config, RunSettings, field
from .config.ranges import LINEAR, ONE_MINUS, POWER_OF_TWO, Range, Scale
from .harness import EvaluationSchedule, Reporter, finish
from .harness.evaluation import Evaluation, TrainingFigures, evaluate_greedy, history_row
from .harness.metrics import HistoryRow, TrainResult
from .learners.cells import HIDDEN, encode
from .runtime import jax_compilation_cache, torch_threads

__all__ = [
    "HIDDEN",
    "LINEAR",
    "ONE_MINUS",
    "POWER_OF_TWO",
    "Arm",
    "ArmProtocol",
    "Config",
    "Evaluation",
    "EvaluationSchedule",
    "HistoryRow",
    "Range",
    "Reporter",
    "RunSettings",
    "Scale",
    "StudyFigures",
    "TrainResult",
    "TrainingFigures",
    "arm_for_env",
    "encode",
    "evaluate_greedy",
    "field",
    "finish",
    "history_row",
    "jax_compilation_cache",
    "torch_threads",
]
