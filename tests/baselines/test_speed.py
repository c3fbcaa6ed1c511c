"""Each stack at full speed: compiled torch equals eager torch, seeds spread over devices compute what they
compute alone, and every arm says where its time went."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from doors_gym_baselines.config import DQNConfig
from doors_gym_baselines.metrics import PHASES


def fixed_batch(size: int = 128, num_cells: int = 225, seed: int = 0):
    """A replay batch as the buffer stores it (int8): one agent and one goal per grid, except where a
    terminated transition's next grid shows the agent on the goal (no goal code left)."""
    rng = np.random.default_rng(seed)
    obs = np.zeros((size, num_cells), dtype=np.int8)
    next_obs = obs.copy()
    rows = np.arange(size)
    obs[rows, rng.integers(0, 15, size)] = 3
    obs[rows, rng.integers(120, 225, size)] = 1
    next_obs[rows, rng.integers(0, 15, size)] = 3
    next_obs[rows, rng.integers(120, 225, size)] = 1
    actions = rng.integers(0, 5, size)
    rewards = rng.normal(0, 0.5, size).astype(np.float32)
    terminated = (rng.random(size) < 0.25).astype(np.float32)
    reached = terminated.astype(bool)
    next_obs[reached] = 0
    next_obs[reached, rng.integers(0, 15, int(reached.sum()))] = 1  # the agent covers the goal
    return obs, actions, rewards, next_obs, terminated


@pytest.mark.slow
@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_compiled_torch_update_equals_the_eager_one(optimizer):
    pytest.importorskip("torch")
    from doors_gym_baselines.dqn_torch import TorchLearner
    from doors_gym_baselines.dqn_torch_compile import CompiledTorchLearner

    config = DQNConfig.of(batch_size=128, num_envs=16, hidden_sizes=(64, 64), optimizer=optimizer, seed=3)
    eager, compiled = TorchLearner(config), CompiledTorchLearner(config)
    assert compiled.compile_seconds > 0 and compiled.facts["torch_threads"] >= 1
    for name, value in eager.network.state_dict().items():  # the same initial network
        np.testing.assert_array_equal(value.numpy(), compiled.network.state_dict()[name].numpy())
    for step in range(3):
        batch = fixed_batch(seed=step)
        eager_loss, compiled_loss = eager.update(batch), compiled.update(batch)
        assert compiled_loss == pytest.approx(eager_loss, rel=1e-5, abs=1e-7)
        for name, value in eager.network.state_dict().items():
            np.testing.assert_allclose(compiled.network.state_dict()[name].numpy(), value.numpy(), rtol=1e-4, atol=1e-6)
    eager.sync_target()
    compiled.sync_target()
    for obs in (fixed_batch(size=225)[0], fixed_batch(size=16)[3]):  # with and without goals
        obs = obs.astype(np.int16)
        np.testing.assert_array_equal(compiled.act(obs), eager.act(obs))
        np.testing.assert_allclose(compiled.q_values(obs), eager.q_values(obs), rtol=1e-5, atol=1e-6)


DEVICES_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    from doors_gym_baselines.arms import get_arm
    from doors_gym_baselines.config import DQNConfig

    out = {}
    for devices in (1, 2):
        config = DQNConfig.of(
            total_steps=3_000, learning_starts=500, num_envs=8, batch_size=32, buffer_size=2_000,
            hidden_sizes=(32,), eval_every=1_000, num_seeds=3, devices=devices, quiet=True, profile=False,
        )
        result = get_arm("flax-scan").train(config)
        out[devices] = {
            "devices": result.facts["devices"],
            "per_seed": [[s.greedy_step_reward, s.rolling_reward] for s in result.per_seed],
            "losses": result.losses,
            "params": [float(np.asarray(leaf).sum()) for leaf in __import__("jax").tree.leaves(result.model.params)],
        }
    print(json.dumps(out))
    """)


def test_seeds_spread_over_devices_compute_what_they_compute_alone():
    pytest.importorskip("flax")
    env = {**__import__("os").environ, "JAX_NUM_CPU_DEVICES": "2", "JAX_PLATFORMS": "cpu"}
    completed = subprocess.run(
        [sys.executable, "-c", DEVICES_SCRIPT], capture_output=True, text=True, timeout=300, env=env
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    runs = json.loads(completed.stdout.strip().splitlines()[-1])
    one, two = runs["1"], runs["2"]
    assert one["devices"] == ["cpu:0"] and two["devices"] == ["cpu:0", "cpu:1"]
    assert two["per_seed"] == one["per_seed"]
    assert two["losses"] == one["losses"]
    assert two["params"] == one["params"]


def test_a_device_count_beyond_the_devices_names_the_range():
    pytest.importorskip("flax")
    from doors_gym_baselines.dqn_flax_scan import seed_devices, split_seeds

    with pytest.raises(ValueError, match=r"devices=99 is out of range: expected 1\.\."):
        seed_devices(99, 4)
    assert split_seeds([1, 2, 3, 4, 5], 2) == [[1, 2, 3], [4, 5]]
    assert split_seeds([7], 1) == [[7]]


@pytest.mark.parametrize(("arm", "env_id"), [("torch", "Doors-v0"), ("flax", "DoorsJax-v0")])
def test_host_loop_arms_say_where_their_time_went(arm, env_id, trained):
    _, result = trained(arm, env_id)
    timings = result.timings
    assert timings.method == "timed in the loop"
    assert timings.total == pytest.approx(result.wall_seconds, rel=1e-6)
    for name in ("env_step", "action_selection", "replay_buffer", "update", "evaluation"):
        assert getattr(timings, name) > 0, name
    assert (timings.compile > 0) == (arm == "flax")  # jit compiles; eager torch does not
    assert result.ms_per_update == pytest.approx(1e3 * timings.update / result.updates)
    assert set(timings.as_dict()) == set(PHASES)


@pytest.mark.slow
def test_the_jitted_arm_splits_its_scan_time(trained):
    _, result = trained("flax-scan", num_seeds=2)
    timings = result.timings
    assert "compiled pieces" in timings.method
    assert timings.total == pytest.approx(result.wall_seconds, rel=1e-6)
    for name in ("env_step", "action_selection", "replay_buffer", "update", "compile", "evaluation"):
        assert getattr(timings, name) > 0, name
    assert result.facts["seeds_per_device"] and sum(result.facts["seeds_per_device"]) == 2
