"""Each stack at full speed: compiled torch equals eager torch, seeds spread over devices compute what they
compute alone, and every arm says where its time went."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from stacks import needs

from doors_gym_baselines.config import DQNConfig
from doors_gym_baselines.harness.metrics import PHASES


@pytest.mark.slow
@pytest.mark.parametrize(
    "settings",
    [
        {"optimizer": "adam"},
        {"optimizer": "sgd"},
        # The stabilisers: a decaying learning rate must not recompile the step at every new value.
        {"optimizer": "sgd", "learning_rate": 0.1, "double_dqn": True, "tau": 0.5, "lr_end_fraction": 0.2,
         "max_grad_norm": 0.5, "total_steps": 16 * 3, "learning_starts": 0},
    ],
    ids=["adam", "sgd", "stabilisers"],
)  # fmt: skip
def test_compiled_torch_update_equals_the_eager_one(settings, fixed_batch):
    needs("torch")
    from doors_gym_baselines.learners.dqn_torch import TorchLearner
    from doors_gym_baselines.learners.dqn_torch_compile import CompiledTorchLearner

    config = DQNConfig.of(batch_size=128, num_envs=16, hidden_sizes=(64, 64), seed=3, **settings)
    eager, compiled = TorchLearner(config), CompiledTorchLearner(config)
    assert compiled.compile_seconds > 0 and compiled.facts["torch_threads"] >= 1
    for name, value in eager.network.state_dict().items():  # the same initial network
        np.testing.assert_array_equal(value.numpy(), compiled.network.state_dict()[name].numpy())
    from torch._dynamo.utils import counters

    graphs = counters["stats"]["unique_graphs"]
    for step in range(3):
        batch = fixed_batch(seed=step)
        eager_loss, compiled_loss = float(eager.update(batch)), float(compiled.update(batch))
        assert compiled_loss == pytest.approx(eager_loss, rel=1e-5, abs=1e-7)
        for name, value in eager.network.state_dict().items():
            np.testing.assert_allclose(compiled.network.state_dict()[name].numpy(), value.numpy(), rtol=1e-4, atol=1e-6)
    assert counters["stats"]["unique_graphs"] == graphs  # compiled before training: nothing recompiles
    for cells in (fixed_batch(size=225)[0], fixed_batch(size=16)[3]):  # with and without goals
        np.testing.assert_array_equal(compiled.greedy(cells), eager.greedy(cells))


@pytest.mark.slow
def test_compiled_learners_one_after_another_never_hit_the_recompile_limit():
    # A tuning study builds learner after learner of other shapes in one process: each compiles afresh.
    torch = needs("torch")
    from doors_gym_baselines.learners.dqn_torch_compile import CompiledTorchLearner

    with torch._dynamo.config.patch(recompile_limit=2):  # one learner compiles two of each
        for width, batch_size in ((32, 32), (48, 64), (64, 32)):
            config = DQNConfig.of(batch_size=batch_size, num_envs=8, hidden_sizes=(width,), seed=0)
            learner = CompiledTorchLearner(config)
            assert learner.greedy(np.zeros((8, 2), dtype=np.int16)).shape == (8,)


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


LOSS_TOLERANCE = 1e-5
"""How far (relative) the seeds of one run may drift when spread over devices: the float tolerance docs/baselines.md states."""


@pytest.mark.slow
@pytest.mark.parametrize("isa", ["host", "AVX2"])
def test_seeds_spread_over_devices_compute_what_they_compute_alone(isa):
    # Spread over devices, a seed runs in a program of another batch shape (its device's seeds, not all of
    # them). XLA promises no bitwise equality across batch shapes, and its CPU code generation depends on the
    # host's CPU: each program repeats bit for bit, but two shapes agree bit for bit on some CPUs and not on
    # others (drifting around the 7th digit). The AVX2 case runs a second code generator on any machine.
    needs("flax")
    env = {**__import__("os").environ, "JAX_NUM_CPU_DEVICES": "2", "JAX_PLATFORMS": "cpu"}
    if isa != "host":
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_cpu_max_isa={isa}".strip()
    completed = subprocess.run(
        [sys.executable, "-c", DEVICES_SCRIPT], capture_output=True, text=True, timeout=300, env=env
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    runs = json.loads(completed.stdout.strip().splitlines()[-1])
    one, two = runs["1"], runs["2"]
    assert one["devices"] == ["cpu:0"] and two["devices"] == ["cpu:0", "cpu:1"]
    assert len(two["losses"]) == len(one["losses"]) > 0  # the same updates
    np.testing.assert_allclose(two["per_seed"], one["per_seed"], rtol=LOSS_TOLERANCE)
    np.testing.assert_allclose(two["losses"], one["losses"], rtol=LOSS_TOLERANCE)
    np.testing.assert_allclose(two["params"], one["params"], rtol=LOSS_TOLERANCE, atol=1e-6)  # sums near 0


def test_a_device_count_beyond_the_devices_names_the_range():
    needs("flax")
    from doors_gym_baselines.learners.scan_driver import SeedLayout, seed_devices

    with pytest.raises(ValueError, match=r"devices=99 is out of range: expected 1\.\."):
        seed_devices(99, 4)
    mesh = __import__("jax").sharding.Mesh(np.array(seed_devices(1, 1) * 2), ("seeds",))  # two slots' worth
    layout = SeedLayout(mesh, [1, 2, 3, 4, 5], per_device=3)
    assert layout.slot_seeds == [1, 2, 3, 4, 5, 5] and layout.seeds_per_device() == [3, 2]


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


CACHE_SCRIPT = textwrap.dedent("""
    import json, sys
    import jax
    from doors_gym_baselines.arms import get_arm
    from doors_gym_baselines.config import DQNConfig

    events = []
    jax.monitoring.register_event_listener(lambda event, **kwargs: events.append(event))
    config = DQNConfig.of(total_steps=512, eval_every=0, learning_starts=64, batch_size=32, num_envs=8,
                          hidden_sizes=(16,), quiet=True, profile=False, jax_cache=sys.argv[1])
    result = get_arm("flax-scan").train(config)
    print(json.dumps({"hits": events.count("/jax/compilation_cache/cache_hits"), "cache": result.facts["jax_cache"]}))
""")


@pytest.mark.slow
def test_the_jax_compilation_cache_serves_a_later_process(tmp_path):
    needs("flax")
    from doors_gym_baselines.runtime import jax_compilation_cache

    with jax_compilation_cache(None) as folder:
        assert folder is None or "DOORS_GYM_JAX_CACHE" in __import__("os").environ
    folder = tmp_path / "jax-cache"
    outputs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", CACHE_SCRIPT, str(folder)], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert outputs[0]["cache"] == str(folder) and any(folder.iterdir()), "the first run stored its programs"
    assert outputs[0]["hits"] == 0 and outputs[1]["hits"] >= 1, outputs
