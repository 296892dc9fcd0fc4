"""``POST /api/v1/layers/<key>/bulk?background=true``: a batch larger than one request may
write becomes a job with progress, checked whole first, then written part by part through
the one bulk ingest service (issue 20, item 6). The task backend of the tests runs each job
as it is enqueued; the job's URL is then read as a client polls it."""

import json
import os
import subprocess
import sys

import pytest
from django.contrib.auth.models import Group, User

from profiles.import_export.job_workers import import_jobs_fail_stopped, worker_identity
from profiles.models import Activity, Environment, ImportJob, Item, ItemChange, ItemTerms, Layer
from tests.profiles.conftest import API, token_client
from tests.profiles.material.test_bulk_ingest_api import BULK, NDJSON, Unchanged, ndjson, ticket

pytestmark = pytest.mark.django_db


def send_background(client, lines, *, url: str = BULK):
    return client.generic("POST", url + "?background=true", ndjson(lines), content_type=NDJSON)


def poll(client, response):
    """Read the job as a client does: the URL the 202 gave."""
    assert response.status_code == 202, response.content
    assert response["Location"] == response.json()["url"]
    polled = client.get(response["Location"])
    assert polled.status_code == 200, polled.content
    return polled.json()


def test_background__larger_than_a_request__written_in_parts_with_progress_and_summary(
    small, editor_client, settings
):
    settings.BULK_INGEST_MAX_LINES = 10  # a request's bound: the job writes 10 at a time
    changes_before = ItemChange.objects.count()
    lines = [ticket(n) for n in range(25)]

    job = poll(editor_client, send_background(editor_client, lines))

    assert job["status"] == "succeeded"
    assert (job["phase"], job["progress"]) == ("done", 100)
    assert job["layer"] == "layer-001"
    assert job["summary"] == {
        "layer": "layer-001",
        "operations": 25,
        "created": 25,
        "updated": 0,
        "deleted": 0,
        "unchanged": 0,
    }
    assert job["error"] is None
    stored = dict(Item.objects.filter(layer__key="layer-001").values_list("path", "title"))
    assert all(stored[f"T-{n}"] == f"Ticket {n}: parcel lost" for n in range(25))
    # In the batch's order, with their terms, history and activity, as a request writes them
    positions = list(
        Item.objects.filter(layer__key="layer-001", path__startswith="T-")
        .order_by("position")
        .values_list("path", flat=True)
    )
    assert positions == [f"T-{n}" for n in range(25)]
    assert ItemTerms.objects.filter(layer__key="layer-001", path__startswith="T-").count() == 25
    assert Activity.objects.filter(kind="item", origin="bulk", op="create").count() == 25
    assert ItemChange.objects.count() - changes_before == 25

    # Sent again: idempotent, everything unchanged, nothing recorded
    again = poll(editor_client, send_background(editor_client, lines))
    assert again["summary"]["unchanged"] == 25
    assert Activity.objects.filter(kind="item", origin="bulk").count() == 25


def test_background__a_bad_line__the_job_fails_with_its_line_and_nothing_is_written(
    small, editor_client, settings
):
    settings.BULK_INGEST_MAX_LINES = 2
    unchanged = Unchanged()
    lines = [ticket(1), ticket(2), ticket(3), ticket(4, metadata="not an object")]

    job = poll(editor_client, send_background(editor_client, lines))

    assert job["status"] == "failed"
    assert job["summary"] is None
    error = job["error"]
    assert error["code"] == "INVALID_WORKSPACE"
    (issue,) = error["issues"]
    assert issue["path"] == "[3].metadata"
    assert issue["line"] == 4
    unchanged.check()


def test_background__more_lines_than_a_job_may_carry__fails_telling_to_split(
    small, editor_client, settings
):
    settings.BULK_INGEST_JOB_MAX_LINES = 3
    unchanged = Unchanged()

    job = poll(editor_client, send_background(editor_client, [ticket(n) for n in range(4)]))

    assert job["status"] == "failed"
    assert "BULK_INGEST_JOB_MAX_LINES" in job["error"]["message"]
    assert "nothing was written" in job["error"]["message"]
    unchanged.check()


def test_a_request_over_its_bound__413_names_the_background_job(small, editor_client, settings):
    settings.BULK_INGEST_MAX_LINES = 3
    response = editor_client.generic(
        "POST", BULK, ndjson([ticket(n) for n in range(4)]), content_type=NDJSON
    )

    assert response.status_code == 413
    assert "background=true" in response.json()["error"]["message"]


def test_background__a_reader__403_and_no_job(small, reader_client):
    response = send_background(reader_client, [ticket(1)])

    assert response.status_code == 403
    assert not ImportJob.objects.exists()


def test_a_bulk_job__only_its_owner_or_an_administrator_reads_it__and_only_at_its_layer(
    small, editor_client, editor
):
    response = send_background(editor_client, [ticket(1)])
    url = response["Location"]
    job_id = response.json()["id"]
    other = User.objects.create_user("other-editor", password="other-password-1")
    other.groups.add(Group.objects.get(name="editors"))

    assert token_client(other).get(url).status_code == 404
    assert editor_client.get(url.replace("layer-001", "layer-000")).status_code == 404
    # A bulk job is not an import job (nor the other way round)
    assert editor_client.get(API + f"workspace/imports/{job_id}").status_code in (403, 404)
    admin = User.objects.create_superuser("admin", password="admin-password-1")
    assert token_client(admin).get(url).json()["status"] == "succeeded"


def test_a_bulk_job_whose_worker_stopped__says_how_many_operations_were_applied(small, editor):
    # A job a worker took, wrote the first part of, and died with (a process that has ended).
    finished_pid = int(
        subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert finished_pid != os.getpid()
    summary = {"layer": "layer-001", "operations": 30, "created": 8, "updated": 1}
    summary |= {"deleted": 0, "unchanged": 1}
    job = ImportJob.objects.create(
        user=editor,
        kind=ImportJob.Kind.BULK,
        layer="layer-001",
        ndjson=True,
        source=ndjson([ticket(n) for n in range(30)]),
        status=ImportJob.Status.RUNNING,
        summary=summary,
        worker=worker_identity(pid=finished_pid),
    )

    assert import_jobs_fail_stopped(job_ids=[job.pk]) == 1

    job.refresh_from_db()
    assert job.status == "failed"
    assert job.source == ""
    assert job.error["code"] == "BULK_INGEST_WORKER_STOPPED"
    assert "the first 10 operations were applied" in job.error["message"]
    assert "sending it again finishes it" in job.error["message"]


@pytest.fixture
def governed_layer(release):
    Environment.objects.create(key="production", requires_change_request=True)
    Layer.objects.filter(key="layer-001").update(governed=True)


def test_background__a_governed_layer_read_by_protected_profiles__fails_with_nothing_written(
    governed_layer, editor_client
):
    unchanged = Unchanged()
    lines = [ticket(1), {"op": "delete", "path": "docs/item-0001.md"}]

    job = poll(editor_client, send_background(editor_client, lines))

    assert job["status"] == "failed"
    error = job["error"]
    assert (error["code"], error["profiles"]) == ("CHANGE_REQUEST_REQUIRED", ["profile-0"])
    assert "nothing was written" in error["message"]
    assert "C-1" not in json.dumps(job) and "parcel" not in json.dumps(job)
    unchanged.check()


def test_the_job_body_is_the_batch__json_array_too(small, editor_client):
    response = editor_client.post(
        BULK + "?background=true",
        json.dumps([ticket(1), ticket(2)]),
        content_type="application/json",
    )

    job = poll(editor_client, response)
    assert job["summary"]["created"] == 2
