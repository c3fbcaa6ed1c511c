"""``doors-gym compare --level L`` with models on, at every level whose doors are drawn per episode: each arm's
registered champion loads from MLflow and predicts on L's own observations (a short budget: this checks the
models, not the learning).

    python benchmarks/level_models.py --out /tmp/level-models        # Random, 3Walls, 31x31 and 63x63
    python benchmarks/level_models.py --levels 31x31 --arms flax-scan torch-numpy

Prints a table: level, arm, the model's input shape, the actions it predicts on 8 evaluation starts of the level
and whether they equal the arm's own greedy actions there.
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys

import numpy as np

from doors_gym.levels import LEVELS
from doors_gym_baselines.experiments.compare import DEFAULT_ARMS
from doors_gym_baselines.harness.evaluation import start_observations

RANDOM_DOOR_LEVELS = tuple(level.name for level in LEVELS if level.doors == "random")


def compare_at(level: str, arms: list[str], out: pathlib.Path, uri: str) -> None:
    """Runs ``doors-gym compare --level`` with models on (one seed, 4096 env steps per arm)."""
    command = [
        sys.executable, "-m", "doors_gym_baselines", "compare", "--level", level, "--arms", *arms, "--seeds", "1",
        "--total-steps", "4096", "--eval-every", "2048", "--out", str(out / level), "--tracking-uri", uri, "--quiet",
    ]  # fmt: skip
    subprocess.run(command, check=True)


def check_models(level_name: str, arms: list[str], uri: str) -> list[str]:
    """A table row per arm: its champion's predictions on the level's evaluation starts."""
    import mlflow

    from doors_gym.levels import get_level

    mlflow.set_tracking_uri(uri)
    level = get_level(level_name)
    obs = start_observations(level.params(), 8)
    rows = []
    for arm in arms:
        model = mlflow.pyfunc.load_model(f"models:/doors-{arm}@champion")
        schema = model.metadata.get_input_schema().inputs[0]
        actions = model.predict(obs)["action"].to_numpy()
        shape = tuple(schema.shape)
        fits = shape[1] == level.grid_size[0] * level.grid_size[1]
        rows.append(f"| {level_name} | {arm} | {shape} | {' '.join(map(str, actions))} | {fits and actions.size == 8} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", nargs="+", choices=RANDOM_DOOR_LEVELS, default=list(RANDOM_DOOR_LEVELS))
    parser.add_argument("--arms", nargs="+", default=list(DEFAULT_ARMS))
    parser.add_argument("--out", default="out/level-models")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    lines = ["| level | arm | input shape | actions on 8 evaluation starts | takes the level's grids |", "|---|---|---|---|---|"]
    for level in args.levels:
        uri = f"sqlite:///{(out / level).resolve()}/mlflow.db"
        (out / level).mkdir(parents=True, exist_ok=True)
        compare_at(level, args.arms, out, uri)
        lines.extend(check_models(level, args.arms, uri))
    print("\n".join(lines))
    assert np.all(["| True |" in line for line in lines[2:]]), "a model did not take its level's observations"


if __name__ == "__main__":
    main()
