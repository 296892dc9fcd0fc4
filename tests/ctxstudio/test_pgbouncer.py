"""The API through PgBouncer's transaction pooling: a real pgbouncer (Debian's, 1.18) in front
of the suite's PostgreSQL, a real gunicorn and task worker on it with ``DB_POOLER=pgbouncer``
(docs/operations.md "PgBouncer"): writes, bulk ingest (in the request and as a background
job), export and import through the API, a change request reviewed and applied, resolves on
the lean door seeing each write. PgBouncer's own counters show the traffic went through it."""

import contextlib
import json
import time

import psycopg
import pytest
from django.db import connection

from profiles.authoring.scenarios import scenarios_upsert
from profiles.import_export.imports import workspace_import
from profiles.models import Environment
from tests.ctxstudio.test_horizontal_scaling import database_url
from tests.ctxstudio.test_production import run_manage
from tests.perf.scaleout import app_server, pgbouncer, program
from tests.perf.web_bench import http_call
from tests.profiles.conftest import (
    NOW,
    RELEASE_SCENARIOS,
    api_key_for,
    editors_member,
    release_workspace,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL (the suite's second run)",
    ),
    pytest.mark.skipif(program("pgbouncer") is None, reason="needs pgbouncer (Debian package)"),
]

NDJSON = {"Content-Type": "application/x-ndjson"}


def bouncer_url(port: int) -> str:
    return (
        database_url().rsplit("@", 1)[0] + f"@127.0.0.1:{port}/{connection.settings_dict['NAME']}"
    )


def bouncer_transactions(port: int) -> int:
    """Return the transactions PgBouncer passed to the test database (its admin console)."""
    with psycopg.connect(
        host="127.0.0.1", port=port, user="postgres", dbname="pgbouncer", autocommit=True
    ) as admin:
        cursor = admin.cursor()
        cursor.execute("SHOW STATS")
        names = [column.name for column in cursor.description]
        for row in cursor.fetchall():
            if row[0] == connection.settings_dict["NAME"]:
                return row[names.index("total_xact_count")]
    return 0


class Api:
    def __init__(self, port: int, token: str):
        self.port, self.token = port, token

    def __call__(self, method, path, body=None, *, headers=None, expect=200):
        reply = http_call(
            self.port,
            method,
            "/api/v1/" + path,
            body,
            token=self.token,
            headers=headers,
            timeout=30,
        )
        assert reply.status == expect, (method, path, reply.status, reply.data[:400])
        return reply

    def json(self, *args, **kwargs):
        return json.loads(self(*args, **kwargs).data)

    def job(self, reply, seconds: float = 20) -> dict:
        """Poll a 202's job until it ends; return it."""
        url = reply.headers["Location"].split("/api/v1/", 1)[1]
        deadline = time.monotonic() + seconds
        while True:
            job = self.json("GET", url)
            if job["status"] not in ("queued", "running", "new", "ready"):
                return job
            assert time.monotonic() < deadline, f"job still {job['status']}"
            time.sleep(0.2)


def admitted(answer: dict) -> list[str]:
    return [
        f"{layer['layer']}/{unit}"
        for layer in answer["layers"]
        for unit in layer["rendered"]["items"]
    ]


def test_pgbouncer__the_api_through_transaction_pooling__every_write_seen_and_jobs_run():
    # Given the release workspace (production protected, one approval) and two editors,
    workspace_import(document=release_workspace())
    scenarios_upsert(scenarios=RELEASE_SCENARIOS)
    Environment.objects.create(key="production", requires_change_request=True, approvals=1)
    editor, reviewer = editors_member("editor"), editors_member("reviewer")
    keys = api_key_for(editor), api_key_for(reviewer)

    with contextlib.ExitStack() as stack:
        bouncer = stack.enter_context(pgbouncer(pool_size=4))
        server = stack.enter_context(
            app_server(bouncer_url(bouncer), workers=2, DB_POOLER="pgbouncer")
        )
        before = bouncer_transactions(bouncer)
        api, review = Api(server.port, keys[0]), Api(server.port, keys[1])
        request = {"profile": "profile-0", "input": {"message": "refund", "customer_id": "C-1"}}
        request["now"] = NOW

        # When a resolve is answered (the lean door), then tickets are bulk-written,
        first = api.json("POST", "resolve", request)
        assert first["profile"]["key"] == "profile-0"
        lines = [
            {
                "path": f"T-{n}",
                "title": f"Ticket {n}: refund of a lost parcel",
                "body": "The customer asks for a refund; the parcel never arrived.",
                "metadata": {"customer_id": "C-1", "updated": "2026-11-28"},
            }
            for n in range(3)
        ]
        body = "".join(json.dumps(line) + "\n" for line in lines)
        written = api.json("POST", "layers/layer-001/bulk", body, headers=NDJSON)
        assert written["created"] == 3
        # then the next resolve sees them (the served layer's one statement),
        assert "layer-001/T-0" in admitted(api.json("POST", "resolve", request))

        # a background bulk job (the task worker, through PgBouncer too) writes more,
        lines = [{**line, "path": f"T-bg-{n}"} for n, line in enumerate(lines)]
        body = "".join(json.dumps(line) + "\n" for line in lines)
        job = api.job(
            api("POST", "layers/layer-001/bulk?background=true", body, headers=NDJSON, expect=202)
        )
        assert job["status"] == "succeeded", job
        assert job["summary"]["created"] == 3

        # the workspace is exported (one snapshot, a cursor over the items) and imported
        # back as a background job,
        exported = api("GET", "workspace", headers={"Accept": "application/yaml"}).data
        assert b"T-bg-2" in exported
        job = api.job(
            api(
                "POST",
                "workspace",
                exported.decode(),
                headers={"Content-Type": "application/yaml"},
                expect=202,
            )
        )
        assert job["status"] == "succeeded", job

        # and a change request to the protected profile is proposed, approved and applied,
        proposed = api.json(
            "POST",
            "change-requests",
            {"profile": "profile-0", "title": "Smaller", "changes": {"budget": 700}},
            expect=201,
        )
        url = f"change-requests/{proposed['id']}"
        etag = review("GET", url).headers["ETag"]
        review("POST", f"{url}/approve", headers={"If-Match": etag})
        assert api.json("POST", f"{url}/apply")["status"] == "applied"

        # then the next resolve answers with the applied budget and the tickets,
        answer = api.json("POST", "resolve", request)
        assert answer["budget"]["limit"] == 700
        assert {"layer-001/T-0", "layer-001/T-bg-0"} & set(admitted(answer))
        # every answer went through PgBouncer, and the server is still healthy.
        assert bouncer_transactions(bouncer) - before > 20
        assert http_call(server.port, "GET", "/readyz").status == 200


def test_pgbouncer__a_held_cursor_across_transactions__lost_hence_no_server_side_cursors():
    # Why DB_POOLER=pgbouncer turns server-side cursors off: Django's ``.iterator()`` in
    # autocommit declares a WITH HOLD cursor and fetches it in later transactions, which
    # transaction pooling may give another backend.
    name = connection.settings_dict["NAME"]
    with pgbouncer(pool_size=2) as port:
        one, two = (
            psycopg.connect(
                host="127.0.0.1", port=port, user="postgres", dbname=name, autocommit=True
            )
            for _ in range(2)
        )
        with one, two:
            one.execute("DECLARE held CURSOR WITH HOLD FOR SELECT generate_series(1, 10)")
            # The other client's transaction takes the backend the cursor lives on (the most
            # recently used one), so the next fetch runs on the other backend.
            with two.transaction():
                two.execute("SELECT 1")
                with pytest.raises(psycopg.errors.InvalidCursorName):
                    one.execute("FETCH 5 FROM held")


def test_pgbouncer__the_online_index_migration__runs_through_transaction_pooling_both_ways():
    # Migration 0030 is not one transaction (CREATE and DROP INDEX CONCURRENTLY, a statement
    # each): through PgBouncer it still goes back to 0029 and forward again.
    def migrate(port: int, *target: str) -> None:
        done = run_manage(
            "migrate",
            *target,
            "--verbosity",
            "0",
            DEBUG="true",
            DATABASE_URL=bouncer_url(port),
            DB_POOLER="pgbouncer",
        )
        assert done.returncode == 0, done.stderr[-2000:]

    def lookup_indexes() -> list[str]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT indexname || ' ' || indexdef FROM pg_indexes "
                "WHERE tablename = 'profiles_itemkey' AND indexname LIKE 'item_key_lookup%%'"
            )
            return [row[0] for row in cursor.fetchall()]

    with pgbouncer(pool_size=2) as bouncer:
        migrate(bouncer, "profiles", "0029")
        assert [text.split()[0] for text in lookup_indexes()] == ["item_key_lookup"]
        migrate(bouncer)

    (index,) = lookup_indexes()
    assert index.startswith("item_key_lookup_cover ")
    assert index.endswith("(layer_id, field, value) INCLUDE (item_id, id)")
