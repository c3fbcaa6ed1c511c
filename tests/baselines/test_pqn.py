"""PQN in the fully jitted arm (``algorithm: pqn``): its Q(lambda) returns against their definition, its runs, its
checkpoints, and the arms and settings that refuse it."""

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


@pytest.mark.parametrize("lam", [0.0, 0.65, 1.0])
def test_the_lambda_returns_are_the_lambda_weighted_n_step_returns_to_each_episode_end(lam: float) -> None:
    import jax.numpy as jnp

    from doors_gym_baselines.learners.pqn_scan import lambda_returns

    rng = np.random.default_rng(7)
    steps, envs, gamma = 9, 5, 0.9
    rewards = rng.normal(size=(steps, envs)).astype(np.float32)
    ended = rng.random((steps, envs)) < 0.2
    terminated = ended & (rng.random((steps, envs)) < 0.5)  # the others ended at the time limit: they bootstrap
    next_values = rng.normal(size=(steps, envs)).astype(np.float32)
    got = lambda_returns(*map(jnp.asarray, (rewards, terminated, ended, next_values)), gamma, lam)
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


@pytest.mark.parametrize("arm", ["torch-numpy", "flax-numpy", "flax-jax"])
def test_an_arm_without_pqn_refuses_it_naming_the_arm_that_has_it(arm: str) -> None:
    from doors_gym_baselines.arms import get_arm

    record = get_arm(arm)
    with pytest.raises(ValueError, match=rf"algorithm='pqn' is not supported by the {arm} arm: expected one of dqn"):
        record.configure(DQNConfig.of(**{**SMALL, "num_seeds": 1}))


def test_the_lanes_of_a_study_refuse_pqn() -> None:
    from doors_gym_baselines.learners.pqn_scan import make_train

    with pytest.raises(ValueError, match="algorithm='pqn' cannot train as lanes"):
        make_train(DQNConfig.of(**SMALL), lanes=True)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"algorithm": "ppo"}, "algorithm='ppo'"),
        ({"td_lambda": 1.5}, r"td_lambda=1.5 is out of range: expected a number in \[0, 1\]"),
        ({"rollout_steps": 0}, "rollout_steps=0 is out of range: expected an integer >= 1"),
        ({"epochs": 0}, "epochs=0 is out of range: expected an integer >= 1"),
        ({"minibatches": 5}, "minibatches=5 does not divide rollout_steps \\* num_envs = 48"),
    ],
)
def test_bad_pqn_settings_name_the_value_and_what_is_allowed(change: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DQNConfig.of(**{**SMALL, **change})


@pytest.mark.parametrize("level", ["31x31", "63x63"])
def test_the_jitted_arm_trains_pqn_at_the_hard_rungs_on_the_level_presets_inputs_and_the_ladder_keeps_dqn(
    level: str,
) -> None:
    from doors_gym_baselines import presets

    own = presets.preset_at("tuned", "flax-scan", level).config().hyperparameters
    shared = presets.preset_at("shared", "flax-scan", level).config().hyperparameters
    assert own.algorithm == "pqn" and shared.algorithm == "dqn"
    assert presets.preset_at("tuned", "torch-numpy", level).config().hyperparameters.algorithm == "dqn"
    for name in ("hidden_sizes", "relative_inputs", "cell_planes", "gamma", "step_cost", "end_epsilon"):
        assert getattr(own, name) == getattr(shared, name), name
