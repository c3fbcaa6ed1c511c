"""Trained agents as real MLflow models: pyfunc for every arm, the registry's champion, MLflow's own server."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import numpy as np
import pytest
from stacks import needs

mlflow = needs("mlflow")
needs("flax")
needs("torch")

from doors_gym import cli  # noqa: E402
from doors_gym_baselines import serving, tracking  # noqa: E402
from doors_gym_baselines.arms import ARMS, get_arm  # noqa: E402
from doors_gym_baselines.config import DQNConfig  # noqa: E402
from doors_gym_baselines.harness.evaluation import all_start_states  # noqa: E402

TINY = dict(
    total_steps=1_500, num_envs=8, learning_starts=300, buffer_size=2_000, batch_size=32, hidden_sizes=(32,),
    eval_every=0, quiet=True, profile=False,
)  # fmt: skip


def observations(count: int = 40) -> np.ndarray:
    """Start grids and random grids (some with the agent on the goal): int16 ``(count, 225)``."""
    from doors_gym.core import DoorsParams, observation

    params = DoorsParams()
    starts = np.asarray(observation(params, all_start_states(params)))
    rng = np.random.default_rng(0)
    grids = starts[rng.choice(len(starts), count)].copy()
    agent = grids == 1
    grids[agent] = 0
    grids[np.arange(count), rng.integers(0, 225, count)] = 1  # agents anywhere, sometimes on the goal
    return grids


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    """Every arm trained on a tiny budget and logged as an MLflow model: ``{arm: (result, model URI)}``."""
    folder = tmp_path_factory.mktemp("serving")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    tracking.connect(uri, "serving")
    out = {}
    for name in filter(ARMS.is_builtin, ARMS):  # a plug-in's models are its own package's tests'
        arm = get_arm(name)
        config = DQNConfig.of(**TINY, num_seeds=2 if arm.seeds_in_one_run else 1)
        with mlflow.start_run(run_name=name):
            result = arm.train(config)
            out[name] = (result, serving.log_model(result, seed_index=config.run.num_seeds - 1))
    return uri, out


@pytest.mark.slow
def test_pyfunc_predicts_the_arms_own_greedy_actions(logged):
    uri, models = logged
    obs = observations()
    for name, (result, model_uri) in models.items():
        arm = get_arm(name)
        model = mlflow.pyfunc.load_model(model_uri)
        predicted = model.predict(obs)
        seed_index = result.config.run.num_seeds - 1
        own = result.model.policy(seed_index) if arm.seeds_in_one_run else result.model
        np.testing.assert_array_equal(predicted["action"].to_numpy(), arm.act(own, obs), err_msg=name)
        q_values = predicted[list(serving.Q_COLUMNS)].to_numpy()
        np.testing.assert_allclose(q_values, own.q_values(obs), rtol=1e-5, atol=1e-6, err_msg=name)
        # The model carries a signature and an input example, and no pickled python model.
        info = mlflow.models.get_model_info(model_uri)
        assert list(info.signature.inputs.to_dict()[0]["tensor-spec"]["shape"]) == [-1, 225]
        assert [column["name"] for column in info.signature.outputs.to_dict()][0] == "action"
        local = pathlib.Path(mlflow.artifacts.download_artifacts(model_uri))
        assert not list(local.rglob("*.pkl")) and (local / "input_example.json").exists()


@pytest.mark.slow
def test_torch_arms_keep_their_native_flavour(logged):
    torch = needs("torch")
    _, models = logged
    result, model_uri = models["torch-numpy"]
    native = mlflow.pytorch.load_model(model_uri.replace("/model", "/torch-model"))
    obs = observations(5)
    with torch.no_grad():
        np.testing.assert_allclose(native(torch.as_tensor(obs)).numpy(), result.model.q_values(obs), rtol=1e-5)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_mlflow_serves_the_champion_over_http(logged, tmp_path):
    uri, models = logged
    result, model_uri = models["flax-scan"]
    mlflow.set_tracking_uri(uri)
    version = serving.register_champion(get_arm("flax-scan"), model_uri)
    assert version >= 1
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "models", "serve", "-m", "models:/doors-flax-scan@champion",
         "--host", "127.0.0.1", "--port", str(port), "--env-manager", "local"],
        # MLflow starts uvicorn by name: the interpreter's scripts come first on PATH, as in an activated venv.
        env={**os.environ, "MLFLOW_TRACKING_URI": uri, "MLFLOW_DISABLE_TELEMETRY": "true",
             "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])},
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert server.poll() is None, server.stdout.read().decode()[-3000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=2) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.5)
        else:
            pytest.fail("the MLflow server did not answer /ping within 180 s")
        obs = observations(12)
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/invocations",
            data=json.dumps({"inputs": obs.tolist()}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            predictions = json.loads(response.read())["predictions"]
        actions = [row["action"] for row in predictions]
        seed_index = result.config.run.num_seeds - 1
        assert actions == result.model.policy(seed_index).act(obs).tolist()
        assert set(predictions[0]) == {"action", *serving.Q_COLUMNS}
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    assert server.poll() is not None


def test_train_track_logs_a_run_with_a_loadable_model(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    argv = ["train", "--arm", "flax-numpy", "--total-steps", "800", "--learning-starts", "200", "--num-envs", "4"]
    argv += ["--eval-every", "400", "--quiet", "--track", "--tracking-uri", uri, "--experiment", "tracked"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "tracked as MLflow run" in out
    client = mlflow.MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("tracked").experiment_id])
    assert len(runs) == 1
    run = runs[0]
    assert run.data.tags["arm"] == "flax-numpy" and run.data.params["total_steps"] == "800"
    assert [point.step for point in client.get_metric_history(run.info.run_id, "greedy_step_reward")] == [400, 800]
    assert "seconds_update" in run.data.metrics and "final_rolling_reward" in run.data.metrics
    model = mlflow.pyfunc.load_model(f"runs:/{run.info.run_id}/model")
    assert model.predict(observations(3))["action"].between(0, 4).all()


def test_enjoy_renders_a_registered_champion(logged, tmp_path, capsys):
    uri, models = logged
    _, model_uri = models["torch-numpy"]
    mlflow.set_tracking_uri(uri)
    serving.register_champion(get_arm("torch-numpy"), model_uri)
    out = tmp_path / "champion.gif"
    argv = ["enjoy", "models:/doors-torch-numpy@champion", "--episodes", "1", "--out", str(out), "--tracking-uri", uri]
    assert cli.main(argv) == 0
    assert out.is_file() and "1 greedy episode(s)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("arm_name", "changes", "level_name"),
    [
        ("torch-numpy", {}, "3Walls"),
        ("torch-numpy", {"relative_inputs": True}, "3Walls"),
        ("flax-scan", {"relative_inputs": True}, "3Walls"),
        pytest.param("flax-numpy", {}, "63x63", marks=pytest.mark.slow),
    ],
)
def test_a_model_at_a_level_with_random_doors_logs_and_predicts_on_that_levels_observations(
    arm_name, changes, level_name, tmp_path
):
    """The input example holds the level's doors (a start of the greedy evaluation), the pyfunc model acts
    as the arm does on that level's observations (a relative-input network included), and ``enjoy`` plays it
    at its level."""
    from doors_gym.levels import get_level
    from doors_gym_baselines.levels import TrainingLevel
    from doors_gym_baselines.serving.enjoy import enjoy
    from doors_gym_baselines.harness.evaluation import start_observations

    level = get_level(level_name)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracking.connect(uri, "levels")
    arm = get_arm(arm_name)
    config = DQNConfig.of(**TINY, **TrainingLevel.named(level.name).settings, **changes, env_id=arm.env_id)
    with mlflow.start_run(run_name=arm_name):
        result = arm.train(config)
        model_uri = serving.log_model(result)
    obs = start_observations(level.params(), 16)
    example = serving.example_observations(level.params())
    np.testing.assert_array_equal(example, obs[:2])
    walls = example.reshape(2, *level.grid_size)[:, list(level.params().wall_rows)]
    assert (walls != 2).sum() == 2 * level.n_walls * level.n_doors  # its doors in every wall
    predicted = mlflow.pyfunc.load_model(model_uri).predict(obs)
    own = result.model.policy(0) if arm.seeds_in_one_run else result.model
    np.testing.assert_array_equal(predicted["action"].to_numpy(), arm.act(own, obs))
    figures = enjoy(model_uri, episodes=1, out=tmp_path / "level.gif", tracking_uri=uri)
    assert figures["env_id"] == level.env_id and figures["cell_pixels"] == (10 if level_name == "63x63" else 24)
