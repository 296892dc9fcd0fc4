"""Parallel writers through a real threaded server on PostgreSQL: every write takes the writers'
lock first, so imports never interleave, exactly one of several writes based on the same ETag
applies, a new name is created once, and alternating profile and rule edits never deadlock.

SQLite has no row locks (and one in-memory database per thread), so this runs in the
PostgreSQL pass of the suite.
"""

import http.client
import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

import pytest
from django.contrib.auth.models import User
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
from django.core.wsgi import get_wsgi_application
from django.db import connections
from django.urls import reverse

from profiles.authoring.scenarios import scenarios_upsert
from profiles.import_export.documents import workspace_export
from profiles.import_export.imports import workspace_import
from profiles.models import Item, Profile, Rule, Scenario
from profiles.workspace.concurrency import workspace_write
from tests.profiles.conftest import NOW, api_key_for, normalize_document, small_workspace

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"),
        reason="needs PostgreSQL's row locks (the suite's second run)",
    ),
]


class ParallelWSGIServer(ThreadedWSGIServer):
    """Django's threaded development server, with room for 30 connections arriving at once."""

    request_queue_size = 64


@pytest.fixture
def server():
    """Run the application on a threaded server; return a function calling it as staff."""
    user = User.objects.create_user("writer", password="writer-password-1", is_staff=True)
    token = api_key_for(user)
    httpd = ParallelWSGIServer(("127.0.0.1", 0), WSGIRequestHandler, allow_reuse_address=False)
    httpd.set_app(get_wsgi_application())
    serving = threading.Thread(target=httpd.serve_forever, daemon=True)
    serving.start()

    def call(method: str, path: str, body=None, headers=None) -> tuple[int, dict, bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", httpd.server_port, timeout=60)
        sent = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        sent.update(headers or {})
        try:
            payload = None if body is None else json.dumps(body)
            connection.request(method, "/api/v1/" + path, payload, sent)
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    try:
        yield call
    finally:
        httpd.shutdown()
        httpd.server_close()


def in_parallel(calls: list) -> list:
    """Run the calls at once (released together by a barrier); return their results in order."""
    barrier = threading.Barrier(len(calls))

    def run(call):
        barrier.wait()
        return call()

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(run, calls))


def test_replace_imports__two_in_parallel__the_result_equals_one_of_the_files(server):
    # Given two different files, each adding its own layer and changing shared items,
    base = small_workspace(layers=3, items=150)
    first, second = json.loads(json.dumps(base)), json.loads(json.dumps(base))
    first["layers"].append({"key": "only-first", "items": [{"path": "a", "body": "first"}]})
    second["layers"].append({"key": "only-second", "items": [{"path": "b", "body": "second"}]})
    for item in first["layers"][0]["items"]:
        item["body"] = "changed by the first file"
    for item in second["layers"][0]["items"]:
        item["body"] = "changed by the second file"
    second["profiles"][0]["budget"] = 321
    workspace_import(document=base)
    expected = [normalize_document(first), normalize_document(second)]

    for _ in range(3):
        # when both are sent with mode=replace at the same moment,
        answers = in_parallel(
            [
                lambda document=document: server("POST", "workspace?mode=replace", document)
                for document in (first, second)
            ]
        )

        # then both succeed and the workspace is exactly one of them, never a mix. (Each
        # request's task runs the job due next, which may be the other request's: an answer
        # can say "running" while the other thread finishes it. Both are done once both
        # requests have answered.)
        assert [status for status, _, _ in answers] == [202, 202], answers
        jobs = [f"workspace/imports/{json.loads(body)['id']}" for _, _, body in answers]
        assert [json.loads(server("GET", job)[2])["status"] for job in jobs] == ["succeeded"] * 2
        assert normalize_document(workspace_export()) in expected


def test_scenario_patch__20_in_parallel_with_one_etag__exactly_one_applies(server):
    workspace_import(document=small_workspace())
    scenarios_upsert(scenarios=[{"name": "Late refund", "profile": "profile-0", "input": {}}])
    path = "scenarios/" + quote("Late refund")
    etag = server("GET", path)[1]["ETag"]

    answers = in_parallel(
        [
            lambda n=n: server("PATCH", path, {"description": f"edit {n}"}, {"If-Match": etag})
            for n in range(20)
        ]
    )

    statuses = sorted(status for status, _, _ in answers)
    assert statuses == [200] + [412] * 19
    winner = next(json.loads(body) for status, _, body in answers if status == 200)
    assert Scenario.objects.get(name="Late refund").description == winner["description"]


def test_scenario_create__30_posts_of_one_new_name__exactly_one_created(server):
    workspace_import(document=small_workspace())

    answers = in_parallel(
        [
            lambda n=n: server(
                "POST",
                "scenarios/",
                {"name": "Fresh", "profile": f"profile-{n % 2}", "input": {"n": n}},
            )
            for n in range(30)
        ]
    )

    statuses = sorted(status for status, _, _ in answers)
    assert statuses == [201] + [409] * 29
    assert Scenario.objects.filter(name="Fresh").count() == 1


def test_item_patch__10_in_parallel_with_one_etag__exactly_one_applies(server):
    workspace_import(document=small_workspace())
    path = "layers/layer-000/items/docs/item-0001.md"
    etag = server("GET", path)[1]["ETag"]

    answers = in_parallel(
        [
            lambda n=n: server("PATCH", path, {"title": f"title {n}"}, {"If-Match": etag})
            for n in range(10)
        ]
    )

    statuses = sorted(status for status, _, _ in answers)
    assert statuses == [200] + [412] * 9
    winner = next(json.loads(body) for status, _, body in answers if status == 200)
    assert (
        Item.objects.get(layer__key="layer-000", path="docs/item-0001.md").title
        == (winner["title"])
    )


def test_profile_and_rule_patches__alternating_in_parallel__all_applied_no_deadlock(server):
    # Given two profiles whose fields and rules are edited by many writers at once,
    workspace_import(document=small_workspace(profiles=2))

    def writer(n: int) -> list[int]:
        statuses = []
        for round_ in range(4):
            profile = f"profile-{(n + round_) % 2}"
            if (n + round_) % 2 == 0:
                answer = server("PATCH", f"profiles/{profile}", {"budget": 500 + n})
            else:
                answer = server("PATCH", f"profiles/{profile}/rules/layer-000", {"maxItems": n % 5})
            statuses.append(answer[0])
        return statuses

    # when 12 writers alternate profile and rule PATCHes on both,
    results = in_parallel([lambda n=n: writer(n) for n in range(12)])

    # then every write applied: no deadlock, no 503, no lost rule row.
    assert {status for statuses in results for status in statuses} == {200}
    assert Profile.objects.count() == 2
    assert Rule.objects.filter(layer__key="layer-000").count() == 2


def test_rule_put__parallel_with_a_scenario_save__both_apply(server):
    workspace_import(document=small_workspace())
    scenarios_upsert(scenarios=[{"name": "s", "profile": "profile-0", "input": {}}])

    answers = in_parallel(
        [
            lambda: server("PUT", "profiles/profile-0/rules/layer-000", {"mode": "on-demand"}),
            lambda: server("PATCH", "scenarios/s", {"now": NOW}),
            lambda: server("DELETE", "profiles/profile-1"),
        ]
    )

    assert [status for status, _, _ in answers] == [200, 200, 204]


@pytest.fixture
def writers_lock_held(settings):
    """Hold the writers' lock in another thread (another connection) until the test ends."""
    settings.WRITE_LOCK_TIMEOUT = "300ms"
    workspace_import(document=small_workspace())
    held, release = threading.Event(), threading.Event()

    def hold():
        try:
            with workspace_write():
                held.set()
                release.wait(20)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(10)
    try:
        yield
    finally:
        release.set()
        holder.join()


def test_api_write__lock_held_past_the_lock_timeout__409_retryable_and_nothing_written(
    server, writers_lock_held
):
    status, headers, body = server("PATCH", "profiles/profile-0", {"budget": 5})

    assert status == 409
    assert headers["Retry-After"] == "1"
    assert json.loads(body)["error"]["retryable"] is True
    assert Profile.objects.get(key="profile-0").budget == 800


def test_studio_write__lock_held_past_the_lock_timeout__409_not_503(
    server, client, writers_lock_held
):
    client.force_login(User.objects.get(username="writer"))

    response = client.post(reverse("profile-delete", args=["profile-1"]))

    assert response.status_code == 409
    assert response["Retry-After"] == "1"
    assert Profile.objects.filter(key="profile-1").exists()
