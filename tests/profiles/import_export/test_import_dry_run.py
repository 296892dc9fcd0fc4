"""An import's dry run and its proposal as a change set (issue 21): ``POST /api/v1/workspace
?dryRun=true`` answers what the import would change, with the impact, writing nothing;
``&propose=true`` opens a change set whose application leaves what the import would have."""

import copy
import re
import uuid
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from profiles.import_export.documents import import_target, workspace_export
from profiles.import_export.dry_run import workspace_import_preview
from profiles.import_export.previews import PREVIEWS_KEPT_PER_USER
from profiles.models import (
    Activity,
    ChangeRequest,
    Environment,
    ImportJob,
    Layer,
    PreviewedUpload,
    ProfileVersion,
    WorkspaceVersion,
)
from profiles.workspace.entity_changes import workspace_entity_changes
from profiles.workspace.mappers import map_values_to_document
from profiles.workspace.selectors import workspace_values_get
from resolver.documents import dump_yaml
from tests.profiles.conftest import API

pytestmark = pytest.mark.django_db


def post(client, document, query: str):
    return client.post(
        API + "workspace" + query, dump_yaml(document), content_type="application/yaml"
    )


def edited(release) -> dict:
    """The release workspace with a new layer, a layer's filter removed, a budget changed."""
    document = copy.deepcopy(release)
    document["layers"][1].pop("itemFilter")
    document["layers"].append(
        {
            "key": "release-notes",
            "name": "Release notes",
            "items": [{"path": "2026-12.md", "title": "December", "body": "Cards refund."}],
        }
    )
    document["profiles"][1]["budget"] = 650
    return document


class Unwritten:
    """Nothing written: rows, versions, activity, jobs, the content version."""

    def __init__(self):
        self.state = self.read()

    @staticmethod
    def read():
        return (
            workspace_export(),
            ProfileVersion.objects.count(),
            Activity.objects.count(),
            ImportJob.objects.count(),
            ChangeRequest.objects.count(),
            WorkspaceVersion.current_token(),
        )

    def check(self):
        assert self.read() == self.state


def test_dry_run__changes_counts_and_impact__and_nothing_written(release, editor_client):
    unwritten = Unwritten()

    response = post(editor_client, edited(release), "?mode=merge&dryRun=true")

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["counts"]["layer"] == {"create": 1, "update": 1, "delete": 0}
    assert body["counts"]["item"]["create"] == 1
    assert body["counts"]["profile"] == {"create": 0, "update": 1, "delete": 0}
    assert {
        "kind": "layer",
        "op": "update",
        "key": "layer-001",
        "fields": [{"path": "itemFilter", "from": {"customer_id": "customer_id"}, "to": None}],
    } in body["changes"]
    assert {
        "kind": "profile",
        "op": "update",
        "key": "profile-1",
        "fields": [{"path": "budget", "from": 800, "to": 650}],
    } in body["changes"]
    assert body["moreChanges"] == 0
    # Every profile reads the new layer on its default rule.
    assert body["affectedProfiles"] == ["profile-0", "profile-0-staging", "profile-1"]
    assert body["protectedProfiles"] == []
    assert {row["profile"] for row in body["impact"]} == {"profile-0", "profile-0-staging"}
    assert any(row["changed"] for row in body["impact"])
    unwritten.check()


def test_dry_run__protected_profiles_touched__named_and_still_nothing_written(
    release, editor_client
):
    Environment.objects.create(key="production", requires_change_request=True)
    unwritten = Unwritten()

    body = post(editor_client, edited(release), "?dryRun=true").json()

    assert body["protectedProfiles"] == ["profile-0"]
    unwritten.check()


def test_dry_run__many_changes__listed_in_pages_with_exact_counts(release, editor_client):
    document = copy.deepcopy(release)
    document["layers"][0]["items"] += [
        {"path": f"bulk/{n:04d}.md", "title": f"Bulk {n}", "body": "Text."} for n in range(620)
    ]

    first = post(editor_client, document, "?dryRun=true").json()
    second = post(editor_client, document, "?dryRun=true&offset=500").json()

    assert first["counts"]["item"]["create"] == 620
    assert (len(first["changes"]), first["moreChanges"]) == (500, 120)
    assert (len(second["changes"]), second["moreChanges"], second["offset"]) == (120, 0, 500)
    assert second["changes"][-1]["path"] == "bulk/0619.md"


def test_dry_run__long_text__cut_in_the_field_diff(release, editor_client):
    document = copy.deepcopy(release)
    document["layers"][0]["items"][0]["body"] = "refund " * 1_000

    body = post(editor_client, document, "?dryRun=true").json()

    (change,) = body["changes"]
    (field,) = change["fields"]
    assert field["path"] == "body"
    assert len(field["to"]) < 2_100 and "more characters" in field["to"]


def test_dry_run__invalid_file__400_with_the_line_and_nothing_written(release, editor_client):
    unwritten = Unwritten()
    text = "layers:\n- key: layer-000\n  availability: sometimes\n"

    response = editor_client.post(
        API + "workspace?dryRun=true", text, content_type="application/yaml"
    )

    assert response.status_code == 400
    issue = response.json()["error"]["issues"][0]
    assert (issue["path"], issue["line"]) == ("layers[0].availability", 3)
    unwritten.check()


@pytest.mark.parametrize(
    "query", ["?dryRun=maybe", "?dryRun=true&layer=layer-000", "?dryRun=true&offset=-1"]
)
def test_dry_run__bad_parameters__400(release, editor_client, query):
    response = post(editor_client, edited(release), query)

    assert response.status_code == 400


def test_dry_run__reader__403(release, reader_client):
    assert post(reader_client, edited(release), "?dryRun=true").status_code == 403


def test_preview_service__same_changes_as_the_import_computes(release):
    document = edited(release)
    stored = workspace_values_get()
    expected = workspace_entity_changes(
        map_values_to_document(stored), import_target(stored, document, mode="merge")
    )

    preview = workspace_import_preview(document=document)

    assert preview.changes == expected


# --- propose -------------------------------------------------------------------------------


def test_propose__protected_file__refused_as_import_opened_as_a_set_that_applies_to_the_same(
    release, editor_client, reviewer_client
):
    # Given production protected: the plain import is refused
    Environment.objects.create(key="production", requires_change_request=True)
    document = edited(release)
    refused = post(editor_client, document, "")
    job = editor_client.get(refused["Location"]).json()
    assert (job["status"], job["error"]["code"]) == ("failed", "CHANGE_REQUEST_REQUIRED")
    stored = workspace_values_get()
    expected = import_target(stored, document, mode="merge")

    # When it is proposed, approved and applied
    proposed = post(editor_client, document, "?propose=true&title=Import+release+notes")
    assert proposed.status_code == 201, proposed.json()
    body = proposed.json()
    assert body["title"] == "Import release notes"
    assert body["entities"] == [
        "layer:layer-001",
        "layer:release-notes",
        "profile:profile-1",
    ]
    assert "profile-0" in body["affectedProfiles"]
    read = reviewer_client.get(f"{API}change-requests/{body['id']}")
    reviewer_client.post(
        f"{API}change-requests/{body['id']}/approve", HTTP_IF_MATCH=read.headers["ETag"]
    )
    applied = editor_client.post(f"{API}change-requests/{body['id']}/apply")

    # Then the workspace is what the import would have left
    assert applied.status_code == 200, applied.json()
    assert workspace_entity_changes(workspace_export(), expected) == []
    assert Layer.objects.get(key="release-notes").items.count() == 1


def test_propose__reader_with_import_rights_only__403(release, reader_client):
    assert post(reader_client, edited(release), "?propose=true").status_code == 403


def test_schema__workspace_import__documents_the_dry_run(editor_client):
    schema = editor_client.get("/api/v1/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/v1/workspace"]["post"]

    names = {parameter["name"] for parameter in operation["parameters"]}
    assert {"dryRun", "propose", "offset", "impactOffset"} <= names
    assert {"200", "201", "202"} <= set(operation["responses"])


# --- the studio's upload: preview, then Import or Propose --------------------------------


@pytest.fixture
def studio(client, editor):
    client.force_login(editor)
    return client


def upload(client, document, **fields):
    return client.post(
        "/workspace/upload/",
        {
            "file": SimpleUploadedFile("release.yaml", dump_yaml(document).encode()),
            "mode": "merge",
            "action": "preview",
            **fields,
        },
    )


def preview_token(response) -> str:
    return re.search(r'name="token" value="([^"]+)"', response.content.decode()).group(1)


def test_studio_upload__preview__changes_diffs_impact_and_nothing_written(release, studio):
    unwritten = Unwritten()

    response = upload(studio, edited(release))

    page = response.content.decode()
    assert response.status_code == 200
    assert "What importing release.yaml would change" in page
    assert "<code>release-notes</code>" in page and "<code>itemFilter</code>" in page
    assert "Impact on the saved scenarios" in page and "refund question" in page
    assert 'value="import"' in page and 'value="propose"' not in page
    unwritten.check()


def test_studio_upload__confirm_import__the_job_imports_the_previewed_file(release, studio):
    token = preview_token(upload(studio, edited(release)))

    response = studio.post("/workspace/upload/", {"action": "import", "token": token}, follow=True)

    assert response.redirect_chain[0][0].startswith("/workspace/imports/")
    assert "Imported." in response.content.decode()
    assert Layer.objects.filter(key="release-notes").exists()
    # The token is spent: the same confirmation does not import twice.
    again = studio.post("/workspace/upload/", {"action": "import", "token": token}, follow=True)
    assert "no longer kept" in again.content.decode()


def test_studio_upload__protected_file__offers_propose_which_opens_the_set_page(release, studio):
    Environment.objects.create(key="production", requires_change_request=True)
    preview = upload(studio, edited(release))
    assert 'value="propose"' in preview.content.decode()
    assert 'value="import"' not in preview.content.decode()

    response = studio.post(
        "/workspace/upload/",
        {"action": "propose", "token": preview_token(preview), "title": "Release notes"},
        follow=True,
    )

    change_request = ChangeRequest.objects.get()
    assert response.redirect_chain[-1][0] == f"/changes/{change_request.pk}/"
    page = response.content.decode()
    assert change_request.title == "Release notes" and change_request.is_change_set
    assert "a change set over" in page and "<code>release-notes</code>" in page
    assert "refund question" in page  # the impact, by profile
    assert not Layer.objects.filter(key="release-notes").exists()


def test_studio_upload__invalid_file__issues_listed_at_once(release, studio):
    response = studio.post(
        "/workspace/upload/",
        {
            "file": SimpleUploadedFile(
                "bad.yaml", b"layers:\n- key: x\n  availability: sometimes\n"
            ),
            "mode": "merge",
            "action": "preview",
        },
    )

    assert response.status_code == 400
    assert "layers[0].availability" in response.content.decode()


def test_studio_upload__preview__counted_in_the_impact_scope_with_the_api_dry_run(
    release, studio, settings
):
    # Given the impact rate at 2 a minute (the preview scope left wide open),
    rates = {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "impact": "2/minute"}
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}
    assert rates["preview"] == "600/minute"

    # one studio preview and one API dry run use the user's two,
    assert upload(studio, edited(release)).status_code == 200
    assert post(studio, edited(release), "?dryRun=true").status_code == 200

    # so the next preview is refused with Retry-After, and keeps no file.
    refused = upload(studio, edited(release))
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) >= 1
    assert PreviewedUpload.objects.count() == 1


def test_studio_upload__preview__keeps_the_file_out_of_the_shared_cache(
    release, studio, redis_cache
):
    document = edited(release)
    document["layers"][-1]["items"][0]["body"] = "marker-" + "x" * 2000

    token = preview_token(upload(studio, document))

    redis = redis_cache._cache.get_client(write=False)
    assert not [key for key in redis.scan_iter() if b"marker-xxxx" in (redis.get(key) or b"")]
    kept = PreviewedUpload.objects.get()
    assert str(kept.pk) == token and "marker-xxxx" in kept.source


def test_studio_upload__previews__a_few_kept_per_user_the_oldest_dropped(release, studio):
    tokens = [preview_token(upload(studio, edited(release))) for _ in range(3)]

    assert PreviewedUpload.objects.count() == PREVIEWS_KEPT_PER_USER == 2
    oldest = studio.post(
        "/workspace/upload/", {"action": "import", "token": tokens[0]}, follow=True
    )
    assert "no longer kept" in oldest.content.decode()
    newest = studio.post("/workspace/upload/", {"action": "import", "token": tokens[-1]})
    assert newest.status_code == 302 and newest["Location"].startswith("/workspace/imports/")
    assert PreviewedUpload.objects.count() == 1  # the imported one is dropped


def test_studio_upload__preview_expired__refused_and_deleted_by_the_next_one(release, studio):
    token = preview_token(upload(studio, edited(release)))
    PreviewedUpload.objects.update(created_at=timezone.now() - timedelta(minutes=31))

    expired = studio.post("/workspace/upload/", {"action": "import", "token": token}, follow=True)
    assert "no longer kept" in expired.content.decode()
    assert not ImportJob.objects.exists()

    fresh = preview_token(upload(studio, edited(release)))
    assert list(PreviewedUpload.objects.values_list("pk", flat=True)) == [uuid.UUID(fresh)]


def test_studio_upload__someone_elses_preview__not_theirs_to_import(
    release, studio, django_user_model
):
    token = preview_token(upload(studio, edited(release)))
    other = django_user_model.objects.create_superuser("other", password="x")
    studio.force_login(other)

    response = studio.post("/workspace/upload/", {"action": "import", "token": token}, follow=True)

    assert "no longer kept" in response.content.decode()
    assert not ImportJob.objects.exists() and PreviewedUpload.objects.count() == 1
