"""Stable-Baselines3's and SBX's DQN under doors-gym's protocol (the two share SB3's ``learn`` loop and callbacks).

A run builds the library's ``DQN("MlpPolicy", env)`` on ``make_vec_env("Doors-v0", n_envs)`` (the layout from
the run settings) and calls its ``learn`` with :class:`ProtocolCallback`, which keeps the last training
episodes (the envs' ``Monitor`` figures), evaluates greedily over every start/goal pair every ``eval_every``
env steps through :class:`~doors_gym_baselines.api.EvaluationSchedule` and stops ``learn`` once solved and held.
The phases are timed by wrapping the library's own methods: the vector env's ``step`` (env step),
``_sample_action`` (action selection), the replay buffer's ``add`` (replay buffer; its sampling runs inside
``train``) and ``train`` (update); a jitted library's first call of each goes to ``compile``.
"""

from __future__ import annotations

import io
import time
from typing import Any

import numpy as np

from doors_gym.extras import require
from doors_gym_baselines.api import (
    Arm,
    Config,
    EvaluationSchedule,
    TrainResult,
    evaluate_greedy,
    finish,
    history_row,
    torch_threads,
)

from .common import EpisodeWindow, PhaseClock, network_inputs, read_archive, write_archive

ENV_ID = "Doors-v0"


def library_of(arm: Arm) -> Any:
    """The library module of ``arm`` (``stable_baselines3`` or ``sbx``), named with its extra if missing."""
    return require(arm.module().LIBRARY, f"the {arm.name} arm")


def make_env(config: Config) -> Any:
    """SB3's ``make_vec_env`` of ``Doors-v0`` with the run's layout, ``n_envs`` envs, each in a ``Monitor``."""
    from stable_baselines3.common.env_util import make_vec_env

    from doors_gym.wrappers import AgentGoalPlanes

    run, hyper = config.run, config.hyperparameters
    cells = hyper.observation == "cells"  # the grid, made into the agent's and the goal's planes by a wrapper
    layout = {
        "grid_size": tuple(run.grid_size),
        "n_doors": run.n_doors,
        "door_cols": run.door_cols,
        "max_episode_steps": run.max_episode_steps,
        "obs_mode": "grid" if cells else hyper.observation,
    }
    wrapper = AgentGoalPlanes if cells else None
    return make_vec_env(ENV_ID, n_envs=hyper.n_envs, seed=run.seed, env_kwargs=layout, wrapper_class=wrapper)


class StableModel:
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
        return network_inputs(obs, self.config.params.num_cells, observation)

    def q_values(self, obs: np.ndarray) -> np.ndarray:
        """``(batch, 5)`` float32 Q-values."""
        return np.asarray(self._q_values(self.agent, self.inputs(obs)), dtype=np.float32)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Greedy actions ``(batch,)`` int64 (the library's own ``predict(deterministic=True)``: the argmax)."""
        return np.argmax(self.q_values(obs), axis=-1).astype(np.int64)


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
        history: list = []

        def evaluate(step: int) -> tuple[Any, Any]:
            evaluation = evaluate_greedy(model.act, config.params)
            row = history_row(
                step, start, float(agent.exploration_rate), [], [evaluation], [window.figures()], [run.seed]
            )
            return evaluation, row

        schedule = EvaluationSchedule(evaluate, history, trial, config)
        agent.learn(total_timesteps=run.total_steps, callback=protocol_callback(library, window, schedule, run.total_steps))
        clock.unwrap()
        step = int(agent.num_timesteps)
        last = schedule.final(step)
        env.close()
    return finish(
        arm,
        config,
        start,
        history,
        last,
        clock.phases(evaluation=schedule.seconds),
        method=f"{module.LIBRARY}'s own methods timed where they are called (replay sampling inside update)",
        env_steps=step,
        updates=int(agent._n_updates),
        model=model,
        facts={module.LIBRARY: library.__version__, "torch_threads": threads, "n_envs": config.hyperparameters.n_envs},
    )


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
