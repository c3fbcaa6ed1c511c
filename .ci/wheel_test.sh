#!/usr/bin/env bash
# Release check: build the sdist and the wheel, check their metadata and contents, then install
# the wheel with the `jax` and `render` extras into a clean venv and use it as a newcomer would,
# from a directory outside the checkout (so only the installed files can be imported).
#
#   bash .ci/wheel_test.sh            # uses .venv/bin/python, which needs the `release` extra
#   PYTHON=python3 bash .ci/wheel_test.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-$root/.venv/bin/python}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
start=$SECONDS

echo "== build sdist and wheel (the wheel is built from the sdist)"
"$python" -m build --outdir "$work/dist" "$root" >"$work/build.log" 2>&1 || {
    cat "$work/build.log"
    exit 1
}
# A newcomer's `pip install .` prints what the build prints: no setuptools warning may be among it.
if grep -E "Warning|!!" "$work/build.log"; then
    echo "the build printed the warnings above" >&2
    exit 1
fi
wheel="$(ls "$work"/dist/*.whl)"
sdist="$(ls "$work"/dist/*.tar.gz)"
"$python" -m twine check --strict "$wheel" "$sdist"

echo "== contents"
"$python" - "$wheel" "$sdist" <<'EOF'
import pathlib
import sys
import tarfile
import zipfile

wheel, sdist = map(pathlib.Path, sys.argv[1:])
names = zipfile.ZipFile(wheel).namelist()
tops = sorted({name.split("/")[0] for name in names})
for required in ("doors_gym/__init__.py", "doors_gym/py.typed", "doors_gym/jax/functional.py",
                 "doors_gym_baselines/arms.py", "doors_gym_baselines/py.typed",
                 "doors_gym_baselines/hyperparams/flax-scan.yml"):
    assert required in names, f"wheel lacks {required}"
stray = [name for name in names if name.split("/")[0] in ("tests", "benchmarks", "baselines", "docs")]
assert not stray, f"wheel carries files outside the packages: {stray}"
metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
assert "License-Expression: MIT" in metadata and "Requires-Python: >=3.10" in metadata
assert "Project-URL: Documentation, " in metadata and "Project-URL: Changelog, " in metadata
members = [name.split("/", 1)[1] for name in tarfile.open(sdist).getnames() if "/" in name]
for required in ("README.md", "LICENSE", "CHANGELOG.md", "pyproject.toml", "docs/SPEC.md", "tests/conftest.py"):
    assert required in members, f"sdist lacks {required}"
assert not [name for name in members if name.startswith("benchmarks/") or "__pycache__" in name]
for path in (wheel, sdist):
    print(f"{path.name}: {path.stat().st_size / 1024:.0f} KiB")
print(f"wheel top level: {tops}; sdist: {len(members)} entries")
EOF

echo "== clean venv, wheel with [jax,render]"
"$python" -m venv "$work/venv"
venv_python="$work/venv/bin/python"
"$venv_python" -m pip install --quiet --upgrade pip
"$venv_python" -m pip install --quiet "$wheel[jax,render]"
installed="$("$venv_python" -m pip list --format=freeze)"
if grep -qiE '^(torch|nvidia-[a-z0-9-]+|flax)==' <<<"$installed"; then
    echo "the [jax,render] install pulled in a stack it should not:" >&2
    grep -iE '^(torch|nvidia-[a-z0-9-]+|flax)==' <<<"$installed" >&2
    exit 1
fi
echo "$(wc -l <<<"$installed") distributions; site-packages $(du -sh "$("$venv_python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" | cut -f1)"

mkdir "$work/newcomer"
cd "$work/newcomer"
export SDL_VIDEODRIVER=dummy SDL_AUDIODRIVER=dummy

echo "== import doors_gym loads no JAX, torch, pygame or OpenCV"
"$venv_python" -c '
import sys
import doors_gym
heavy = sorted(name for name in ("jax", "torch", "pygame", "cv2", "flax") if name in sys.modules)
assert not heavy, f"import doors_gym loaded {heavy}"
print("doors_gym", doors_gym.__version__, "from", doors_gym.__file__)
'

echo "== both envs, as a newcomer"
"$venv_python" - "$work/venv" <<'EOF'
import pathlib
import sys

import gymnasium as gym
import numpy as np

import doors_gym
import doors_gym_baselines

venv = pathlib.Path(sys.argv[1]).resolve()
for module in (doors_gym, doors_gym_baselines):
    path = pathlib.Path(module.__file__).resolve()
    assert venv in path.parents and "site-packages" in path.parts, f"{module.__name__} comes from {path}"
    print(f"{module.__name__}: {path}")
for env_id in ("doors_gym:Doors-v0", "doors_gym:DoorsJax-v0"):
    env = gym.make(env_id, render_mode="rgb_array")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    frame = env.render()
    assert obs.shape == (225,) and obs.dtype == np.int16, (obs.shape, obs.dtype)
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8, (frame.shape, frame.dtype)
    env.close()
    print(f"{env_id}: obs {obs.shape} {obs.dtype}, reward {float(reward):.3f}, frame {frame.shape} {frame.dtype}")
envs = gym.make_vec("Doors-v0", num_envs=8)
obs, info = envs.reset(seed=0)
obs, rewards, terminated, truncated, info = envs.step(np.zeros(8, dtype=np.int64))
assert obs.shape == (8, 225)
print("make_vec Doors-v0:", obs.shape)
EOF

echo "== the doors-gym command: --help for every subcommand, then oracle and render"
commands="$("$venv_python" -c '
import argparse
from doors_gym.cli import build_parser
action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
print(" ".join(action.choices))
')"
echo "subcommands: $commands"
for required in play render oracle train enjoy tune compare; do
    [[ " $commands " == *" $required "* ]] || {
        echo "doors-gym lacks the subcommand $required" >&2
        exit 1
    }
done
doors_gym="$work/venv/bin/doors-gym"
"$doors_gym" --help >/dev/null
"$doors_gym" --version
for command in $commands; do
    "$doors_gym" "$command" --help >/dev/null || {
        echo "doors-gym $command --help failed" >&2
        exit 1
    }
    echo "doors-gym $command --help: ok"
done
"$doors_gym" oracle
"$doors_gym" render --policy oracle --episodes 1 --out episode.gif
test -s episode.gif

echo "wheel test passed in $((SECONDS - start)) s"
