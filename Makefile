# Two commands for a newcomer: `make run` (the product) and `make test` (everything);
# `make test-fast` runs the unit tests only (tests/unit: in-process, fast), the loop while you work.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-fast bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# An editable install is not byte-compiled (a wheel install is), and where
# PYTHONDONTWRITEBYTECODE is set every command would compile its modules again.
COMPILE := $(BIN)/python -m compileall -q service desktop models resources > /dev/null

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	@$(BIN)/python -m service.measure.tokenizer > /dev/null  # the parsed o200k table a wheel ships
	@$(COMPILE)
	@touch $(STAMP)

# The tray and the service (or the demo when there are no transcripts;
# headless: the service with a live status in the terminal).
run: $(STAMP)
	$(BIN)/ctxlamp start

test: $(STAMP)
	@$(BIN)/python -m service.cli.doctor --for-tests
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest $(PYTEST_ARGS)

test-fast: $(STAMP)
	$(BIN)/python -m pytest tests/unit $(PYTEST_ARGS)

bench: $(STAMP)
	@$(COMPILE)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) build dist *.egg-info
