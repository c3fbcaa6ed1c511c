"""The qtable arm as doors-gym runs it: found by its entry point, trained, saved, played and compared."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from doors_gym_baselines.api import HistoryRow, RunSettings
from doors_gym_baselines.arms import ARMS
from doors_gym_baselines.serving import load_model
from doors_gym_qtable.arm import ARM, RollingWindow
from doors_gym_qtable.qlearning import QHyperparameters
from doors_gym_qtable.qlearning import Metrics

DOORS_GYM = pathlib.Path(sys.executable).with_name("doors-gym")


def run(cwd: pathlib.Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SDL_VIDEODRIVER": "dummy"}
    return subprocess.run([str(DOORS_GYM), *argv], capture_output=True, text=True, timeout=600, cwd=cwd, env=env)


def test_the_entry_point_names_this_arm_with_its_package():
    assert "qtable" in list(ARMS) and not ARMS.is_builtin("qtable")
    arm = ARMS["qtable"]
    assert arm.trainer is ARM.trainer and arm.package.startswith("doors-gym-qtable ")


def test_training_reaches_a_solved_table_and_its_file_plays_it_back(tmp_path):
    config = ARM.config(
        learning_rate=1.0, gamma=0.8, num_envs=1, start_epsilon=0.0, end_epsilon=0.0,
        total_steps=100_000, eval_every=5_000, stop_when_solved=True, hold_out_steps=10_000, seed=3, num_seeds=2,
    )  # fmt: skip
    assert isinstance(config.hyperparameters, QHyperparameters)
    result = ARMS["qtable"].train(config)
    assert result.solved and all(seed.solved for seed in result.per_seed)
    assert result.env_steps < 2 * 100_000 and isinstance(result.history[-1], HistoryRow)  # stopped once solved
    assert result.timings.compile > 0 and result.timings.update > 0
    path = ARMS["qtable"].save(result, tmp_path / "q.bin", seed_index=1)
    arm, model, loaded = load_model(path)  # told by its magic, no arm named
    assert arm.name == "qtable" and loaded == result.config
    np.testing.assert_array_equal(model.tables[0], result.model.tables[1])
    # The model's own act (grids -> cells -> table) plays what the jitted evaluation measured.
    from doors_gym_baselines.harness.evaluation import evaluate_greedy

    assert evaluate_greedy(model.act, loaded.params).success_rate == result.per_seed[1].greedy_success_rate


def test_a_hyperparameter_a_table_does_not_have_is_an_error():
    with pytest.raises(ValueError, match=r"config fields \['hidden_sizes'\] are unknown: .*\(QHyperparameters\)"):
        ARM.config(hidden_sizes=(64,))
    with pytest.raises(ValueError, match=r"gamma=1.0 is out of range"):  # checked as the algorithm checks it
        QHyperparameters(gamma=1.0)


def test_a_dqn_config_is_refused_naming_the_arms_own(tmp_path):
    from doors_gym_baselines.config import DQNConfig

    with pytest.raises(ValueError, match=r"not the qtable arm's: it trains with QHyperparameters"):
        ARMS["qtable"].configure(DQNConfig())
    done = run(tmp_path, "train", "--arm", "qtable", "--hidden-sizes", "64", "--total-steps", "1000")
    assert done.returncode == 2 and "--hidden-sizes (64,) is not a hyperparameter of the qtable arm" in done.stderr


def test_the_rolling_window_holds_the_last_episodes():
    window = RollingWindow(agents=1, episodes=3)
    window.add(Metrics(np.array([[0.5, 0.1, 0.2, 0.3]]), np.array([[1, 0, 2, 1]]), np.array([[1, 0, 1, 1]])))
    figures = window.figures(0)  # the last two iterations hold the last three episodes
    assert figures.rolling_reward == pytest.approx(0.25) and figures.train_success_rate == pytest.approx(2 / 3)


def test_compare_puts_it_beside_a_dqn_arm(tmp_path):
    done = run(
        tmp_path, "compare", "--arms", "flax-numpy", "qtable", "--preset", "quick", "--seeds", "2",
        "--total-steps", "20000", "--eval-every", "10000", "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}",
        "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    seeds = (tmp_path / "out" / "compare_seeds.csv").read_text().splitlines()[1:]
    assert [row.split(",")[1] for row in seeds] == ["flax-numpy"] * 2 + ["qtable"] * 2 + ["qtable-together"] * 2
    table = (tmp_path / "out" / "compare.md").read_text()
    assert "Q-table + JAX env, one jitted scan" in table and "2 seeds in one run" in table
    played = run(tmp_path, "enjoy", "models:/doors-qtable@champion", "--tracking-uri",
                 f"sqlite:///{tmp_path / 'mlflow.db'}", "--episodes", "1", "--out", "champion.gif")  # fmt: skip
    assert played.returncode == 0, played.stderr[-3000:]
    assert json.dumps("champion.gif")[1:-1] in played.stdout
    import mlflow

    from doors_gym_baselines.serving import example_observations

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    served = mlflow.pyfunc.load_model("models:/doors-qtable@champion")  # MLflow's own loader, as a server runs it
    frame = served.predict(example_observations(RunSettings().params))
    assert list(frame.columns) == ["action", "q_stay", "q_right", "q_down", "q_left", "q_up"]
    assert (frame["action"].to_numpy() == frame.iloc[:, 1:].to_numpy().argmax(axis=1)).all()
