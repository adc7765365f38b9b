# Two commands for a newcomer: `make run` (the product) and `make test` (everything).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench demo clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[desktop,test]'
	@touch $(STAMP)

# The tray and the service (or the demo when there are no transcripts;
# headless: the service with a live status in the terminal).
run: $(STAMP)
	$(BIN)/ctxlamp start

test: $(STAMP)
	@$(BIN)/python -m service.doctor --for-tests
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) build dist *.egg-info
