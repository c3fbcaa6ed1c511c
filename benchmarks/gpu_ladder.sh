#!/usr/bin/env bash
# The ladder's two largest levels on one GPU (issue "Every rung solved"), one command within 8 minutes: the fully
# jitted arm (3 seeds in one program) at 31x31 and 63x63 with the level's shared preset and with 1024 parallel envs
# (an update every vector step, a 2^20-transition buffer, everything else the level preset's), and torch over the
# NumPy env with `device=cuda` at 31x31. Each row stops when every seed is solved through the preset's hold-out
# window (as compare does), at its env-step budget, or at its wall limit, whichever comes first, and its curve is
# kept as it comes (OUT/NAME.txt, OUT/NAME.jsonl). Then one table of them all (benchmarks/trial_table.py): level,
# arm, seeds solved, env steps and seconds to solved, how far the row got and why it stopped, env steps/s (wall
# clock, compile and evaluations in). OUT/card.txt holds the GPU's name. Commit OUT under
# benchmarks/results/gpu/<card>/.
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
set -euo pipefail
out="${1:-out/gpu_ladder}"
python="${PYTHON:-.venv/bin/python}"
seeds="${SEEDS:-3}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$(dirname "$0")/.."
trial=(--arm flax-scan --seed 1 --seeds "$seeds")
wide=(--set num_envs=1024 --set train_frequency=1 --set buffer_size=1048576)
device=cuda
# Budgets: the level preset's at 31x31 (12M env steps a seed; solved from 7.8-8.4M on the CPU, so the preset row
# should stop when solved before its wall limit; not yet run on a GPU, and a row cut by its limit says so); the
# 63x63 preset's 24M would not fit, its row runs what its wall limit allows (learning began at 7M on the CPU,
# benchmarks/results/ladder/probes/exploration/); the 1024-env rows the level preset's (as many env steps, 64 times
# fewer updates); torch its wall limit's worth.
b31=(--steps 12000000 --eval-every 600000)
b63=(--steps 24000000 --eval-every 1000000)
btorch=(--steps 10000000 --eval-every 250000)
# Wall limits in seconds (they sum to 470 s; start-up and compile are inside them), from an H200's rates
# (benchmarks/results/gpu/H200/README.md): 31x31's 10M in 145 s (the earlier 10M preset), its 1024 envs' in about
# 75 s, torch's first 250k env steps in 44 s; the 63x63 rows measure their rate and how far they got.
w31=160 w31wide=80 w63=90 w63wide=70 wtorch=70
if [ -n "${SMOKE:-}" ]; then
    b31=(--steps 40000 --eval-every 20000) b63=("${b31[@]}") btorch=("${b31[@]}")
    wide=(--set num_envs=64 --set train_frequency=1 --set buffer_size=65536)
    w31="${SMOKE_WALL:-300}" device=cpu
    w31wide=$w31 w63=$w31 w63wide=$w31 wtorch=$w31
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
row 31x31-preset "$w31" --level 31x31 "${trial[@]}" "${b31[@]}"
row 31x31-wide "$w31wide" --level 31x31 "${trial[@]}" "${b31[@]}" "${wide[@]}"
row 63x63-preset "$w63" --level 63x63 "${trial[@]}" "${b63[@]}"
row 63x63-wide "$w63wide" --level 63x63 "${trial[@]}" "${b63[@]}" "${wide[@]}"
row 31x31-torch-cuda "$wtorch" --level 31x31 --arm torch-numpy --seed 1 "${btorch[@]}" --set device="$device"
echo "== all of them ($((SECONDS - start)) s)"
[ ${#logs[@]} = 0 ] || "$python" benchmarks/trial_table.py "${logs[@]}"
(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null || echo "no GPU (nvidia-smi absent)") \
    >"$out/card.txt"
cat "$out/card.txt"
[ ${#failed[@]} = 0 ] || { echo "failed: ${failed[*]}" >&2; exit 1; }
