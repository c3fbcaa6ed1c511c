"""The harness around the learners: what every arm's training shares, apart from the algorithms.

- :mod:`.learner`: the :class:`Learner` protocol, everything the host loop reads of a framework's learner;
- :mod:`.loop`: the host loop of the torch and Flax arms (rollout, replay, updates, evaluations, the result);
- :mod:`.schedule`: the evaluation schedule, the reports to an Optuna trial and pruning (every arm's loop,
  the fully jitted arm's too);
- :mod:`.timing`: the phase timer and the result's timings;
- :mod:`.progress`: the progress bar;
- :mod:`.replay`: the host loop's replay buffer.

A learner file (``dqn_torch.py``, ``dqn_flax.py``, ...) holds the algorithm: network, loss, update,
acting, model files and its arm records; it hands a learner to :func:`train` and gets a
:class:`~doors_gym_baselines.metrics.TrainResult` back.
"""

from .learner import Batch, Learner
from .loop import PhaseTimer, make_envs, save_model, train
from .progress import Progress
from .schedule import EvaluationSchedule, GreedyReward, NonFiniteLoss, Reporter, prune, report
from .result import finish

__all__ = [
    "Batch",
    "EvaluationSchedule",
    "GreedyReward",
    "Learner",
    "NonFiniteLoss",
    "PhaseTimer",
    "Progress",
    "Reporter",
    "finish",
    "make_envs",
    "prune",
    "report",
    "save_model",
    "train",
]
