"""What the library arms share: their record, their model archive, their env's keywords, their model's greedy
actions, their evaluations, their training figures and their phase clock.

Every library arm keeps its agent in the library's own format inside a zip archive (Stable-Baselines3 and SBX
write one themselves; rejax has no format of its own, so its parameters go in as Flax msgpack) to which
:func:`write_archive` adds one entry, :data:`META` (the arm's name and its config as JSON): the library still
loads the archive (``DQN.load``), and :class:`LibraryArm` recognises its own files by that entry.
"""

from __future__ import annotations

import collections
import dataclasses
import io
import json
import pathlib
import time
import zipfile
from collections.abc import Callable
from typing import Any

import numpy as np

from doors_gym import core
from doors_gym.wrappers import agent_goal_planes
from doors_gym_baselines.api import (
    Arm,
    Config,
    EvaluationSchedule,
    Reporter,
    TrainingFigures,
    evaluate_greedy,
    history_row,
)

META = "doors_gym.json"
"""The archive entry that names the arm and holds the config."""
PRESETS = pathlib.Path(__file__).with_name("presets")
"""The library arms' preset files: ``<arm>-<preset>.yml``."""
OBSERVATIONS = ("grid", "flat", "cells")
"""What a library's network sees: the grid of cell codes (``H * W`` int16, the env's default), its one-hot
``flat`` form (``H * W * 4`` float32; the features Stable-Baselines3 makes of the grid itself), or ``cells``: the
agent's and the goal's one-hot planes (``2 * H * W`` float32, :class:`doors_gym.wrappers.AgentGoalPlanes`), the
features this package's DQN arms read, for a comparison like for like in input."""


class LibraryArm(Arm):
    """An :class:`~doors_gym_baselines.api.Arm` whose model files are zip archives holding :data:`META`."""

    def recognises(self, path: pathlib.Path) -> bool:
        """Whether ``path`` is an archive this arm wrote (its :data:`META` names this arm)."""
        try:
            return read_meta(path)[0] == self.name
        except ValueError:
            return False


def presets(arm: str, names: tuple[str, ...]) -> dict[str, str]:
    """The preset files of ``arm`` by name (``presets/<arm>-<name>.yml``)."""
    return {name: str(PRESETS / f"{arm}-{name}.yml") for name in names}


def write_archive(path: str, archive: bytes, arm: str, config: Config) -> None:
    """Writes the zip ``archive`` (a library's own model file) to ``path`` with :data:`META` added."""
    buffer = io.BytesIO(archive)
    with zipfile.ZipFile(buffer, "a") as handle:
        handle.writestr(META, json.dumps({"arm": arm, "config": config.to_dict()}))
    pathlib.Path(path).write_bytes(buffer.getvalue())


def read_meta(path: str | pathlib.Path) -> tuple[str, dict[str, Any]]:
    """``(arm name, config as a dict)`` of an archive :func:`write_archive` wrote; ``ValueError`` otherwise."""
    try:
        with zipfile.ZipFile(path) as handle:
            values = json.loads(handle.read(META))
    except (OSError, zipfile.BadZipFile, KeyError, json.JSONDecodeError) as error:
        raise ValueError(f"{str(path)!r} is not a doors-gym library model archive: {error}") from None
    return values["arm"], values["config"]


def read_archive(path: str, hyperparameters: type) -> tuple[str, bytes, Config]:
    """``(arm name, the archive's bytes, config)`` of a file :func:`write_archive` wrote."""
    arm, values = read_meta(path)
    return arm, pathlib.Path(path).read_bytes(), Config.from_dict(values, hyperparameters)


def flat_observations(obs: np.ndarray, num_cells: int) -> np.ndarray:
    """Grid observations ``(batch, H * W)`` as the ``flat`` one-hot ``(batch, H * W * 4)`` float32."""
    grid = np.asarray(obs).reshape(-1, num_cells).astype(np.intp)
    return np.eye(core.NUM_CELL_TYPES, dtype=np.float32)[grid].reshape(len(grid), -1)


def network_inputs(obs: np.ndarray, num_cells: int, observation: str) -> np.ndarray:
    """Grid observations ``(batch, H * W)`` as a library's network read them in training (``observation``: one of
    :data:`OBSERVATIONS`), float32."""
    grid = np.asarray(obs).reshape(-1, num_cells)
    if observation == "flat":
        return flat_observations(grid, num_cells)
    if observation == "cells":
        return agent_goal_planes(grid)
    return grid.astype(np.float32)


def env_keywords(config: Config) -> dict[str, Any]:
    """The Doors env's keywords of a run: its layout and time limit from the run settings (a level's walls and door
    draws too: ``RunSettings.env_keywords``), and the observation the env gives (the grid where the network sees
    ``cells``: the arm's wrapper makes the agent's and the goal's planes of it).

    Raises:
        ValueError: the ``cells`` observation where the doors are drawn per episode (its planes show the agent and
            the goal, not where the doors are).
    """
    run, hyper = config.run, config.hyperparameters
    if hyper.observation == "cells" and run.doors != "fixed":
        raise ValueError(
            f"observation='cells' shows the agent's and the goal's cells, not the doors, which are drawn per episode "
            f"here (doors={run.doors!r}): expected observation 'grid' or 'flat' (the library arms' 'shared-onehot' "
            "preset)"
        )
    return {**run.env_keywords, "obs_mode": "grid" if hyper.observation == "cells" else hyper.observation}


class GreedyModel:
    """A trained library agent as doors-gym asks of a model: its ``q_values`` on grid observations ``(batch, H * W)``
    (each arm's own, on its :meth:`inputs`) and ``act``, their argmax. ``config`` is the run's."""

    config: Config

    def inputs(self, obs: np.ndarray) -> np.ndarray:
        """The network's input for grid observations, as it read them in training (:func:`network_inputs`)."""
        return network_inputs(obs, self.config.params.num_cells, self.config.hyperparameters.observation)

    def q_values(self, obs: np.ndarray) -> np.ndarray:
        """``(batch, 5)`` float32 Q-values."""
        raise NotImplementedError

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Greedy actions ``(batch,)`` int64 (what the library's own ``predict(deterministic=True)`` gives)."""
        return np.argmax(self.q_values(obs), axis=-1).astype(np.int64)


def greedy_schedule(
    model: GreedyModel,
    config: Config,
    trial: Reporter | None,
    start: float,
    window: EpisodeWindow | SegmentWindow,
    epsilon: Callable[[int], float],
) -> EvaluationSchedule:
    """The run's evaluation schedule: each evaluation plays ``model`` greedily from every start/goal pair and makes
    its history row with the training figures of ``window`` and the exploration rate ``epsilon(step)``."""

    def evaluate(step: int) -> tuple[Any, Any]:
        evaluation = evaluate_greedy(model.act, config.params)
        row = history_row(step, start, epsilon(step), [], [evaluation], [window.figures()], [config.run.seed])
        return evaluation, row

    return EvaluationSchedule(evaluate, [], trial, config)


class EpisodeWindow:
    """The training figures of the last ``episodes`` finished episodes (return, length, success)."""

    def __init__(self, episodes: int) -> None:
        self.window: collections.deque[tuple[float, int, bool]] = collections.deque(maxlen=episodes)

    def add(self, episode_return: float, length: int, success: bool) -> None:
        """Adds one finished episode."""
        self.window.append((float(episode_return), int(length), bool(success)))

    def figures(self) -> TrainingFigures:
        """Rolling reward (their reward over their steps), success rate, mean return and length; NaN before one."""
        if not self.window:
            return TrainingFigures()
        returns, lengths, success = (np.array(column) for column in zip(*self.window))
        return TrainingFigures(
            rolling_reward=float(returns.sum() / lengths.sum()),
            train_success_rate=float(success.mean()),
            train_episode_return=float(returns.mean()),
            train_episode_length=float(lengths.mean()),
        )


class SegmentWindow:
    """The training figures of a run seen only as totals per segment (reward and steps of the episodes that
    ended in it, their count and successes): the window is the fewest trailing segments holding ``episodes``
    episodes (all of them before that many have ended), so it is rounded up to whole segments."""

    def __init__(self, episodes: int) -> None:
        self.episodes = episodes
        self.segments: list[np.ndarray] = []

    def add(self, reward: float, steps: float, episodes: float, successes: float) -> None:
        """Adds one segment's totals."""
        self.segments.append(np.array([reward, steps, episodes, successes], dtype=np.float64))

    def figures(self) -> TrainingFigures:
        """Rolling reward and success rate over the window; NaN before the first episode ends."""
        totals = np.zeros(4)
        for segment in reversed(self.segments):
            totals += segment
            if totals[2] >= self.episodes:
                break
        if totals[2] == 0:
            return TrainingFigures()
        return TrainingFigures(
            rolling_reward=float(totals[0] / totals[1]),
            train_success_rate=float(totals[3] / totals[2]),
            train_episode_return=float(totals[0] / totals[2]),
            train_episode_length=float(totals[1] / totals[2]),
        )


@dataclasses.dataclass
class PhaseClock:
    """Seconds by phase, gathered by timing a library's own methods (:meth:`wrap`)."""

    seconds: dict[str, float] = dataclasses.field(default_factory=lambda: collections.defaultdict(float))
    wrapped: list[tuple[Any, str]] = dataclasses.field(default_factory=list)

    def wrap(self, owner: Any, attribute: str, phase: str, first_call: str | None = None) -> None:
        """Times every call of ``owner.attribute`` into ``phase`` (its first call into ``first_call`` if given:
        where a jitted function compiles); the instance attribute shadows the method."""
        method: Callable[..., Any] = getattr(owner, attribute)
        calls = [0]

        def timed(*args: Any, **keywords: Any) -> Any:
            began = time.perf_counter()
            try:
                return method(*args, **keywords)
            finally:
                calls[0] += 1
                into = first_call if first_call and calls[0] == 1 else phase
                self.seconds[into] += time.perf_counter() - began

        setattr(owner, attribute, timed)
        self.wrapped.append((owner, attribute))

    def unwrap(self) -> None:
        """Takes the timed methods off again (so that pickling an owner does not pickle the closures)."""
        for owner, attribute in reversed(self.wrapped):
            delattr(owner, attribute)
        self.wrapped.clear()

    def phases(self, **more: float) -> dict[str, float]:
        """The timed phases with ``more`` added."""
        return {**self.seconds, **more}


def check_positive(instance: Any, *names: str, minimum: int = 1) -> None:
    """``ValueError`` naming each of ``names`` of ``instance`` that is not an integer ``>= minimum``."""
    for name in names:
        value = getattr(instance, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"{name}={value!r} is out of range: expected an integer >= {minimum}")


def check_unit(instance: Any, *names: str, low_open: bool = False) -> None:
    """``ValueError`` naming each of ``names`` of ``instance`` that is not a number in [0, 1] ((0, 1] if
    ``low_open``)."""
    for name in names:
        value = getattr(instance, name)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or not (0.0 < value <= 1.0 if low_open else 0.0 <= value <= 1.0):
            raise ValueError(f"{name}={value!r} is out of range: expected a number in {'(0' if low_open else '[0'}, 1]")


def check_choice(instance: Any, name: str, allowed: tuple[Any, ...]) -> None:
    """``ValueError`` naming ``name`` unless its value is one of ``allowed``."""
    value = getattr(instance, name)
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not supported: expected one of {list(allowed)}")


def check_sizes(instance: Any, name: str) -> None:
    """``ValueError`` unless ``name`` is a tuple of one or more integers >= 1 (layer widths)."""
    sizes = getattr(instance, name)
    if not sizes or any(isinstance(width, bool) or not isinstance(width, int) or width < 1 for width in sizes):
        raise ValueError(f"{name}={sizes!r} is invalid: expected one or more integers >= 1")


def check_learning_rate(instance: Any) -> None:
    """``ValueError`` unless ``learning_rate`` is a finite number > 0."""
    value = instance.learning_rate
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < float("inf")):
        raise ValueError(f"learning_rate={value!r} is out of range: expected a finite number > 0")


def check_network(instance: Any, sizes: str) -> None:
    """``ValueError`` unless ``learning_rate`` is a finite number > 0, ``sizes`` one or more layer widths and
    ``observation`` one of :data:`OBSERVATIONS`: the settings of every library arm's network."""
    check_learning_rate(instance)
    check_sizes(instance, sizes)
    check_choice(instance, "observation", OBSERVATIONS)
