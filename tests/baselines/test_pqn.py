"""PQN in the fully jitted arm (``algorithm: pqn``): its Q(lambda) returns against their definition, its runs, its
checkpoints, a study's lanes, the host loop's and compiled torch's steps, and the settings it refuses."""

from __future__ import annotations

import numpy as np
import pytest
from stacks import needs
from test_resume import Killed, kill_at_chunk, save_every_segment, without_clocks  # noqa: F401 (a fixture)

from doors_gym_baselines.config import DQNConfig

needs("jax")
needs("flax")

SMALL = dict(
    algorithm="pqn", total_steps=3_200, num_envs=8, rollout_steps=6, epochs=2, minibatches=2, hidden_sizes=(16,),
    layer_norm=True, loss="mse", eval_every=800, quiet=True, profile=False, num_seeds=2,
)  # fmt: skip
"""400 vector steps in segments of 20: 66 whole rollouts of 6, so a segment ends part way through one."""


def forward_view_returns(rewards, terminated, ended, next_values, gamma: float, lam: float) -> np.ndarray:
    """Peng's Q(lambda) returns from their definition, per step and env: the lambda-weighted mean of the n-step
    returns ``G^(n) = sum_{i<n} gamma^i r_{t+i} + gamma^n (1 - terminated) V_{t+n-1}`` up to the episode's end or
    the rollout's last step, the last one taking the remaining weight ``lam^(N-1)``."""
    steps, envs = rewards.shape
    out = np.zeros((steps, envs))
    for env in range(envs):
        for t in range(steps):
            last = next((k for k in range(t, steps) if ended[k, env]), steps - 1)
            count = last - t + 1
            total, discount, mixed = 0.0, 1.0, 0.0
            for n in range(1, count + 1):
                k = t + n - 1
                total += discount * rewards[k, env]
                discount *= gamma
                n_step = total + discount * (1.0 - terminated[k, env]) * next_values[k, env]
                weight = (1.0 - lam) * lam ** (n - 1) if n < count else lam ** (count - 1)
                mixed += weight * n_step
            out[t, env] = mixed
    return out


def jax_lambda_returns(*arrays, gamma, lam):
    import jax.numpy as jnp

    from doors_gym_baselines.learners.pqn_scan import lambda_returns

    return np.asarray(lambda_returns(*map(jnp.asarray, arrays), gamma, lam))


def host_lambda_returns(*arrays, gamma, lam):
    from doors_gym_baselines.harness.pqn import lambda_returns

    return lambda_returns(*arrays, gamma, lam)


@pytest.mark.parametrize("implementation", [jax_lambda_returns, host_lambda_returns], ids=["jitted", "host"])
@pytest.mark.parametrize("lam", [0.0, 0.65, 1.0])
def test_the_lambda_returns_are_the_lambda_weighted_n_step_returns_to_each_episode_end(lam, implementation) -> None:
    rng = np.random.default_rng(7)
    steps, envs, gamma = 9, 5, 0.9
    rewards = rng.normal(size=(steps, envs)).astype(np.float32)
    ended = rng.random((steps, envs)) < 0.2
    terminated = ended & (rng.random((steps, envs)) < 0.5)  # the others ended at the time limit: they bootstrap
    next_values = rng.normal(size=(steps, envs)).astype(np.float32)
    got = implementation(rewards, terminated, ended, next_values, gamma=gamma, lam=lam)
    expected = forward_view_returns(rewards, terminated, ended, next_values, gamma, lam)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5, atol=1e-5)
    if lam == 0.0:  # one-step Q-learning targets
        np.testing.assert_allclose(np.asarray(got), rewards + gamma * (1 - terminated) * next_values, atol=1e-6)


def test_a_pqn_run_learns_at_each_rollouts_end_and_counts_its_updates() -> None:
    from doors_gym_baselines.learners.dqn_flax_scan import train

    config = DQNConfig.of(**SMALL)
    result = train(config)
    assert config.num_updates == 400 // 6 * 2 * 2
    assert result.updates == config.num_updates * SMALL["num_seeds"]
    assert len(result.losses) == 400 // 6 and np.isfinite(result.losses).all()  # a loss per learning phase
    assert result.env_steps == SMALL["total_steps"] * SMALL["num_seeds"]
    assert "PQN: Q(0.65) over rollouts of 6 steps of 8 envs" in config.hyperparameters.describe()


def test_a_pqn_run_of_the_jitted_arm_says_where_its_time_went() -> None:
    """Its profile times PQN's own pieces: acting, the env step and the learning phases (with the next states'
    values), so its ms per update is the learning phases' time over its updates, as in the host loop."""
    import math

    from doors_gym_baselines.learners.dqn_flax_scan import train

    result = train(DQNConfig.of(**{**SMALL, "profile": True}))
    timings = result.timings
    assert "compiled pieces" in timings.method
    for name in ("env_step", "action_selection", "update", "compile"):
        assert getattr(timings, name) > 0, name
    assert timings.replay_buffer == 0  # no replay
    assert timings.total == pytest.approx(result.wall_seconds, rel=1e-6)
    assert math.isfinite(result.ms_per_update) and result.ms_per_update > 0


def test_pqn_learns_doors_v0() -> None:
    from doors_gym_baselines.learners.dqn_flax_scan import train

    settings = {**SMALL, "total_steps": 120_000, "num_envs": 32, "rollout_steps": 16, "minibatches": 4,
                "hidden_sizes": (64, 64), "learning_rate": 1e-3, "gamma": 0.9, "eval_every": 0, "num_seeds": 1,
                "exploration_fraction": 0.3, "end_epsilon": 0.01}  # fmt: skip
    result = train(DQNConfig.of(**settings))
    assert result.evaluation.success_rate > 0.9  # an untrained network reaches the goal from few starts


def test_a_pqn_run_killed_part_way_through_a_rollout_resumes_and_learns_what_the_whole_run_learns(
    tmp_path, monkeypatch
) -> None:
    import jax

    from doors_gym_baselines.learners.dqn_flax_scan import train

    whole = train(DQNConfig.of(**SMALL))
    config = DQNConfig.of(**SMALL, checkpoint=str(tmp_path / "run.ckpt"))
    with monkeypatch.context() as patched:
        kill_at_chunk(patched, 8)  # seven segments (140 vector steps: part way through the 24th rollout) saved
        with pytest.raises(Killed):
            train(config)
    resumed = train(config)
    assert [entry["at_step"] for entry in resumed.facts["resumed"]] == [7 * SMALL["total_steps"] // 20]
    assert resumed.updates == whole.updates
    for mine, theirs in zip(jax.tree.leaves(resumed.model.params), jax.tree.leaves(whole.model.params), strict=True):
        np.testing.assert_array_equal(np.asarray(mine), np.asarray(theirs))
    np.testing.assert_array_equal(resumed.losses, whole.losses)
    for mine, theirs in zip(resumed.history, whole.history, strict=True):
        np.testing.assert_equal(without_clocks(mine), without_clocks(theirs))


HOST = {**SMALL, "num_seeds": 1, "total_steps": 60_000, "num_envs": 16, "rollout_steps": 16, "minibatches": 4,
        "hidden_sizes": (64, 64), "learning_rate": 1e-3, "gamma": 0.9, "eval_every": 0,
        "exploration_fraction": 0.3, "end_epsilon": 0.01}  # fmt: skip


@pytest.mark.parametrize(
    ("arm", "framework", "bar"),
    [("torch-numpy", "torch", 0.9), ("torch-compile", "torch", 0.6), ("flax-numpy", "flax", 0.9)],
)
def test_the_host_loop_trains_pqn_and_learns_doors_v0(arm: str, framework: str, bar: float) -> None:
    """Each host-loop arm's PQN run makes its updates and learns. The compiled arm's steps match the eager ones to
    float tolerance only (the test above), so its run takes other paths; its bar is lower (0.87 on our CPU)."""
    from doors_gym_baselines.arms import get_arm

    needs(framework)
    config = DQNConfig.of(**HOST)
    result = get_arm(arm).train(config)
    assert result.updates == config.num_updates == 60_000 // 16 // 16 * 2 * 4
    assert len(result.losses) == config.num_updates and np.isfinite(result.losses).all()
    assert result.evaluation.success_rate > bar  # an untrained network reaches the goal from few starts


def pqn_minibatches(config: DQNConfig, count: int) -> list[tuple[np.ndarray, ...]]:
    """``count`` minibatches ``(cells, actions, returns)`` of ``config``'s size on ``Doors-v0``, drawn from seed 0."""
    rng, size = np.random.default_rng(0), config.update_batch_size
    cells = lambda: np.stack([rng.integers(0, 225, size), rng.integers(0, 225, size)], axis=1).astype(np.int16)  # noqa: E731
    return [(cells(), rng.integers(0, 5, size), rng.normal(size=size).astype(np.float32)) for _ in range(count)]


def test_the_torch_learners_regression_on_returns_is_its_td_update_with_the_bootstrap_cut() -> None:
    """``regress`` leaves out the target network (its forward, its updates) that the TD update with ``terminated``
    set multiplies by zero, and takes the same steps: the same losses and parameters, bit for bit."""
    torch = needs("torch")
    from doors_gym_baselines.learners.dqn_torch import TorchLearner

    config = DQNConfig.of(**{**HOST, "target_update": 2, "max_grad_norm": 0.5})
    td, regression = TorchLearner(config), TorchLearner(config)
    for cells, actions, returns in pqn_minibatches(config, 6):
        cut = np.ones(len(cells), dtype=np.float32)
        want = td.update((cells, actions, returns, cells, cut))
        assert regression.regress((cells, actions, returns)).item() == want.item()
    assert regression.updates == td.updates == 6
    for mine, theirs in zip(regression.network.parameters(), td.network.parameters(), strict=True):
        torch.testing.assert_close(mine, theirs, rtol=0, atol=0)


def test_the_compiled_torch_arm_takes_the_eager_learners_pqn_steps_and_values() -> None:
    """``torch-compile`` trains PQN: its compiled regression and rollout values against the eager learner's, from the
    same network (to float tolerance: inductor fuses the ops its own way)."""
    torch = needs("torch")
    from doors_gym_baselines.arms import get_arm
    from doors_gym_baselines.learners.dqn_torch import TorchLearner
    from doors_gym_baselines.learners.dqn_torch_compile import CompiledTorchLearner

    config = get_arm("torch-compile").configure(DQNConfig.of(**{**HOST, "max_grad_norm": 0.5}))
    eager, compiled = TorchLearner(config), CompiledTorchLearner(config)
    assert compiled.compile_seconds > 0
    for cells, actions, returns in pqn_minibatches(config, 6):
        want = eager.regress((cells, actions, returns)).item()
        assert compiled.regress((cells, actions, returns)).item() == pytest.approx(want, rel=1e-5)
        np.testing.assert_allclose(compiled.max_values(cells), eager.max_values(cells), rtol=1e-5, atol=1e-6)
    assert compiled.updates == eager.updates == 6
    for mine, theirs in zip(compiled.network.parameters(), eager.network.parameters(), strict=True):
        torch.testing.assert_close(mine, theirs, rtol=1e-4, atol=1e-6)


def test_the_flax_regression_step_is_the_td_step_with_the_bootstrap_cut() -> None:
    """The pure step PQN takes in the Flax host loop and the jitted arm against the TD step with ``terminated`` set:
    the same losses and parameters (to float tolerance: two XLA programs, which another CPU may fuse apart); the
    regression leaves the target parameters as they were."""
    import jax
    import jax.numpy as jnp

    from doors_gym_baselines.learners import dqn_flax

    config = DQNConfig.of(**{**HOST, "target_update": 2, "max_grad_norm": 0.5})
    network, knobs = dqn_flax.make_network(config), dqn_flax.Knobs.of(config)
    params = dqn_flax.init_params(network, jax.random.key(0))
    start = dqn_flax.LearnerState(params, params, dqn_flax.make_optimizer(config).init(params), jnp.int32(0))
    td_step = jax.jit(lambda state, batch: dqn_flax.make_learning_step(network, config)(state, batch, knobs))
    regression_step = jax.jit(lambda state, batch: dqn_flax.make_regression_step(network, config)(state, batch, knobs))
    td = regression = start
    for cells, actions, returns in pqn_minibatches(config, 6):
        cut = np.ones(len(cells), dtype=np.float32)
        td, want = td_step(td, (cells, actions, returns, cells, cut))
        regression, loss = regression_step(regression, (cells, actions, returns))
        assert float(loss) == pytest.approx(float(want), rel=1e-6)
    assert int(regression.updates) == 6
    for mine, theirs in zip(jax.tree.leaves(regression.params), jax.tree.leaves(td.params), strict=True):
        np.testing.assert_allclose(np.asarray(mine), np.asarray(theirs), rtol=1e-5, atol=1e-7)
    for mine, theirs in zip(jax.tree.leaves(regression.target_params), jax.tree.leaves(params), strict=True):
        np.testing.assert_array_equal(np.asarray(mine), np.asarray(theirs))


def test_a_host_rollout_keeps_resets_out_and_ends_the_returns_before_them() -> None:
    from doors_gym_baselines.harness.pqn import RolloutStore

    store = RolloutStore(steps=3, num_envs=2, width=2)
    cells = np.array([[1, 2], [3, 4]], dtype=np.int16)
    ones = np.ones(2, dtype=np.float32)
    store.add(cells, np.array([0, 1]), ones, cells, np.array([True, False]), np.array([0, 1]), np.array([True, False]))
    store.add(cells[1:], np.array([2]), ones[1:], cells[1:], np.array([False]), np.array([1]), np.array([False]))
    assert not store.full
    neither = np.array([False, False])
    store.add(cells, np.array([3, 4]), ones, cells, neither, np.array([0, 1]), neither)
    assert store.full
    np.testing.assert_array_equal(store.real, [[True, True], [False, True], [True, True]])  # env 0 reset at step 1
    np.testing.assert_array_equal(store.ended, [[True, False], [True, False], [False, False]])
    np.testing.assert_array_equal(store.actions[:, 1], [1, 2, 4])
    assert store.rewards[1, 0] == 0.0 and not store.terminated[1, 0]


PQN_LANES = [
    dict(gamma=0.9, learning_rate=1e-3),
    dict(gamma=0.99, learning_rate=3e-4, max_grad_norm=0.5, lr_end_fraction=0.2, exploration_fraction=0.3),
]
"""Two trials' own knobs, as a study's lanes of one PQN program hold them (the rollout and network are the program's)."""


def test_each_pqn_lane_of_a_study_trains_as_its_trial_alone() -> None:
    from test_lanes import assert_each_lane_trains_as_alone

    from doors_gym_baselines.learners.pqn_scan import make_train

    settings = {**SMALL, "num_seeds": 1, "total_steps": 1_600}
    assert_each_lane_trains_as_alone(make_train, [DQNConfig.of(**settings, **lane) for lane in PQN_LANES])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"algorithm": "ppo"}, "algorithm='ppo'"),
        ({"td_lambda": 1.5}, r"td_lambda=1.5 is out of range: expected a number in \[0, 1\]"),
        ({"rollout_steps": 0}, "rollout_steps=0 is out of range: expected an integer >= 1"),
        ({"epochs": 0}, "epochs=0 is out of range: expected an integer >= 1"),
        ({"minibatches": 5}, "minibatches=5 does not divide rollout_steps \\* num_envs = 48"),
        ({"advantage_learning": 0.5}, "advantage_learning=0.5 with algorithm='pqn': PQN's returns take no"),
    ],
)
def test_bad_pqn_settings_name_the_value_and_what_is_allowed(change: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DQNConfig.of(**{**SMALL, **change})


@pytest.mark.parametrize("level", ["31x31", "63x63"])
def test_every_arm_trains_pqn_at_the_hard_rungs_on_the_level_preset(level: str) -> None:
    """The level preset is PQN, like for like in every DQN arm (``tuned`` falls back to it), and it takes the arm's
    program: ``configure`` accepts it in each arm."""
    from doors_gym_baselines import presets
    from doors_gym_baselines.arms import get_arm

    shared = presets.preset_at("shared", "flax-scan", level).config()
    assert shared.hyperparameters.algorithm == "pqn" and shared.hyperparameters.layer_norm
    for arm in ("torch-numpy", "torch-compile", "flax-numpy", "flax-jax", "flax-scan"):
        own = presets.preset_at("tuned", arm, level).config()
        assert own.hyperparameters == shared.hyperparameters, arm
        assert get_arm(arm).configure(own).hyperparameters.algorithm == "pqn"


def test_a_one_seed_program_with_layer_norm_runs_unbatched_as_its_vmap_computes() -> None:
    """The driver runs one seed a device with LayerNorm unbatched (XLA on a CPU reduces over a batch axis of size 1
    slowly); that chunk computes what the ``vmap`` over the one seed computes, to float tolerance."""
    import jax
    import jax.numpy as jnp

    from doors_gym_baselines.learners.pqn_scan import make_train
    from doors_gym_baselines.learners.scan_driver import SeedLayout, compile_run, seed_devices

    parts = make_train(DQNConfig.of(**{**SMALL, "num_seeds": 1}))
    assert parts.network.layer_norm
    layout = SeedLayout(jax.sharding.Mesh(np.array(seed_devices(1, 1)), ("seeds",)), [7], per_device=1)
    runner, unbatched = compile_run(parts, layout)
    batched = jax.jit(jax.vmap(parts.run_chunk, in_axes=(0, None)))
    mine, theirs = runner, jax.tree.map(jnp.copy, runner)  # the driver's chunk donates its runner
    for first in range(0, 200, parts.iterations_per_chunk):
        mine, _ = unbatched(mine, np.int32(first))
        theirs, _ = batched(theirs, np.int32(first))
    assert int(mine.learner.updates[0]) == int(theirs.learner.updates[0]) > 0
    for got, want in zip(jax.tree.leaves(mine.learner.params), jax.tree.leaves(theirs.learner.params), strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-3, atol=2e-4)
