"""A client generated from the served schema works as docs/api.md says (issue 22).

``openapi-python-client generate`` runs on ``/api/v1/schema/`` (fetched through the app) into a
temporary folder, with the configuration docs/api.md gives; it must print no warning and every
generated module must import. Then an application's two scripts run **through the generated
client only**: a support assistant (resolve a summary, read the text and references, expand one,
and handle a blocked resolution, an unknown profile, an invalid request, a throttle) and an
editor (change a rule with ``If-Match`` and meet a stale one, read the versions and their diff,
open a change request that another editor approves and the author applies, import YAML as a
job polled to its end, and read the line of a YAML error).

The client talks to the app through ``httpx.WSGITransport``, not a live server: the requests
run in the test's thread, inside its database transaction (as the schemathesis test does), so
the test needs no transactional flush, no port and no second thread, and runs on SQLite and
PostgreSQL alike; the HTTP exchange (headers, bodies, statuses) is the same one a server sees.
"""

import datetime as dt
import importlib
import io
import pkgutil
import subprocess
import sys
from http import HTTPStatus

import httpx
import pytest
from django.test import Client

from ctxstudio.wsgi import application
from tests.profiles.conftest import api_key_for, connections_kept_open

pytestmark = pytest.mark.django_db

PACKAGE = "ctxstudio_openapi"
# The configuration docs/api.md gives (no post hooks: the test needs no formatter on PATH).
CONFIG = """\
package_name_override: ctxstudio_openapi
post_hooks: []
content_type_overrides:
  application/yaml: application/octet-stream
"""
NOW = dt.datetime(2026, 11, 29, 12, tzinfo=dt.UTC)
DANA = {"customer_id": "C-1001", "message": "My refund never arrived, where is it?"}


@pytest.fixture(scope="module")
def generated(tmp_path_factory, django_db_blocker):
    """Generate the client from the served schema; return (the package, what the tool printed)."""
    folder = tmp_path_factory.mktemp("generated")
    with django_db_blocker.unblock():
        response = Client().get("/api/v1/schema/", {"format": "json"})
    assert response.status_code == 200
    (folder / "schema.json").write_bytes(response.content)
    (folder / "config.yaml").write_text(CONFIG)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "openapi_python_client",
            "generate",
            "--path",
            str(folder / "schema.json"),
            "--config",
            str(folder / "config.yaml"),
            "--meta",
            "none",
            "--output-path",
            str(folder / PACKAGE),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module(PACKAGE), run
    finally:
        sys.path.remove(str(folder))
        for name in [name for name in sys.modules if name.split(".")[0] == PACKAGE]:
            del sys.modules[name]


def module(generated, name: str):
    return importlib.import_module(f"{PACKAGE}.{name}")


def api(generated, tag: str, operation: str):
    return module(generated, f"api.{tag}.{operation}")


def models(generated):
    return module(generated, "models")


@pytest.fixture
def connect(generated):
    """Return a function giving a generated client authenticated as a user."""
    package, _ = generated
    with connections_kept_open():

        def client_for(user, scopes=None):
            # A user's token (``Token``), or a scoped key (``Bearer``) as an application holds.
            return package.AuthenticatedClient(
                base_url="http://testserver",
                token=api_key_for(user, scopes=scopes),
                prefix="Token" if scopes is None else "Bearer",
                raise_on_unexpected_status=True,
                httpx_args={"transport": httpx.WSGITransport(app=application)},
            )

        yield client_for


def test_generate__served_schema__no_warning_and_every_module_imports(generated):
    package, run = generated

    assert run.returncode == 0, run.stdout + run.stderr
    printed = run.stdout + run.stderr
    assert "warning" not in printed.lower(), printed
    names = [info.name for info in pkgutil.walk_packages(package.__path__, prefix=f"{PACKAGE}.")]
    for name in names:
        importlib.import_module(name)  # any error fails the test with its traceback
    operations = [name for name in names if name.startswith(f"{PACKAGE}.api.") and "__" not in name]
    assert len(operations) >= 59  # every operation of the schema is a module


def test_support_assistant__through_the_generated_client__as_docs_say(
    generated, connect, demo, reader, settings
):
    m = models(generated)
    resolve = api(generated, "resolve", "resolve")
    expand = api(generated, "resolve", "expand")
    client = connect(reader, scopes=["resolve"])

    def request(**fields):
        fields.setdefault("input_", m.ResolveRequestInputType0.from_dict(DANA))
        return m.ResolveRequest(now=NOW, **fields)

    # A summary: the text to send to the model, the references it may expand.
    summary = resolve.sync_detailed(
        client=client, body=request(profile="support-answer", detail=m.DetailEnum.SUMMARY)
    )
    assert summary.status_code == HTTPStatus.OK
    resolution = summary.parsed
    assert resolution.status == m.ResolutionStatusEnum.RESOLVED
    assert resolution.detail == m.ResolutionDetailEnum.SUMMARY
    assert "refund" in resolution.output.text.lower()
    assert resolution.reference_counts.additional_properties
    assert all(layer.counts.items >= 0 for layer in resolution.layers)
    assert int(summary.headers["X-Profile-Version"]) >= 1
    offered = [reference.ref for reference in resolution.references]
    assert offered

    # Expand one of them with the same request.
    item = expand.sync(
        client=client,
        body=m.ExpandRequest(
            profile="support-answer",
            input_=m.ExpandRequestInputType0.from_dict(DANA),
            now=NOW,
            ref=offered[0],
        ),
    )
    assert isinstance(item, m.ExpandedItem)
    assert item.ref == offered[0] and item.body

    # Blocked: a required layer is unavailable; no text, the blocker says which.
    availability = m.ResolveRequestAvailabilityType0.from_dict({"customer": "unavailable"})
    blocked = resolve.sync(
        client=client, body=request(profile="support-answer", availability=availability)
    )
    assert blocked.status == m.ResolutionStatusEnum.BLOCKED
    assert blocked.output is None
    assert [blocker.layer for blocker in blocked.blockers] == ["customer"]

    # An unknown profile: 404 in the error shape.
    unknown = resolve.sync_detailed(client=client, body=request(profile="no-such-profile"))
    assert unknown.status_code == HTTPStatus.NOT_FOUND
    assert unknown.parsed.error.code == m.ErrorCodeEnum.PROFILE_NOT_FOUND
    assert unknown.parsed.error.retryable is False

    # An invalid request: 400 naming the field.
    invalid = resolve.sync_detailed(
        client=client,
        body=request(
            profile="support-answer",
            input_=m.ResolveRequestInputType0.from_dict({"message": 42}),
        ),
    )
    assert invalid.status_code == HTTPStatus.BAD_REQUEST
    assert invalid.parsed.error.code == m.ErrorCodeEnum.INVALID_REQUEST
    assert invalid.parsed.error.path == "input.message"

    # Throttled: 429, retryable, wait Retry-After seconds.
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"resolve": "1/minute"},
    }
    statuses = [
        resolve.sync_detailed(client=client, body=request(profile="support-answer")).status_code
        for _ in range(2)
    ]
    throttled = resolve.sync_detailed(client=client, body=request(profile="support-answer"))
    assert statuses[-1] == HTTPStatus.TOO_MANY_REQUESTS
    assert throttled.parsed.error.code == m.ErrorCodeEnum.THROTTLED
    assert throttled.parsed.error.retryable is True
    assert int(throttled.headers["Retry-After"]) >= 1


def test_editor__through_the_generated_client__as_docs_say(
    generated, connect, demo, editor, reviewer
):
    m = models(generated)
    File = module(generated, "types").File
    rules_retrieve = api(generated, "profiles", "rules_retrieve")
    rules_partial_update = api(generated, "profiles", "rules_partial_update")
    author, other = connect(editor), connect(reviewer)
    key = "support-answer-staging"

    # Change a rule with the ETag read: 200 and a new ETag.
    read = rules_retrieve.sync_detailed(key, "kb", client=author)
    etag = read.headers["ETag"]
    changed = rules_partial_update.sync_detailed(
        key, "kb", client=author, body=m.PatchedRuleRequest(max_items=4), if_match=etag
    )
    assert changed.status_code == HTTPStatus.OK
    assert changed.parsed.rule.max_items == 4
    assert changed.headers["ETag"] != etag

    # The old ETag again: 412, nothing changed; the answer's ETag is the current one.
    stale = rules_partial_update.sync_detailed(
        key, "kb", client=author, body=m.PatchedRuleRequest(max_items=5), if_match=etag
    )
    assert stale.status_code == HTTPStatus.PRECONDITION_FAILED
    assert stale.parsed.error.code == m.ErrorCodeEnum.PRECONDITION_FAILED
    assert stale.parsed.error.retryable is False
    assert stale.headers["ETag"] == changed.headers["ETag"]

    # The versions and what changed between the last two.
    versions = api(generated, "versions", "profile_versions_list").sync(key, client=author)
    latest = versions.results[0].number
    diff = api(generated, "versions", "profile_versions_diff").sync(
        key, client=author, from_=latest - 1, to=latest
    )
    assert [(change.path, change.to) for change in diff.changes] == [("rules.kb.maxItems", 4)]

    # A change request: opened by the author, approved by another editor (If-Match: the
    # revision reviewed), applied by the author.
    opened = api(generated, "change_requests", "change_requests_create").sync_detailed(
        client=author,
        body=m.ChangeRequestCreateRequest(
            profile=key, title="A tighter budget", changes=m.ChangesRequest(budget=1000)
        ),
    )
    assert opened.status_code == HTTPStatus.CREATED
    number = opened.parsed.id
    assert opened.headers["Location"].endswith(f"/change-requests/{number}")
    queue = api(generated, "change_requests", "change_requests_list").sync(
        client=other, review=True
    )
    assert [entry.id for entry in queue.results] == [number]
    review = api(generated, "change_requests", "change_requests_retrieve").sync_detailed(
        number, client=other
    )
    approved = api(generated, "change_requests", "change_requests_approve").sync_detailed(
        number, client=other, if_match=review.headers["ETag"]
    )
    assert approved.status_code == HTTPStatus.OK
    applied = api(generated, "change_requests", "change_requests_apply").sync(number, client=author)
    assert applied.status == m.ChangeRequestStatusEnum.APPLIED
    assert applied.applied_version == latest + 1

    # A YAML import, polled to its end; a YAML error names its line.
    import_workspace = api(generated, "workspace", "workspace_import")
    import_job = api(generated, "workspace", "workspace_import_job")
    yaml = "layers:\n- key: glossary\n  name: Glossary (renamed)\n"
    job = import_workspace.sync_detailed(
        client=author, body=File(payload=io.BytesIO(yaml.encode()), mime_type="application/yaml")
    )
    assert job.status_code == HTTPStatus.ACCEPTED
    assert job.headers["Location"] == job.parsed.url
    polled = job.parsed
    for _ in range(50):
        if polled.status in (m.ImportJobStatusEnum.SUCCEEDED, m.ImportJobStatusEnum.FAILED):
            break
        polled = import_job.sync(polled.id, client=author)
    assert polled.status == m.ImportJobStatusEnum.SUCCEEDED
    assert polled.summary.layers.updated == 1

    broken = "layers:\n- key: glossary\n  name: Glossary\n  availability: sometimes\n"
    failed = import_workspace.sync(
        client=author, body=File(payload=io.BytesIO(broken.encode()), mime_type="application/yaml")
    )
    failed = import_job.sync(failed.id, client=author)
    assert failed.status == m.ImportJobStatusEnum.FAILED
    issue = failed.error.issues[0]
    assert (issue.path, issue.line) == ("layers[0].availability", 4)


def test_change_set__through_the_generated_client__opened_approved_applied(
    generated, connect, demo, editor, reviewer
):
    m = models(generated)
    create = api(generated, "change_requests", "change_requests_create")
    author, other = connect(editor), connect(reviewer)
    entry = m.ChangeSetEntryRequest.from_dict(
        {
            "kind": "layer",
            "op": "create",
            "value": {"key": "holiday-notes", "name": "Holiday notes", "items": []},
        }
    )
    rule = m.ChangeSetEntryRequest.from_dict(
        {
            "kind": "profile",
            "op": "update",
            "key": "support-answer-staging",
            "value": {"rules": {"holiday-notes": {"participation": "exclude"}}},
        }
    )

    opened = create.sync_detailed(
        client=author, body=m.ChangeSetCreateRequest(changes=[entry, rule])
    )

    assert opened.status_code == HTTPStatus.CREATED
    change_set = opened.parsed
    assert change_set.entities == ["layer:holiday-notes", "profile:support-answer-staging"]
    assert [change.kind for change in change_set.changes] == [
        m.EntityKindEnum.LAYER,
        m.EntityKindEnum.PROFILE,
    ]
    assert all(row.profile for row in change_set.impact)
    api(generated, "change_requests", "change_requests_approve").sync_detailed(
        change_set.id, client=other, if_match=opened.headers["ETag"]
    )
    applied = api(generated, "change_requests", "change_requests_apply").sync(
        change_set.id, client=author
    )
    assert applied.status == m.ChangeRequestStatusEnum.APPLIED


def test_bulk_ingest__through_the_generated_client__upserts_deletes_and_names_a_bad_line(
    generated, connect, demo, editor
):
    m = models(generated)
    bulk = api(generated, "items", "items_bulk")
    sync = connect(editor, scopes=["write"])  # a helpdesk sync's key
    batch = [
        m.BulkUpsertRequest.from_dict(
            {
                "op": "upsert",
                "item": {
                    "path": "T-9001",
                    "title": "Parcel lost",
                    "body": "The replacement parcel never arrived.",
                    "metadata": {"customer_id": "C-1001", "updated_at": "2026-11-28"},
                },
            }
        ),
        m.BulkDeleteRequest.from_dict({"op": "delete", "path": "T-9002"}),
    ]

    done = bulk.sync_detailed("tickets", client=sync, body=batch)
    again = bulk.sync_detailed("tickets", client=sync, body=batch)
    bad = bulk.sync_detailed(
        "tickets",
        client=sync,
        body=[m.BulkUpsertRequest.from_dict({"op": "upsert", "item": {"path": " T-1 "}})],
    )

    assert done.status_code == HTTPStatus.OK
    assert (done.parsed.created, done.parsed.unchanged) == (1, 1)  # T-9002 was never stored
    assert (again.parsed.created, again.parsed.unchanged) == (0, 2)
    assert bad.status_code == HTTPStatus.BAD_REQUEST
    assert bad.parsed.error.code == m.ErrorCodeEnum.INVALID_WORKSPACE
    assert (bad.parsed.error.issues[0].path, bad.parsed.error.issues[0].line) == (
        "[0].item.path",
        1,
    )


def test_bulk_ingest_in_the_background__through_the_generated_client__polled_to_its_end(
    generated, connect, demo, editor
):
    m = models(generated)
    bulk = api(generated, "items", "items_bulk")
    poll = api(generated, "items", "items_bulk_job")
    sync = connect(editor, scopes=["write"])
    batch = [
        m.BulkUpsertRequest.from_dict(
            {"op": "upsert", "item": {"path": f"T-95{n:02}", "metadata": {"customer_id": "C-1"}}}
        )
        for n in range(3)
    ]

    started = bulk.sync_detailed("tickets", client=sync, body=batch, background=True)

    assert started.status_code == HTTPStatus.ACCEPTED
    assert started.headers["Location"] == started.parsed.url
    job = poll.sync("tickets", started.parsed.id, client=sync)
    assert job.status == m.ImportJobStatusEnum.SUCCEEDED
    assert (job.progress, job.summary.created, job.summary.operations) == (100, 3, 3)
    assert job.error is None
