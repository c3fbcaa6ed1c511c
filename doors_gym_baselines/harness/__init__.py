"""The harness around the learners: what every arm's training shares, apart from the algorithms.

The host loop stays shared behind a small protocol rather than copied into each learner file (CleanRL's
choice), because five arms run it and a comparison of frameworks is fair only if their loop is one.

- :mod:`.loop`: the host loop of the torch and Flax arms, visible top to bottom in its ``train`` (acting,
  env step, storing, sampling, the learner's update, evaluations, the result);
- :mod:`.learner`: the :class:`Learner` protocol, everything the host loop reads of a framework's learner;
- :mod:`.replay`: the host loop's replay buffer; :mod:`.device_replay`: the fully jitted arm's;
- :mod:`.schedule`: the evaluation schedule, the reports to an Optuna trial and pruning (every arm's loop);
- :mod:`.result`: the run's result and its timings;
- :mod:`.progress`: the progress bar.
"""

from .learner import Batch, Learner
from .loop import PhaseTimer, make_envs, save_model, train
from .progress import Progress
from .result import finish
from .schedule import EvaluationSchedule, GreedyReward, NonFiniteLoss, Reporter, prune, report

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
