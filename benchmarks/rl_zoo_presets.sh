#!/usr/bin/env bash
# The shipped RL Zoo presets as a user runs them: `rl_zoo3.train` by id with `--conf-file doors_gym.rl_zoo.<algo>`
# (the Zoo's defaults otherwise: its torch threads, its evaluations), then `rl_zoo3.enjoy` greedy from fresh starts.
# One run at a time (the wall time is measured). Prints one markdown row per algorithm and seed: training wall time,
# enjoy's success rate and episode count over 6000 greedy steps; writes the table to benchmarks/results/rl_zoo.md.
#
#   bash benchmarks/rl_zoo_presets.sh              # ppo and dqn, seeds 0 1 2 (about 10 minutes on 2 cores)
#   SEEDS="0" bash benchmarks/rl_zoo_presets.sh ppo
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
OUT=${OUT:-out/rl_zoo}
SEEDS=${SEEDS:-0 1 2}
RESULTS=benchmarks/results/rl_zoo.md
algos=("$@")
[ ${#algos[@]} -gt 0 ] || algos=(ppo dqn)
rm -rf "$OUT"
mkdir -p "$OUT" "$(dirname "$RESULTS")"
zoo_version=$("$BIN/python" -c 'import rl_zoo3; print(rl_zoo3.__version__)')
sb3_version=$("$BIN/python" -c 'import stable_baselines3; print(stable_baselines3.__version__)')
{
  echo "rl_zoo3 $zoo_version, stable-baselines3 $sb3_version, $(nproc) cores; $(date -u +%F)"
  echo
  echo "| algo | seed | train wall time | enjoy greedy success | episodes |"
  echo "|---|---:|---:|---:|---:|"
} | tee "$RESULTS"
for algo in "${algos[@]}"; do
  for seed in $SEEDS; do
    start=$(date +%s)
    "$BIN/python" -m rl_zoo3.train --algo "$algo" --env Doors-v0 --gym-packages doors_gym \
      --conf-file "doors_gym.rl_zoo.$algo" --seed "$seed" -f "$OUT/logs" > "$OUT/train-$algo-$seed.log" 2>&1
    wall=$(( $(date +%s) - start ))
    "$BIN/python" -m rl_zoo3.enjoy --algo "$algo" --env Doors-v0 --gym-packages doors_gym -f "$OUT/logs" \
      --no-render -n 6000 --seed "$seed" > "$OUT/enjoy-$algo-$seed.log" 2>&1
    success=$(grep -o 'Success rate: .*' "$OUT/enjoy-$algo-$seed.log" | cut -d' ' -f3)
    episodes=$(grep -c 'Episode Reward: ' "$OUT/enjoy-$algo-$seed.log" || true)
    echo "| $algo | $seed | $wall s | $success | $episodes |" | tee -a "$RESULTS"
  done
done
