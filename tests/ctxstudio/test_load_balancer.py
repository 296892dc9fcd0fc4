"""App servers behind haproxy, one Redis (docs/operations.md "App servers behind haproxy"):
real haproxy (health checks on /readyz, retries, redispatch) and three gunicorns, each with
its own worker and texts folder, on the suite's PostgreSQL. A save on one server is in the
very next resolve on another; a server stopped or killed under load loses no request haproxy
accepted, and the load moves to the one left."""

import contextlib
import json
import signal
import time

import pytest
from django.db import connection

from profiles.import_export.imports import workspace_import
from tests.ctxstudio.test_horizontal_scaling import database_url
from tests.perf.scaleout import app_server, haproxy, program, redis_server
from tests.perf.scaleout_bench import Load
from tests.perf.web_bench import http_call
from tests.profiles.conftest import NOW, api_key_for, small_workspace

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="needs PostgreSQL (the suite's second run)"
    ),
    pytest.mark.skipif(
        program("haproxy") is None or program("redis-server") is None,
        reason="needs haproxy and redis-server (Debian packages)",
    ),
]

REQUEST = {
    "profile": "profile-0",
    "input": {"message": "refund cards", "customer_id": "C-1"},
    "now": NOW,
}


@pytest.fixture
def balanced(admin_user):
    """The small workspace, Redis, three app servers (the first with the task worker that
    ``/readyz`` wants to have seen: one serves the database) and haproxy: (token,
    haproxy's port, the servers)."""
    workspace_import(document=small_workspace())
    token = api_key_for(admin_user)
    with contextlib.ExitStack() as stack:
        redis = stack.enter_context(redis_server())
        servers = [
            stack.enter_context(
                app_server(database_url(), tasks=n == 0, wait=False, CACHE_URL=redis)
            )
            for n in range(3)
        ]
        for server in servers:
            server.wait_ready()
        port = stack.enter_context(haproxy([server.port for server in servers], inter_ms=200))
        yield token, port, servers


def test_servers__save_on_one_seen_on_another__stopped_and_killed_under_load_lose_nothing(
    balanced,
):
    token, port, (a, b, c) = balanced
    # Each time, a ticket saved through A is in the very next resolve on B (which had just
    # answered for that customer: its cached candidates must notice the write).
    for trial in range(5):
        before = http_call(b.port, "POST", "/api/v1/resolve", REQUEST, token=token).expect(200)
        item = {
            "path": f"T-{trial}",
            "title": f"Refund cards ticket {trial}",
            "body": "Refund the cards: the parcel never arrived.",
            "metadata": {"customer_id": "C-1", "updated": "2026-11-28"},
        }
        url = "/api/v1/layers/layer-001/items/"
        http_call(a.port, "POST", url, item, token=token).expect(201)
        after = http_call(b.port, "POST", "/api/v1/resolve", REQUEST, token=token).expect(200)
        assert f'"T-{trial}"'.encode() not in before.data
        assert f'"T-{trial}"'.encode() in after.data, trial

    # Under load through haproxy, C is stopped (SIGTERM), then B dies (SIGKILL, its worker
    # too): no request is refused, and the answers come from A alone.
    requests = [
        {**REQUEST, "input": {"message": word, "customer_id": f"C-{n % 3}"}}
        for n, word in enumerate(["refund", "cards", "days", "guidance", "number", "take"])
    ]
    moments = []

    def stop_then_kill():
        for server, sig in ((c, signal.SIGTERM), (b, signal.SIGKILL)):
            time.sleep(1.5)
            moments.append(time.monotonic())
            server.kill(sig)

    load = Load(port, token, requests, clients=4, seconds=5).run(during=stop_then_kill)

    # Every request was answered, by its server or (refused or dropped before any answer)
    # by another: haproxy's retries. An answer its server was sending when killed is cut
    # short, too late for haproxy to retry: a sync worker sends one at a time, so at most one
    # per server stopped or killed (docs/operations.md, "App servers behind haproxy").
    assert load.errors == [], load.errors[:5]
    assert len(load.cut_short) <= 2, load.cut_short
    before = {server for when, server in load.served_by if when < moments[0]}
    after = {server for when, server in load.served_by if when > moments[1] + 1}
    assert before == {"app0", "app1", "app2"}
    assert after == {"app0"}
    assert len(load.latencies) > 20
    answer = http_call(port, "POST", "/api/v1/resolve", REQUEST, token=token).expect(200)
    assert json.loads(answer.data)["profile"]["key"] == "profile-0"
