#!/usr/bin/env bash
# The clients whose pins collide with the test extra's, each in a throwaway venv of its own:
#   - Gymnasium 0.29.1 (what CleanRL and older SB3 set-ups pin, with NumPy 1.26) and the newest Gymnasium (the
#     test extra's gymnax 1.0.1 caps it below 1.4): the NumPy env's contract, tests/clients/test_gymnasium_range.py;
#     only Gymnasium, NumPy, pygame and pytest beside doors-gym, as `pip install doors-gym` resolves them;
#   - gymnax 0.0.9 (the test-gymnax0 extra): the 0.0.x-era scripts and rejax, which step five values.
#
#   bash .ci/clients_venvs.sh      # about a minute and a half with the wheels cached
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$root"
export SDL_VIDEODRIVER=dummy SDL_AUDIODRIVER=dummy

run_in_venv() {  # run_in_venv NAME "WHAT PIP INSTALLS" TEST_FILES...
    local name="$1" requirements="$2"
    shift 2
    "$python" -m venv "$work/$name"
    # shellcheck disable=SC2086  # the requirements are words
    "$work/$name/bin/python" -m pip install --quiet --disable-pip-version-check $requirements
    "$work/$name/bin/python" -m pip list --disable-pip-version-check 2>/dev/null |
        grep -iE '^(gymnasium|gymnax|numpy|rejax|jax) ' | tr -s ' ' | tr '\n' ' '
    echo
    "$work/$name/bin/python" -m pytest -q -p no:cacheprovider "$@"
}

echo "== Gymnasium 0.29.1: the NumPy env's contract"
run_in_venv gymnasium029 "-e $root gymnasium==0.29.1 numpy==1.26.4 pygame-ce>=2.4 pytest>=8" \
    tests/clients/test_gymnasium_range.py
echo "== the newest Gymnasium: the NumPy env's contract"
run_in_venv gymnasium-newest "-e $root --upgrade gymnasium numpy pygame-ce>=2.4 pytest>=8" tests/clients/test_gymnasium_range.py
echo "== gymnax 0.0.9: PureJaxRL's and purejaxql's scripts, rejax's PPO, DQN and PQN"
run_in_venv gymnax0 "-e $root[test-gymnax0]" \
    tests/clients/test_gymnax_scripts.py tests/clients/test_rejax.py tests/clients/test_purejaxrl_style.py
