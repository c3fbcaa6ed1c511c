"""The replay buffers' layout table: per-episode door columns, rebuilt exactly for every stored transition.

Both buffers are fed many episodes of several envs (random lengths of at least ``min_episode_steps``, random
doors, sometimes the previous episode's) round a small ring, and held to a plain reference that stores every
transition's cells and doors whole, slot by slot and through ``sample`` with the same indices.
"""

from __future__ import annotations

import numpy as np
import pytest
from stacks import needs

from doors_gym.core import DoorsParams
from doors_gym.levels import LEVELS
from doors_gym_baselines.harness.replay import ReplayBuffer, layouts_per_env, min_episode_steps

NUM_ENVS, SHORTEST, DOORS = 4, 3, 6
"""The envs, the shortest episode and the door columns of the streams below."""


class Episodes:
    """Per env: random cells each step and the episode's door columns, a new episode after a random length."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.doors = self.draw_doors(np.zeros((NUM_ENVS, DOORS), np.int16))
        self.left = rng.integers(SHORTEST, 2 * SHORTEST + 1, NUM_ENVS)

    def draw_doors(self, previous: np.ndarray) -> np.ndarray:
        """New doors per env, a quarter of them the previous episode's (such episodes may share a row)."""
        fresh = np.sort(self.rng.integers(0, 9, previous.shape), axis=1).astype(np.int16)
        return np.where(self.rng.random((len(previous), 1)) < 0.25, previous, fresh)

    def cells(self) -> np.ndarray:
        """``(NUM_ENVS, 2 + DOORS)`` int16: two random cells and each env's doors."""
        return np.concatenate([self.rng.integers(-1, 50, (NUM_ENVS, 2)).astype(np.int16), self.doors], axis=1)

    def step(self, stepped: np.ndarray) -> np.ndarray:
        """Advances the ``stepped`` envs a step; True where an episode ended (its next step starts a new one)."""
        self.left -= stepped
        ended = stepped & (self.left == 0)
        self.doors[ended] = self.draw_doors(self.doors[ended])
        self.left[ended] = self.rng.integers(SHORTEST, 2 * SHORTEST + 1, int(ended.sum()))
        return ended


class Reference:
    """The plain ring: every transition's cells with their doors, both sides, whole."""

    def __init__(self, capacity: int) -> None:
        self.cells = np.zeros((capacity, 2 + DOORS), np.int16)
        self.next_cells = np.zeros_like(self.cells)
        self.cursor = 0

    def add(self, cells: np.ndarray, next_cells: np.ndarray) -> None:
        index = (self.cursor + np.arange(len(cells))) % len(self.cells)
        self.cells[index], self.next_cells[index] = cells, next_cells
        self.cursor = int((self.cursor + len(cells)) % len(self.cells))


@pytest.mark.parametrize("capacity", [48, 50])
def test_the_host_buffer_rebuilds_every_transitions_doors(capacity: int) -> None:
    rng = np.random.default_rng(capacity)
    episodes, reference = Episodes(rng), Reference(capacity)
    buffer = ReplayBuffer(capacity, seed=7, doors=DOORS, num_envs=NUM_ENVS, min_episode_steps=SHORTEST)
    twin = np.random.default_rng(7)  # the buffer's sampling stream
    resetting = np.zeros(NUM_ENVS, bool)  # next-step autoreset: the step after an episode's end is no transition
    for _ in range(400):
        cells = episodes.cells()
        next_cells = np.concatenate([episodes.cells()[:, :2], cells[:, 2:]], axis=1)
        valid = ~resetting
        steps = np.arange(valid.sum())
        buffer.add(cells[valid], steps, steps * 1.0, next_cells[valid], steps % 2 * 1.0, np.flatnonzero(valid))
        reference.add(cells[valid], next_cells[valid])
        resetting = episodes.step(valid)
        stored = buffer.layouts[buffer.layout[: buffer.size]]
        rebuilt = np.concatenate([buffer.cells[: buffer.size], stored], axis=1)
        np.testing.assert_array_equal(rebuilt, reference.cells[: buffer.size])
        sampled = buffer.sample(16)
        index = twin.integers(0, buffer.size, 16)
        np.testing.assert_array_equal(sampled[0], reference.cells[index])
        np.testing.assert_array_equal(sampled[3], reference.next_cells[index])
    assert buffer.size == capacity
    assert buffer.layouts.shape == (NUM_ENVS * layouts_per_env(capacity, NUM_ENVS, SHORTEST), DOORS)


@pytest.mark.parametrize("capacity", [48, 50])  # a multiple of the envs (slices), and not (slot by slot)
def test_the_device_buffer_rebuilds_every_transitions_doors(capacity: int) -> None:
    jax = needs("jax")
    from doors_gym.core import DoorsState
    from doors_gym_baselines.harness import device_replay

    width = 7
    add = jax.jit(device_replay.add)
    sample = jax.jit(device_replay.sample, static_argnums=(2, 3))

    def state_of(cells: np.ndarray) -> DoorsState:
        """States whose cells (:func:`device_replay.cells_of_states`) are ``cells`` (no hidden goal here)."""
        agent, goal = cells[:, 0].astype(np.int32), cells[:, 1].astype(np.int32)
        doors = cells[:, 2:].astype(np.int32).reshape(NUM_ENVS, 2, DOORS // 2)
        time = np.zeros(NUM_ENVS, np.int32)
        return DoorsState(agent // width, agent % width, goal // width, goal % width, time, doors)

    rng = np.random.default_rng(capacity)
    episodes, reference = Episodes(rng), Reference(capacity)

    def on_the_grid(cells: np.ndarray) -> np.ndarray:
        """``cells`` with an agent and a distinct goal among the 49 cells."""
        agent = cells[:, 0] % 49
        return np.concatenate([np.stack([agent, (agent + 1 + cells[:, 1] % 48) % 49], axis=1), cells[:, 2:]], axis=1)

    buffer = device_replay.empty_buffer(state_of(episodes.cells()), capacity, min_episode_steps=SHORTEST)
    for step in range(300):  # same-step autoreset: every env's step is a transition
        cells = on_the_grid(episodes.cells())
        next_cells = on_the_grid(np.concatenate([episodes.cells()[:, :2], cells[:, 2:]], axis=1))
        actions = np.arange(NUM_ENVS, dtype=np.int32)
        terminated = episodes.step(np.ones(NUM_ENVS, bool))
        start = (step * NUM_ENVS) % capacity
        buffer = add(buffer, state_of(cells), actions, actions * 1.0, state_of(next_cells), terminated, start)
        reference.add(cells, next_cells)
        key = jax.random.key(step)
        sampled = sample(buffer, key, 16, width)
        index = np.asarray(jax.random.randint(key, (16,), 0, max(int(buffer.size), 1)))
        np.testing.assert_array_equal(np.asarray(sampled[0]), reference.cells[index])
        np.testing.assert_array_equal(np.asarray(sampled[3]), reference.next_cells[index])
        every = device_replay.cells_of_states(buffer.state._replace(doors=buffer.layouts[buffer.layout]), width)
        np.testing.assert_array_equal(np.asarray(every)[: int(buffer.size)], reference.cells[: int(buffer.size)])
    assert int(buffer.size) == capacity


def test_the_table_size_is_checked_naming_the_keyword() -> None:
    for keywords, name in (({"num_envs": 0}, "num_envs"), ({"min_episode_steps": 0}, "min_episode_steps")):
        with pytest.raises(ValueError, match=f"{name}=0"):
            ReplayBuffer(8, seed=0, doors=3, **keywords)
    buffer = ReplayBuffer(8, seed=0, doors=3, num_envs=2, min_episode_steps=2)
    cells = np.zeros((2, 5), np.int16)
    with pytest.raises(ValueError, match="envs="):
        buffer.add(cells, np.zeros(2), np.zeros(2), cells, np.zeros(2), np.array([1, 2]))
    with pytest.raises(ValueError, match="envs="):
        buffer.add(cells, np.zeros(2), np.zeros(2), cells, np.zeros(2), np.array([1, 1]))


def test_the_device_table_size_is_checked_naming_the_keyword() -> None:
    jax = needs("jax")
    from doors_gym.jax import functional as F
    from doors_gym_baselines.harness.device_replay import empty_buffer

    params = DoorsParams(doors="random")
    _, state = F.batch_reset(jax.random.key(0), 4, params)
    with pytest.raises(ValueError, match="min_episode_steps=0"):
        empty_buffer(state, 8, min_episode_steps=0)
    with pytest.raises(ValueError, match="num_envs=0"):
        empty_buffer(jax.tree.map(lambda field: field[:0], state), 8)


@pytest.mark.parametrize("level", LEVELS, ids=lambda level: level.name)
def test_the_shortest_episode_is_the_climb_or_the_time_limit(level) -> None:
    params = level.params()
    assert min_episode_steps(params) == level.grid_size[0] - 1  # every level's time limit is longer than the climb
    assert min_episode_steps(level.params(max_episode_steps=5)) == 5
    assert min_episode_steps(level.params(max_episode_steps=None)) == level.grid_size[0] - 1
