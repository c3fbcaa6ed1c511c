"""Stable-Baselines3's and SBX's DQN under doors-gym's protocol (the two share SB3's ``learn`` loop and callbacks).

A run builds the library's ``DQN("MlpPolicy", env)`` on ``make_vec_env("Doors-v0", n_envs)`` (the layout from
the run settings) and calls its ``learn`` with :class:`ProtocolCallback`, which keeps the last training
episodes (the envs' ``Monitor`` figures), evaluates greedily over every start/goal pair every ``eval_every``
env steps through :class:`~doors_gym_baselines.api.EvaluationSchedule` and stops ``learn`` once solved and held.
The phases are timed by wrapping the library's own methods: the vector env's ``step`` (env step),
``_sample_action`` (action selection), the replay buffer's ``add`` (replay buffer; its sampling runs inside
``train``) and ``train`` (update); a jitted library's first call of each goes to ``compile``.

SBX's DQN takes SB3's keywords: :class:`StableHyperparameters` are the settings the two share, :func:`zoo_space`
their tuning coordinates.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import io
import pathlib
import time
from types import ModuleType
from typing import Any

import numpy as np

from doors_gym.extras import require
from doors_gym_baselines.api import (
    ONE_MINUS,
    POWER_OF_TWO,
    Arm,
    Config,
    EvaluationSchedule,
    Range,
    TrainResult,
    field,
    torch_threads,
)

from .common import (
    EpisodeWindow,
    GreedyModel,
    LibraryArm,
    PhaseClock,
    check_network,
    check_positive,
    check_unit,
    env_keywords,
    greedy_schedule,
    presets,
    read_archive,
    write_archive,
)

ENV_ID = "Doors-v0"
INTEGERS = ("n_envs", "buffer_size", "batch_size", "train_freq", "gradient_steps", "target_update_interval")
"""The settings that are integers >= 1 (``n_envs``, the vector env's, first; the rest are ``DQN``'s keywords)."""
UNITS = ("gamma", "exploration_fraction", "exploration_initial_eps", "exploration_final_eps")
"""The settings both libraries take that are numbers in [0, 1]."""
PRESET_NAMES = ("defaults", "zoo", "shared", "shared-onehot", "tuned")
"""Each arm's presets: its library's defaults, RL Zoo's, the shared one (and its one-hot input), the tuned one."""


@dataclasses.dataclass(frozen=True)
class StableHyperparameters:
    """Stable-Baselines3 DQN's settings that SBX's DQN takes too (the same keywords of ``DQN``, the same meaning),
    SB3's defaults (``stable_baselines3.DQN``), with the vector env's size and what the network sees.
    :class:`~doors_gym_libraries.sb3.SB3Hyperparameters` adds SB3's own; SBX's differ where
    :class:`~doors_gym_libraries.sbx.SBXHyperparameters` says."""

    learning_rate: float = field(1e-4, "Adam's step size")
    buffer_size: int = field(1_000_000, "replay buffer capacity, in transitions")
    learning_starts: int = field(100, "env steps before the first update")
    batch_size: int = field(32, "transitions per gradient step")
    tau: float = field(1.0, "target <- tau * online + (1 - tau) * target at each target update")
    gamma: float = field(0.99, "discount factor")
    train_freq: int = field(4, "vector-env steps between trainings")
    gradient_steps: int = field(1, "gradient steps per training")
    target_update_interval: int = field(10_000, "env steps between target updates")
    exploration_fraction: float = field(0.1, "share of the budget over which epsilon decays")
    exploration_initial_eps: float = field(1.0, "epsilon at the start")
    exploration_final_eps: float = field(0.05, "epsilon after the decay")
    net_arch: tuple[int, ...] = field((64, 64), "widths of the Q-network's hidden layers")
    n_envs: int = field(1, "envs of make_vec_env")
    observation: str = field(
        "grid",
        "the env's observation (SB3 one-hot encodes the grid itself), or cells: the agent's and the goal's planes, "
        "as this package's arms read them",
    )

    def __post_init__(self) -> None:
        check_positive(self, *INTEGERS)
        check_positive(self, "learning_starts", minimum=0)
        check_unit(self, *UNITS)
        check_unit(self, "tau", low_open=True)
        check_network(self, "net_arch")


def zoo_space(target_updates: tuple[int, int]) -> tuple[Range, ...]:
    """The tuning coordinates of both libraries' DQN: RL Zoo's DQN sampler's, narrowed to this task, with
    ``target_update_interval`` over ``target_updates`` (low, high, in the library's own unit). The network stays the
    preset's. As in RL Zoo, whose sampler takes ``n_envs`` as given, the number of envs is the start preset's (16),
    not searched: a trial of one env makes 16 times the updates of one of 16 at the same train frequency."""
    return (
        Range("learning_rate", 1e-4, 1e-2, log=True),
        Range("one_minus_gamma", 0.05, 0.2, log=True, hyperparameter="gamma", scale=ONE_MINUS),
        Range("log2_batch_size", 5, 8, integer=True, hyperparameter="batch_size", scale=POWER_OF_TWO),
        Range("train_freq", 1, 4, integer=True),
        Range("target_update_interval", *target_updates, log=True, integer=True),
        Range("learning_starts", 500, 10_000, log=True, integer=True),
        Range("exploration_fraction", 0.05, 0.5),
    )


def library_of(arm: Arm) -> Any:
    """The library module of ``arm`` (``stable_baselines3`` or ``sbx``), named with its extra if missing."""
    return require(arm.module().LIBRARY, f"the {arm.name} arm")


def make_env(config: Config) -> Any:
    """SB3's ``make_vec_env`` of ``Doors-v0`` with the run's layout, ``n_envs`` envs, each in a ``Monitor``."""
    from stable_baselines3.common.env_util import make_vec_env

    from doors_gym.wrappers import AgentGoalPlanes

    run, hyper = config.run, config.hyperparameters
    wrapper = AgentGoalPlanes if hyper.observation == "cells" else None
    keywords = env_keywords(config)
    return make_vec_env(ENV_ID, n_envs=hyper.n_envs, seed=run.seed, env_kwargs=keywords, wrapper_class=wrapper)


class StableModel(GreedyModel):
    """A trained SB3 or SBX agent as doors-gym asks of a model: ``q_values`` and ``act`` on grid observations
    ``(batch, H * W)`` (turned into the network's ``flat`` input where it was trained on that)."""

    def __init__(self, agent: Any, config: Config, q_values: Any) -> None:
        self.agent = agent
        self.config = config
        self._q_values = q_values

    def inputs(self, obs: np.ndarray) -> np.ndarray:
        """The network's input for grid observations."""
        observation = self.config.hyperparameters.observation
        if observation == "grid":  # the library casts the int16 codes itself
            return np.asarray(obs).reshape(-1, self.config.params.num_cells)
        return super().inputs(obs)

    def q_values(self, obs: np.ndarray) -> np.ndarray:
        """``(batch, 5)`` float32 Q-values."""
        return np.asarray(self._q_values(self.agent, self.inputs(obs)), dtype=np.float32)


def protocol_callback(library: Any, window: EpisodeWindow, schedule: EvaluationSchedule, total: int) -> Any:
    """The SB3 callback that feeds ``window`` from the ``Monitor`` infos and stops when ``schedule`` says so."""
    from stable_baselines3.common.callbacks import BaseCallback

    class ProtocolCallback(BaseCallback):
        def _on_step(self) -> bool:
            for done, info in zip(self.locals["dones"], self.locals["infos"]):
                if done and "episode" in info:
                    episode = info["episode"]
                    window.add(episode["r"], episode["l"], not info.get("TimeLimit.truncated", False))
            step = int(self.num_timesteps)
            return not schedule.should_stop(step, step < total)

    return ProtocolCallback()


def train(config: Config, trial: Any, arm: Arm) -> TrainResult:
    """Trains one seed with the library's DQN; evaluates every ``eval_every`` env steps and stops when solved."""
    library = library_of(arm)
    module = arm.module()
    run = config.run
    with torch_threads(run.torch_threads, "cpu") as threads:
        start = time.perf_counter()
        env = make_env(config)
        agent = library.DQN("MlpPolicy", env, seed=run.seed, device="cpu", **module.library_settings(config))
        clock = PhaseClock()
        first = "compile" if module.JITTED else None
        clock.wrap(agent.env, "step", "env_step")
        clock.wrap(agent, "_sample_action", "action_selection", first)
        clock.wrap(agent.replay_buffer, "add", "replay_buffer")
        clock.wrap(agent, "train", "update", first)
        model = StableModel(agent, config, module.q_values)
        window = EpisodeWindow(run.rolling_episodes)
        schedule = greedy_schedule(model, config, trial, start, window, lambda step: float(agent.exploration_rate))
        callback = protocol_callback(library, window, schedule, run.total_steps)
        agent.learn(total_timesteps=run.total_steps, callback=callback)
        clock.unwrap()
        env.close()
        step = int(agent.num_timesteps)
        method = f"{module.LIBRARY}'s own methods timed where they are called (replay sampling inside update)"
        facts = {module.LIBRARY: library.__version__, "torch_threads": threads, "n_envs": config.hyperparameters.n_envs}
        figures = {"env_steps": step, "updates": int(agent._n_updates), "model": model, "facts": facts}
        return schedule.finish(arm, start, step, clock.phases(), method, **figures)


def save_model(result: TrainResult, path: str, seed_index: int = 0) -> None:
    """Writes the agent in its library's own zip format (``agent.save``) with the arm and config added."""
    buffer = io.BytesIO()
    result.model.agent.save(buffer)
    write_archive(path, buffer.getvalue(), result.arm, result.config)


def load_with(arm: Arm, path: str) -> tuple[str, StableModel, Config]:
    """``(arm name, model, config)`` of a file :func:`save_model` wrote for ``arm`` (read by ``DQN.load``, for play:
    its replay buffer holds one transition)."""
    library = library_of(arm)
    module = arm.module()
    name, archive, config = read_archive(path, arm.hyperparameters)
    # To play it needs no replay buffer: a one-transition one instead of the run's (SB3 allocates it at load).
    agent = library.DQN.load(io.BytesIO(archive), device="cpu", buffer_size=1)
    return name, StableModel(agent, config, module.q_values), config


class StableArm(LibraryArm):
    """The arm of a Stable-Baselines3-family DQN (SB3's, SBX's): trained (:func:`train`), saved
    (:func:`save_model`) and read (:func:`load_with`) here, as that arm. Its learner file, the one that declares its
    hyperparameters (:meth:`module`), holds its library's own pieces: ``LIBRARY``, ``JITTED``,
    ``library_settings`` and ``q_values``."""

    def module(self) -> ModuleType:
        """The learner file that declares this arm's hyperparameters (``sb3.py``, ``sbx.py``)."""
        return importlib.import_module(self.hyperparameters.__module__)

    def read(self, path: str | pathlib.Path) -> tuple[str, StableModel, Config]:
        """As :meth:`~doors_gym_baselines.api.Arm.read`, the file read by its library as this arm."""
        return Arm.read(dataclasses.replace(self, loader=functools.partial(load_with, self)), path)


def make_arm(
    name: str, framework: str, label: str, hyperparameters: type, search_space: tuple[Range, ...], requirements: tuple
) -> StableArm:
    """The record of a Stable-Baselines3-family arm on ``Doors-v0``: trained (:func:`train`), saved
    (:func:`save_model`) and read here, its presets ``presets/<name>-<preset>.yml`` (:data:`PRESET_NAMES`)."""
    return StableArm(
        name,
        framework,
        ENV_ID,
        label,
        train,
        save_model,
        hyperparameters=hyperparameters,
        presets=presets(name, PRESET_NAMES),
        search_space=search_space,
        requirements=requirements,
    )
