# The two commands of the README, and the pieces they are made of.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
export SVC_DATA_DIR ?= $(CURDIR)/.svc-data
export SVC_ENABLE_DEV_AUTH ?= true
HOST ?= 127.0.0.1
PORT ?= 8080
EDGE_PORT ?= 8081
export SVC_PUBLIC_URL ?= http://localhost:$(PORT)
# pytest-xdist workers for `make unit`: one per core of the 2-core machines it runs on.
TEST_WORKERS ?= 2

.PHONY: setup run test lint types unit bench clean

$(BIN)/.synced: pyproject.toml uv.lock package.json package-lock.json scripts/bootstrap.sh
	./scripts/bootstrap.sh
	touch $@

setup: $(BIN)/.synced

run: setup
	$(BIN)/svc serve --host $(HOST) --port $(PORT) --edge-port $(EDGE_PORT)

lint: setup
	$(BIN)/ruff check src tests bench
	$(BIN)/lint-imports

types: setup
	$(BIN)/mypy

# The browser tests go to one worker together (xdist_group "browser", tests/conftest.py).
unit: setup
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

test: lint types unit

bench: setup
	$(BIN)/python bench/api.py
	$(BIN)/python bench/ingest.py
	$(BIN)/python bench/edge.py
	$(BIN)/python bench/dashboard.py
	$(BIN)/python bench/dns_bench.py

clean:
	rm -rf $(VENV) .svc-data .mypy_cache .ruff_cache .pytest_cache
