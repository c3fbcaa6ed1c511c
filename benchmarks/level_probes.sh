#!/usr/bin/env bash
# Runs level_trial.py probes side by side on a machine with many cores (and perhaps a GPU): one probe per line of
# PROBES, as
#   NAME PLACE ARGUMENTS...
# PLACE "cpu:A-B" pins the probe to cores A-B (taskset) with JAX on the CPU, "gpu" leaves JAX its default backend
# (the GPU, memory allocated as needed so that several probes share it). Each probe's curve goes to OUT/NAME.txt
# as it is printed (level_trial.py prints every evaluation as it comes), so a probe stopped at TIMEOUT_S still
# shows how far it got. Probes measure learning curves, not speed: side by side they share the machine.
#
#   bash benchmarks/level_probes.sh benchmarks/results/ladder/probes/gpu.txt out/probes 540
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: bash benchmarks/level_probes.sh PROBES OUT [TIMEOUT_S]" >&2; exit 2; }
probes="$1" out="$2" limit="${3:-3600}"
python="${PYTHON:-python3}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
pids=()
while read -r name place arguments; do
    case "$name" in ""|"#"*) continue ;; esac
    case "$place" in
        gpu) launch=(env XLA_PYTHON_CLIENT_PREALLOCATE=false) ;;
        cpu:*) launch=(env JAX_PLATFORMS=cpu taskset -c "${place#cpu:}") ;;
        *) echo "$probes: probe $name: place '$place' is neither gpu nor cpu:A-B" >&2; exit 2 ;;
    esac
    # shellcheck disable=SC2086  # the arguments are words
    PYTHONUNBUFFERED=1 timeout "$limit" "${launch[@]}" "$python" -W ignore "$here/level_trial.py" $arguments \
        >"$out/$name.txt" 2>&1 &
    pids+=($!)
    echo "started $name on $place: $arguments"
done <"$probes"
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
exit "$status"
