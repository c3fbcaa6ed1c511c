"""Every DQN arm trains in-process on a tiny budget and shows a learning signal."""

import dataclasses
import json
import math

import numpy as np
import pytest
from stacks import needs

from doors_gym import cli
from doors_gym_baselines.harness import evaluation
from doors_gym_baselines.config import DQNConfig

HISTORY_KEYS = {
    "step",
    "seconds",
    "greedy_success_rate",
    "greedy_step_reward",
    "greedy_normalised_return",
    "loss",
    "rolling_reward",
    "train_success_rate",
    "train_normalised_return",
}
"""The learning-curve figures of :class:`doors_gym_baselines.harness.metrics.HistoryRow` that every arm reports."""

HOST_LOOP_RUNS = [("torch", "Doors-v0"), ("torch", "DoorsJax-v0"), ("flax", "Doors-v0"), ("flax", "DoorsJax-v0")]


def assert_learning_signal(result, random_evaluation):
    """Updates ran, the loss fell, and the greedy policy beats random play on every start/goal pair."""
    assert result.env_steps > 0
    assert result.updates > 0
    assert len(result.losses) > 50
    losses = np.asarray(result.losses, dtype=np.float64)
    assert np.all(np.isfinite(losses))
    fifth = len(losses) // 5
    early, late = losses[:fifth].mean(), losses[-fifth:].mean()
    assert late < early, f"the loss did not fall: first fifth {early:.4f}, last fifth {late:.4f}"
    evaluation = result.evaluation
    assert evaluation.episodes >= result.config.params.width**2
    assert evaluation.mean_step_reward > random_evaluation.mean_step_reward + 0.05
    assert evaluation.normalised_return > random_evaluation.normalised_return
    assert math.isfinite(result.rolling_reward)


def assert_history(result):
    """Every row has the learning-curve keys; the last one is the final evaluation."""
    assert result.history, "no history rows"
    for row in result.history:
        missing = HISTORY_KEYS - {spec.name for spec in dataclasses.fields(row)}
        assert not missing, f"a history row lacks {sorted(missing)}"
    steps = [row.step for row in result.history]
    assert steps == sorted(steps)
    last = result.history[-1]
    assert last.greedy_step_reward == pytest.approx(result.evaluation.mean_step_reward)
    assert last.greedy_success_rate == pytest.approx(result.evaluation.success_rate)
    assert last.rolling_reward == pytest.approx(result.rolling_reward)
    assert math.isfinite(last.loss) and last.seconds > 0


@pytest.mark.parametrize("arm, env_id", HOST_LOOP_RUNS)
def test_host_loop_arm_learns(arm, env_id, trained, random_evaluation):
    _, result = trained(arm, env_id)
    config = result.config
    hyper = config.hyperparameters
    assert result.arm == {"Doors-v0": f"{arm}-numpy", "DoorsJax-v0": f"{arm}-jax"}[env_id]
    assert config.run.env_id == env_id
    assert result.env_steps == config.num_iterations * hyper.num_envs == config.run.total_steps
    # One update per vector step once more than learning_starts env steps are done (train_frequency 1).
    expected_updates = sum(1 for i in range(config.num_iterations) if (i + 1) * hyper.num_envs > hyper.learning_starts)
    assert result.updates == expected_updates == len(result.losses)
    assert_learning_signal(result, random_evaluation)
    assert_history(result)
    assert len(result.history) == 1  # eval_every=0: only the final evaluation
    assert result.history[-1].step == result.env_steps


@pytest.mark.parametrize("arm, env_id", HOST_LOOP_RUNS)
def test_host_loop_arm_returns_the_model_it_evaluated(arm, env_id, trained):
    module, result = trained(arm, env_id)
    assert evaluation.evaluate_greedy(result.model.act, result.config.params) == result.evaluation


@pytest.mark.slow
def test_flax_scan_learns_with_two_seeds(trained, random_evaluation):
    _, result = trained("flax-scan", num_seeds=2)
    config = result.config
    assert result.arm == "flax-scan"
    assert result.env_steps == 2 * config.num_iterations * config.hyperparameters.num_envs
    assert_learning_signal(result, random_evaluation)
    assert_history(result)
    per_seed = result.history[-1].per_seed
    assert len(per_seed) == 2
    assert [seed.seed for seed in per_seed] == [config.run.seed, config.run.seed + 1]
    # The headline figure is the mean over the seeds, and each seed learned on its own.
    assert result.evaluation.mean_step_reward == pytest.approx(np.mean([s.greedy_step_reward for s in per_seed]))
    for seed in per_seed:
        assert seed.greedy_step_reward > random_evaluation.mean_step_reward


@pytest.mark.slow
def test_flax_scan_seeds_train_different_parameters(trained):
    jax = needs("jax")
    _, result = trained("flax-scan", num_seeds=2)
    stacked = result.model.params
    leaves = jax.tree.leaves(stacked)
    assert leaves and all(leaf.shape[0] == 2 for leaf in leaves)
    differs = [not np.array_equal(np.asarray(leaf[0]), np.asarray(leaf[1])) for leaf in leaves]
    assert any(differs)
    assert all(differs), "some parameter is identical across the two seeds after training"


def test_flax_scan_init_depends_on_the_key(load_arm, tiny_config):
    jax = needs("jax")
    dqn_flax_scan = load_arm("flax-scan")
    config = DQNConfig.of(**tiny_config)
    init = dqn_flax_scan.make_train(config).init
    first, second = init(jax.random.key(1)), init(jax.random.key(2))
    kernels = [
        (np.asarray(a), np.asarray(b))
        for (path, a), b in zip(
            jax.tree_util.tree_leaves_with_path(first.learner.params), jax.tree.leaves(second.learner.params)
        )
        if "kernel" in jax.tree_util.keystr(path)
    ]
    assert len(kernels) == len(config.hyperparameters.hidden_sizes) + 1
    assert all(not np.array_equal(a, b) for a, b in kernels)
    # The env starts come from the key too.
    assert not np.array_equal(np.asarray(first.env_state.goal_col), np.asarray(second.env_state.goal_col))
    # init is pure: the same key gives the same parameters.
    again = init(jax.random.key(1))
    for a, b in zip(jax.tree.leaves(first.learner.params), jax.tree.leaves(again.learner.params)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_flax_scan_vmapped_init_gives_each_seed_its_own_parameters(load_arm, tiny_config):
    jax = needs("jax")
    dqn_flax_scan = load_arm("flax-scan")
    init = dqn_flax_scan.make_train(DQNConfig.of(**tiny_config)).init
    runners = jax.jit(jax.vmap(init))(jax.vmap(jax.random.key)(np.arange(2) + 1))
    kernels = [np.asarray(leaf) for leaf in jax.tree.leaves(runners.learner.params) if np.ndim(leaf) == 3]
    assert kernels
    for kernel in kernels:
        assert kernel.shape[0] == 2
        assert not np.array_equal(kernel[0], kernel[1])


def test_flax_scan_train_of_a_key_is_the_run_its_segments_make(load_arm):
    """``make_train(config).train(key)`` (PureJaxRL's one scan) and ``init`` + ``run_chunk`` segments (the host
    driver's) are two programs of the same iterations: the same updates, losses to float tolerance."""
    jax = needs("jax")
    dqn_flax_scan = load_arm("flax-scan")
    config = DQNConfig.of(
        total_steps=1_600, num_envs=8, learning_starts=400, batch_size=16, buffer_size=800, hidden_sizes=(16,),
        eval_every=0, quiet=True,
    )  # fmt: skip
    parts = dqn_flax_scan.make_train(config)
    assert config.num_iterations % parts.iterations_per_chunk == 0
    whole_runner, whole = jax.jit(parts.train)(jax.random.key(7))
    runner = jax.jit(parts.init)(jax.random.key(7))
    chunk = jax.jit(parts.run_chunk)
    segments = []
    for first in range(0, config.num_iterations, parts.iterations_per_chunk):
        runner, metrics = chunk(runner, np.int32(first))
        segments.append(jax.tree.map(np.asarray, metrics))
    learned = np.concatenate([metrics["learned"] for metrics in segments])
    np.testing.assert_array_equal(np.asarray(whole["learned"]), learned)
    assert learned.sum() == sum(1 for i in range(config.num_iterations) if (i + 1) * 8 > 400)
    losses = np.concatenate([metrics["loss"] for metrics in segments])[learned]
    np.testing.assert_allclose(np.asarray(whole["loss"])[learned], losses, rtol=1e-5)
    assert int(whole_runner.learner.updates) == int(runner.learner.updates) == learned.sum()


@pytest.mark.parametrize("algorithm", ["dqn", "pqn"])
def test_flax_scan_evaluates_every_eval_every_env_steps(algorithm, load_arm):
    """Where ``eval_every`` is shorter than a twentieth of the budget, the jitted arm's segments end at it, so it
    evaluates as often as the host loop: at the first vector step that reaches each multiple of ``eval_every``."""
    dqn_flax_scan = load_arm("flax-scan")
    config = DQNConfig.of(
        total_steps=4_000, num_envs=8, learning_starts=400, batch_size=16, buffer_size=800, hidden_sizes=(16,),
        eval_every=120, quiet=True, profile=False, stop_when_solved=False, algorithm=algorithm, rollout_steps=5,
        minibatches=2, layer_norm=algorithm == "pqn",
    )  # fmt: skip
    assert config.num_iterations // 20 * 8 > config.run.eval_every  # a twentieth would evaluate less often
    assert dqn_flax_scan.make_train(config).iterations_per_chunk == 15
    result = dqn_flax_scan.train(config)
    assert [row.step for row in result.history] == [*range(120, 4_000, 120), 4_000]


def test_cli_train_saves_the_model_and_prints_the_summary(tmp_path, capsys, load_arm):
    dqn_flax = load_arm("flax")
    model_path = tmp_path / "m.msgpack"
    argv = [
        "train", "--arm", "flax-jax", "--total-steps", "2000", "--learning-starts", "500",
        "--num-envs", "4", "--eval-every", "0", "--quiet", "--save", str(model_path),
    ]  # fmt: skip
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    summary, _ = json.JSONDecoder().raw_decode(out[out.index("{") :])
    assert summary["arm"] == "flax-jax"
    assert summary["env_id"] == "DoorsJax-v0"
    assert summary["env_steps"] == 2000
    assert summary["updates"] == sum(1 for i in range(500) if (i + 1) * 4 > 500)
    assert 0.0 <= summary["greedy_success_rate"] <= 1.0
    assert isinstance(summary["solved"], bool)
    assert f"saved the model to {model_path}" in out
    assert model_path.is_file() and model_path.stat().st_size > 0
    _, _, config = dqn_flax.load_model(str(model_path))
    values = (config.run.env_id, config.run.total_steps, config.hyperparameters.num_envs)
    assert (*values, config.hyperparameters.learning_starts) == ("DoorsJax-v0", 2000, 4, 500)


def test_dynamos_note_on_the_optimizers_profiler_labels_stays_off_the_terminal() -> None:
    """torch.compile of the gradient step logs "Profiler record function ... will be ignored" once per process
    (the optimizer's profiler labels): nothing to act on, so the arm drops that record and no other."""
    needs("torch")
    import logging

    import doors_gym_baselines.learners.dqn_torch_compile  # noqa: F401  (installs the filter)

    logger = logging.getLogger("torch._dynamo.variables.ctx_manager")
    note = "Profiler record function %s will be ignored"
    note = logger.makeRecord(logger.name, logging.WARNING, __file__, 1, note, (object,), None)
    other = logger.makeRecord(logger.name, logging.WARNING, __file__, 1, "Graph break in %s", ("step",), None)
    assert not logger.filter(note) and logger.filter(other)
