"""The baselines' commands behave as one program: one arm vocabulary, flags mapped to the right dataclass,
the save path checked before training, model files recognised by content."""

from __future__ import annotations

import numpy as np
import pytest
from stacks import needs

from doors_gym import cli
from doors_gym_baselines import arms, serving
from doors_gym_baselines.experiments import compare
from doors_gym_baselines.api import Arm
from doors_gym_baselines.arms import ARMS


def test_compare_flags_reach_the_options_and_the_run_settings(monkeypatch, tmp_path):
    seen = {}

    def fake_compare(options, run, executor=None, level=None):
        seen.update(options=options, run=run, executor=executor, level=level)
        oracle = {"greedy_success_rate": 1.0, "rolling_reward": 0.776}
        return compare.Outcome(rows=[], oracle=oracle, table="a table", paths={}, run_id="x")

    monkeypatch.setattr(compare, "compare", fake_compare)
    argv = ["compare", "--full", "--arms", "flax-scan", "--grid-size", "9", "21", "--n-doors", "4", "--quiet"]
    assert cli.main([*argv, "--out", str(tmp_path)]) == 0
    options, run = seen["options"], seen["run"]
    assert options.preset == "full" and options.arms == ("flax-scan",) and options.total_steps is None
    assert run.grid_size == (9, 21) and run.n_doors == 4 and run.quiet is True
    assert seen["level"].name == "study" and seen["level"].at(run) == run  # the flags' layout, resolved once
    # The preset's budget stands unless --total-steps overrides it.
    config, preset = options.preset_config("flax-scan", run)
    assert config.run.total_steps == 500_000 and config.params.grid_size == (9, 21) and preset.label == "full"
    # --preset takes a name or a file, as the switches do.
    assert cli.main(["compare", "--preset", "quick", "--out", str(tmp_path)]) == 0
    assert seen["options"].preset == "quick"
    assert cli.main(["compare", "--out", str(tmp_path)]) == 0
    assert seen["options"].preset == "tuned" and seen["executor"].name == "local"
    # --executor dask builds the cluster's client lazily: nothing starts until a run is sent.
    assert cli.main(["compare", "--out", str(tmp_path), "--executor", "dask", "--workers", "3"]) == 0
    assert (seen["executor"].name, seen["executor"].workers, seen["executor"].address) == ("dask", 3, None)
    with pytest.raises(SystemExit):
        cli.main(["compare", "--out", str(tmp_path), "--workers", "3"])  # --workers needs --executor dask


def test_tune_flags_reach_the_study_and_every_trial(monkeypatch):
    from doors_gym_baselines import tuning

    seen = {}
    monkeypatch.setattr(tuning, "tune", lambda options, run: seen.update(options=options, run=run) or None)
    monkeypatch.setattr(tuning, "describe", lambda study, options: "described")
    argv = ["tune", "--arm", "torch-jax", "--n-trials", "3", "--total-steps", "4000", "--grid-size", "5", "7"]
    assert cli.main([*argv, "--seed", "9", "--no-models"]) == 0
    options, run = seen["options"], seen["run"]
    assert (options.arm, options.n_trials, options.models) == ("torch-jax", 3, False)
    assert (run.total_steps, run.eval_every, run.seed, run.grid_size) == (4000, 10_000, 9, (5, 7))
    assert run.hold_out_steps == 20_000 and options.objective == "time-to-solved" and options.tuning_seeds == 10


def test_every_command_takes_the_same_arm_names_and_layout_flags(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # help lines unwrapped, so no name breaks at a hyphen
    for command in ("train", "tune", "compare"):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        text = capsys.readouterr().out
        for flag in ("--grid-size", "--n-doors", "--door-cols", "--max-episode-steps"):
            assert flag in text, (command, flag)
        for name in ARMS:
            assert name in text, (command, name)


def test_every_flag_has_a_help_line():
    parser = cli.build_parser()
    commands = next(action for action in parser._actions if action.dest == "command")
    for name, subparser in commands.choices.items():
        for action in subparser._actions:
            assert action.help, f"doors-gym {name} {action.option_strings or action.dest} has no help line"


def test_save_into_a_missing_folder_creates_it_before_training(tmp_path, capsys, monkeypatch):
    needs("flax")
    path = tmp_path / "new" / "folder" / "model.bin"
    argv = ["train", "--arm", "flax-numpy", "--total-steps", "600", "--learning-starts", "100", "--num-envs", "4"]
    assert cli.main([*argv, "--eval-every", "0", "--quiet", "--save", str(path)]) == 0
    assert path.is_file() and f"saved the model to {path}" in capsys.readouterr().out
    # A path that cannot be written fails before any training.
    monkeypatch.setattr(Arm, "train", lambda *args, **kwargs: pytest.fail("training started"))
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    with pytest.raises(SystemExit) as caught:
        cli.main([*argv, "--save", str(blocked / "model.bin")])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "--save" in err and "cannot be written" in err and "usage: doors-gym train" in err


@pytest.mark.parametrize(("arm", "name"), [("flax", "model.pt"), ("torch", "model.msgpack"), ("torch", "model")])
def test_a_model_file_is_recognised_by_content_not_name(arm, name, trained, tmp_path):
    module, result = trained(arm, "Doors-v0")
    path = tmp_path / name
    module.save_model(result, str(path))
    loaded_arm, model, config = serving.load_model(path)
    assert loaded_arm.name == result.arm and config == result.config
    obs = np.zeros((1, 225), dtype=np.int16)
    obs[0, 3], obs[0, 220] = 3, 1
    np.testing.assert_array_equal(loaded_arm.act(model, obs), result.model.act(obs))


def test_a_foreign_file_is_refused_clearly(tmp_path):
    path = tmp_path / "notes.pt"
    path.write_text("hello")
    with pytest.raises(ValueError, match="is not a doors-gym model file"):
        serving.load_model(path)


def test_num_seeds_is_an_error_for_arms_that_train_one_seed(capsys):
    with pytest.raises(SystemExit) as caught:
        cli.main(["train", "--arm", "torch-numpy", "--num-seeds", "4"])
    assert caught.value.code == 2
    assert "--num-seeds 4 is not supported by the torch-numpy arm" in capsys.readouterr().err


def test_python_m_doors_gym_baselines_runs_the_commands():
    import subprocess
    import sys

    completed = subprocess.run(
        [sys.executable, "-m", "doors_gym_baselines", "tune", "--help"], capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("usage: doors-gym tune") and "--n-trials" in completed.stdout


def test_train_starts_from_the_arms_tuned_preset_and_the_flags_override_it(monkeypatch, capsys):
    from doors_gym_baselines.presets import load_preset

    seen = []

    def fake_train(arm, config, trial=None):
        seen.append(config)
        raise SystemExit(0)  # the config is all this test needs

    monkeypatch.setattr(Arm, "train", fake_train)
    for argv in (["--arm", "flax-numpy"], ["--arm", "flax-numpy", "--batch-size", "64", "--total-steps", "9000"]):
        with pytest.raises(SystemExit):
            cli.main(["train", *argv])
    tuned = load_preset("tuned", "flax-numpy").config()
    plain, typed = seen
    assert plain.hyperparameters == tuned.hyperparameters and plain.run.stop_when_solved
    assert (plain.run.total_steps, plain.run.hold_out_steps) == (tuned.run.total_steps, tuned.run.hold_out_steps)
    assert typed.hyperparameters.batch_size == 64 and typed.run.total_steps == 9000
    assert typed.hyperparameters.hidden_sizes == tuned.hyperparameters.hidden_sizes  # the rest from the preset
    with pytest.raises(SystemExit):
        cli.main(["train", "--arm", "torch-numpy", "--full"])
    assert seen[-1].hyperparameters == load_preset("full", "torch-numpy").config().hyperparameters
    assert seen[-1].run.total_steps == 500_000


def test_naming_the_arms_imports_no_framework():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import doors_gym_baselines\n"
        "from doors_gym import cli\n"
        "from doors_gym_baselines.arms import ARMS, REFERENCE_ARM\n"
        "cli.build_parser()\n"
        "assert list(ARMS)[0] == REFERENCE_ARM.name == 'torch-numpy'\n"
        "print(sorted(name for name in ('torch', 'jax', 'flax', 'optax') if name in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("name", ["torch-numpy", "torch-jax", "torch-compile", "flax-numpy", "flax-jax"])
def test_an_arm_hands_its_own_record_to_the_host_loop(name, monkeypatch):
    needs("torch" if name.startswith("torch") else "flax")
    from doors_gym_baselines import harness
    from doors_gym_baselines.config import DQNConfig

    arm = arms.get_arm(name)
    assert arm.module().__name__ == arms.ARMS.entries[name][0].module  # the file its entry point names
    monkeypatch.setattr(harness, "train", lambda record, make_learner, config, trial: (record, config, trial))
    record, config, trial = arm.train(DQNConfig.of(env_id="Doors-v0"), trial="a trial")
    assert record is arm and config.run.env_id == arm.env_id and trial == "a trial"
