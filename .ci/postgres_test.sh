#!/usr/bin/env bash
# Two `doors-gym tune` workers sharing one study on a PostgreSQL server (the multi-machine set-up of
# the docs), against a throwaway server on loopback. Skipped where no PostgreSQL server is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
bin_dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
if [[ -z "$bin_dir" || ! -x "$bin_dir/initdb" ]]; then
    echo "SKIP PostgreSQL worker test: no PostgreSQL server binaries (Debian package postgresql) here"
    exit 0
fi
data_dir="$(mktemp -d)"
port=5439
run_as=()
if [[ "$(id -u)" == 0 ]]; then  # the server refuses to run as root
    chown postgres "$data_dir"
    run_as=(runuser -u postgres --)
fi
cleanup() {
    "${run_as[@]}" "$bin_dir/pg_ctl" -D "$data_dir" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$data_dir"
}
trap cleanup EXIT
"${run_as[@]}" "$bin_dir/initdb" -D "$data_dir" -A trust -U postgres >/dev/null
"${run_as[@]}" "$bin_dir/pg_ctl" -D "$data_dir" -w -l "$data_dir/server.log" \
    -o "-p $port -k $data_dir -c listen_addresses=127.0.0.1" start >/dev/null
"$bin_dir/psql" -h 127.0.0.1 -p "$port" -U postgres -q -c "create database optuna_ci"
.venv/bin/python -m pip install --quiet psycopg2-binary
DOORS_GYM_TEST_STORAGE="postgresql+psycopg2://postgres@127.0.0.1:$port/optuna_ci" \
    .venv/bin/python -m pytest -q -p no:cacheprovider tests/baselines/test_tuning.py -k "two_workers and server"
