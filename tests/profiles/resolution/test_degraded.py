"""Answers that survive a database outage (issue 35, item 3), with a real outage: a server
process whose database cannot be opened any more, not a mock of our code.

The server (``manage.py runserver``, one process, a new connection per request) runs on a
SQLite file of the demo workspace; the outage moves the file's folder away, so every
connection the server opens fails (``unable to open database file``). A resolve signed with
a key the server holds then answers 200 with ``X-Context-Degraded`` and exactly the bytes the
same request answered before the outage with its served layers made unavailable by an
``availability`` override; a key the server never saw, a scenario (stored in the database)
and an expand answer 503 as before, and ``DEGRADED_ANSWERS=false`` answers 503.
"""

import json
import urllib.error
import urllib.request

import pytest
from django.contrib.auth.models import User
from django.db import OperationalError, connection
from django.test import Client

from profiles.import_export.imports import workspace_import
from profiles.workspace.keys import api_key_create
from tests.processes import free_port, manage, migrated_database, process_env, start_server, stop

NOW = "2026-11-29T12:00:00Z"
DANA = {
    "profile": "support-answer",
    "input": {"message": "Where is my refund?", "customer_id": "C-1001"},
    "now": NOW,
}
# The demo's served layers (an itemFilter on customer_id) that Dana's request reads.
SERVED = ("customer", "tickets", "orders")
MAKE_KEYS = """
from django.contrib.auth.models import User
from profiles.workspace.keys import api_key_create
user = User.objects.create_user("app-owner")
for name in ("held", "unseen"):
    print(api_key_create(owner=user, name=name, scopes=["resolve"]).key)
"""


def call(base: str, path: str, body: dict, key: str) -> tuple[int, dict, bytes]:
    request = urllib.request.Request(
        f"{base}/api/v1/{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


@pytest.fixture
def demo_server_env(tmp_path):
    """A migrated SQLite file holding the demo, in its own folder; two keys of one user."""
    folder = tmp_path / "database"
    folder.mkdir()
    database = migrated_database(folder)
    env = process_env(
        database,
        DB_CONN_MAX_AGE="0",
        MATERIAL_TEXTS_DIR=str(tmp_path / "texts"),
        LOG_LEVEL="CRITICAL",
    )
    manage(env, "load_demo")
    held, unseen = manage(env, "shell", "-c", MAKE_KEYS).stdout.split()[-2:]
    return env, folder, held, unseen


def test_outage__held_key__200_degraded_the_what_if_bytes_others_503(demo_server_env, tmp_path):
    env, folder, held, unseen = demo_server_env
    server, base = start_server(env)
    try:
        # Before the outage: the answer, and the same request with the served layers unavailable.
        status, _, normal = call(base, "resolve", DANA, held)
        assert status == 200
        what_if = {**DANA, "availability": dict.fromkeys(SERVED, "unavailable")}
        status, what_if_headers, expected = call(base, "resolve", what_if, held)
        assert status == 200
        assert "X-Context-Degraded" not in what_if_headers

        folder.rename(tmp_path / "away")  # the database cannot be opened any more
        status, headers, degraded = call(base, "resolve", DANA, held)
        unseen_status, unseen_headers, unseen_body = call(base, "resolve", DANA, unseen)
        scenario_status, _, _ = call(
            base, "resolve", {"scenario": "Dana asks about a late refund"}, held
        )
        expand_status, _, _ = call(base, "expand", {**DANA, "ref": "glossary/chargeback"}, held)
    finally:
        stop(server)

    assert status == 200
    assert headers["X-Context-Degraded"] == "database-unavailable"
    assert degraded == expected != normal
    assert headers["ETag"] == what_if_headers["ETag"]
    assert headers["X-Profile-Version"] == what_if_headers["X-Profile-Version"]
    resolution = json.loads(degraded)
    decisions = {layer["layer"]: layer["decision"]["reason"] for layer in resolution["layers"]}
    assert {decisions[key] for key in SERVED} == {"LAYER_UNAVAILABLE"}
    # the customer record is required: the resolution says what is missing
    assert resolution["status"] == "BLOCKED"
    assert "MISSING_REQUIRED_CONTEXT" in json.dumps(resolution["blockers"])
    # a key this server never saw, a scenario, an expand: 503 as before
    assert unseen_status == 503
    assert unseen_headers["Retry-After"] == "5"
    assert json.loads(unseen_body)["error"]["code"] == "SERVICE_UNAVAILABLE"
    assert "X-Context-Degraded" not in unseen_headers
    assert (scenario_status, expand_status) == (503, 503)


def test_outage__degraded_answers_off__503_as_before(demo_server_env, tmp_path):
    env, folder, held, _ = demo_server_env
    server, base = start_server({**env, "DEGRADED_ANSWERS": "false"})
    try:
        assert call(base, "resolve", DANA, held)[0] == 200
        folder.rename(tmp_path / "away")
        status, headers, body = call(base, "resolve", DANA, held)
    finally:
        stop(server)

    assert status == 503
    assert json.loads(body)["error"]["code"] == "SERVICE_UNAVAILABLE"
    assert "X-Context-Degraded" not in headers


# --- PostgreSQL: the server gone while this process holds the workspace and the key ---------


def served_workspace() -> dict:
    """A small workspace with a served layer (an itemFilter) the profile requires."""
    return {
        "version": 1,
        "consumers": [{"key": "assistant", "name": "Assistant"}],
        "layers": [
            {
                "key": "policies",
                "name": "Policies",
                "items": [{"path": "refunds", "title": "Refunds", "body": "Within 14 days."}],
            },
            {
                "key": "tickets",
                "name": "Tickets",
                "requiresInput": ["customer_id"],
                "itemFilter": {"customer_id": "customer_id"},
                "items": [
                    {
                        "path": "T-1",
                        "title": "Late refund",
                        "body": "Where is my refund?",
                        "metadata": {"customer_id": "C-1"},
                    }
                ],
            },
        ],
        "profiles": [
            {
                "key": "answer",
                "name": "Answer",
                "consumer": "assistant",
                "objective": "answer",
                "budget": 500,
                "rules": {"tickets": {"participation": "include", "required": True}},
            }
        ],
    }


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's connection refused")
@pytest.mark.django_db(transaction=True)
def test_outage__postgresql_refuses_connections__degraded_answer_through_the_door():
    workspace_import(document=served_workspace())
    user = User.objects.create_user("app-owner")
    key = api_key_create(owner=user, name="app", scopes=["resolve"]).key
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    request = {"profile": "answer", "input": {"customer_id": "C-1"}, "now": NOW}
    what_if = {**request, "availability": {"tickets": "unavailable"}}
    assert (
        client.post("/api/v1/resolve", request, content_type="application/json").status_code == 200
    )
    expected = client.post("/api/v1/resolve", what_if, content_type="application/json")

    port = connection.settings_dict["PORT"]
    connection.close()
    connection.settings_dict["PORT"] = str(free_port())  # nothing listens there
    try:
        response = client.post("/api/v1/resolve", request, content_type="application/json")
        with pytest.raises(OperationalError):
            connection.ensure_connection()  # the outage is real
    finally:
        connection.settings_dict["PORT"] = port
        connection.close()

    assert response.status_code == 200
    assert response["X-Context-Degraded"] == "database-unavailable"
    assert response.content == expected.content
    assert json.loads(response.content)["status"] == "BLOCKED"
