# Context Studio — every target sets itself up first; `make run` and `make test` are all a newcomer needs.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-dev
BENCH_STAMP := $(VENV)/.installed-bench
HOST ?= 127.0.0.1
PORT ?= 8000
# The studio's address in the links it sends (review emails, webhook events): where make run serves.
SITE_URL ?= http://$(HOST):$(PORT)

.PHONY: setup run demo-reset serve test lint format bench bench-web bench-scale bench-scaleout bench-replica loadtest container-check lock clean

$(VENV)/bin/python:
	@set -e; pick=""; \
	for cand in python3.13 python3.12 python3; do \
	  if command -v $$cand >/dev/null 2>&1 && $$cand -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then pick=$$cand; break; fi; \
	done; \
	if [ -z "$$pick" ]; then echo "Context Studio needs Python 3.12 or newer (tried python3.13, python3.12, python3)." >&2; exit 1; fi; \
	echo "Creating $(VENV) with $$($$pick --version)"; \
	$$pick -m venv $(VENV)

$(STAMP): $(VENV)/bin/python requirements/dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements/dev.txt
	@touch $(STAMP)

$(BENCH_STAMP): $(STAMP) requirements/bench.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements/bench.txt
	@touch $(BENCH_STAMP)

setup: $(STAMP)

run: setup
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo --url http://$(HOST):$(PORT)/
	@echo "Serving Context Studio on http://$(HOST):$(PORT)/  (Ctrl-C to stop)"
	@# The task worker (background imports) runs beside the server and stops with it. Both
	@# know the studio's address (SITE_URL: the links in review emails and webhook events),
	@# the worker too, which sends a scheduled apply's emails with no request to ask.
	SITE_URL=$(SITE_URL) $(PY) scripts/with_worker.py -- $(PY) manage.py runserver $(HOST):$(PORT)

# Replace the whole workspace and every saved scenario by the demo (asks to type "reset";
# profiles of protected environments too, recorded as "load_demo --reset": docs/decisions.md).
demo-reset: setup
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo --reset --url http://$(HOST):$(PORT)/

# Production-style serving: gunicorn (2 workers) + whitenoise, DEBUG off, migrations applied,
# and one task worker per queue (manage.py db_worker: default, webhooks), stopped with gunicorn.
# Needs SECRET_KEY (and DATABASE_URL, ALLOWED_HOSTS… see README "Production"). HTTPS=false
# lets you try it over plain HTTP on this machine.
serve: setup
	@if [ -z "$$SECRET_KEY" ]; then echo "make serve: set SECRET_KEY (e.g. export SECRET_KEY=\$$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))'))" >&2; exit 1; fi
	DEBUG=false $(PY) manage.py migrate --noinput
	DEBUG=false $(PY) manage.py collectstatic --noinput -v 0
	DEBUG=false $(PY) scripts/with_worker.py -- $(VENV)/bin/gunicorn -c scripts/gunicorn.conf.py ctxstudio.wsgi

test: setup
	bash scripts/test.sh

lint: setup
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .

format: setup
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: $(BENCH_STAMP)
	$(PY) -m tests.perf.bench
	$(PY) -m tests.perf.lean_bench
	$(PY) -m tests.perf.served_bench
	$(PY) -m tests.perf.web_bench $(WEB_BENCH_ARGS)
	$(PY) -m tests.perf.scale_bench $(SCALE_BENCH_ARGS)
	$(PY) -m tests.perf.client_bench $(CLIENT_BENCH_ARGS)

# The web section alone: PostgreSQL behind gunicorn, 1k/10k/50k items (docs/benchmarks.md, "Web").
bench-web: setup
	$(PY) -m tests.perf.web_bench $(WEB_BENCH_ARGS)

# The scale section alone: the generated desk (10k tickets by default; SCALE_BENCH_ARGS=
# "--tickets 100000") in a fresh PostgreSQL database behind gunicorn (docs/benchmarks.md, "Scale").
bench-scale: setup
	$(PY) -m tests.perf.scale_bench $(SCALE_BENCH_ARGS)

# Scale-out on this machine: app servers behind haproxy (1 and 2 servers), PgBouncer against a
# direct connection, prepared statements, a server killed under load, and --partition
# (docs/benchmarks.md, "Scale-out"; needs pgbouncer, haproxy, redis-server).
bench-scaleout: setup
	$(PY) -m tests.perf.scaleout_bench $(SCALEOUT_BENCH_ARGS)

# A primary and its pg_basebackup streaming replica (clusters of its own), Redis and gunicorn:
# resolves through the replica against the primary alone, then writes while reading: the
# replica's lag, the reads that fell back, stale answers (docs/benchmarks.md, "Read replica").
bench-replica: setup
	$(PY) -m tests.perf.replica_bench $(REPLICA_BENCH_ARGS)

# Build the image and run compose.yaml (PostgreSQL, Redis, web, task workers) with podman, then
# use the product through it (root, podman, podman-compose, debootstrap; docs/operations.md
# "Containers"). CONTAINER_CHECK_ARGS="--base-image python:3.12-slim" where a registry is reachable.
container-check: setup
	$(PY) -m tests.perf.container_check $(CONTAINER_CHECK_ARGS)

# Load and fault test against gunicorn + PostgreSQL on this machine (loopback, bounded).
# LOADTEST_ARGS="--stop-postgres" adds the database-outage phase (it stops the local server).
loadtest: setup
	$(PY) scripts/loadtest.py $(LOADTEST_ARGS)

# Regenerate the lock files from pyproject.toml (needs network access to the package index).
lock: setup
	$(PY) -m pip install --quiet uv
	$(VENV)/bin/uv pip compile pyproject.toml -q --python-version 3.12 --generate-hashes -o requirements/base.txt
	$(VENV)/bin/uv pip compile pyproject.toml -q --python-version 3.12 --group dev --generate-hashes -o requirements/dev.txt
	$(VENV)/bin/uv pip compile pyproject.toml -q --python-version 3.12 --group dev --group bench --generate-hashes -o requirements/bench.txt

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache db.sqlite3 db.sqlite3-wal db.sqlite3-shm
