# Two commands for a newcomer: `make run` (the product) and `make test` (everything);
# `make test-fast` runs the unit tests only (tests/unit: in-process, fast), the loop while you work.
PY ?= python3
VENV := .venv
BIN := $(VENV)/$(if $(filter Windows_NT,$(OS)),Scripts,bin)
# Two stamps: `make run` installs the program's own dependencies (RUN_STAMP); `make test`, `make lint`,
# `make test-fast` and `make bench` add the test and lint tools (STAMP), `make dist` PyInstaller.
RUN_STAMP := $(VENV)/.installed-run
STAMP := $(VENV)/.installed

.PHONY: run test test-fast lint bench clean dist compiled

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# An editable install is not byte-compiled (a wheel install is), and where
# PYTHONDONTWRITEBYTECODE is set every command would compile its modules again.
COMPILE := $(BIN)/python -m compileall -q service desktop models resources > /dev/null

# Installs are pinned: the locked dependencies with their hashes, then the project alone (requirements/README.md
# says how to refresh the locks after a change to pyproject.toml's dependencies).
# Where a C compiler is found, the engine is compiled too (mypyc from requirements/compile.lock), within a
# minute; else, or on any failure, it runs as pure Python. One line says which (decision 460).
$(RUN_STAMP): pyproject.toml requirements/run.lock | $(BIN)/python
	$(BIN)/pip install --quiet --require-hashes -r requirements/run.lock
	$(BIN)/pip install --quiet --no-deps -e .
	@$(BIN)/python -m service.engine_setup.tokenizer > /dev/null  # the parsed o200k table a wheel ships
	@$(COMPILE)
	@$(BIN)/python -m service.engine_setup.compiled --for-run
	@touch $(RUN_STAMP)

# The developer's venv is a superset of the user's: it stamps both, so `make run` after it installs nothing.
$(STAMP): pyproject.toml requirements/dev.lock | $(BIN)/python
	$(BIN)/pip install --quiet --require-hashes -r requirements/dev.lock
	$(BIN)/pip install --quiet --no-deps -e .
	@$(BIN)/python -m service.engine_setup.tokenizer > /dev/null
	@$(COMPILE)
	@touch $(STAMP) $(RUN_STAMP)

# The tray and the service (or the demo when there are no transcripts;
# headless: the service with a live status in the terminal).
run: $(RUN_STAMP)
	$(BIN)/ctxlamp start

test: $(STAMP)
	@$(BIN)/python -m service.cli.doctor --for-tests
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest $(PYTEST_ARGS)

# Style and types (settings in pyproject.toml): ruff over the tree, mypy strict for the engine and the store.
# Both run even when the first fails, so one pass shows every problem.
lint: $(STAMP)
	@rc=0; echo "ruff check ."; $(BIN)/ruff check . || rc=1; \
	echo "mypy (settings: pyproject.toml)"; $(BIN)/mypy || rc=1; exit $$rc

# The unit tests alone (no processes, servers, sockets or Qt): the fast loop.
test-fast: $(STAMP)
	$(BIN)/python -m pytest tests/unit $(PYTEST_ARGS)

# The engine compiled with mypyc (it ships with mypy) into build/mypyc/; used only while it matches the
# engine's source (service/engine_setup/compiled.py), so an edited engine file runs as pure Python until this
# runs again. `ctxlamp doctor` says which engine runs.
compiled: $(STAMP)
	$(BIN)/python -m service.engine_setup.compiled --if-compiler

bench: $(STAMP)
	@$(COMPILE)
	$(BIN)/python bench/run_all.py

# The packaged build for this machine (packaging/targets.py): Linux dist/ctxlamp/, Windows
# dist/ctxlamp/ctxlamp.exe, macOS dist/ctxlamp.app (menu bar only).
dist: $(RUN_STAMP)
	@$(BIN)/python -c "import PyInstaller" 2>/dev/null || $(BIN)/pip install --quiet --require-hashes -r requirements/dist.lock
	$(BIN)/python -m PyInstaller packaging/ctxlamp.spec --noconfirm --distpath dist --workpath build/pyinstaller --log-level WARN
	@$(BIN)/python -c "import sys; sys.path.insert(0, 'packaging'); from targets import built_executable; print('built', built_executable(sys.platform, 'dist'))"

clean:
	rm -rf $(VENV) build dist *.egg-info
