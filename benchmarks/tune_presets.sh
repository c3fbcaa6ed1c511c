#!/usr/bin/env bash
# Tunes each arm's preset: a 40-trial TPE + Hyperband study on the time-to-solved objective (tuning seeds 0-9),
# one arm after the other (never two at once: the objective is wall time), then re-trains the 5 best trials on
# 3 more tuning seeds each and keeps the best on average (one seed's score is partly luck).
# Writes baselines/hyperparams/<arm>.yml
# and the study's summary under benchmarks/results/tuning/<arm>/; appends each command's wall time to
# benchmarks/results/tuning/wall_times.md. Resumable: rerun it after a kill, the study storage carries on.
#
#   bash benchmarks/tune_presets.sh                       # every arm
#   bash benchmarks/tune_presets.sh flax-scan torch-numpy # some arms
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
OUT=${OUT:-out/tuning}
RESULTS=benchmarks/results/tuning
arms=("$@")
[ ${#arms[@]} -gt 0 ] || arms=(flax-scan torch-numpy flax-numpy flax-jax torch-compile torch-jax)
mkdir -p "$OUT" "$RESULTS"
for arm in "${arms[@]}"; do
  command=("$BIN/doors-gym" tune --arm "$arm" --n-trials 40
    --storage "sqlite:///$OUT/optuna.db" --tracking-uri "sqlite:///$OUT/mlflow.db" --no-models
    --confirm-top 5 --confirm-seeds 3
    --preset-out "baselines/hyperparams/$arm.yml" --summary-out "$RESULTS/$arm")
  start=$(date +%s)
  "${command[@]}"
  echo "| $arm | \`doors-gym tune --arm $arm --n-trials 40 --confirm-top 5 --confirm-seeds 3 ...\` | $(( $(date +%s) - start )) s | $(date -u +%FT%TZ) |" \
    >> "$RESULTS/wall_times.md"
done
