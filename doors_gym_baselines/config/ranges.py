"""The coordinates of a search space: :class:`Range` (a range or choices, and what it sets) and the
:class:`Scale` that maps a coordinate onto its hyperparameter (RL Zoo's well-conditioned coordinates).

Any arm's search space is a tuple of these, over its own hyperparameters' fields; the tuner samples them
(:mod:`doors_gym_baselines.tuning.space`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np


@dataclasses.dataclass(frozen=True)
class Scale:
    """How a coordinate maps onto its hyperparameter's value, and the value back onto the coordinate."""

    name: str
    value: Callable[[Any], Any] = dataclasses.field(repr=False)
    coordinate: Callable[[Any], Any] = dataclasses.field(repr=False)


LINEAR = Scale("linear", value=lambda coordinate: coordinate, coordinate=lambda value: value)
"""The coordinate is the value."""
POWER_OF_TWO = Scale(
    "power of two", value=lambda coordinate: 2**coordinate, coordinate=lambda value: float(np.log2(value))
)
"""The coordinate is the value's base-2 logarithm."""
ONE_MINUS = Scale(
    "one minus", value=lambda coordinate: round(1.0 - coordinate, 6), coordinate=lambda value: 1.0 - value
)
"""The coordinate is one minus the value (``1 - gamma``, sampled on a log scale)."""


@dataclasses.dataclass(frozen=True)
class Range:
    """One coordinate of the search space: its name in a study's params, its range or choices, and what it sets.

    ``hyperparameter`` names the field of the arm's hyperparameters the coordinate sets (its own name by
    default; the DQN space also has ``depth`` and ``width``, which set ``hidden_sizes``); ``scale`` maps the
    coordinate onto that value.
    """

    name: str
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    integer: bool = False
    choices: tuple[Any, ...] = ()
    hyperparameter: str = ""
    scale: Scale = LINEAR

    @property
    def target(self) -> str:
        """The hyperparameter (or layer figure) this coordinate sets."""
        return self.hyperparameter or self.name

    def suggest(self, trial: Any) -> Any:
        """The trial's value (an Optuna ``Trial``, or a ``FixedTrial`` that reads a study's params back)."""
        if self.choices:
            return trial.suggest_categorical(self.name, list(self.choices))
        suggest = trial.suggest_int if self.integer else trial.suggest_float
        return suggest(self.name, self.low, self.high, log=self.log)

    def nearest(self, value: Any) -> Any:
        """The value of the space nearest ``value``: clipped into the range (rounded for integers), or the
        nearest choice."""
        if self.choices:
            if all(isinstance(choice, (int, float)) and not isinstance(choice, bool) for choice in self.choices):
                return min(self.choices, key=lambda choice: abs(choice - value))
            return value
        clipped = float(np.clip(value, self.low, self.high))
        return int(round(clipped)) if self.integer else clipped
