"""Saved models: save -> load gives identical Q-values and config; ``enjoy`` writes playable videos."""

import gymnasium as gym
import numpy as np
import pytest
from stacks import needs

from doors_gym import cli, rendering
from doors_gym_baselines.serving import enjoy
from doors_gym_baselines.learners.cells import encode

FLAX_SCAN_SEEDS = 2


@pytest.fixture(scope="module")
def observations() -> np.ndarray:
    """``(40, H * W)`` int8 observations of ``Doors-v0``: resets and a few random steps after them."""
    env = gym.make("Doors-v0")
    rng = np.random.default_rng(0)
    batch = []
    for seed in range(20):
        obs, _ = env.reset(seed=seed)
        batch.append(obs)
        for _ in range(3):
            obs, *_ = env.step(int(rng.integers(0, 5)))
        batch.append(obs)
    env.close()
    return np.stack(batch)


def torch_q_values(network, observations):
    """The network's Q-values for grid observations (the networks read the grids' cells)."""
    import torch

    with torch.no_grad():
        return network(torch.as_tensor(encode(observations))).numpy()


def flax_q_values(network, params, observations):
    return np.asarray(network.apply(params, encode(observations)))


def test_torch_save_load_gives_identical_q_values(trained, observations, tmp_path):
    dqn_torch, result = trained("torch", "Doors-v0")
    path = tmp_path / "model.pt"
    dqn_torch.save_model(result, str(path))
    _, learner, config = dqn_torch.load_model(str(path))
    network = learner.network
    expected = torch_q_values(result.model.network, observations)
    loaded = torch_q_values(network, observations)
    assert loaded.shape == (len(observations), 5)
    np.testing.assert_array_equal(loaded, expected)
    assert config == result.config
    assert not network.training  # loaded for inference
    # The file holds plain types and tensors only: it loads with weights_only=True.
    import torch

    saved = torch.load(path, weights_only=True)
    assert saved["arm"] == "torch-numpy"
    assert saved["config"] == result.config.to_dict()


def test_flax_save_load_gives_identical_q_values(trained, observations, tmp_path):
    dqn_flax, result = trained("flax", "DoorsJax-v0")
    path = tmp_path / "model.msgpack"
    dqn_flax.save_model(result, str(path))
    _, policy, config = dqn_flax.load_model(str(path))
    expected = flax_q_values(result.model.network, result.model.params, observations)
    loaded = flax_q_values(policy.network, policy.params, observations)
    assert loaded.shape == (len(observations), 5)
    np.testing.assert_array_equal(loaded, expected)
    assert config == result.config


@pytest.mark.slow
@pytest.mark.parametrize("seed_index", [0, 1])
def test_flax_scan_saves_one_seed_in_the_flax_format(trained, observations, tmp_path, seed_index, load_arm):
    jax = needs("jax")
    dqn_flax = load_arm("flax")
    dqn_flax_scan, result = trained("flax-scan", num_seeds=FLAX_SCAN_SEEDS)
    path = tmp_path / "scan.msgpack"
    dqn_flax_scan.save_model(result, str(path), seed_index=seed_index)
    _, policy, config = dqn_flax.load_model(str(path))
    trained_network, stacked = result.model.network, result.model.params
    per_seed = [
        flax_q_values(trained_network, jax.tree.map(lambda leaf, i=i: leaf[i], stacked), observations)
        for i in range(FLAX_SCAN_SEEDS)
    ]
    loaded = flax_q_values(policy.network, policy.params, observations)
    np.testing.assert_array_equal(loaded, per_seed[seed_index])
    assert not np.array_equal(loaded, per_seed[1 - seed_index])
    assert config == result.config


@pytest.mark.parametrize("arm, suffix", [("torch", ".pt"), ("flax", ".msgpack")])
@pytest.mark.parametrize("video", [".mp4", ".gif"])
def test_enjoy_writes_a_playable_video(trained, tmp_path, arm, suffix, video):
    module, result = trained(arm, "Doors-v0")
    model_path = tmp_path / f"model{suffix}"
    module.save_model(result, str(model_path))
    out = tmp_path / f"greedy{video}"
    figures = enjoy.enjoy(model_path, episodes=2, out=out)
    assert out.is_file()
    frames = rendering.read_video_frame_count(out)
    assert frames > 1
    assert frames == figures["frames"]
    # One frame per reset and per step: at least two frames per episode, at most the time limit plus one.
    assert 2 * 2 <= figures["frames"] <= 2 * (result.config.run.max_episode_steps + 1)
    assert 0.0 <= figures["success_rate"] <= 1.0


def test_enjoy_plays_the_greedy_policy_of_the_model(trained, tmp_path):
    dqn_torch, result = trained("torch", "Doors-v0")
    model_path = tmp_path / "model.pt"
    dqn_torch.save_model(result, str(model_path))
    policy, config = enjoy.load_policy(model_path)
    assert config == result.config
    env = gym.make("Doors-v0")
    obs, _ = env.reset(seed=3)
    env.close()
    expected = int(torch_q_values(result.model.network, obs[None]).argmax())
    assert policy(obs) == expected


def test_enjoy_with_a_missing_file_raises_value_error(tmp_path):
    missing = tmp_path / "nowhere.pt"
    with pytest.raises(ValueError, match="nowhere.pt"):
        enjoy.enjoy(missing, episodes=1, out=tmp_path / "x.gif")
    assert not (tmp_path / "x.gif").exists()


def test_enjoy_with_a_bad_video_suffix_raises_value_error(tmp_path):
    with pytest.raises(ValueError, match=r"\.avi"):
        enjoy.enjoy(tmp_path / "model.pt", episodes=1, out=tmp_path / "x.avi")


def test_cli_enjoy_writes_a_gif(trained, tmp_path, capsys):
    dqn_flax, result = trained("flax", "Doors-v0")
    model_path = tmp_path / "model.msgpack"
    dqn_flax.save_model(result, str(model_path))
    out = tmp_path / "x.gif"
    assert cli.main(["enjoy", str(model_path), "--episodes", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    frames = rendering.read_video_frame_count(out)
    assert frames > 1
    assert f"wrote {frames} frames to {out}" in printed
    assert "1 greedy episode(s)" in printed


def test_cli_enjoy_with_a_missing_file_exits_2(tmp_path, capsys):
    needs("torch")
    with pytest.raises(SystemExit) as caught:
        cli.main(["enjoy", str(tmp_path / "nowhere.pt"), "--out", str(tmp_path / "x.gif")])
    assert caught.value.code == 2
    assert "nowhere.pt" in capsys.readouterr().err


def _damaged_files(tmp_path, trained):
    """Every kind of bad model file, by name: truncated archives of both frameworks, foreign files."""
    import zipfile

    dqn_torch, torch_result = trained("torch", "Doors-v0")
    dqn_flax, flax_result = trained("flax", "Doors-v0")
    torch_path, flax_path = tmp_path / "good.pt", tmp_path / "good.msgpack"
    dqn_torch.save_model(torch_result, str(torch_path))
    dqn_flax.save_model(flax_result, str(flax_path))
    files = {
        "truncated torch": torch_path.read_bytes()[: torch_path.stat().st_size // 2],
        "truncated flax": flax_path.read_bytes()[: flax_path.stat().st_size // 2],
        "empty": b"",
        "text": b"hello, not a model\n",
        "pickle": __import__("pickle").dumps({"format": "doors-gym-dqn"}),
    }
    paths = {}
    for name, data in files.items():
        paths[name] = tmp_path / name.replace(" ", "-")
        paths[name].write_bytes(data)
    paths["foreign zip"] = tmp_path / "foreign.zip"
    with zipfile.ZipFile(paths["foreign zip"], "w") as archive:
        archive.writestr("readme.txt", "a zip that torch did not write")
    return paths


@pytest.mark.parametrize(
    "kind", ["truncated torch", "truncated flax", "empty", "text", "pickle", "foreign zip"]
)
def test_every_bad_model_file_is_one_line_naming_the_file(kind, trained, tmp_path, capsys):
    needs("torch")
    needs("flax")
    path = _damaged_files(tmp_path, trained)[kind]
    with pytest.raises(SystemExit) as caught:
        cli.main(["enjoy", str(path), "--out", str(tmp_path / "x.gif")])
    assert caught.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert "Traceback" not in "\n".join(error)
    assert error[-1].startswith("doors-gym enjoy: error: ") and str(path) in error[-1], error
    assert not (tmp_path / "x.gif").exists()


def test_a_model_of_the_other_framework_is_refused_naming_the_arm(trained, tmp_path):
    needs("torch")
    from doors_gym_baselines.arms import get_arm

    dqn_flax, result = trained("flax", "Doors-v0")
    path = tmp_path / "flax.msgpack"
    dqn_flax.save_model(result, str(path))
    with pytest.raises(ValueError, match=r"is not a model file of the torch-numpy arm: it does not begin as its torch"):
        get_arm("torch-numpy").load(path)
