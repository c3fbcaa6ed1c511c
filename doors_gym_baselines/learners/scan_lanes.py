"""Lanes: several settings of the fully jitted arm trained in one compiled program (one ``vmap`` over them).

A lane is one run of its own hyperparameters and seed. The hyperparameters that fix the program's arrays or
its control flow (network widths, batch, buffer, env count, train frequency, optimizer, loss) are the
program's, one for every lane; the knobs (:class:`~.dqn_flax.Knobs`, :data:`PER_LANE`) are arrays with a value per
lane, read in the trace by the same learning step and schedules a run alone uses: the discount, the learning rate
and its decay, gradient clipping, the target network's period and ``tau``, learning starts, the exploration
schedule, Double DQN, advantage learning's share and the exploring starts. ``make_train(config, lanes=True)`` of
:mod:`.dqn_flax_scan` trains with them; each lane computes what its own run computes, to float tolerance. One
exception, in the random draws only: a program draws exploring starts when any of its lanes has them, so a lane
with ``restart_prob`` 0 among them plays the same algorithm with other draws than its run alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from ..config import DQNConfig
from .dqn_flax import Knobs

PER_LANE = tuple(name for name in Knobs._fields if name != "decay_updates")
"""The hyperparameters that may differ between the lanes of one program."""


def lane_values(configs: Sequence[DQNConfig]) -> Knobs:
    """The lanes' :class:`~.dqn_flax.Knobs` stacked over ``configs`` (NumPy arrays of shape ``(lanes,)``).

    Raises:
        ValueError: the configs differ in a hyperparameter outside :data:`PER_LANE` (or in their run settings
            other than the seed), which one program cannot hold.
    """
    first = configs[0]
    shared = {name: value for name, value in dataclasses.asdict(first.hyperparameters).items() if name not in PER_LANE}
    for config in configs[1:]:
        values = dataclasses.asdict(config.hyperparameters)
        differ = sorted(name for name, value in shared.items() if values[name] != value)
        if differ or dataclasses.replace(config.run, seed=first.run.seed) != first.run:
            raise ValueError(
                f"configs differ in {differ or ['run settings']}: the lanes of one program may differ only in "
                f"{', '.join(PER_LANE)} and the seed"
            )
    knobs = [Knobs.of(config) for config in configs]
    dtypes = {"target_update": np.int32, "learning_starts": np.int32, "decay_updates": np.int32, "double_dqn": bool}
    return Knobs(*(np.asarray(column, dtypes.get(name, np.float32)) for name, column in zip(Knobs._fields, zip(*knobs))))


def program_config(configs: Sequence[DQNConfig]) -> DQNConfig:
    """The config a program of these lanes is traced with: the first lane's, learning from the earliest start, with
    exploring starts drawn where any lane has them (each lane's probability is its own) and advantage learning
    traced where any lane has it (each lane's share is its own)."""
    first = configs[0]
    earliest = min(config.hyperparameters.learning_starts for config in configs)
    restarts = max(config.hyperparameters.restart_prob for config in configs)
    share = max(config.hyperparameters.advantage_learning for config in configs)
    return first.replace(learning_starts=earliest, restart_prob=restarts, advantage_learning=share)
