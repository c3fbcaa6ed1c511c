#!/usr/bin/env bash
# What a lent GPU machine with 16 CPU cores runs, in two calls: first (STAGE=1, about 9.5 minutes) the GPU ladder
# (benchmarks/gpu_ladder.sh) pinned to cores 0-1 and, beside it on cores of their own, the CPU scale-out's 1- and
# 4-worker rows (benchmarks/executors.py --scale: Dask on cores 2,4,5,6, plain processes on cores 3,7,8,9); then
# (STAGE=2, about a minute, the same OUT) the 16-worker rows alone on every core, and one scale table of every row.
# Without STAGE it runs both, one after the other (over a lent machine's 10 minutes a call). A machine is lent for
# minutes: the 1-worker rows, the longest, run beside the GPU ladder (whose work is the GPU's) rather than after it;
# the results page says so beside the figures. OUT gets the ladder's folder (gpu/), the scale table
# (scale_out_16workers.md), each leg's log and `lscpu`'s view of the cores.
#
#   PYTHON=python3 STAGE=1 bash benchmarks/lent_machine.sh OUT    # the first call
#   PYTHON=python3 STAGE=2 bash benchmarks/lent_machine.sh OUT    # the second, on the same (still warm) machine
#   SMOKE=1 bash benchmarks/lent_machine.sh /tmp/lent-smoke     # tiny budgets, on a machine with 10 cores or more
#   SMOKE=1 SMALL=1 FULL=2 GPU_CORES=0 DASK_CORES=0 PROCESS_CORES=1 bash benchmarks/lent_machine.sh /tmp/lent-smoke
#                                                               # the same on 2 cores (the legs then share them)
#
# Grid of the scale-out: flax-numpy and flax-scan x 8 seeds at Random, 200k env steps a run (GRID_SEEDS,
# GRID_STEPS): 16 runs, so that 16 workers have a run each.
set -uo pipefail
out="${1:?usage: lent_machine.sh OUT}"
python="${PYTHON:-.venv/bin/python}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$(dirname "$0")/.."
grid=(--grid-arms flax-numpy flax-scan --grid-seeds "${GRID_SEEDS:-8}" --grid-steps "${GRID_STEPS:-200000}")
[ -z "${SMOKE:-}" ] || grid=(--grid-arms flax-numpy flax-scan --grid-seeds 2 --grid-steps 20000)
(lscpu -e 2>/dev/null || lscpu) >"$out/lscpu.txt" 2>&1
start=$SECONDS status=0
small=(${SMALL:-1 4}) full="${FULL:-16}" stage="${STAGE:-both}"
case "$stage" in 1 | 2 | both) ;; *) echo "STAGE=$stage: expected 1, 2 or both" >&2; exit 2 ;; esac
if [ "$stage" != 2 ]; then
    taskset -c "${GPU_CORES:-0,1}" env PYTHON="$python" bash benchmarks/gpu_ladder.sh "$out/gpu" \
        >"$out/gpu_ladder.txt" 2>&1 &
    gpu=$!
    scale() {  # NAME CORES WORKER_COUNTS...: a scale-out leg on CORES, its rows kept for the table
        local name="$1" cores="$2"
        shift 2
        taskset -c "$cores" "$python" benchmarks/executors.py --scale "$@" "${grid[@]}" \
            --save-rows "$out/scale-$name.json" --table "$out/scale-$name.md" >"$out/scale-$name.txt" 2>&1
    }
    scale dask "${DASK_CORES:-2,4,5,6}" "${small[@]}" --executors dask &
    dask=$!
    scale processes "${PROCESS_CORES:-3,7,8,9}" "${small[@]}" --executors processes &
    processes=$!
    wait "$dask" || { echo "the Dask leg failed: $out/scale-dask.txt" >&2; status=1; }
    wait "$processes" || { echo "the processes leg failed: $out/scale-processes.txt" >&2; status=1; }
    echo "1- and 4-worker rows done at $((SECONDS - start)) s"
    wait "$gpu" || { echo "the GPU ladder failed: $out/gpu_ladder.txt" >&2; status=1; }
    echo "GPU ladder done at $((SECONDS - start)) s"
    cat "$out/gpu_ladder.txt" "$out/scale-dask.txt" "$out/scale-processes.txt"
fi
if [ "$stage" != 1 ]; then
    rows=()
    for name in dask processes; do [ ! -f "$out/scale-$name.json" ] || rows+=("$out/scale-$name.json"); done
    table="$out/scale_out_${full}workers.md"
    "$python" benchmarks/executors.py --scale "$full" "${grid[@]}" ${rows[@]:+--with-rows "${rows[@]}"} \
        --table "$table" >"$out/scale-$full.txt" 2>&1 || { echo "the $full-worker rows failed" >&2; status=1; }
    echo "$full-worker rows done at $((SECONDS - start)) s"
    cat "$out/scale-$full.txt"
fi
exit "$status"
