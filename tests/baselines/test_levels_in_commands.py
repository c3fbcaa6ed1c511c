"""``--level`` in every command that builds an env: one object for the level a run trains at
(``levels.TrainingLevel``: its layout and time limit, ids, bar and presets), built once by the command line, and
the commands that read it."""

from __future__ import annotations

import pytest

from doors_gym import cli
from doors_gym.levels import LEVELS, STUDY, get_level
from doors_gym_baselines.experiments import compare
from doors_gym_baselines import presets
from doors_gym_baselines.api import Arm
from doors_gym_baselines.arm import PURE_FUNCTIONS
from doors_gym_baselines.config import RunSettings
from doors_gym_baselines.levels import TrainingLevel


@pytest.mark.parametrize("level", [level.name for level in LEVELS])
def test_a_level_maps_to_its_layout_and_time_limit_in_one_place(level) -> None:
    custom = RunSettings(grid_size=(9, 21), n_doors=4, seed=7, quiet=True)
    run = TrainingLevel.named(level, custom).at(custom)
    if level == STUDY:
        assert run == custom  # the study's level keeps the flags' own layout
    else:
        assert run.params == get_level(level).params()
        assert (run.seed, run.quiet) == (7, True)  # the machinery is left as it was
    with pytest.raises(ValueError, match="level='Huge' is unknown"):
        TrainingLevel.named("Huge")


@pytest.mark.parametrize("name", ["study", "Random", "3Walls", "31x31"])
def test_a_training_level_carries_its_ids_time_limit_and_presets(name) -> None:
    level, row = TrainingLevel.named(name), get_level(name)
    assert (level.env_id, level.jax_env_id) == (row.env_id, row.jax_env_id)
    assert (level.env_id_of("Doors-v0"), level.env_id_of("DoorsJax-v0")) == (row.env_id, row.jax_env_id)
    assert level.max_episode_steps == row.max_episode_steps == level.params.max_episode_steps
    assert level.at(RunSettings()).params == row.params()
    assert set(level.settings) == {"grid_size", "n_doors", "door_cols", "max_episode_steps", "n_walls", "doors"}
    assert level.shared_preset == presets.level_preset(name)
    assert level.preset("shared", "flax-scan") == presets.preset_at("shared", "flax-scan", name)
    assert level.preset("quick", "flax-scan").name == "quick"  # a built-in name other than tuned/shared: as it is


def test_a_training_level_carries_the_bar_of_solved_there() -> None:
    from doors_gym.oracle import level_figures

    assert TrainingLevel.named(STUDY).solved_reward == 0.75  # Doors-v0's bar, the study's
    assert TrainingLevel.named("Random").solved_reward == level_figures("Random").solved_rolling_reward < 0.75


def test_the_flags_layout_is_the_studys_level_with_the_layouts_time_limit() -> None:
    flags = {"grid_size": [9, 21], "n_doors": None, "door_cols": None, "max_episode_steps": None, "n_walls": 2,
             "doors": "random"}  # fmt: skip
    level = TrainingLevel.from_flags(None, flags)
    assert level.name == STUDY and level.max_episode_steps == 3 * 30
    assert (level.params.n_walls, level.params.random_doors, level.layout.n_doors) == (2, True, None)
    assert level.env_id == "Doors-v0" and level.jax_env_id == "DoorsJax-v0"  # no registered level's layout
    assert TrainingLevel.from_flags(None, {**flags, "max_episode_steps": 40}).max_episode_steps == 40
    random = TrainingLevel.from_flags(None, {"doors": "random"})  # Random's layout, given by the flags
    assert random.name == STUDY and random.env_id == "Doors-Random-v0"
    with pytest.raises(ValueError, match=r"level='Random' sets the layout: grid_size=\(9, 21\), n_walls=2"):
        TrainingLevel.from_flags("Random", flags)
    with pytest.raises(ValueError, match="level='Random' sets the time limit: max_episode_steps=40"):
        TrainingLevel.from_flags("Random", {"max_episode_steps": 40})
    with pytest.raises(ValueError, match="level='Huge' is unknown"):
        TrainingLevel.from_flags("Huge", {})


def counted_levels(monkeypatch) -> list:
    """Every ``TrainingLevel`` the command line builds from its flags (``from_flags``), counted."""
    built: list = []
    from_flags = TrainingLevel.from_flags.__func__

    def counted(cls, name, flags):
        built.append(from_flags(cls, name, flags))
        return built[-1]

    monkeypatch.setattr(TrainingLevel, "from_flags", classmethod(counted))
    return built


def test_the_command_line_resolves_a_level_once_and_hands_it_to_compare(monkeypatch) -> None:
    from doors_gym_baselines.experiments import compare as comparison

    built = counted_levels(monkeypatch)
    seen: dict = {}

    def fake_compare(options, run, executor, level):
        seen.update(options=options, run=run, level=level)
        raise SystemExit(0)  # the arguments are all this test needs

    monkeypatch.setattr(comparison, "compare", fake_compare)
    with pytest.raises(SystemExit):
        cli.main(["compare", "--arms", "torch-numpy", "--level", "3Walls", "--seeds", "1"])
    (level,) = built
    assert seen["level"] is level and level.name == "3Walls"
    assert seen["run"].params == get_level("3Walls").params()
    built.clear()
    with pytest.raises(SystemExit):
        cli.main(["compare", "--arms", "torch-numpy", "--grid-size", "9", "21"])  # the study's level, any layout
    assert seen["level"] is built[0] and seen["level"].name == STUDY and seen["run"].grid_size == (9, 21)


def test_a_comparison_refuses_a_level_other_than_its_own() -> None:
    options = compare.CompareOptions(level="3Walls", arms=("torch-numpy",))
    with pytest.raises(ValueError, match="level='Random' is not the comparison's: expected '3Walls'"):
        compare.plan(options, level=TrainingLevel.named("Random"))


def captured_train_configs(monkeypatch) -> list:
    seen: list = []

    def fake_train(arm, config, trial=None):
        seen.append(config)
        raise SystemExit(0)  # the config is all these tests need

    monkeypatch.setattr(Arm, "train", fake_train)
    return seen


def test_train_at_a_level_trains_there_with_the_levels_preset(monkeypatch) -> None:
    seen = captured_train_configs(monkeypatch)
    built = counted_levels(monkeypatch)
    for argv in (["--level", "31x31"], ["--level", "31x31", "--total-steps", "5000", "--gamma", "0.95"]):
        with pytest.raises(SystemExit):
            cli.main(["train", "--arm", "flax-numpy", *argv])
    shared = presets.level_preset("31x31")
    plain, typed = seen
    assert plain.params == get_level("31x31").params()
    assert plain.hyperparameters.hidden_sizes == tuple(shared.hyperparameters["hidden_sizes"])
    assert plain.hyperparameters.gamma == shared.hyperparameters["gamma"] == 0.99
    assert plain.run.total_steps == shared.run["total_steps"]
    assert (typed.run.total_steps, typed.hyperparameters.gamma) == (5000, 0.95)  # the flags over the level's preset
    assert typed.params == plain.params
    assert [level.name for level in built] == ["31x31", "31x31"]  # one level resolved per command


def test_layout_flags_take_the_layouts_time_limit(monkeypatch) -> None:
    seen = captured_train_configs(monkeypatch)
    for argv in ([], ["--grid-size", "9", "21", "--n-walls", "2", "--doors", "random"], ["--max-episode-steps", "40"]):
        with pytest.raises(SystemExit):
            cli.main(["train", "--arm", "torch-numpy", *argv])
    study, layout, limited = seen
    assert study.params == get_level(STUDY).params()  # Doors-v0's own time limit, 60
    assert (layout.params.n_walls, layout.params.random_doors, layout.run.max_episode_steps) == (2, True, 3 * 30)
    assert limited.run.max_episode_steps == 40


@pytest.mark.parametrize(
    ("command", "given", "named"),
    [
        ("train", ["--grid-size", "9", "9"], "grid_size"),
        ("train", ["--n-walls", "2"], "n_walls"),
        ("train", ["--max-episode-steps", "50"], "max_episode_steps"),
        ("tune", ["--door-cols", "1", "5", "9"], "door_cols"),
        ("compare", ["--n-doors", "2"], "n_doors"),
        ("train", ["--doors", "random"], "doors"),
        ("compare", ["--max-episode-steps", "50"], "max_episode_steps"),
    ],
)
def test_a_layout_flag_beside_a_level_is_an_error_naming_both(command, given, named, capsys) -> None:
    arm = ["--arms" if command == "compare" else "--arm", "flax-numpy"]
    with pytest.raises(SystemExit) as raised:
        cli.main([command, *arm, "--level", "3Walls", *given])
    assert raised.value.code == 2
    error = capsys.readouterr().err
    assert "--level '3Walls' sets the" in error and f"--{named.replace('_', '-')}" in error


def test_tune_at_a_level_starts_from_the_levels_preset_and_budget(monkeypatch) -> None:
    from doors_gym_baselines import tuning
    from doors_gym_baselines.arms import get_arm
    from doors_gym_baselines.tuning.command import start_point

    seen: dict = {}
    monkeypatch.setattr(tuning, "tune", lambda options, run: seen.update(options=options, run=run) or None)
    monkeypatch.setattr(tuning, "describe", lambda study, options: "described")
    assert cli.main(["tune", "--arm", "flax-scan", "--level", "63x63", "--no-models"]) == 0
    options, run = seen["options"], seen["run"]
    shared = presets.level_preset("63x63")
    assert run.params == get_level("63x63").params()
    assert (run.total_steps, run.eval_every, run.hold_out_steps) == tuple(
        shared.run[name] for name in ("total_steps", "eval_every", "hold_out_steps")
    )
    assert options.resolved_study_name == "dqn-flax-scan-time-to-solved-63x63"
    assert options.resolved_start_from == "shared"
    start = start_point(get_arm("flax-scan"), options.resolved_start_from, options.level)
    assert start.gamma == 0.99 and start.hidden_sizes == tuple(shared.hyperparameters["hidden_sizes"])
    assert cli.main(["tune", "--arm", "flax-scan", "--level", "63x63", "--total-steps", "9000"]) == 0
    assert seen["run"].total_steps == 9000 and seen["run"].eval_every == shared.run["eval_every"]


def test_a_tuned_preset_at_a_level_is_what_tuned_means_there(tmp_path, monkeypatch) -> None:
    for name in ("shared.yml", "level-3Walls.yml"):  # the installed shared presets, in a folder of the test's own
        (tmp_path / name).write_text((presets.HYPERPARAMS_DIR / name).read_text())
    monkeypatch.setattr(presets, "HYPERPARAMS_DIR", tmp_path)
    options = compare.CompareOptions(level="3Walls", arms=("flax-scan", "torch-numpy"))
    assert options.run_name == "compare-shared-3Walls"
    assert options.preset_config("flax-scan")[1].name == "shared-3Walls"
    own = tmp_path / "3Walls" / "flax-scan.yml"
    own.parent.mkdir()
    own.write_text("hyperparameters: {gamma: 0.97, hidden_sizes: [32, 32]}\nrun: {total_steps: 12345}\n")
    assert presets.tuned_path("flax-scan", "3Walls") == own
    config, preset = options.preset_config("flax-scan")
    assert preset.name == "tuned-3Walls" and config.hyperparameters.gamma == 0.97
    assert config.run.total_steps == 12345 and config.params == get_level("3Walls").params()
    assert options.preset_config("torch-numpy")[1].name == "shared-3Walls"  # an arm without one: the level's shared
    assert options.run_name == "compare-tuned-3Walls"
    shared = compare.CompareOptions(level="3Walls", preset="shared", arms=("flax-scan",))
    assert shared.preset_config("flax-scan")[1].name == "shared-3Walls"  # --shared stays like for like


def test_the_studys_level_typed_beside_a_layout_flag_is_an_error_too(capsys) -> None:
    with pytest.raises(SystemExit):
        cli.main(["train", "--arm", "flax-numpy", "--level", "study", "--grid-size", "9", "9"])
    assert "--level 'study' sets the layout: --grid-size (9, 9)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arm_name", "label_of"),
    [
        ("torch-numpy", lambda level: level.env_id),
        ("flax-jax", lambda level: level.jax_env_id),
        ("flax-scan", lambda level: PURE_FUNCTIONS),
    ],
)
def test_what_an_arm_steps_is_named_at_the_level_it_trains(arm_name, label_of) -> None:
    from doors_gym_baselines import tracking
    from doors_gym_baselines.arm import env_label_at
    from doors_gym_baselines.arms import get_arm

    arm = get_arm(arm_name)
    assert env_label_at(arm, get_level(STUDY).params()) == arm.env_label  # Doors-v0's runs are named as before
    for level in (get_level("3Walls"), get_level("63x63")):
        assert env_label_at(arm, level.params()) == label_of(level)
        assert tracking.run_tags(arm, level.params())["env_id"] == label_of(level)
    assert tracking.run_tags(arm)["env_id"] == arm.env_label


def test_train_at_a_level_names_the_levels_env_in_its_summary_and_run(tmp_path, capsys, load_arm) -> None:
    import json

    import mlflow

    load_arm("flax")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    argv = [
        "train", "--arm", "flax-jax", "--level", "3Walls", "--total-steps", "1000", "--learning-starts", "500",
        "--num-envs", "4", "--eval-every", "0", "--quiet", "--track", "--tracking-uri", uri,
    ]  # fmt: skip
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    summary, _ = json.JSONDecoder().raw_decode(out[out.index("{") :])
    assert summary["env_id"] == "DoorsJax-3Walls-v0"
    client = mlflow.MlflowClient(uri)
    (run,) = client.search_runs([experiment.experiment_id for experiment in client.search_experiments()])
    assert run.data.tags["env_id"] == "DoorsJax-3Walls-v0"
