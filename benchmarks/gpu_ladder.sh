#!/usr/bin/env bash
# The ladder's two largest levels on one GPU (issue "The hard rungs in minutes", item 8), one command within 9.5
# minutes: the fully jitted arm with the level presets at 31x31 and 63x63 (`--preset tuned`, which falls back to them:
# PQN, 128 envs a seed; hyperparams/level-<level>.yml), seeds 110-112 (the CPU rows' unseen seeds) in one program; and
# torch over the NumPy env with `device=cuda` on the 31x31 preset (PQN in the host loop). Each
# row stops when every seed is solved through the preset's hold-out window (as compare does), at its env-step
# budget, or at its wall limit, whichever comes first, and its curve is kept as it comes (OUT/NAME.txt,
# OUT/NAME.jsonl). Then one table of them all (benchmarks/trial_table.py): level, arm, seeds solved, env steps and
# seconds to solved, how far the row got and why it stopped, env steps/s (wall clock, compile and evaluations in).
# OUT/card.txt holds the GPU's name. Commit OUT under benchmarks/results/gpu/<card>/.
#
# It runs benchmarks/level_trial.py, not `doors-gym compare`: the jitted arm and the torch arm need JAX, Flax, optax,
# torch and Gymnasium alone, so a bare GPU image with those runs it (no MLflow, Optuna or database).
#
#   bash benchmarks/gpu_ladder.sh benchmarks/results/gpu/H100 | tee gpu_ladder.txt
#   PYTHON=python3 bash benchmarks/gpu_ladder.sh OUT      # an interpreter with the packages and doors-gym importable
#   SMOKE=1 bash benchmarks/gpu_ladder.sh /tmp/gpu-smoke  # the same rows on tiny budgets, on the CPU (any machine)
# On a GPU image that has JAX, Flax, optax and torch but not doors-gym or Gymnasium (as it ran on the H200): here,
# `pip wheel --no-deps -w WHEELS .` and `pip download --no-deps --python-version 3.12 -d WHEELS gymnasium
# farama-notifications`; there, `pip install --no-deps --target SITE WHEELS/*.whl`, then PYTHONPATH=SITE PYTHON=python3.
# benchmarks/lent_machine.sh runs it beside the CPU scale-out's first rows (benchmarks/executors.py --scale).
set -euo pipefail
out="${1:-out/gpu_ladder}"
python="${PYTHON:-.venv/bin/python}"
seeds="${SEEDS:-3}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$(dirname "$0")/.."
seed="${SEED:-110}"
trial=(--arm flax-scan --preset tuned --seed "$seed" --seeds "$seeds")
device=cuda
# Budgets: each preset's own (31x31: 12M env steps a seed, an evaluation every 600k; 63x63: 48M, every 1M); the
# torch row the 31x31 level preset, as far as its wall limit allows. On one CPU core the 31x31 preset solves from
# 6.6-9.6M env steps and the 63x63 preset from 31-43M (benchmarks/results/ladder/rerun/pqn/).
b31=(--steps 12000000 --eval-every 600000)
b63=(--steps 48000000 --eval-every 1000000)
btorch=(--preset shared --steps 12000000 --eval-every 600000)
# Wall limits in seconds (they sum to 550 s; start-up and compile are inside them), from the H200's rates with these
# presets (benchmarks/results/gpu/H200/pqn/): three seeds' first evaluation at 37 s (31x31) and 52 s (63x63), then
# 440k and 385k env steps/s; 31x31 reached 7.2M env steps a seed in 83 s, so 10M and its hold-out fit in 120 s; the
# 63x63 seeds solved from 31-43M on the CPU, about 370 s here; torch's first evaluation came at 24 s.
w31=120 w63=400 wtorch=30
if [ -n "${SMOKE:-}" ]; then
    b31=(--steps 40000 --eval-every 20000) b63=("${b31[@]}")
    btorch=(--preset shared "${b31[@]}")
    w31="${SMOKE_WALL:-300}" device=cpu
    w63=$w31 wtorch=$w31
fi
"$python" -c "import jax; print('jax', jax.__version__, jax.devices())"
"$python" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
failed=() logs=()
row() {  # NAME WALL_S ARGUMENTS...: one level_trial.py run, its curve printed and kept as it comes
    local name="$1" wall="$2"
    shift 2
    echo "== $name (wall limit $wall s): $*"
    local status=0
    PYTHONUNBUFFERED=1 timeout "$wall" "$python" -W ignore benchmarks/level_trial.py "$@" --stop-when-solved \
        --log "$out/$name.jsonl" --set profile=false >"$out/$name.txt" 2>&1 || status=$?
    cat "$out/$name.txt"
    [ ! -f "$out/$name.jsonl" ] || logs+=("$out/$name.jsonl")  # a run that failed before its header has no row
    # 124: stopped at the wall limit (the table says so); anything else fails the script, after the table.
    [ "$status" = 0 ] || [ "$status" = 124 ] || { echo "$name failed with status $status" >&2; failed+=("$name"); }
}
start=$SECONDS
row 31x31-pqn "$w31" --level 31x31 "${trial[@]}" "${b31[@]}"
row 63x63-pqn "$w63" --level 63x63 "${trial[@]}" "${b63[@]}"
row 31x31-torch-pqn-cuda "$wtorch" --level 31x31 --arm torch-numpy --seed "$seed" "${btorch[@]}" --set device="$device"
echo "== all of them ($((SECONDS - start)) s)"
[ ${#logs[@]} = 0 ] || "$python" benchmarks/trial_table.py "${logs[@]}"
(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null || echo "no GPU (nvidia-smi absent)") \
    >"$out/card.txt"
cat "$out/card.txt"
[ ${#failed[@]} = 0 ] || { echo "failed: ${failed[*]}" >&2; exit 1; }
