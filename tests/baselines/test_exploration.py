"""Directed exploration in every DQN arm: multi-step returns and exploring starts.

Multi-step returns (``n_step > 1``): the host loop's buffer and the fully jitted arm's build the same
transitions from the same episodes, and both are the plain sum written out below.

A stream of vector steps (every env a transition each step, episodes ending by termination or truncation at
random) goes into both buffers round a small ring; every stored slot's multi-step transition is then read from
each and held to :func:`reference`, which walks the stream itself. Exploring starts (``restart_prob > 0``): episodes
that start anywhere are played and stored but stay out of the rolling reward, in both loops.
"""

from __future__ import annotations

import numpy as np
import pytest
from stacks import needs

jax = needs("jax")

from doors_gym.core import DoorsParams, DoorsState  # noqa: E402
from doors_gym_baselines.config import DQNConfig  # noqa: E402
from doors_gym_baselines.harness import device_replay  # noqa: E402
from doors_gym_baselines.harness.replay import ReplayBuffer  # noqa: E402

NUM_ENVS, STEPS, GAMMA, WIDTH = 3, 40, 0.9, 15


def stream(seed: int) -> dict[str, np.ndarray]:
    """``STEPS`` vector steps of ``NUM_ENVS`` envs: positions before and after, actions, rewards, end flags."""
    rng = np.random.default_rng(seed)
    shape = (STEPS, NUM_ENVS)
    ends = rng.random(shape)
    return {
        "agent": rng.integers(1, 15, shape + (2,)),
        "next_agent": rng.integers(1, 15, shape + (2,)),
        "goal": np.stack([np.zeros(shape, int), rng.integers(0, 15, shape)], axis=-1),
        "action": rng.integers(0, 5, shape),
        "reward": rng.normal(size=shape).astype(np.float32),
        "terminated": ends < 0.1,
        "truncated": (ends >= 0.1) & (ends < 0.2),
    }


def reference(steps: dict[str, np.ndarray], step: int, env: int, n_step: int) -> tuple[float, float, int, bool]:
    """``(return, discount, last step, terminated)`` of the transition of ``env`` at ``step``, walked plainly."""
    total, discount, last = 0.0, 1.0, step
    for later in range(step, min(step + n_step, STEPS)):
        total += discount * float(steps["reward"][later, env])
        discount *= GAMMA
        last = later
        if steps["terminated"][later, env] or steps["truncated"][later, env]:
            break
    return total, discount, last, bool(steps["terminated"][last, env])


def cells(agent: np.ndarray, goal: np.ndarray) -> np.ndarray:
    return np.stack([agent[..., 0] * WIDTH + agent[..., 1], goal[..., 0] * WIDTH + goal[..., 1]], -1).astype(np.int16)


def state(position: np.ndarray, goal: np.ndarray) -> DoorsState:
    fields = (position[:, 0], position[:, 1], goal[:, 0], goal[:, 1], np.zeros(NUM_ENVS))
    return DoorsState(*(jax.numpy.asarray(field, jax.numpy.int32) for field in fields))


def filled(capacity: int, steps: dict[str, np.ndarray], n_step: int) -> tuple[ReplayBuffer, device_replay.Buffer]:
    host = ReplayBuffer(capacity, 0, num_envs=NUM_ENVS, n_step=n_step, gamma=GAMMA)
    device = device_replay.empty_buffer(state(steps["agent"][0], steps["goal"][0]), capacity)
    envs = np.arange(NUM_ENVS)
    for step in range(STEPS):
        agent, next_agent, goal = steps["agent"][step], steps["next_agent"][step], steps["goal"][step]
        action, reward = steps["action"][step], steps["reward"][step]
        terminated, truncated = steps["terminated"][step], steps["truncated"][step]
        host.add(
            cells(agent, goal), action, reward, cells(next_agent, goal), terminated, envs, terminated | truncated
        )
        device = device_replay.add(
            device, state(agent, goal), jax.numpy.asarray(action), jax.numpy.asarray(reward),
            state(next_agent, goal), jax.numpy.asarray(terminated), (step * NUM_ENVS) % capacity,
            jax.numpy.asarray(truncated),
        )  # fmt: skip
    return host, device


@pytest.mark.parametrize("capacity", [30, 32, 200])
@pytest.mark.parametrize("n_step", [2, 5])
def test_host_and_device_buffers_build_the_reference_multi_step_transitions(capacity, n_step):
    steps = stream(seed=capacity + n_step)
    host, device = filled(capacity, steps, n_step)
    size = min(capacity, STEPS * NUM_ENVS)
    index = np.arange(size)
    cursor = jax.numpy.int32((STEPS * NUM_ENVS) % capacity)
    got_device = device_replay.multi_step_batch(device, jax.numpy.asarray(index), WIDTH, n_step, GAMMA, cursor)
    got_host = host.multi_step(index)
    # The slot each index holds: the latest vector step written there, and its env.
    written = {(step * NUM_ENVS + env) % capacity: (step, env) for step in range(STEPS) for env in range(NUM_ENVS)}
    want = [reference(steps, *written[slot], n_step) for slot in index]
    returns, discounts, lasts, terminated = (np.array(column) for column in zip(*want))
    last_agent = steps["next_agent"][lasts, [written[slot][1] for slot in index]]
    last_goal = steps["goal"][lasts, [written[slot][1] for slot in index]]
    for got in (got_host, jax.device_get(got_device)):
        got_cells, got_actions, got_returns, got_next, got_terminated, got_discounts = (np.asarray(a) for a in got)
        np.testing.assert_allclose(got_returns, returns, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got_discounts, discounts, rtol=1e-6)
        np.testing.assert_array_equal(got_terminated, terminated.astype(np.float32))
        np.testing.assert_array_equal(got_next, cells(last_agent, last_goal))
        steps_of = [written[slot] for slot in index]
        np.testing.assert_array_equal(got_actions, [steps["action"][s, e] for s, e in steps_of])
    # The stream has returns of every length, cut by termination, by truncation and by the newest step.
    taken = np.round(np.log(discounts) / np.log(GAMMA)).astype(int)
    assert set(taken) == set(range(1, n_step + 1))
    assert terminated.any() and (~terminated & (taken < n_step)).any()


def test_one_step_buffers_sample_as_before():
    """``n_step=1`` keeps the five arrays, the bytes and the stored flags of every arm's one-step buffer."""
    steps = stream(seed=0)
    host, device = filled(200, steps, 1)
    assert len(host.sample(8)) == 5
    assert host.bytes_per_transition() == 28 and filled(200, steps, 3)[0].bytes_per_transition() == 32
    assert set(np.unique(np.asarray(device.terminated))) <= {0.0, 1.0, device_replay.TRUNCATED}
    plain = device_replay.add(
        device, state(steps["agent"][0], steps["goal"][0]), jax.numpy.zeros(NUM_ENVS, jax.numpy.int32),
        jax.numpy.zeros(NUM_ENVS), state(steps["agent"][0], steps["goal"][0]),
        jax.numpy.asarray([True, False, False]), 0,
    )  # fmt: skip
    np.testing.assert_array_equal(np.asarray(plain.terminated[:NUM_ENVS]), [1.0, 0.0, 0.0])


@pytest.mark.parametrize(
    ("field", "value"), [("n_step", 0), ("n_step", 2.5), ("restart_prob", 1.5), ("restart_fraction", 0.0)]
)
def test_bad_exploration_values_name_the_field_and_the_range(field, value):
    with pytest.raises(ValueError, match=field):
        DQNConfig.of(**{field: value})


def test_restart_probability_decays_to_zero_over_its_fraction():
    config = DQNConfig.of(total_steps=1000, restart_prob=0.8, restart_fraction=0.5)
    assert [float(config.restart_probability(step)) for step in (0, 250, 500, 900)] == pytest.approx([0.8, 0.4, 0, 0])
    assert config.restarts and not DQNConfig.of().restarts


class Stays:
    """A learner stand-in whose greedy action is always "stay": every episode ends by truncation."""

    def greedy(self, cells: np.ndarray) -> np.ndarray:
        return np.zeros(len(cells), dtype=np.int64)


def test_the_host_loop_restarts_anywhere_and_keeps_those_episodes_out_of_the_rolling_reward():
    from doors_gym_baselines.harness.loop import Rollout

    # A long budget: the probability of a restart is still 0.999 when the first episodes end.
    config = DQNConfig.of(num_envs=4, total_steps=4 * 100_000, restart_prob=1.0, restart_fraction=1.0, seed=5)
    rollout = Rollout(config, Stays())
    for iteration in range(150):  # 2.5 time limits of 60 steps
        step = (iteration + 1) * 4
        actions = rollout.act(epsilon=0.0)
        stepped = rollout.envs.step(actions)
        rollout.store(actions, *stepped, config.restart_probability(step))
    rows = rollout.buffer.cells[: rollout.buffer.size, 0] // 15
    # The first episodes started on the bottom row and count; the next ones started anywhere, were played and
    # stored (rows all over the grid), and stayed out of the window.
    assert rollout.tracker.episodes == 8
    assert len(rollout.tracker.window) == 4
    assert not rollout.tracker.counted.any()
    assert set(rows.tolist()) - {14} and len(set(rows.tolist())) > 3


def test_the_scan_ring_skips_episodes_that_started_anywhere():
    from doors_gym_baselines.learners.scan_parts import Episodes, track

    jnp = jax.numpy
    episodes = Episodes(
        jnp.zeros(2), jnp.zeros(2, jnp.int32), jnp.ones(2), jnp.zeros(4), jnp.zeros(4, jnp.int32),
        jnp.zeros(4, bool), jnp.zeros(4), jnp.int32(0), jnp.ones(2, bool),
    )  # fmt: skip
    ended, going = jnp.asarray([True, True]), jnp.asarray([False, False])
    restarted = jnp.asarray([True, False])
    # Both episodes end and count; env 0's next one starts anywhere.
    episodes = track(episodes, jnp.ones(2), ended, going, jnp.ones(2), 4, restarted)
    assert int(episodes.count) == 2 and np.asarray(episodes.counted).tolist() == [False, True]
    # Both end again: only env 1's enters the ring; env 0's next one counts again.
    episodes = track(episodes, jnp.ones(2), ended, going, jnp.ones(2), 4, jnp.asarray([False, False]))
    assert int(episodes.count) == 3 and np.asarray(episodes.counted).tolist() == [True, True]


@pytest.mark.parametrize("cell_planes", [True, False], ids=["with cell planes", "relative rows alone"])
@pytest.mark.parametrize("level_name", ["31x31", "study"])
@pytest.mark.parametrize("framework", ["torch", "flax"])
def test_relative_inputs_add_the_rows_of_their_one_hot_planes(framework, level_name, cell_planes):
    """``relative_inputs``: both networks' first layer is the one-hot planes' rows, the relative ones included;
    without ``cell_planes`` the relative ones and the doors' alone, in a first layer that grows with the side."""
    import gymnasium as gym

    from doors_gym.levels import get_level
    from doors_gym_baselines.learners import cells as cell_codes
    from doors_gym_baselines.levels import TrainingLevel

    level = get_level(level_name)
    params = level.params()
    settings = TrainingLevel.named(level.name).settings
    config = DQNConfig.of(**settings, hidden_sizes=(16,), relative_inputs=True, cell_planes=cell_planes)
    envs = gym.make_vec(level.env_id, 8)
    cells = cell_codes.encode(envs.reset(seed=0)[0], params)
    cells[0, 1] = cell_codes.HIDDEN
    doors = cell_codes.door_count(params)
    inputs = cell_codes.num_inputs(params, relative=True, cell_planes=cell_planes)
    rows = cell_codes.relative_rows(params, cell_planes)
    width, height = params.width, params.height
    absolute = cell_codes.num_inputs(params, cell_planes=cell_planes)
    assert inputs == absolute + height + width + (1 + doors) * (2 * width - 1) == rows.end
    assert absolute == (2 * params.num_cells if cell_planes else 0) + params.random_doors * params.n_walls * width
    offsets = cell_codes.door_offsets(params, cell_planes)
    planes = cell_codes.planes(cells, params.num_cells, offsets, inputs, rows, width, cell_planes)
    # The agent, the goal (none in row 0), the doors; the agent's row and column, the goal's relative column (none
    # in row 0) and the doors' relative columns.
    agent, goal = (1, 1) if cell_planes else (0, 0)
    want = [agent + doors + 2 + doors] + [agent + goal + doors + 3 + doors] * 7
    np.testing.assert_array_equal(planes.sum(axis=1), want)
    if framework == "torch":
        torch = needs("torch")
        from doors_gym_baselines.learners.dqn_torch import make_network

        network = make_network(config)
        with torch.no_grad():
            hidden = torch.relu(torch.as_tensor(planes) @ network.planes_weight + network.planes_bias)
            got, want = network(torch.as_tensor(cells)), network.network[1:](hidden)
    else:
        needs("flax")
        from doors_gym_baselines.learners.dqn_flax import init_params, make_network

        network = make_network(config)
        weights = init_params(network, jax.random.key(0))["params"]
        hidden = np.maximum(planes @ np.asarray(weights["planes_kernel"]) + np.asarray(weights["planes_bias"]), 0)
        want = hidden @ np.asarray(weights["Dense_0"]["kernel"]) + np.asarray(weights["Dense_0"]["bias"])
        got = network.apply({"params": weights}, cells)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=1e-5)


@pytest.mark.parametrize("relative", [False, True])
def test_dueling_heads_give_the_same_q_values_in_torch_and_flax(relative):
    """``dueling``: Q = V + A - mean(A) from the last hidden layer; the torch network given the Flax network's
    weights computes the same Q-values, and a plain network keeps its parameters' names (its files still load)."""
    torch = needs("torch")
    needs("flax")
    import gymnasium as gym

    from doors_gym.levels import get_level
    from doors_gym_baselines.learners import cells as cell_codes
    from doors_gym_baselines.learners import dqn_flax, dqn_torch
    from doors_gym_baselines.levels import TrainingLevel

    level = get_level("3Walls")
    config = DQNConfig.of(**TrainingLevel.named(level.name).settings, hidden_sizes=(16, 8), relative_inputs=relative, dueling=True)
    cells = cell_codes.encode(gym.make_vec(level.env_id, 8).reset(seed=1)[0], level.params())
    flax_network = dqn_flax.make_network(config)
    weights = dqn_flax.init_params(flax_network, jax.random.key(3))["params"]
    assert {"value", "advantage"} <= set(weights) and "Dense_1" not in weights
    plain = dqn_flax.init_params(dqn_flax.make_network(config.replace(dueling=False)), jax.random.key(3))["params"]
    assert set(plain) == {"planes_kernel", "planes_bias", "Dense_0", "Dense_1"}
    torch_network = dqn_torch.make_network(config)
    linear = lambda layer: {"weight": np.asarray(layer["kernel"]).T, "bias": np.asarray(layer["bias"])}  # noqa: E731
    state = {"planes_weight": np.asarray(weights["planes_kernel"]), "planes_bias": np.asarray(weights["planes_bias"])}
    state.update({f"network.1.{key}": value for key, value in linear(weights["Dense_0"]).items()})
    for head in ("value", "advantage"):
        state.update({f"{head}.{key}": value for key, value in linear(weights[head]).items()})
    torch_network.load_state_dict({key: torch.tensor(np.array(value)) for key, value in state.items()})
    with torch.no_grad():
        got = torch_network(torch.as_tensor(cells)).numpy()
    want = np.asarray(flax_network.apply({"params": weights}, cells))
    np.testing.assert_allclose(got, want, atol=1e-5)
    _, captured = flax_network.apply({"params": weights}, cells, capture_intermediates=True)
    hidden = np.maximum(np.asarray(captured["intermediates"]["Dense_0"]["__call__"][0]), 0)
    value, advantage = (hidden @ np.asarray(weights[head]["kernel"]) + np.asarray(weights[head]["bias"])
                        for head in ("value", "advantage"))  # fmt: skip
    np.testing.assert_allclose(want, value + advantage - advantage.mean(axis=1, keepdims=True), atol=1e-5)


@pytest.mark.parametrize("dueling", [False, True])
def test_layer_norm_gives_the_same_q_values_in_torch_and_flax(dueling):
    """``layer_norm``: every hidden layer's sum is normalised over its features, scaled and offset (learned) before
    its ReLU; the torch network given the Flax network's weights computes the same Q-values, both the plain NumPy
    computation's, and a network without it keeps its parameters' names."""
    torch = needs("torch")
    needs("flax")
    import gymnasium as gym

    from doors_gym.levels import get_level
    from doors_gym_baselines.learners import cells as cell_codes
    from doors_gym_baselines.learners import dqn_flax, dqn_torch
    from doors_gym_baselines.config import LAYER_NORM_EPSILON
    from doors_gym_baselines.levels import TrainingLevel

    level = get_level("3Walls")
    config = DQNConfig.of(**TrainingLevel.named(level.name).settings, hidden_sizes=(16, 8), dueling=dueling, layer_norm=True)
    assert "layer norm" in config.hyperparameters.describe()
    cells = cell_codes.encode(gym.make_vec(level.env_id, 8).reset(seed=1)[0], level.params())
    flax_network = dqn_flax.make_network(config)
    weights = dqn_flax.init_params(flax_network, jax.random.key(3))["params"]
    plain = dqn_flax.init_params(dqn_flax.make_network(config.replace(layer_norm=False)), jax.random.key(3))["params"]
    assert not any(name.startswith("LayerNorm") for name in plain)
    rng = np.random.default_rng(0)  # scales and offsets away from their initial 1 and 0, so that each one counts
    for name in ("LayerNorm_0", "LayerNorm_1"):
        weights[name] = {key: rng.normal(1.0 if key == "scale" else 0.0, 0.5, value.shape).astype(np.float32)
                         for key, value in weights[name].items()}  # fmt: skip
    linear = lambda layer: {"weight": np.asarray(layer["kernel"]).T, "bias": np.asarray(layer["bias"])}  # noqa: E731
    norm = lambda layer: {"weight": layer["scale"], "bias": layer["bias"]}  # noqa: E731
    state = {"planes_weight": np.asarray(weights["planes_kernel"]), "planes_bias": np.asarray(weights["planes_bias"])}
    parts = {"network.0": norm(weights["LayerNorm_0"]), "network.2": linear(weights["Dense_0"])}
    parts["network.3"] = norm(weights["LayerNorm_1"])
    heads = ("value", "advantage") if dueling else ()
    parts.update({head: linear(weights[head]) for head in heads} or {"network.5": linear(weights["Dense_1"])})
    state.update({f"{part}.{key}": value for part, layer in parts.items() for key, value in layer.items()})
    torch_network = dqn_torch.make_network(config)
    torch_network.load_state_dict({key: torch.tensor(np.array(value)) for key, value in state.items()})
    with torch.no_grad():
        got = torch_network(torch.as_tensor(cells)).numpy()
    want = np.asarray(flax_network.apply({"params": weights}, cells))
    np.testing.assert_allclose(got, want, atol=1e-5)

    def normalized(features: np.ndarray, layer: dict) -> np.ndarray:
        centred = features - features.mean(axis=1, keepdims=True)
        scaled = centred / np.sqrt(centred.var(axis=1, keepdims=True) + LAYER_NORM_EPSILON)
        return np.maximum(scaled * layer["scale"] + layer["bias"], 0.0)

    planes = np.zeros((len(cells), 2 * level.params().num_cells), np.float32)
    rows = np.arange(len(cells))
    planes[rows, cells[:, 0]] = 1.0
    planes[rows[cells[:, 1] >= 0], level.params().num_cells + cells[cells[:, 1] >= 0, 1]] = 1.0
    kernel = np.asarray(weights["planes_kernel"])
    first = planes @ kernel[: planes.shape[1]] + np.asarray(weights["planes_bias"])
    if level.params().random_doors:
        first = first + kernel[cells[:, 2:] + np.asarray(cell_codes.door_offsets(level.params()))].sum(axis=1)
    hidden = normalized(first, weights["LayerNorm_0"])
    hidden = normalized(hidden @ linear(weights["Dense_0"])["weight"].T + linear(weights["Dense_0"])["bias"],
                        weights["LayerNorm_1"])  # fmt: skip
    if dueling:
        value, advantage = (hidden @ np.asarray(weights[head]["kernel"]) + np.asarray(weights[head]["bias"])
                            for head in heads)  # fmt: skip
        reference = value + advantage - advantage.mean(axis=1, keepdims=True)
    else:
        reference = hidden @ np.asarray(weights["Dense_1"]["kernel"]) + np.asarray(weights["Dense_1"]["bias"])
    np.testing.assert_allclose(want, reference, atol=1e-4)


def test_a_step_cost_comes_off_the_stored_reward_only():
    """``step_cost``: the host loop stores each transition's reward less the cost; the episodes' figures (the rolling
    reward) keep the env's reward."""
    from doors_gym_baselines.harness.loop import Rollout

    config = DQNConfig.of(num_envs=4, total_steps=4_000, step_cost=0.25, seed=2)
    rollout = Rollout(config, Stays())
    taken = []
    for _ in range(30):
        actions = rollout.act(epsilon=1.0)  # random moves: rewards of either sign
        stepped = rollout.envs.step(actions)
        taken.append(np.asarray(stepped[1], np.float32))
        rollout.store(actions, *stepped)
    rewards = np.concatenate(taken)  # no episode ends in 30 steps: every transition is stored, in env order per step
    np.testing.assert_allclose(rollout.buffer.rewards[: rollout.buffer.size], rewards - 0.25, atol=1e-6)
    assert np.abs(rewards).max() > 0  # the moves changed the distance
    np.testing.assert_allclose(rollout.tracker.returns.sum(), rewards.sum(), rtol=1e-5)


def test_the_scan_stores_the_reward_less_the_step_cost_and_tracks_the_envs():
    from doors_gym_baselines.learners.dqn_flax_scan import make_train

    needs("flax")
    runners = []
    for cost in (0.0, 0.3):
        config = DQNConfig.of(num_envs=4, total_steps=4_000, buffer_size=1_024, batch_size=32, learning_starts=3_000,
                              step_cost=cost, seed=3)  # fmt: skip
        scan = make_train(config)
        runner = jax.jit(scan.init)(jax.random.key(3))
        runners.append(jax.jit(scan.run_chunk)(runner, jax.numpy.int32(0))[0])  # no update yet: the same moves
    plain, costly = runners
    stored = scan.iterations_per_chunk * 4
    rewards = np.asarray(plain.buffer.reward)[:stored]
    assert np.abs(rewards).max() > 0 and stored <= 1_024  # moves were stored, none written over
    np.testing.assert_allclose(np.asarray(costly.buffer.reward)[:stored], rewards - 0.3, atol=1e-6)
    tracked = np.asarray(plain.episodes.running_return)
    assert np.abs(tracked).max() > 0
    np.testing.assert_array_equal(np.asarray(costly.episodes.running_return), tracked)  # the env's reward
