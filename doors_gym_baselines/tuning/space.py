"""The tuning search space: one table of coordinates, sampled in well-conditioned coordinates (RL Zoo's manner).

Each coordinate (:class:`~doors_gym_baselines.config.ranges.Range`) carries its range and its scale, the map
between the coordinate and the hyperparameter it sets; an arm brings its own space over its own
hyperparameters, or takes DQN's hyperparameters' space for the study's algorithm (:data:`SPACE` for DQN,
:data:`PQN_SPACE` for PQN: :func:`space_of`); sampling
(:func:`from_coordinates`) and its inverse (:func:`to_coordinates`) both read
that one table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ..config import Hyperparameters
from ..config.hyperparameters import UNUSED_BY
from ..config.ranges import ONE_MINUS, POWER_OF_TWO, Range

LAYERS = ("depth", "width")
"""What two coordinates set that is not a field of its own: ``hidden_sizes`` is ``(width,) * depth``."""
INPUTS = {"cells": (False, True), "cells and relative": (True, True), "relative alone": (True, False)}
"""What the coordinate ``inputs`` sets: ``(relative_inputs, cell_planes)`` of each of its choices, the three valid
pairs (the cell planes can go only where the relative inputs say where the agent and the goal are)."""
INPUT_FIELDS = ("relative_inputs", "cell_planes")

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


EXPLORATION = (
    Range("n_step", 1, 8, integer=True),
    Range("restart_prob", 0.0, 1.0),
    Range("restart_fraction", 0.1, 1.0),
    Range("inputs", choices=tuple(INPUTS)),
    Range("dueling", choices=(False, True)),
    Range("step_cost", 0.0, 1.0),
    Range("advantage_learning", 0.0, 0.95),
)
"""Directed exploration, searched where each episode draws its doors (the larger levels'): multi-step returns,
exploring starts and their decay, the inputs (:data:`INPUTS`: the cell planes, with the relative inputs, or
the relative inputs alone), the dueling heads, a training-only step cost (up to 1: the
``31x31`` preset's 0.5 lies inside, so a study at that level starts from it unclipped) and advantage learning's
share (to 0.95: 20 times the gaps between actions' values at its fixed point). A study of ``Doors-v0``
leaves them off."""

PQN_UNUSED = UNUSED_BY["pqn"]
"""The hyperparameters PQN leaves unused (it has no replay and no target network): a study of PQN does not search
them, so that its sampler spends no trial telling apart points that train alike."""

PQN_NUM_ENVS = Range("log2_num_envs", 4, 8, integer=True, hyperparameter="num_envs", scale=POWER_OF_TWO)
"""PQN's parallel envs, 16 to 256: its batches are its envs' rollouts, so it runs many more envs than DQN (the
``31x31`` preset 128). The coordinate keeps DQN's name, so the lanes' program coordinates read it alike."""

PQN_SPACE = tuple(
    PQN_NUM_ENVS if coordinate.name == PQN_NUM_ENVS.name else coordinate
    for coordinate in SPACE
    if coordinate.target not in PQN_UNUSED
) + (
    Range("td_lambda", 0.0, 1.0),
    Range("log2_rollout_steps", 3, 6, integer=True, hyperparameter="rollout_steps", scale=POWER_OF_TWO),
    Range("epochs", 1, 4, integer=True),
    Range("log2_minibatches", 0, 5, integer=True, hyperparameter="minibatches", scale=POWER_OF_TWO),
)
"""The search space of a study of PQN (``algorithm: pqn``): :data:`SPACE` less :data:`PQN_UNUSED`, its envs over
:data:`PQN_NUM_ENVS`, then PQN's own: lambda of its returns (0: one-step targets, 1: the rollout's returns), powers
of two for the rollout's steps (8 to 64) and the minibatches (1 to 32, which always divide the rollout's
``rollout_steps * num_envs`` transitions, at least 128 here; the level presets' 16 and PQN's published 32 inside),
and the passes over each rollout (1 to 4)."""

PQN_EXPLORATION = tuple(
    coordinate for coordinate in EXPLORATION if coordinate.target not in (*PQN_UNUSED, "advantage_learning")
)
""":data:`EXPLORATION` for a study of PQN: less the multi-step returns (PQN's returns are its lambda's, over
the rollout) and advantage learning (PQN refuses a share above 0)."""

SPACES = {"dqn": (SPACE, EXPLORATION), "pqn": (PQN_SPACE, PQN_EXPLORATION)}
"""Each algorithm's search space of DQN's hyperparameters: its coordinates everywhere, and those added where the
layout draws its doors per episode."""

Space = Sequence[Range]
"""A search space: its coordinates, in the order a trial samples them."""


def space_of(arm: Any, params: Any = None, algorithm: str = "dqn") -> Space:
    """The search space of ``arm``: its own (``search_space``, whatever the algorithm), or for an arm of DQN's
    hyperparameters the space of ``algorithm`` (the study's base's: :data:`SPACE` for ``dqn``, :data:`PQN_SPACE`
    for ``pqn``), followed by that algorithm's exploration (:data:`EXPLORATION`, :data:`PQN_EXPLORATION`) where
    the layout ``params`` (a ``DoorsParams``; None: ``Doors-v0``'s) draws its doors per episode.

    Raises:
        ValueError: for an arm with hyperparameters of its own and no search space over them, or an unknown
            ``algorithm``.
    """
    if arm.search_space:
        return tuple(arm.search_space)
    kind = getattr(arm, "hyperparameters", Hyperparameters)
    if not issubclass(kind, Hyperparameters):
        raise ValueError(
            f"arm={arm.name!r} ({arm.package}) brings no search space over its hyperparameters "
            f"({kind.__name__}): its package can give its Arm a search_space"
        )
    if algorithm not in SPACES:
        raise ValueError(f"algorithm={algorithm!r} has no search space: expected one of {', '.join(SPACES)}")
    space, exploration = SPACES[algorithm]
    return space + exploration if params is not None and params.random_doors else space


def algorithm_of(hyperparameters: Any) -> str:
    """The algorithm ``hyperparameters`` train (``dqn`` for a plug-in's, which has no ``algorithm``): what
    :func:`space_of` takes from a study's base."""
    return getattr(hyperparameters, "algorithm", "dqn")


def from_coordinates(params: dict[str, Any], base: Any, space: Space = SPACE) -> Any:
    """The hyperparameters at a point of ``space`` (``base`` for the fields the space does not set)."""
    values = {coordinate.target: coordinate.scale.value(params[coordinate.name]) for coordinate in space}
    if all(name in values for name in LAYERS):
        depth, width = (values.pop(name) for name in LAYERS)
        values["hidden_sizes"] = (width,) * depth
    if "inputs" in values:
        values.update(zip(INPUT_FIELDS, INPUTS[values.pop("inputs")]))
    return dataclasses.replace(base, **values)


def to_coordinates(hyperparameters: Any, space: Space = SPACE) -> dict[str, Any]:
    """The coordinates of ``hyperparameters`` (the inverse of :func:`from_coordinates`, before rounding into
    the space); ``ValueError`` if the hidden layers differ in width (the DQN space has one width)."""
    targets = {coordinate.target for coordinate in space}
    layers: dict[str, Any] = {}
    if set(LAYERS) <= targets:
        widths = set(hyperparameters.hidden_sizes)
        if len(widths) != 1:
            raise ValueError(
                f"hidden_sizes={hyperparameters.hidden_sizes!r} differ in width: the search space has one width"
            )
        layers = dict(zip(LAYERS, (len(hyperparameters.hidden_sizes), widths.pop())))

    if "inputs" in targets:
        pair = tuple(getattr(hyperparameters, name) for name in INPUT_FIELDS)
        layers["inputs"] = next(name for name, values in INPUTS.items() if values == pair)

    def value(target: str) -> Any:
        return layers[target] if target in layers else getattr(hyperparameters, target)

    return {coordinate.name: coordinate.scale.coordinate(value(coordinate.target)) for coordinate in space}


def suggest_hyperparameters(trial: Any, base: Any, space: Space = SPACE) -> Any:
    """Samples ``space`` into ``base``. Works with an ``optuna.trial.FixedTrial`` too, which turns a
    study's params back into hyperparameters."""
    return from_coordinates({coordinate.name: coordinate.suggest(trial) for coordinate in space}, base, space)


def params_for(hyperparameters: Any, space: Space = SPACE) -> dict[str, Any]:
    """The point of ``space`` nearest ``hyperparameters`` (sizes to the nearest power of two, values
    into the ranges); ``ValueError`` if the hidden layers differ in width."""
    coordinates = to_coordinates(hyperparameters, space)
    return {coordinate.name: coordinate.nearest(coordinates[coordinate.name]) for coordinate in space}


def hyperparameters_from_params(params: dict[str, Any], base: Any, space: Space = SPACE) -> Any:
    """The hyperparameters a trial with these sampled ``params`` trained (e.g. a study's ``best_params``)."""
    import optuna

    return suggest_hyperparameters(optuna.trial.FixedTrial(params), base, space)
