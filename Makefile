# askuser: `make run` serves the Control UI and the agent API; `make test` runs every test.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
# pytest-xdist workers for make test: one per core ("auto"); 0 runs the suite in this process.
TEST_WORKERS ?= auto

.PHONY: run test bench lint format messages clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit("askuser needs Python 3.11 or newer") if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(VENV)

$(VENV)/.runtime: requirements.txt | $(BIN)/python
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.txt
	@touch $@

$(VENV)/.dev: requirements.txt requirements-dev.txt | $(BIN)/python
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements-dev.txt
	@touch $@ $(VENV)/.runtime

## run: set up, migrate, create the demo login and agent token, serve on 127.0.0.1:8000
run: $(VENV)/.runtime
	$(BIN)/python manage.py migrate --noinput -v 0
	$(BIN)/python manage.py setupdemo --url http://$(HOST):$(PORT)
	exec $(BIN)/python manage.py serve --bind $(HOST) --port $(PORT)

## test: set up and run the whole test suite, a worker per core (TEST_WORKERS=N to choose; PYTEST_ARGS passes options on)
test: $(VENV)/.dev
	$(BIN)/python -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

## bench: measure wake latency, waiting capacity and throughput (not a test)
bench: $(VENV)/.dev
	$(BIN)/python -m bench $(BENCH_ARGS)

## lint: ruff (style), mypy (types, strict on askuser_app) and lint-imports (the packages' import rules)
lint: $(VENV)/.dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

## messages: gather new strings into askuser_app/locale/*/LC_MESSAGES/*.po (needs gettext), compile the .mo
messages: $(VENV)/.dev
	$(BIN)/python manage.py updatemessages

format: $(VENV)/.dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
