"""Workspace imports as background jobs: 202 and a job URL, progress, one layer at a time,
and a run through the real database task backend and its worker."""

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.tasks import task_backends
from django.test.utils import CaptureQueriesContext

from profiles.import_export.imports import workspace_import
from profiles.import_export.jobs import import_job_start
from profiles.models import ImportJob, Item, Layer, Profile
from resolver.documents import dump_yaml
from tests.profiles.conftest import API, small_workspace, token_client

pytestmark = pytest.mark.django_db

DEMO = Path(__file__).resolve().parents[3] / "profiles" / "demo" / "workspace.yaml"


@pytest.fixture
def small(db):
    workspace_import(document=small_workspace())


def post_import(client, document, query: str = ""):
    return client.post(
        API + "workspace" + query, dump_yaml(document), content_type="application/yaml"
    )


def job_of(client, response) -> dict:
    assert response.status_code == 202
    return client.get(response["Location"]).json()


def layer_document(key: str, paths: list[str]) -> dict:
    return {
        "key": key,
        "name": f"Imported {key}",
        "items": [{"path": path, "title": f"Title of {path}", "body": "Body."} for path in paths],
    }


def test_import__accepted__202_then_the_job_url_gives_status_progress_and_summary(
    small, editor_client
):
    document = small_workspace()
    document["consumers"][0]["name"] = "Renamed"

    response = post_import(editor_client, document)

    body = response.json()
    assert response.status_code == 202
    assert body["url"] == response["Location"]
    assert body["url"].endswith(f"/api/v1/workspace/imports/{body['id']}")
    job = job_of(editor_client, response)
    assert (job["status"], job["phase"], job["progress"]) == ("succeeded", "done", 100)
    assert job["summary"]["consumers"]["updated"] == 1
    assert job["bytes"] == len(dump_yaml(document).encode())


def test_import_job__another_users_job__404_and_staff_sees_it(
    small, editor_client, reader, staff_client
):
    from django.contrib.auth.models import Group

    other = token_client(reader)
    reader.groups.add(Group.objects.get(name="editors"))
    url = post_import(editor_client, small_workspace())["Location"]

    assert other.get(url).status_code == 404
    assert staff_client.get(url).status_code == 200


def test_import__reader__403_and_no_job(small, reader_client):
    response = post_import(reader_client, small_workspace())

    assert response.status_code == 403
    assert not ImportJob.objects.exists()


def test_import__one_layer_merge__upserts_that_layer_and_leaves_the_rest(small, editor_client):
    before = {
        layer.key: sorted(layer.items.values_list("path", "title")) for layer in Layer.objects.all()
    }
    document = small_workspace()
    document["layers"][1] = layer_document("layer-001", ["docs/item-0000.md", "new/one.md"])
    document["layers"][0]["name"] = "Not imported: another layer"

    job = job_of(editor_client, post_import(editor_client, document, "?layer=layer-001"))

    assert job["status"] == "succeeded", job["error"]
    assert job["layer"] == "layer-001"
    layer = Layer.objects.get(key="layer-001")
    assert layer.name == "Imported layer-001"
    paths = sorted(layer.items.values_list("path", flat=True))
    # merge keeps the stored items the file does not name
    assert paths == sorted({*(p for p, _ in before["layer-001"]), "new/one.md"})
    assert Layer.objects.get(key="layer-000").name == "Layer 0"
    assert (
        sorted(Item.objects.filter(layer__key="layer-000").values_list("path", "title"))
        == (before["layer-000"])
    )


def test_import__one_layer_replace_with_a_layer_document__deletes_only_its_missing_items(
    small, editor_client
):
    others = Item.objects.exclude(layer__key="layer-002").count()
    profiles = Profile.objects.count()

    response = post_import(
        editor_client,
        layer_document("layer-002", ["only/this.md"]),
        "?layer=layer-002&mode=replace",
    )

    job = job_of(editor_client, response)
    assert job["status"] == "succeeded", job["error"]
    assert list(Item.objects.filter(layer__key="layer-002").values_list("path", flat=True)) == [
        "only/this.md"
    ]
    assert Item.objects.exclude(layer__key="layer-002").count() == others
    assert Profile.objects.count() == profiles


def test_import__one_layer_with_an_error__fails_at_its_path_in_the_file_and_writes_nothing(
    small, editor_client
):
    document = small_workspace()
    document["layers"][2]["items"][1]["path"] = document["layers"][2]["items"][0]["path"]
    items = sorted(Item.objects.values_list("layer__key", "path", "title"))

    job = job_of(editor_client, post_import(editor_client, document, "?layer=layer-002"))

    assert job["status"] == "failed"
    assert job["error"]["code"] == "INVALID_WORKSPACE"
    assert job["error"]["path"].startswith("layers[2].items[1]")
    assert sorted(Item.objects.values_list("layer__key", "path", "title")) == items


def test_import__layer_not_in_the_file__fails_naming_it(small, editor_client):
    job = job_of(editor_client, post_import(editor_client, small_workspace(), "?layer=absent"))

    assert job["status"] == "failed"
    assert job["error"]["path"] == "layers"
    assert '"absent"' in job["error"]["message"]


@pytest.mark.parametrize(
    "layer",
    [
        pytest.param("a" * 65, id="65-characters"),  # beyond the job's varchar(64): was a 500
        pytest.param("Layer-000", id="uppercase"),
        pytest.param("-layer", id="leading-dash"),
        pytest.param("layer%2F000", id="slash"),
    ],
)
def test_import__layer_not_a_layer_key__400_naming_the_parameter_and_no_job(
    small, editor_client, layer
):
    response = post_import(editor_client, small_workspace(), f"?layer={layer}")

    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["path"]) == ("INVALID_REQUEST", "layer")
    assert error["message"].startswith("layer: must match ^[a-z0-9][a-z0-9_-]{0,63}$")
    assert not ImportJob.objects.exists()


def test_import_job_start__layer_not_a_layer_key__value_error():
    with pytest.raises(ValueError, match="layer"):
        import_job_start(text="{}", layer="a" * 65)


@pytest.mark.django_db(transaction=True)
def test_import__database_task_backend__queued_until_the_worker_runs_it(settings):
    # Given the real database backend (no immediate run)
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    backend = task_backends["default"]
    assert type(backend).__name__ == "DatabaseBackend"

    # When an import is started, it waits for a worker, with nothing written yet
    job = import_job_start(text=dump_yaml(small_workspace()), mode="merge")
    assert (job.status, job.progress) == ("queued", 0)
    assert job.task_id
    assert not Layer.objects.exists()

    # Then the worker (django-tasks-db's db_worker) runs it to the end
    call_command("db_worker", "--batch", "--no-startup-delay", "--interval", "0")
    job.refresh_from_db()
    assert (job.status, job.progress, job.source) == ("succeeded", 100, "")
    assert job.summary["items"]["created"] == 12
    assert Layer.objects.count() == 3
    result = backend.get_result(job.task_id)
    assert (result.status, result.return_value) == ("SUCCESSFUL", "succeeded")


def test_import_job__succeeded__summary_counts_and_names_what_changed(small, editor_client):
    document = small_workspace()
    document["consumers"][0]["name"] = "Renamed"
    document["layers"][0]["items"].append({"path": "docs/new.md", "title": "New"})

    job = job_of(editor_client, post_import(editor_client, document))

    summary = job["summary"]
    assert summary["consumers"]["updated"] == 1
    assert summary["names"]["consumers"] == {"created": [], "updated": ["assistant"], "deleted": []}
    assert summary["names"]["items"]["created"] == ["layer-000/docs/new.md"]
    assert summary["names"]["profiles"] == {"created": [], "updated": [], "deleted": []}


def test_import_job__rule_error_through_a_yaml_alias__issues_name_profile_line_and_alias(
    editor_client,
):
    # Given the demo workspace whose tickets rule (an anchor two profiles use) is invalid
    text = DEMO.read_text(encoding="utf-8").replace("maxItems: 3", "maxItems: -3", 1)
    line = text[: text.index("maxItems: -3")].count("\n") + 1
    alias_line = text[: text.index("tickets: *tickets")].count("\n") + 1

    response = editor_client.post(API + "workspace", text, content_type="application/yaml")

    error = job_of(editor_client, response)["error"]
    assert error["issues"] == [
        {
            "path": "profiles[0].rules.tickets.maxItems",
            "message": "must be an integer >= 0",
            "entry": "rule support-answer/tickets",
            "line": line,
            "column": 17,
        },
        {
            "path": "profiles[1].rules.tickets.maxItems",
            "message": "must be an integer >= 0",
            "entry": "rule support-answer-staging/tickets",
            "line": line,
            "column": 17,
            "aliasLine": alias_line,
            "aliasColumn": 14,
        },
    ]
    assert error["path"] == "profiles[0].rules.tickets.maxItems"
    assert error["message"].endswith(f"(rule support-answer/tickets, line {line}, column 17)")
    assert not Profile.objects.exists()


def test_import_job__json_file_with_an_item_error__issue_names_the_item_and_its_line(
    small, editor_client
):
    document = small_workspace()
    document["layers"][1]["items"][2]["title"] = ["not", "text"]
    text = json.dumps(document, indent=2)

    response = editor_client.post(API + "workspace", text, content_type="application/json")

    (issue,) = job_of(editor_client, response)["error"]["issues"]
    assert issue["path"] == "layers[1].items[2].title"
    assert issue["entry"] == "item layer-001/docs/item-0002.md"
    assert text.splitlines()[issue["line"] - 1].strip() == '"title": ['


def test_import_job__polled_while_queued__does_not_read_the_uploaded_source(editor, editor_client):
    # Given a job still waiting for the worker (a large upload is megabytes of source)
    job = ImportJob.objects.create(
        user=editor, mode="merge", source="version: 1\n", source_bytes=11
    )

    # When its client polls it
    with CaptureQueriesContext(connection) as queries:
        response = editor_client.get(f"{API}workspace/imports/{job.pk}")

    # Then it sees the job's state, read without the source
    assert (response.status_code, response.json()["status"]) == (200, "queued")
    job_reads = [query["sql"] for query in queries if "profiles_importjob" in query["sql"]]
    assert job_reads
    assert not any('"source"' in sql for sql in job_reads)


def test_import__one_layer_document_with_a_duplicate_path__the_message_names_the_files_paths(
    small, editor_client
):
    document = layer_document("layer-002", ["same.md", "other.md", "same.md"])

    job = job_of(editor_client, post_import(editor_client, document, "?layer=layer-002"))

    assert job["status"] == "failed"
    assert job["error"]["path"] == "items[2].path"
    assert 'duplicate path "same.md" (first at items[0])' in job["error"]["message"]
    assert "layers[" not in job["error"]["message"]
