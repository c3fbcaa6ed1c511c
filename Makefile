# Fresh-machine set-up and the two jobs of the README.
#   make main   set up .venv, run `doors-gym compare` (the default DQN arms x 10 seeds with their tuned presets;
#               see README for its time): the table in out/compare/, every run in MLflow (./mlflow.db, ./mlruns)
#   make test   set up .venv, run the test suite but its slow tier (make test-slow; CI runs both)
#   make tune   set up .venv, re-tune every arm's preset (40-trial studies, resumable; see benchmarks/tune_presets.sh)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
# torch first, pinned: the CPU build is what this machine serves; an unpinned
# torch (or a range pulled in later) would fetch a multi-GB CUDA build.
TORCH ?= torch==2.13.0
EXTRAS ?= test,bench,docs,release

.PHONY: main test test-slow tune setup clean docs wheel-test

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH)"
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

main: $(STAMP)
	$(BIN)/doors-gym compare

tune: $(STAMP)
	BIN=$(BIN) bash benchmarks/tune_presets.sh

# The suite over every core (pytest-xdist; a module's tests stay in one worker, so its fixtures are built once);
# TEST_WORKERS=0 runs it in one process. `make test` leaves out the slow tier (tests marked slow: the third-party
# clients' learning bars, several processes, whole tune-and-compare runs), `make test-slow` runs only it; CI runs both.
TEST_WORKERS ?= auto
PYTEST = SDL_VIDEODRIVER=dummy SDL_AUDIODRIVER=dummy $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadscope
test: $(STAMP)
	$(PYTEST) -m "not slow"

test-slow: $(STAMP)
	$(PYTEST) -m slow

# The documentation site, warnings as errors (site/); `$(BIN)/mkdocs serve` previews it.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# Build the wheel and sdist, check them, and try the wheel in a clean venv.
wheel-test: $(STAMP)
	PYTHON=$(BIN)/python bash .ci/wheel_test.sh

clean:
	rm -rf $(VENV) out build dist site *.egg-info
