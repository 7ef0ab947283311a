# The two commands of the README, and the pieces they are made of.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
export SVC_DATA_DIR ?= $(CURDIR)/.svc-data
export SVC_ENABLE_DEV_AUTH ?= true
HOST ?= 127.0.0.1
PORT ?= 8080
EDGE_PORT ?= 8081
# The edge's https port (`make run EDGE_TLS_PORT=8443`); empty: http only (docs/tls.md).
EDGE_TLS_PORT ?=
export SVC_PUBLIC_URL ?= http://localhost:$(PORT)
# pytest-xdist workers for `make unit`: one per core of the 2-core machines it runs on.
TEST_WORKERS ?= 2

.PHONY: setup run test lint types unit bench clean

$(BIN)/.synced: pyproject.toml uv.lock package.json package-lock.json scripts/bootstrap.sh
	@./scripts/bootstrap.sh
	@touch $@

setup: $(BIN)/.synced

# A local run has no public DNS to prove names in: svc's own zones are trusted (the banner says it is
# unsafe on a shared server). Only `make run`: the tests and a plain `svc serve` never trust them.
run: export SVC_TRUST_OWN_ZONES ?= true
# And env.ai answers from a fake model in svc's process for each lane without a provider's URL.
run: export SVC_AI_FAKE ?= true
# And domains are bought from a fake registrar svc runs itself (nothing to sign up for).
run: export SVC_REGISTRAR ?= fake
# And plans and AI credit are paid through a fake Polar svc runs itself: `svc billing upgrade` and
# `svc ai topup` open its checkout (test card 4242 4242 4242 4242), whose payment sends the webhook.
run: export SVC_BILLING ?= fake
# And projects' end users sign in with a fake GitHub, Google and Microsoft svc runs itself on
# 127.0.0.1:9911 (`svc auth provider set github --client-id any --client-secret any`; docs/auth.md).
run: export SVC_AUTH_FAKE ?= true
# And git over SSH beside git over HTTPS (ssh://git@localhost:2222/<org>/<project>/<repo>.git).
run: export SVC_SSH_PORT ?= 2222
# And email: projects' addresses under a local mail domain, their mail received on port 2525
# (`swaks --server localhost:2525 --to hi@<project>.<org>.mail.localhost`; docs/email.md).
run: export SVC_MAIL_DOMAIN ?= mail.localhost
run: export SVC_SMTP_PORT ?= 2525
# And https, once EDGE_TLS_PORT is given, from a local CA svc makes (`svc certs trust` trusts it), unless
# an ACME directory is set.
run: export SVC_TLS_ISSUER ?= $(if $(SVC_ACME_DIRECTORY_URL),acme,local)
run: setup
	$(BIN)/svc serve --host $(HOST) --port $(PORT) --edge-port $(EDGE_PORT) $(if $(EDGE_TLS_PORT),--edge-tls-port $(EDGE_TLS_PORT))

# deptry: src imports only what [project].dependencies declares, and uses all of it (pyproject.toml);
# tests and benches may import the dev group too, and need not use every dependency.
lint: setup
	$(BIN)/ruff check src tests bench
	$(BIN)/lint-imports
	$(BIN)/deptry src
	$(BIN)/deptry tests bench --exclude '\.venv' --ignore DEP002,DEP004 --known-first-party svc --known-first-party tests --known-first-party lint

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
	$(BIN)/python bench/edge_tls.py
	$(BIN)/python bench/deploy.py
	$(BIN)/python bench/dashboard.py
	$(BIN)/python bench/dns_bench.py
	$(BIN)/python bench/worker.py
	$(BIN)/python bench/auth.py
	$(BIN)/python bench/webhooks.py
	$(BIN)/python bench/ai.py
	$(BIN)/python bench/domains.py
	$(BIN)/python bench/git.py
	$(BIN)/python bench/mail.py

clean:
	rm -rf $(VENV) .svc-data .mypy_cache .ruff_cache .pytest_cache
