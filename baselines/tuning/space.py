"""The tuning search space: one table of coordinates, sampled in well-conditioned coordinates (RL Zoo's manner).

Each coordinate of :data:`SPACE` carries its range and its :class:`Scale`, the
map between the coordinate and the hyperparameter it sets; sampling
(:func:`from_coordinates`) and its inverse (:func:`to_coordinates`) both read
that one table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..config import Hyperparameters


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

    ``hyperparameter`` names the :class:`~doors_gym_baselines.config.Hyperparameters` field the coordinate
    sets (its own name by default), or one of :data:`LAYERS`; ``scale`` maps the coordinate onto that value.
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


LAYERS = ("depth", "width")
"""What two coordinates set that is not a field of its own: ``hidden_sizes`` is ``(width,) * depth``."""

SPACE = (
    Range("one_minus_gamma", 0.005, 0.2, log=True, hyperparameter="gamma", scale=ONE_MINUS),
    Range("depth", 1, 3, integer=True),
    Range("log2_width", 5, 8, integer=True, hyperparameter="width", scale=POWER_OF_TWO),
    Range("learning_rate", 3e-5, 1e-2, log=True),
    Range("optimizer", choices=("adam", "sgd")),
    Range("log2_batch_size", 5, 8, integer=True, hyperparameter="batch_size", scale=POWER_OF_TWO),
    Range("log2_num_envs", 3, 6, integer=True, hyperparameter="num_envs", scale=POWER_OF_TWO),
    Range("log2_buffer_size", 13, 17, integer=True, hyperparameter="buffer_size", scale=POWER_OF_TWO),
    Range("train_frequency", 1, 4, integer=True),
    Range("target_update", 25, 1000, log=True, integer=True),
    Range("learning_starts", 500, 10_000, log=True, integer=True),
    Range("exploration_fraction", 0.05, 0.5),
    Range("double_dqn", choices=(False, True)),
    Range("tau", 0.01, 1.0, log=True),
    Range("lr_end_fraction", 0.0, 1.0),
    Range("max_grad_norm", choices=(0.0, 0.5, 1.0, 10.0)),
)
"""The search space in well-conditioned coordinates (RL Zoo's manner), in the order a trial samples it: log
learning rate, ``1 - gamma`` on a log scale, powers of two for batch, buffer, width and parallel envs, log
target-update period and learning starts, and the stabilisers (Double DQN, log Polyak ``tau``, learning-rate
decay, gradient clipping), which the same config fields give every framework."""


Space = Sequence[Range]
"""A search space: its coordinates, in the order a trial samples them."""


def space_of(arm: Any) -> Space:
    """The search space of ``arm``: its own (a plug-in's ``search_space``), or :data:`SPACE`.

    Raises:
        ValueError: for an arm that reads only some hyperparameters and brings no space of its own.
    """
    if arm.search_space:
        return tuple(arm.search_space)
    if arm.honoured is not None:
        raise ValueError(
            f"arm={arm.name!r} ({arm.package}) brings no search space, and the DQN one sets hyperparameters it "
            "does not read: its package can give its Arm a search_space"
        )
    return SPACE


def from_coordinates(params: dict[str, Any], base: Hyperparameters, space: Space = SPACE) -> Hyperparameters:
    """The hyperparameters at a point of ``space`` (``base`` for the fields the space does not set)."""
    values = {coordinate.target: coordinate.scale.value(params[coordinate.name]) for coordinate in space}
    if all(name in values for name in LAYERS):
        depth, width = (values.pop(name) for name in LAYERS)
        values["hidden_sizes"] = (width,) * depth
    return dataclasses.replace(base, **values)


def to_coordinates(hyperparameters: Hyperparameters, space: Space = SPACE) -> dict[str, Any]:
    """The coordinates of ``hyperparameters`` (the inverse of :func:`from_coordinates`, before rounding into
    the space); ``ValueError`` if the hidden layers differ in width (the DQN space has one width)."""
    targets = {coordinate.target for coordinate in space}
    layers: dict[str, int] = {}
    if set(LAYERS) <= targets:
        widths = set(hyperparameters.hidden_sizes)
        if len(widths) != 1:
            raise ValueError(
                f"hidden_sizes={hyperparameters.hidden_sizes!r} differ in width: the search space has one width"
            )
        layers = dict(zip(LAYERS, (len(hyperparameters.hidden_sizes), widths.pop())))

    def value(target: str) -> Any:
        return layers[target] if target in layers else getattr(hyperparameters, target)

    return {coordinate.name: coordinate.scale.coordinate(value(coordinate.target)) for coordinate in space}


def suggest_hyperparameters(trial: Any, base: Hyperparameters, space: Space = SPACE) -> Hyperparameters:
    """Samples ``space`` into ``base``. Works with an ``optuna.trial.FixedTrial`` too, which turns a
    study's params back into hyperparameters."""
    return from_coordinates({coordinate.name: coordinate.suggest(trial) for coordinate in space}, base, space)


def params_for(hyperparameters: Hyperparameters, space: Space = SPACE) -> dict[str, Any]:
    """The point of ``space`` nearest ``hyperparameters`` (sizes to the nearest power of two, values
    into the ranges); ``ValueError`` if the hidden layers differ in width."""
    coordinates = to_coordinates(hyperparameters, space)
    return {coordinate.name: coordinate.nearest(coordinates[coordinate.name]) for coordinate in space}


def hyperparameters_from_params(params: dict[str, Any], base: Hyperparameters, space: Space = SPACE) -> Hyperparameters:
    """The hyperparameters a trial with these sampled ``params`` trained (e.g. a study's ``best_params``)."""
    import optuna

    return suggest_hyperparameters(optuna.trial.FixedTrial(params), base, space)
