#!/usr/bin/env bash
# The suite: lint, then pytest on SQLite, then again on PostgreSQL when one is reachable
# (DATABASE_URL_POSTGRES, default: the local server). CI sets REQUIRE_POSTGRES=1 so a missing
# server fails the run instead of being skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
# pytest-xdist: one test process per core (TEST_WORKERS=0 runs in this process). Each worker
# has its own test database (pytest-django suffixes the name), so the PostgreSQL run is
# isolated per worker too.
WORKERS=(-n "${TEST_WORKERS:-auto}")

.venv/bin/ruff format --check .
.venv/bin/ruff check .

echo "== pytest on SQLite"
DATABASE_URL="sqlite:///:memory:" $PY -m pytest -q -p no:cacheprovider "${WORKERS[@]}" "$@"

PG_URL="${DATABASE_URL_POSTGRES:-postgres://postgres@127.0.0.1:5432/ctxstudio}"
if $PY scripts/pg_ready.py "$PG_URL"; then
  echo "== pytest on PostgreSQL"
  DATABASE_URL="$PG_URL" $PY -m pytest -q -p no:cacheprovider "${WORKERS[@]}" -m "not browser" "$@"
elif [ "${REQUIRE_POSTGRES:-0}" = 1 ]; then
  echo "PostgreSQL is required (REQUIRE_POSTGRES=1) but not reachable" >&2
  exit 1
else
  echo "== PostgreSQL not reachable: skipped the PostgreSQL run"
fi
