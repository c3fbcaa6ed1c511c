"""``DQNConfig`` validation, its dict round trip, the epsilon schedule, and bad values on the command line."""

import dataclasses
import json
import math
import pathlib
import subprocess
import sys

import pytest
from stacks import needs

from doors_gym import cli
from doors_gym_baselines import cli as baselines_cli
from doors_gym_baselines.api import Arm
from doors_gym_baselines.config import DQNConfig

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "field, value",
    [
        ("learning_rate", -1e-3),
        ("learning_rate", 0.0),
        ("learning_rate", math.nan),
        ("learning_rate", math.inf),
        ("optimizer", "rmsprop"),
        ("loss", "l1"),
        ("env_id", "Foo-v0"),
        ("gamma", 1.5),
        ("gamma", -0.1),
        ("start_epsilon", 2.0),
        ("exploration_fraction", -0.5),
        ("hidden_sizes", ()),
        ("hidden_sizes", (64, 0)),
        ("num_envs", 0),
        ("num_envs", 2.5),
        ("total_steps", -10),
        ("train_frequency", 0),
        ("target_update", 0),
        ("learning_starts", -1),
        ("eval_every", -1),
        ("num_seeds", 0),
        ("rolling_episodes", True),
        ("vectorization", "threads"),
        ("grid_size", (2, 15)),
        ("n_doors", 0),
        ("max_episode_steps", 0),
        ("cell_planes", "no"),
        ("cell_planes", False),
    ],
)
def test_a_bad_value_raises_a_value_error_naming_the_field_and_the_value(field, value):
    with pytest.raises(ValueError) as caught:
        DQNConfig.of(**{field: value})
    message = str(caught.value)
    assert field in message
    assert repr(value) in message


def test_batch_larger_than_buffer_names_both_fields():
    with pytest.raises(ValueError) as caught:
        DQNConfig.of(batch_size=512, buffer_size=100)
    message = str(caught.value)
    assert "batch_size=512" in message and "buffer_size=100" in message


def test_the_relative_rows_alone_need_the_relative_inputs():
    with pytest.raises(ValueError, match="cell_planes=False needs relative_inputs=True"):
        DQNConfig.of(cell_planes=False)
    assert DQNConfig.of(cell_planes=False, relative_inputs=True).hyperparameters.cell_planes is False


def test_more_envs_than_steps_is_an_error():
    with pytest.raises(ValueError, match="num_envs=32"):
        DQNConfig.of(num_envs=32, total_steps=16)


def test_the_defaults_and_edge_values_are_valid():
    config = DQNConfig()
    assert config.hyperparameters.batch_size <= config.hyperparameters.buffer_size
    DQNConfig.of(batch_size=100, buffer_size=100, gamma=1.0, end_epsilon=0.0, learning_starts=0, eval_every=0)
    DQNConfig.of(env_id="DoorsJax-v0", optimizer="sgd", loss="mse", vectorization="sync", hidden_sizes=(8,))


def test_the_config_is_frozen():
    config = DQNConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.learning_rate = 1.0


def test_params_and_num_iterations_follow_the_fields():
    config = DQNConfig.of(grid_size=(5, 7), n_doors=2, max_episode_steps=9, num_envs=8, total_steps=100)
    assert config.params.grid_size == (5, 7)
    assert config.params.n_doors == 2
    assert config.params.max_episode_steps == 9
    assert config.num_iterations == 12


def test_to_dict_from_dict_round_trip():
    config = DQNConfig.of(
        env_id="DoorsJax-v0",
        grid_size=(5, 7),
        n_doors=2,
        hidden_sizes=(32, 16, 8),
        learning_rate=3e-4,
        optimizer="sgd",
        loss="mse",
        seed=7,
        stop_when_solved=True,
    )
    values = config.to_dict()
    assert values["hyperparameters"]["hidden_sizes"] == [32, 16, 8]
    assert values["run"]["grid_size"] == [5, 7]
    # Plain types only: the dict survives JSON unchanged.
    assert json.loads(json.dumps(values)) == values
    restored = DQNConfig.from_dict(json.loads(json.dumps(values)))
    assert restored == config
    assert restored.hyperparameters.hidden_sizes == (32, 16, 8)
    assert isinstance(restored.run.grid_size, tuple)


def test_from_dict_rejects_an_unknown_key():
    values = DQNConfig().to_dict()
    values["hyperparameters"]["learning_rat"] = 0.1
    with pytest.raises(ValueError, match="learning_rat"):
        DQNConfig.from_dict(values)


def test_from_dict_validates_values():
    values = DQNConfig().to_dict()
    values["hyperparameters"]["learning_rate"] = -2.0
    with pytest.raises(ValueError, match="learning_rate"):
        DQNConfig.from_dict(values)


def test_epsilon_decays_linearly_then_stays_flat():
    config = DQNConfig.of(start_epsilon=1.0, end_epsilon=0.1, exploration_fraction=0.25, total_steps=4000)
    duration = 0.25 * 4000
    assert config.epsilon(0) == pytest.approx(1.0)
    assert config.epsilon(duration / 2) == pytest.approx(0.55)
    assert config.epsilon(duration / 4) == pytest.approx(0.775)
    assert config.epsilon(duration) == pytest.approx(0.1)
    for step in (duration + 1, 2 * duration, 4000, 10_000):
        assert config.epsilon(step) == pytest.approx(0.1)
    values = [config.epsilon(step) for step in range(0, 4001, 50)]
    assert all(later <= earlier for earlier, later in zip(values, values[1:]))


def test_epsilon_with_no_exploration_phase_is_the_end_value():
    config = DQNConfig.of(start_epsilon=0.5, end_epsilon=0.05, exploration_fraction=0.0, total_steps=1000)
    assert config.epsilon(1) == pytest.approx(0.05)
    assert config.epsilon(500) == pytest.approx(0.05)


def test_add_config_arguments_has_one_flag_per_field():
    import argparse

    parser = argparse.ArgumentParser(parents=[cli.layout_parser()])
    baselines_cli.add_train_arguments(parser, ("torch-numpy", "torch-jax"))
    from doors_gym_baselines.presets import load_preset

    # No flag: the arm's tuned preset; --full: the dataclasses' defaults and the study's budget.
    defaults = parser.parse_args([])
    assert baselines_cli.config_from_arguments(defaults) == load_preset("tuned", "torch-numpy").config()
    full = baselines_cli.config_from_arguments(parser.parse_args(["--full"]))
    assert full == DQNConfig().replace(total_steps=500_000, eval_every=25_000)
    args = parser.parse_args(
        [
            "--arm",
            "torch-jax",
            "--hidden-sizes",
            "32",
            "16",
            "--no-quiet",
            "--stop-when-solved",
            "--learning-rate",
            "0.01",
        ]
    )
    config = baselines_cli.config_from_arguments(args)
    assert config.run.env_id == "DoorsJax-v0"
    assert config.hyperparameters.hidden_sizes == (32, 16)
    assert config.run.stop_when_solved is True and config.run.quiet is False
    assert config.hyperparameters.learning_rate == pytest.approx(0.01)


@pytest.fixture
def no_training(monkeypatch):
    """Replaces every arm's ``train`` with one that fails the test if it runs."""

    def forbidden(*args, **kwargs):
        pytest.fail("training started although the config was invalid")

    monkeypatch.setattr(Arm, "train", forbidden)


@pytest.mark.parametrize(
    "arguments, flag",
    [
        (["--learning-rate", "-1"], "--learning-rate"),
        (["--learning-rate", "0"], "--learning-rate"),
        (["--optimizer", "rmsprop"], "--optimizer"),
        (["--env", "Foo-v0"], "--env"),  # the arm names the env: --env is not a train flag
        (["--batch-size", "512", "--buffer-size", "100"], "--batch-size"),
        (["--gamma", "1.5"], "--gamma"),
        (["--vectorization", "threads"], "--vectorization"),
    ],
)
@pytest.mark.parametrize("arm", ["torch-numpy", "flax-jax", "flax-scan"])
def test_train_with_a_bad_value_exits_2_before_training(arguments, flag, arm, no_training, capsys):
    needs("torch" if arm.startswith("torch") else "flax")
    with pytest.raises(SystemExit) as caught:
        cli.main(["train", "--arm", arm, *arguments])
    assert caught.value.code == 2
    captured = capsys.readouterr()
    assert flag in captured.err
    assert "usage:" in captured.err
    assert captured.out == ""


def test_batch_larger_than_buffer_on_the_command_line_names_both_flags(no_training, capsys):
    with pytest.raises(SystemExit) as caught:
        cli.main(["train", "--batch-size", "512", "--buffer-size", "100"])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "--batch-size 512" in err and "--buffer-size 100" in err


def test_an_arm_module_cli_rejects_a_bad_value_before_training(capsys, monkeypatch):
    dqn_torch = needs("doors_gym_baselines.learners.dqn_torch")

    def forbidden(*args, **kwargs):
        pytest.fail("training started although the config was invalid")

    monkeypatch.setattr(Arm, "train", forbidden)
    with pytest.raises(SystemExit) as caught:
        cli.main(["train", "--arm", dqn_torch.TORCH_NUMPY.name, "--learning-rate", "-1"])
    assert caught.value.code == 2
    assert "--learning-rate -1.0" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["train", "enjoy"])
def test_help_exits_0(command, capsys):
    with pytest.raises(SystemExit) as caught:
        cli.main([command, "--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage:")
    if command == "train":
        for flag in ("--arm", "--learning-rate", "--grid-size", "--num-seeds", "--save", "--hidden-sizes"):
            assert flag in out
    else:
        assert "--out" in out and "model" in out


def test_python_m_doors_gym_baselines_train_help():
    needs("torch")
    completed = subprocess.run(
        [sys.executable, "-m", "doors_gym_baselines", "train", "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert "usage: doors-gym train" in completed.stdout
    assert "--learning-rate" in completed.stdout
