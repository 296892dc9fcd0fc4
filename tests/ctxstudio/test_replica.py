"""A streaming read replica under real processes: a primary cluster of the module's own, a
replica of it made with ``pg_basebackup -R``, Redis when its server is installed (the shared
record of the last write: then two workers), and ``make serve``'s gunicorn with
``DATABASE_REPLICA_URL``. What a reader sees is checked through real requests, and which
database answered through the server's own counter (``ctxstudio_replica_reads_total``)."""

import contextlib
import http.client
import json
import os
import re
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import pg_clusters
from tests.ctxstudio.test_horizontal_scaling import gunicorn
from tests.profiles.conftest import NOW

ROOT = Path(__file__).resolve().parents[2]
METRICS_TOKEN = secrets.token_urlsafe(16)

pytestmark = [
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"),
        reason="needs PostgreSQL (the suite's second run)",
    ),
    pytest.mark.skipif(
        pg_clusters.server_programs() is None,
        reason="needs PostgreSQL's server programs (initdb, pg_ctl, pg_basebackup)",
    ),
]

# A workspace whose profile reads a served layer (layer-001, filtered by customer_id).
SEED = """
from django.contrib.auth import get_user_model
from profiles.import_export.imports import workspace_import
from tests.profiles.conftest import api_key_for, small_workspace

document = small_workspace(layers=2)
for profile in document["profiles"]:
    profile["budget"] = 8000
    profile["rules"]["layer-001"] = {"mode": "inline", "priority": 1, "maxItems": 50}
workspace_import(document=document)
user = get_user_model().objects.create_superuser("admin", "admin@example.com", "x-Replica-9")
print(api_key_for(user))
"""
REQUEST = {
    "profile": "profile-0",
    "input": {"message": "refund", "customer_id": "C-1"},
    "now": NOW,  # the answers' dates do not move while the test runs
}


def call(port, method, path, headers=None, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        conn.request(method, path, None if body is None else json.dumps(body), headers or {})
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


class Stack:
    def __init__(self, primary, replica, port, key, workers):
        self.primary, self.replica, self.port, self.workers = primary, replica, port, workers
        self.headers = {"Authorization": f"Token {key}", "Content-Type": "application/json"}
        self.written = 0

    def outcomes(self) -> dict[str, float]:
        status, text = call(
            self.port, "GET", "/metrics", {"Authorization": f"Bearer {METRICS_TOKEN}"}
        )
        assert status == 200, text
        found = re.findall(r'^ctxstudio_replica_reads_total\{outcome="(\w+)"\} (\S+)$', text, re.M)
        return {outcome: float(value) for outcome, value in found}

    def write(self, customer="C-1") -> str:
        """Create a served item of ``customer`` through the API; return its path."""
        self.written += 1
        path = f"tickets/t-{self.written}-{secrets.token_hex(3)}.md"
        body = {"path": path, "title": f"Ticket {path}", "body": "Refund asked again."}
        body["metadata"] = {"updated": "2026-11-01", "customer_id": customer}
        status, text = call(self.port, "POST", "/api/v1/layers/layer-001/items", self.headers, body)
        assert status == 201, text
        return path

    def resolve(self) -> str:
        status, text = call(self.port, "POST", "/api/v1/resolve", self.headers, REQUEST)
        assert status == 200, text
        return text

    def items(self) -> str:
        status, text = call(self.port, "GET", "/api/v1/layers/layer-001/items", self.headers)
        assert status == 200, text
        return text


def grown(before: dict, after: dict, outcome: str) -> float:
    return after.get(outcome, 0) - before.get(outcome, 0)


@pytest.fixture(scope="module")
def stack():
    with contextlib.ExitStack() as stack:
        primary = stack.enter_context(pg_clusters.primary_cluster(prefix="ctx-replica-primary-"))
        replica = stack.enter_context(
            pg_clusters.replica_cluster(primary, prefix="ctx-replica-standby-")
        )
        primary.sql("CREATE DATABASE ctx")
        cache_url = stack.enter_context(pg_clusters.redis_server())
        env = {
            **{k: v for k, v in os.environ.items() if k not in ("DJANGO_ALLOW_ASYNC_UNSAFE",)},
            "DATABASE_URL": primary.url("ctx"),
            "DATABASE_REPLICA_URL": replica.url("ctx"),
            "REPLICA_RETRY_SECONDS": "1",
            # The lag reads as the time since the last replayed transaction while WAL waits:
            # after an idle spell, a loaded machine's next write can look late. The checks here
            # are of the written counter; the lag bound is the bench's and the docs'.
            "REPLICA_MAX_LAG_SECONDS": "60",
            "DEBUG": "false",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "HTTPS": "false",
            "ALLOWED_HOSTS": "127.0.0.1",
            "METRICS_TOKEN": METRICS_TOKEN,
            "LOG_LEVEL": "ERROR",
        }
        env.pop("CACHE_URL", None)
        if cache_url:
            env["CACHE_URL"] = cache_url
        for args in (["migrate", "--noinput", "-v", "0"], ["shell", "-c", SEED]):
            done = subprocess.run(
                [sys.executable, "manage.py", *args],
                cwd=ROOT,
                env={**env, "DEBUG": "true"},
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stdout + done.stderr
        key = done.stdout.strip().splitlines()[-1]
        pg_clusters.replayed(primary, replica)
        # Without a shared cache, one worker: the record of the last write is per process.
        workers = 2 if cache_url else 1
        port = stack.enter_context(
            gunicorn(pg_clusters.free_port(), more_env={**env, "GUNICORN_WORKERS": str(workers)})
        )
        yield Stack(primary, replica, port, key, workers)


def test_migrations_ran_on_the_primary_only__the_replica_has_them_by_streaming(stack):
    # The replica refuses writes: the tables it has came from the primary's WAL.
    tables = "SELECT count(*) FROM django_migrations"
    assert stack.replica.sql(tables, database="ctx") == stack.primary.sql(tables, database="ctx")
    assert stack.replica.sql("SELECT pg_is_in_recovery()") == [(True,)]


def test_caught_up_replica__resolves_and_item_lists_are_read_there(stack):
    pg_clusters.replayed(stack.primary, stack.replica)
    before = stack.outcomes()
    answers = {stack.resolve() for _ in range(6)}
    listed = stack.items()
    after = stack.outcomes()
    assert len(answers) == 1  # the same answer from every worker
    assert "docs/item-0001.md" in answers.pop()  # customer C-1's served item
    assert "docs/item-0001.md" in listed
    # Six served statements and one list's reads, each on the replica.
    assert grown(before, after, "replica") >= 7
    assert sum(grown(before, after, o) for o in after if o != "replica") == 0


def test_write_then_resolve_at_once__sees_the_write_on_any_worker(stack):
    before = stack.outcomes()
    for _ in range(4):
        path = stack.write()
        assert path in stack.resolve()  # the next request, on whichever worker takes it
        assert path in stack.items()
    after = stack.outcomes()
    assert sum(grown(before, after, o) for o in after) >= 8


def test_paused_replica__a_write_is_still_seen__read_on_the_primary(stack):
    stack.replica.sql("SELECT pg_wal_replay_pause()")
    try:
        before = stack.outcomes()
        path = stack.write()
        assert path in stack.resolve()
        assert path in stack.items()
        after = stack.outcomes()
        assert grown(before, after, "primary_written") + grown(before, after, "primary_lag") >= 2
        # The replica really has not applied it: it would have answered without it.
        applied = stack.replica.sql(
            "SELECT count(*) FROM profiles_item WHERE path = %s", (path,), database="ctx"
        )
        assert applied == [(0,)]
    finally:
        stack.replica.sql("SELECT pg_wal_replay_resume()")
    pg_clusters.replayed(stack.primary, stack.replica)
    # Caught up: the replica answers again (within a few reads: what the workers recorded
    # meanwhile, such as a compilation's counter, must have been replayed too), never stale.
    for _ in range(20):
        before = stack.outcomes()
        assert path in stack.resolve()
        if grown(before, stack.outcomes(), "replica") == 1:
            break
        time.sleep(0.25)
    else:
        raise AssertionError("the caught-up replica never answered again")


def test_stopped_replica__answers_from_the_primary__then_the_replica_again(stack):
    stack.replica.stop()
    try:
        before = stack.outcomes()
        for _ in range(2):
            path = stack.write()
            assert path in stack.resolve()
            assert path in stack.items()
        after = stack.outcomes()
        assert grown(before, after, "primary_unreachable") >= 1
        assert grown(before, after, "replica") == 0
    finally:
        stack.replica.start()
    pg_clusters.replayed(stack.primary, stack.replica)
    time.sleep(1.1)  # REPLICA_RETRY_SECONDS: the workers try the replica again
    before = stack.outcomes()
    for _ in range(2 * stack.workers):
        assert path in stack.resolve()
    assert grown(before, stack.outcomes(), "replica") >= 1
