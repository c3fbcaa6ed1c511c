"""Presets: the committed tuned presets of every arm, preset files and their errors, and compare's choice."""

from __future__ import annotations

import pathlib

import pytest

from doors_gym_baselines.experiments import compare
from doors_gym_baselines import presets
from doors_gym_baselines.arms import ARMS, get_arm
from doors_gym_baselines.config import Hyperparameters, RunSettings


@pytest.mark.parametrize("arm", list(filter(ARMS.is_builtin, ARMS)))  # a plug-in tunes its own
def test_every_arm_has_a_tuned_preset_from_a_finished_time_to_solved_study(arm: str) -> None:
    preset = presets.load_preset("tuned", arm)
    # The best of the studies' winners on this arm (benchmarks/preset_matrix.py): its own study's or another's.
    source = preset.study["matrix"]["candidate_of"]
    assert source in ARMS and preset.study["chosen_for"] == arm and arm in preset.study["matrix"]["mean_by_arm"]
    assert preset.study["study"] == f"dqn-{source}-time-to-solved" and preset.study["objective"] == "time-to-solved"
    assert preset.study["finished_trials"] >= 40
    assert 0 <= preset.study["seed"] <= 9, "tuned on the tuning seeds, apart from compare's"
    config = preset.config()
    assert config.run.stop_when_solved and config.run.hold_out_steps > 0
    assert set(preset.hyperparameters) == {name for name in Hyperparameters.__dataclass_fields__}
    assert preset.label == f"tuned (dqn-{source}-time-to-solved, trial {preset.study['trial']})"
    assert presets.tuned_path(arm).name == f"{arm}.yml"


def test_the_shared_preset_is_one_studys_winner_every_arm_solved_with() -> None:
    preset = presets.load_preset("shared", "torch-numpy")
    assert preset.label.startswith("shared (dqn-") and preset.study["chosen_for"] == "every arm"
    assert set(preset.study["matrix"]["mean_by_arm"]) == set(filter(ARMS.is_builtin, ARMS))  # every DQN arm
    assert preset.config().run.stop_when_solved and presets.SHARED not in presets.tuned_arms()
    assert presets.load_preset("shared", "flax-scan").hyperparameters == preset.hyperparameters  # one for all


def test_a_written_preset_reads_back_and_trains_the_same_config(tmp_path: pathlib.Path) -> None:
    hyperparameters = Hyperparameters(learning_rate=2e-3, hidden_sizes=(64, 32), double_dqn=True, num_envs=32)
    run = RunSettings(total_steps=50_000, eval_every=5_000, hold_out_steps=10_000, stop_when_solved=True)
    path = presets.write_preset(tmp_path / "deep" / "mine.yml", hyperparameters, run, {"study": "s", "trial": 3})
    preset = presets.load_preset(str(path), "flax-jax")
    config = preset.config(RunSettings(grid_size=(9, 21)))
    assert config.hyperparameters == hyperparameters and config.params.grid_size == (9, 21)
    assert (config.run.total_steps, config.run.eval_every, config.run.hold_out_steps) == (50_000, 5_000, 10_000)
    assert preset.label == "tuned (s, trial 3)".replace("tuned", str(path))
    # compare trains a file preset as given, for every arm it is asked for.
    row = compare.plan(compare.CompareOptions(arms=("flax-jax",), preset=str(path))).rows[0].row
    trained, origin = row.config, row.hyperparameters
    assert row.arm is get_arm("flax-jax") and trained.hyperparameters == hyperparameters
    assert trained.run.env_id == "DoorsJax-v0" and origin == preset.label


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- a list\n", "is not a mapping"),
        ("hyperparameters: {learning_rate: 0.01}\nextras: {}\n", r"sections \['extras'\] are unknown"),
        ("hyperparameters: {learning_rat: 0.01}\n", r"hyperparameters keys \['learning_rat'\] are unknown"),
        ("run: {seed: 3}\n", r"run keys \['seed'\] are unknown"),
        ("hyperparameters: {gamma: 1.5}\n", r"gamma=1.5 is out of range: expected a number in \[0, 1\]"),
        ("run: {total_steps: 0}\n", "total_steps=0 is out of range"),
        ("hyperparameters: [1\n", "cannot be read"),
        ("run: 3\n", "section 'run' is not a mapping"),
    ],
)
def test_a_bad_preset_file_names_the_file_and_the_bad_key(text: str, message: str, tmp_path: pathlib.Path) -> None:
    path = tmp_path / "bad.yml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as error:
        presets.load_preset(str(path), "torch-numpy")
    assert str(path) in str(error.value)


def test_a_missing_tuned_preset_says_how_to_make_one(tmp_path: pathlib.Path, monkeypatch) -> None:
    monkeypatch.setattr(presets, "HYPERPARAMS_DIR", tmp_path)
    with pytest.raises(ValueError, match=r"arm 'flax-jax' has no tuned preset .*doors-gym tune --arm flax-jax"):
        presets.load_preset("tuned", "flax-jax")
    names = r"\['tuned', 'shared', 'quick', 'full'\]"
    with pytest.raises(ValueError, match=rf"preset='fast' is neither one of {names} nor a file"):
        presets.load_preset("fast", "flax-jax")


def test_the_tuned_presets_ship_with_the_package() -> None:
    import tomllib

    pyproject = tomllib.loads((pathlib.Path(__file__).parents[2] / "pyproject.toml").read_text())
    setuptools = pyproject["tool"]["setuptools"]
    # A package of its own, so that setuptools ships its data without warning about an unlisted package.
    assert "doors_gym_baselines.hyperparams" in setuptools["packages"]
    assert "*.yml" in setuptools["package-data"]["doors_gym_baselines.hyperparams"]
    assert presets.HYPERPARAMS_DIR.name == "hyperparams" and presets.HYPERPARAMS_DIR.parent.name == "doors_gym_baselines"


def test_every_committed_preset_names_the_seeds_it_was_chosen_on_and_none_is_an_evaluation_seed() -> None:
    from doors_gym_baselines.config.seeds import FIRST_EVALUATION_SEED

    files = sorted(presets.HYPERPARAMS_DIR.rglob("*.yml"))
    assert len(files) >= 11, "the arms' tuned presets, the shared one and the levels'"
    for path in files:
        preset = presets.read_preset(path)
        assert preset.chosen_on, f"{path.name} names no seed it was chosen on (study: seeds: [...])"
        seen = [seed for seed in preset.chosen_on if seed >= FIRST_EVALUATION_SEED]
        assert not seen, f"{path.name} was chosen on evaluation seeds {seen}: choose on seeds below {FIRST_EVALUATION_SEED}"
    assert compare.FIRST_SEED == FIRST_EVALUATION_SEED, "compare and the ladder report on the seeds no choice saw"


def test_the_seeds_a_preset_names_are_read_at_any_depth_and_bad_ones_named(tmp_path: pathlib.Path) -> None:
    from doors_gym_baselines.config.seeds import seeds_named

    assert seeds_named({"seed": 7, "confirmed": {"seeds": [9, 0]}, "probes": [{"seeds": [3, 7]}]}) == (0, 3, 7, 9)
    assert seeds_named({"origin": "a sentence"}) == ()
    path = tmp_path / "bad.yml"
    path.write_text("study: {probe: {seeds: [1, two]}}\n")
    with pytest.raises(ValueError, match=r"study.probe.seeds=\[1, 'two'\] is not a seed or a list of seeds") as error:
        presets.load_preset(str(path), "torch-numpy")
    assert str(path) in str(error.value)


def test_a_comparison_on_a_seed_its_preset_was_chosen_on_says_so(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "seen.yml"
    path.write_text("study: {seeds: [2, 101]}\nrun: {total_steps: 1000}\n")
    with pytest.warns(UserWarning, match=r"chosen on seeds \[101\], which this run evaluates.*--first-seed 102"):
        compare.plan(compare.CompareOptions(arms=("torch-numpy",), preset=str(path), seeds=2, first_seed=100))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # seeds 102-103: none seen, nothing said
        compare.plan(compare.CompareOptions(arms=("torch-numpy",), preset=str(path), seeds=2, first_seed=102))
