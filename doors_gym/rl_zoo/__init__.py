"""RL Zoo (``rl_zoo3``) hyperparameters for ``Doors-v0``, shipped with the package.

One file per algorithm in the Zoo's format (``ppo.yml``, ``dqn.yml`` beside
this module). ``--conf-file`` takes the module of an algorithm, whose
``hyperparams`` the Zoo reads, so nothing needs a path::

    python -m rl_zoo3.train --algo ppo --env Doors-v0 --gym-packages doors_gym --conf-file doors_gym.rl_zoo.ppo
    python -m rl_zoo3.enjoy --algo ppo --env Doors-v0 --gym-packages doors_gym -f logs --no-render -n 3000

or the file itself, ``--conf-file "$(python -c 'import doors_gym.rl_zoo as z; print(z.path("ppo"))')"``.
Each file wraps the env in :class:`doors_gym.wrappers.SuccessInfo`, so
``enjoy`` prints a success rate and the Zoo's evaluations log one.
"""

from __future__ import annotations

import pathlib
from typing import Any

from doors_gym.extras import require

ALGOS = ("ppo", "dqn")
"""The algorithms with a shipped hyperparameter file, by their ``rl_zoo3 --algo`` names."""


def path(algo: str) -> pathlib.Path:
    """The installed hyperparameter file of ``algo`` (``ppo.yml``, ``dqn.yml``).

    Raises:
        ValueError: naming ``algo`` and the algorithms with a file.
    """
    if algo not in ALGOS:
        raise ValueError(f"algo={algo!r} has no RL Zoo hyperparameters here: expected one of {list(ALGOS)}")
    return pathlib.Path(__file__).with_name(f"{algo}.yml")


def load(algo: str) -> dict[str, Any]:
    """The hyperparameters of ``algo`` as the Zoo reads them: ``{env id: {name: value}}``."""
    yaml = require("yaml", "RL Zoo's hyperparameter files")
    return yaml.safe_load(path(algo).read_text())
