#!/usr/bin/env bash
# The ladder's two largest levels on one GPU (issue "Every rung solved"), one command within 8 minutes: the fully
# jitted arm at 31x31 and 63x63 (its first 8M env steps) with the level's shared preset and with 1024 parallel envs
# (an update every vector step, a 2^20-transition buffer, everything else the level preset's), and torch over the
# NumPy env with `--device cuda` at 31x31 (its rate over 2M env steps). Prints each comparison's table, then one
# table of them all (level, preset, arm, solved, seconds and env steps to solved, env steps/s), and writes
# OUT/card.txt with the GPU's name. Commit OUT under benchmarks/results/gpu/<card>/.
#
#   bash benchmarks/gpu_ladder.sh benchmarks/results/gpu/H100 | tee gpu_ladder.txt
#   SMOKE=1 bash benchmarks/gpu_ladder.sh /tmp/gpu-smoke     # the same commands on tiny budgets (any machine)
set -euo pipefail
out="${1:-out/gpu_ladder}"
bin="${BIN:-.venv/bin}"
seeds="${SEEDS:-2}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$(dirname "$0")/.."
budget=()
# Short, but long enough for a 1024-env run to end episodes at 63x63 (504 steps each).
[ -z "${SMOKE:-}" ] || budget=(--total-steps 600000 --eval-every 300000)
# torch over the NumPy env steps about 10k env steps/s at 31x31 (the CPU env): the level preset's 10M would take some
# 17 minutes, so its row measures the rate over 2M env steps and is not expected to solve.
torch_budget=(--total-steps 2000000 --eval-every 500000)
[ -z "${SMOKE:-}" ] || torch_budget=("${budget[@]}")
# The 63x63 preset's 24M env steps a seed at 16 envs would not fit either: its row runs the first 8M (learning begins
# at 8-10M on the CPU, benchmarks/results/ladder/probes/exploration/README.md) and says how far it got.
long_budget=(--total-steps 8000000 --eval-every 1000000)
[ -z "${SMOKE:-}" ] || long_budget=("${budget[@]}")
device=cuda
[ -z "${SMOKE:-}" ] || device=cpu
# The 1024-env presets: the level's shared preset with the width changed (written where the results go).
"$bin/python" - "$out" <<'PY'
import dataclasses, sys
from doors_gym_baselines.config import RunSettings
from doors_gym_baselines.presets import level_preset, write_preset

for level in ("31x31", "63x63"):
    preset = level_preset(level)
    config = preset.config(None)
    wide = dataclasses.replace(config.hyperparameters, num_envs=1024, train_frequency=1, buffer_size=2**20)
    study = {"origin": f"{preset.name} with 1024 envs, an update every vector step, a 2^20 buffer"}
    write_preset(f"{sys.argv[1]}/wide-{level}.yml", wide, config.run, study, written_by="benchmarks/gpu_ladder.sh")
PY
run() {  # NAME ARGUMENTS...: one comparison, its table printed as it ends
    local name="$1"
    shift
    echo "== $name"
    "$bin/doors-gym" compare --no-models --quiet --fresh --out "$out/$name" --tracking-uri "sqlite:///$out/mlflow.db" \
        "${budget[@]}" "$@"
}
start=$SECONDS
run 31x31-preset --level 31x31 --arms flax-scan --seeds "$seeds"
run 31x31-wide --level 31x31 --arms flax-scan --seeds "$seeds" --preset "$out/wide-31x31.yml"
run 63x63-preset --level 63x63 --arms flax-scan --seeds "$seeds" "${long_budget[@]}"
run 63x63-wide --level 63x63 --arms flax-scan --seeds "$seeds" --preset "$out/wide-63x63.yml"
run 31x31-torch-cuda --level 31x31 --arms torch-numpy --seeds 1 --device "$device" "${torch_budget[@]}"
echo "== all of them ($((SECONDS - start)) s)"
"$bin/python" - "$out" <<'PY'
import csv, pathlib, sys

out = pathlib.Path(sys.argv[1])
print("| comparison | arm | solved | s to solved, IQM | env steps to solved, IQM | greedy success | env steps/s |")
print("|---|---|---:|---:|---:|---:|---:|")
for table in sorted(out.glob("*/compare.csv")):
    for row in csv.DictReader(table.open()):
        if not row["seeds"]:  # the oracle's row
            continue
        figures = [float(row[name]) for name in ("seconds_to_solved_iqm", "steps_to_solved_iqm")]
        print(
            f"| {table.parent.name} | {row['arm']} | {row['solved']}/{row['seeds']} | {figures[0]:.1f} "
            f"| {figures[1]:,.0f} | {float(row['greedy_success_rate_mean']):.3f} "
            f"| {float(row['env_steps_per_second']):,.0f} |"
        )
PY
(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null || echo "no GPU (nvidia-smi absent)") \
    >"$out/card.txt"
cat "$out/card.txt"
