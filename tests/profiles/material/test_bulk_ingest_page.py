"""The studio's bulk upload of a layer's items: a file of operations (NDJSON or a JSON array)
checked whole on the form, then written by the API's background bulk job, whose page shows its
progress and then what it did. The same rules as ``POST /api/v1/layers/<key>/bulk``: who may,
the per-user rate, the job queue's bounds, governed layers."""

# ruff: noqa: F811 (the studio's editor fixtures, imported: the tests' arguments)

import json
import time

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache as django_cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from profiles.import_export.imports import workspace_import
from profiles.import_export.jobs import import_job_run
from profiles.models import Activity, Environment, ImportJob, Item, Layer
from profiles.workspace.permissions import ROLE_CAPABILITIES, WRITE_MATERIAL, Role
from profiles.workspace.throttling import throttle_key
from tests.profiles.conftest import join_editors, release_workspace, token_client
from tests.profiles.doors.test_rendered_pages import leaked_syntax
from tests.profiles.studio.fixtures import editor, editor_client, stopped_bulk_job  # noqa: F401 (the studio's)

pytestmark = pytest.mark.django_db

PAGE = "/layers/tickets/items/bulk/"
LIST = "/layers/tickets/items/"


def ticket(number: int, **changes) -> dict:
    return {
        "path": f"T-{number}",
        "title": f"Ticket {number}: parcel lost",
        "body": f"Order {number} never arrived; the customer asks for a refund.",
        "metadata": {"customer_id": "C-7", "updated_at": "2026-11-28"},
        **changes,
    }


def ndjson_file(lines, name: str = "batch.ndjson") -> SimpleUploadedFile:
    text = "\n".join(json.dumps(line) for line in lines) + "\n"
    return SimpleUploadedFile(name, text.encode(), content_type="application/octet-stream")


def upload(client, file, page: str = PAGE):
    return client.post(page, {"file": file})


def editor_member(name: str = "member") -> tuple[User, Client]:
    """Return a member of the editors group (may write items, does not administer)."""
    user = User.objects.create_user(name)
    join_editors(user)
    client = Client()
    client.force_login(user)
    return user, client


def tickets() -> dict[str, str]:
    return dict(Item.objects.filter(layer__key="tickets").values_list("path", "title"))


# --- the form ---------------------------------------------------------------------------------


def test_bulk_page__get__file_field_with_label_help_text_and_limits(
    editor_client, workspace, settings
):
    settings.BULK_INGEST_JOB_MAX_LINES = 250_000

    response = editor_client.get(PAGE)

    html = response.content.decode()
    assert response.status_code == 200
    assert '<label for="id_file">Batch file (NDJSON or a JSON array)</label>' in html
    assert 'id="id_file_helptext"' in html
    assert 'accept=".ndjson,.jsonl,.json,application/x-ndjson,application/json"' in html
    assert "At most 250,000 operations (BULK_INGEST_JOB_MAX_LINES)" in html
    assert "a first non-blank character “[” means a JSON array" in html
    assert '<code>{"op": "delete", "path": "T-0007"}</code>' in html
    assert leaked_syntax(html) == []


def test_bulk_page__unknown_layer__404(editor_client, workspace):
    assert editor_client.get("/layers/no-such-layer/items/bulk/").status_code == 404
    response = upload(editor_client, ndjson_file([ticket(1)]), "/layers/no-such-layer/items/bulk/")

    assert response.status_code == 404
    assert not ImportJob.objects.exists()


# --- a valid file: a job, then its page ---------------------------------------------------------


def test_bulk_upload__valid_ndjson__job_writes_the_items_and_its_page_shows_the_summary(
    editor_client, workspace
):
    # Given a batch: two new tickets, a replaced one and a delete
    lines = [
        {"op": "upsert", "item": ticket(1)},
        ticket(2),
        {"op": "upsert", "item": ticket(1001, title="Refund still missing")},
        {"op": "delete", "path": "T-0950"},
    ]

    response = upload(editor_client, ndjson_file(lines))

    # Then the upload goes to the job's page, which the test task backend ran at once
    job = ImportJob.objects.get(kind=ImportJob.Kind.BULK)
    assert response.status_code == 302
    assert response["Location"] == f"/layers/tickets/items/bulk/{job.pk}/"
    assert (job.status, job.layer, job.ndjson) == ("succeeded", "tickets", True)
    stored = tickets()
    assert stored["T-1"] == "Ticket 1: parcel lost" and stored["T-2"] == "Ticket 2: parcel lost"
    assert stored["T-1001"] == "Refund still missing"
    assert "T-0950" not in stored
    assert Activity.objects.filter(kind="item", origin="bulk").count() == 4
    page = editor_client.get(response["Location"]).content.decode()
    assert "<strong>Done.</strong> 4 operations applied." in page
    assert (
        '<th scope="row">items</th><td>2</td><td>1</td><td>1</td><td>0</td>' in page
    )  # created, updated, deleted, unchanged
    assert "hx-trigger" not in page
    assert leaked_syntax(page) == []


def test_bulk_upload__json_array_named_json__read_as_an_array_and_written(editor_client, workspace):
    batch = [ticket(3), {"op": "delete", "path": "T-0990"}]
    file = SimpleUploadedFile("batch.json", json.dumps(batch, indent=2).encode())

    response = upload(editor_client, file)

    job = ImportJob.objects.get(kind=ImportJob.Kind.BULK)
    assert response.status_code == 302
    assert (job.status, job.ndjson) == ("succeeded", False)
    assert job.summary == {
        "layer": "tickets",
        "operations": 2,
        "created": 1,
        "updated": 0,
        "deleted": 1,
        "unchanged": 0,
    }
    assert "T-3" in tickets() and "T-0990" not in tickets()


def test_bulk_upload__same_file_again__everything_unchanged(editor_client, workspace):
    lines = [ticket(1), ticket(2)]
    upload(editor_client, ndjson_file(lines))

    response = upload(editor_client, ndjson_file(lines))

    page = editor_client.get(response["Location"]).content.decode()
    assert "nothing changed, the layer already held these items" in page
    assert '<th scope="row">items</th><td>0</td><td>0</td><td>0</td><td>2</td>' in page


def test_bulk_upload__queued_job__page_polls_its_fragment_until_the_worker_ran_it(
    editor_client, workspace, settings
):
    # Given the database task backend: the job waits for a worker
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    response = upload(editor_client, ndjson_file([ticket(1)]))
    url = response["Location"]

    waiting = editor_client.get(url).content.decode()
    fragment = editor_client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "T-1" not in tickets()
    assert f'hx-get="{url}" hx-trigger="every 1s"' in waiting
    assert '<progress id="bulk-progress" max="100" value="0">' in waiting
    assert fragment.strip().startswith('<div id="bulk-job"') and "<html" not in fragment

    # When the worker runs it
    import_job_run(job_id=ImportJob.objects.get(kind=ImportJob.Kind.BULK).pk)

    # Then the fragment the page polls shows the summary and stops polling
    done = editor_client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "<strong>Done.</strong> 1 operation applied." in done
    assert "hx-trigger" not in done
    assert "T-1" in tickets()


def test_bulk_upload__htmx_post__client_redirect_to_the_job(editor_client, workspace):
    response = editor_client.post(
        PAGE, {"file": ndjson_file([ticket(1)])}, headers={"HX-Request": "true"}
    )

    job = ImportJob.objects.get(kind=ImportJob.Kind.BULK)
    assert response["HX-Redirect"] == f"/layers/tickets/items/bulk/{job.pk}/"


# --- a bad file: the form, 400, nothing written ---------------------------------------------------


def test_bulk_upload__bad_line__400_with_path_line_and_column_and_nothing_written(
    editor_client, workspace
):
    before = tickets()
    lines = [ticket(1), ticket(2, metadata="not an object"), ticket(3)]

    response = upload(editor_client, ndjson_file(lines))

    html = response.content.decode()
    assert response.status_code == 400
    assert "Nothing was written: 1 error." in html
    column = json.dumps(lines[1]).index('"not an object"') + 1
    assert (
        f"<code>[1].metadata</code>: must be an object — item tickets/T-2, line 2, column {column}"
        in html
    )
    assert '<label for="id_file">' in html  # the form, to upload a corrected file
    assert tickets() == before
    assert not ImportJob.objects.exists()


def test_bulk_upload__json_array_with_a_syntax_error__400_on_the_file_nothing_written(
    editor_client, workspace
):
    file = SimpleUploadedFile("batch.json", b'[{"path": "T-1"},\n {"path": ]')

    response = upload(editor_client, file)

    assert response.status_code == 400
    assert 'class="field-error" id="id_file_error"' in response.content.decode()
    assert "nothing was written" in response.content.decode()
    assert not ImportJob.objects.exists()


def test_bulk_upload__more_operations_than_a_job_may_carry__413_telling_to_split(
    editor_client, workspace, settings
):
    settings.BULK_INGEST_JOB_MAX_LINES = 2

    response = upload(editor_client, ndjson_file([ticket(1), ticket(2), ticket(3)]))

    html = response.content.decode()
    assert response.status_code == 413
    assert "the batch has 3 operations, more than the 2 one background job may carry" in html
    assert "T-1" not in tickets()
    assert not ImportJob.objects.exists()


def test_bulk_upload__no_file__400_beside_the_field(editor_client, workspace):
    response = editor_client.post(PAGE, {})

    assert response.status_code == 400
    assert 'id="id_file_error"' in response.content.decode()


# --- the API's rules: who may, the rate, the queue, governed layers ----------------------------


def test_bulk_page__reader__403_and_nothing_written(client, viewer, workspace):
    client.force_login(viewer)

    statuses = (client.get(PAGE).status_code, upload(client, ndjson_file([ticket(1)])).status_code)

    assert statuses == (403, 403)
    assert "T-1" not in tickets()
    assert not ImportJob.objects.exists()


def test_bulk_job_page__another_editors_job__404_unless_you_administer(editor_client, workspace):
    # Given a job of one member of the editors group
    _, owner_client = editor_member("owner")
    upload(owner_client, ndjson_file([ticket(1)]))
    job = ImportJob.objects.get(kind=ImportJob.Kind.BULK)
    url = f"/layers/tickets/items/bulk/{job.pk}/"
    _, other_client = editor_member("other")

    statuses = {
        "owner": owner_client.get(url).status_code,
        "another editor": other_client.get(url).status_code,
        "another editor, htmx": other_client.get(url, headers={"HX-Request": "true"}).status_code,
        "staff": editor_client.get(url).status_code,  # a superuser: administers
        "owner, at another layer": owner_client.get(f"/layers/kb/items/bulk/{job.pk}/").status_code,
    }

    assert statuses == {
        "owner": 200,
        "another editor": 404,
        "another editor, htmx": 404,
        "staff": 200,
        "owner, at another layer": 404,
    }


def test_bulk_job_page__an_import_job__404(editor_client, editor, workspace):
    job = ImportJob.objects.create(user=editor, layer="tickets")  # a workspace import

    assert editor_client.get(f"/layers/tickets/items/bulk/{job.pk}/").status_code == 404


def test_bulk_upload__rate_used_through_the_api__studio_429_with_retry_after(
    editor_client, editor, workspace, settings
):
    # Given a bulk rate of 1 a minute, used by the editor's API client
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"bulk": "1/minute"},
    }
    api = token_client(editor)
    body = json.dumps(ticket(1))
    first = api.generic(
        "POST", "/api/v1/layers/tickets/bulk", body, content_type="application/x-ndjson"
    )
    assert first.status_code == 200

    response = upload(editor_client, ndjson_file([ticket(2)]))

    assert response.status_code == 429
    assert int(response["Retry-After"]) >= 1
    assert "the limit is shared by the studio and your API calls" in response.content.decode()
    assert "T-2" not in tickets()


def test_bulk_upload__an_upload_counts_in_the_apis_bulk_rate(editor_client, editor, workspace):
    upload(editor_client, ndjson_file([ticket(1)]))

    window = int(time.time() // 60)
    assert django_cache.get(f"{throttle_key('bulk', editor.pk)}:{window}") == 1


def test_bulk_upload__queue_full__429_with_retry_after_and_nothing_stored(
    editor_client, workspace, settings
):
    settings.IMPORT_MAX_QUEUED_JOBS_PER_USER = 0

    response = upload(editor_client, ndjson_file([ticket(1)]))

    html = response.content.decode()
    assert response.status_code == 429
    assert response["Retry-After"] == "30"
    assert "The batch was not queued: you have 0 imports waiting or running" in html
    assert '<label for="id_file">' in html
    assert not ImportJob.objects.exists()
    assert "T-1" not in tickets()


def test_bulk_upload__governed_layer_read_by_a_protected_profile__job_refused_nothing_written(
    client, db
):
    # Given layer-001 governed and read by profile-0 of the protected production environment
    workspace_import(document=release_workspace())
    Environment.objects.create(key="production", requires_change_request=True)
    Layer.objects.filter(key="layer-001").update(governed=True)
    _, member = editor_member()
    before = sorted(Item.objects.filter(layer__key="layer-001").values_list("path", "title"))

    response = upload(member, ndjson_file([ticket(1)]), "/layers/layer-001/items/bulk/")

    job = ImportJob.objects.get(kind=ImportJob.Kind.BULK)
    assert (job.status, job.error["code"]) == ("failed", "CHANGE_REQUEST_REQUIRED")
    page = member.get(response["Location"]).content.decode()
    assert "nothing was written" in page
    assert '<a href="/profiles/profile-0/">profile-0</a>' in page
    assert (
        sorted(Item.objects.filter(layer__key="layer-001").values_list("path", "title")) == before
    )


def test_bulk_job_page__stopped_half_way__says_how_many_operations_were_applied(
    editor_client, editor, workspace
):
    job = stopped_bulk_job(user=editor, layer="tickets")

    page = editor_client.get(f"/layers/tickets/items/bulk/{job.pk}/").content.decode()

    assert "the first 10 operations were applied" in page
    assert "Operations applied: 10 of 25" in page
    assert '<th scope="row">items</th><td>8</td><td>2</td><td>0</td><td>0</td>' in page
    assert "Upload a corrected file" in page


# --- the link on the item list -------------------------------------------------------------------


def test_item_list__bulk_upload_link__shown_only_to_who_may_write_items(workspace, monkeypatch):
    # Given an editor, and the same role once it no longer writes material (it still reads it)
    _, member = editor_member()
    link = f'<a class="button" href="{PAGE}">Bulk upload items</a>'
    assert link in member.get(LIST).content.decode()

    monkeypatch.setitem(
        ROLE_CAPABILITIES, Role.EDITOR, ROLE_CAPABILITIES[Role.EDITOR] - {WRITE_MATERIAL}
    )
    member = Client()
    member.force_login(User.objects.get(username="member"))  # a fresh user object: no cached role

    response = member.get(LIST)

    assert response.status_code == 200
    assert link not in response.content.decode()
    assert member.get(PAGE).status_code == 403
