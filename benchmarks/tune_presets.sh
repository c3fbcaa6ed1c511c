#!/usr/bin/env bash
# Tunes each arm's preset: a TPE + Hyperband study of TRIALS trials (default 40) on the time-to-solved objective
# (tuning seeds 0-9), one arm after the other (never two at once: the objective is wall time), then re-trains the
# CONFIRM best trials (default 5) on 3 more tuning seeds each and keeps the best on average (one seed's score is
# partly luck). Writes the arm's tuned preset (doors_gym_baselines/hyperparams/<arm>.yml; a plug-in arm's, as the library
# arms', is its own `tuned` preset file) and the study's summary under benchmarks/results/tuning/<arm>/; appends
# each command's wall time to benchmarks/results/tuning/wall_times.md. Resumable: rerun it after a kill, the
# study storage carries on. A plug-in arm's study searches its own space from its own tuned preset.
#
#   bash benchmarks/tune_presets.sh                       # every DQN arm of this package
#   bash benchmarks/tune_presets.sh flax-scan torch-numpy # some arms
#   TRIALS=20 CONFIRM=3 bash benchmarks/tune_presets.sh sb3-dqn sbx-dqn rejax-dqn
#   TUNE_ARGS="--total-steps 2000000 --eval-every 25000 --hold-out-steps 50000" bash benchmarks/tune_presets.sh rejax-pqn
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
OUT=${OUT:-out/tuning}
TRIALS=${TRIALS:-40}
CONFIRM=${CONFIRM:-5}
RESULTS=benchmarks/results/tuning
read -r -a extra <<< "${TUNE_ARGS:-}"
arms=("$@")
[ ${#arms[@]} -gt 0 ] || arms=(flax-scan torch-numpy flax-numpy flax-jax torch-compile torch-jax)
mkdir -p "$OUT" "$RESULTS"
for arm in "${arms[@]}"; do
  preset_out=$("$BIN/python" -c 'import os, sys
from doors_gym_baselines.presets import own_presets, tuned_path
print(os.path.relpath(own_presets(sys.argv[1]).get("tuned") or tuned_path(sys.argv[1])))' "$arm")
  command=("$BIN/doors-gym" tune --arm "$arm" --n-trials "$TRIALS"
    --storage "sqlite:///$OUT/optuna.db" --tracking-uri "sqlite:///$OUT/mlflow.db" --no-models
    --confirm-top "$CONFIRM" --confirm-seeds 3
    --preset-out "$preset_out" --summary-out "$RESULTS/$arm" "${extra[@]}")
  start=$(date +%s)
  "${command[@]}"
  echo "| $arm | \`doors-gym tune --arm $arm --n-trials $TRIALS --confirm-top $CONFIRM --confirm-seeds 3${TUNE_ARGS:+ $TUNE_ARGS} ...\` | $(( $(date +%s) - start )) s | $(date -u +%FT%TZ) |" \
    >> "$RESULTS/wall_times.md"
done
